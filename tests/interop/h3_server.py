"""A small ASGI app served by Hypercorn over HTTP/3 (aioquic) on a UDP port, for
tests/client_h3.rs: an HTTP/3 server this project did not write.

    POST /v1/echo        200, the echo service's JSON answer to {"ping": ...}:
                         {"body": PING, "headers": {}}
    GET  /hello          200, "hello\n" (text/plain)
    GET  /status/NNN     status NNN, empty body
    anything else        404

Usage: h3_server.py PORT CERT KEY SECONDS; prints "listening PORT" once its QUIC endpoint is
bound and stops after SECONDS.
"""

import asyncio
import json
import sys
from pathlib import Path

from hypercorn.config import Config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from h2c_server import serve_for  # noqa: E402 (after the path it is found on)


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    path, method = scope["path"], scope["method"]
    status, ctype, out = 404, b"text/plain", b"not found\n"
    if path == "/v1/echo" and method == "POST":
        try:
            ping = json.loads(body)["ping"]
            status, ctype = 200, b"application/json"
            out = json.dumps({"body": ping, "headers": {}}).encode()
        except (ValueError, KeyError, TypeError) as e:
            status, ctype = 400, b"application/json"
            out = json.dumps({"error": f"malformed JSON: {e}"}).encode()
    elif path == "/hello" and method in ("GET", "HEAD"):
        status, out = 200, b"hello\n"
    elif path.startswith("/status/"):
        status, out = int(path[len("/status/"):]), b""
    headers = [(b"content-type", ctype), (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": out if method != "HEAD" else b""})


async def main(port, cert, key, seconds):
    config = Config()
    # TCP on the same port too (Hypercorn wants one, and it tells when the server is up); the
    # test speaks QUIC only
    config.bind = [f"127.0.0.1:{port}"]
    config.quic_bind = [f"127.0.0.1:{port}"]
    config.certfile = cert
    config.keyfile = key
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    config.keep_alive_max_requests = 10_000_000
    await serve_for(app, config, port, seconds)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])))
