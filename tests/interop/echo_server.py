#!/usr/bin/env python3
"""A grpc-echo server on grpcio (the reference gRPC C core), for testing wirebench's clients
against a server nobody here wrote.

Generates the stubs at run time (as echo_client.py does), serves grpc_echo.v1.EchoService/Echo
on 127.0.0.1 (an ephemeral port unless --port), answering body = the ping and headers = the
request's metadata, prints "listening on 127.0.0.1:PORT" on stdout, and stops by itself after
--seconds (default 120) or when stdin closes. Messages up to 8 MiB either way.

Exit codes: 0 after a clean stop, 2 when grpcio / grpcio-tools are missing.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MAX_MESSAGE = 8 << 20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    try:
        import grpc

        from echo_client import generate_stubs
    except ImportError as e:
        print(f"grpcio / grpcio-tools missing: {e}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as out_dir:
        echo_pb2, echo_pb2_grpc, _ = generate_stubs(out_dir)

        class Echo(echo_pb2_grpc.EchoServiceServicer):
            def Echo(self, request, context):  # noqa: N802 (the method's name)
                headers = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
                return echo_pb2.EchoResponse(body=request.ping, headers=headers)

        server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=4),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
            ],
        )
        echo_pb2_grpc.add_EchoServiceServicer_to_server(Echo(), server)
        port = server.add_insecure_port(f"127.0.0.1:{args.port}")
        server.start()
        print(f"listening on 127.0.0.1:{port}", flush=True)

        done = threading.Event()
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
        done.wait(args.seconds)
        server.stop(grace=0.5).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
