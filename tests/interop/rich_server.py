#!/usr/bin/env python3
"""A grpcio server (the reference gRPC C core) of rich.proto's Mirror service, with server
reflection on (off with --no-reflection), for testing `wirebench grpc` against a server nobody
here wrote.

Generates the stubs at run time with grpcio-tools, serves on 127.0.0.1 (an ephemeral port
unless --port), prints "listening on 127.0.0.1:PORT" on stdout, and stops by itself after
--seconds (default 120) or when stdin closes.

Exit codes: 0 after a clean stop, 2 when grpcio / grpcio-tools / grpcio-reflection are missing.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import sys
import tempfile
import threading
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--no-reflection", action="store_true", help="serve Mirror alone")
    parser.add_argument(
        "--record",
        help="append a JSON line per Reflect call: its name, big and x-id metadata",
    )
    args = parser.parse_args()
    try:
        import grpc
        from grpc_reflection.v1alpha import reflection
        from grpc_tools import protoc
    except ImportError as e:
        print(f"grpcio / grpcio-tools / grpcio-reflection missing: {e}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as out_dir:
        rc = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{PROTO_DIR}",
                f"--python_out={out_dir}",
                f"--grpc_python_out={out_dir}",
                str(PROTO_DIR / "rich.proto"),
            ]
        )
        if rc != 0:
            print(f"grpc_tools.protoc failed with exit code {rc}", file=sys.stderr)
            return 1
        sys.path.insert(0, out_dir)
        rich_pb2 = importlib.import_module("rich_pb2")
        rich_pb2_grpc = importlib.import_module("rich_pb2_grpc")

        answered = [0]
        lock = threading.Lock()
        record = open(args.record, "a", encoding="utf-8") if args.record else None

        class Mirror(rich_pb2_grpc.MirrorServicer):
            def Reflect(self, request, context):  # noqa: N802 (the method's name)
                with lock:
                    answered[0] += 1
                    request.seen = answered[0]
                    if record is not None:
                        meta = dict(context.invocation_metadata())
                        line = {"name": request.name, "big": request.big, "x-id": meta.get("x-id")}
                        record.write(json.dumps(line) + "\n")
                        record.flush()
                return request

            def Repeat(self, request, context):  # noqa: N802
                if request.name == "abort":
                    yield request
                    context.abort(grpc.StatusCode.ABORTED, "asked to abort")
                for _ in range(request.count):
                    yield request

            def Gather(self, request_iterator, context):  # noqa: N802
                last = rich_pb2.Thing()
                seen = 0
                for request in request_iterator:
                    last = request
                    seen += 1
                last.seen = seen
                return last

            def Chat(self, request_iterator, context):  # noqa: N802
                for seen, request in enumerate(request_iterator, start=1):
                    request.seen = seen
                    yield request

        server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        rich_pb2_grpc.add_MirrorServicer_to_server(Mirror(), server)
        names = (
            rich_pb2.DESCRIPTOR.services_by_name["Mirror"].full_name,
            reflection.SERVICE_NAME,
        )
        if not args.no_reflection:
            reflection.enable_server_reflection(names, server)
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
