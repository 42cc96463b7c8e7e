"""A small ASGI app served by Hypercorn over HTTP/1.1 and h2c (prior knowledge) on one port,
for tests/client_http1.rs: a real HTTP server this project did not write.

    GET  /hello          200, "hello\n" (text/plain)
    POST /echo           200, the request body back (its content-type kept)
    GET  /status/NNN     status NNN, empty body
    ANY  /record/...     200, "ok\n"; with a RECORD file, one JSON line appended per request:
                         method, path with query, the x-id header, the body (as text)
    anything else        404

Usage: h2c_server.py PORT SECONDS [RECORD]; prints "listening PORT" once it accepts
connections and stops after SECONDS.
"""

import asyncio
import json
import sys

RECORD = open(sys.argv[3], "a", encoding="utf-8") if len(sys.argv) > 3 else None

from hypercorn.asyncio import serve
from hypercorn.config import Config


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
    if path == "/hello" and method in ("GET", "HEAD"):
        status, out = 200, b"hello\n"
    elif path == "/echo" and method == "POST":
        ctype = dict(scope["headers"]).get(b"content-type", b"application/octet-stream")
        status, out = 200, body
    elif path.startswith("/record/"):
        status, out = 200, b"ok\n"
        if RECORD is not None:
            query = scope["query_string"].decode()
            line = {
                "method": method,
                "path": path + ("?" + query if query else ""),
                "x-id": dict(scope["headers"]).get(b"x-id", b"").decode(),
                "body": body.decode(errors="replace"),
                "http": scope["http_version"],
            }
            RECORD.write(json.dumps(line) + "\n")
            RECORD.flush()
    elif path.startswith("/status/"):
        status, out = int(path[len("/status/"):]), b""
    headers = [(b"content-type", ctype), (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": out if method != "HEAD" else b""})


async def serve_for(app, config, port, seconds):
    """Serves `app` with `config` until `seconds` have passed, printing "listening PORT" once
    the TCP side accepts connections (h3_server.py uses it too)."""

    async def announce():
        # serve() binds before it starts accepting; poll until a connect succeeds
        while True:
            try:
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.close()
                break
            except OSError:
                await asyncio.sleep(0.05)
        print(f"listening {port}", flush=True)

    asyncio.get_running_loop().create_task(announce())
    await serve(app, config, shutdown_trigger=lambda: asyncio.sleep(seconds))


async def main(port, seconds):
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = "-"
    config.loglevel = "WARNING"
    # the test's load runs thousands of requests on one connection
    config.keep_alive_max_requests = 10_000_000
    await serve_for(app, config, port, seconds)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
