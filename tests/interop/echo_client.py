#!/usr/bin/env python3
"""Interop check of `wirebench serve` with the reference gRPC implementation (grpcio).

Generates stubs at run time from crates/wire/proto/echo.proto and health.proto with grpc_tools.protoc
(into a temporary directory), then against --target:

* Echo with metadata x-wb-test: 42: body, echoed headers, remote_addr, the four timestamps;
* grpc.health.v1.Health/Check answers SERVING;
* an unknown method fails with UNIMPLEMENTED;
* 200 concurrent Echo calls from 8 threads over one channel all succeed.

Prints one JSON summary line on stdout and exits 0; on any failure prints "FAIL: ..." on stderr
and exits 1 (2 when grpcio / grpcio-tools are missing or the stubs cannot be generated).

Needs grpcio and grpcio-tools: scripts/test.sh installs them into its own virtual environment
(~/.cache/wirebench/venv) and runs the tests with its bin/ first on PATH.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

PING = "Hello, world!"
ECHO_METHOD = "/grpc_echo.v1.EchoService/Echo"
UNKNOWN_METHOD = "/grpc_echo.v1.EchoService/Nope"
HEALTH_METHOD = "/grpc.health.v1.Health/Check"
CONCURRENT_CALLS = 200
CONCURRENT_THREADS = 8
# Timestamps must be within this of the client's clock (same machine).
CLOCK_SLACK_S = 60.0

PROTO_DIR = Path(__file__).resolve().parents[2] / "crates" / "wire" / "proto"


class Failure(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Failure(msg)


def generate_stubs(out_dir: str):
    """Runs protoc (from grpcio-tools) on echo.proto and health.proto; returns the modules."""
    import importlib.resources

    from grpc_tools import protoc

    # grpcio-tools ships the well-known types (google/protobuf/timestamp.proto) in _proto.
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_DIR}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        str(PROTO_DIR / "echo.proto"),
        str(PROTO_DIR / "health.proto"),
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise RuntimeError(f"grpc_tools.protoc failed with exit code {rc}: {' '.join(args)}")
    sys.path.insert(0, out_dir)
    return (
        importlib.import_module("echo_pb2"),
        importlib.import_module("echo_pb2_grpc"),
        importlib.import_module("health_pb2"),
    )


def ts_tuple(ts) -> tuple[int, int]:
    return (ts.seconds, ts.nanos)


def check_echo(echo_pb2, stub, target: str, timeout: float) -> dict:
    import grpc

    server_port = int(target.rsplit(":", 1)[1])
    before = time.time()
    resp, call = stub.Echo.with_call(
        echo_pb2.EchoRequest(ping=PING),
        metadata=(("x-wb-test", "42"),),
        timeout=timeout,
    )
    after = time.time()
    check(call.code() == grpc.StatusCode.OK, f"Echo: status {call.code()}")
    check(resp.body == PING, f"Echo: body {resp.body!r}, want {PING!r}")

    headers = dict(resp.headers)
    check(
        headers.get(":authority") == target,
        f"Echo: headers[':authority'] = {headers.get(':authority')!r}, want {target!r}; "
        f"headers: {headers}",
    )
    check(
        headers.get("x-wb-test") == "42",
        f"Echo: headers['x-wb-test'] = {headers.get('x-wb-test')!r}, want '42'; headers: {headers}",
    )
    ctype = headers.get("content-type", "")
    check(
        ctype.startswith("application/grpc"),
        f"Echo: headers['content-type'] = {ctype!r}, want application/grpc*; headers: {headers}",
    )
    ua = headers.get("user-agent", "")
    check("grpc-python" in ua, f"Echo: headers['user-agent'] = {ua!r}, want grpc-python*")

    m = re.fullmatch(r"127\.0\.0\.1:(\d+)", resp.remote_addr)
    check(m is not None, f"Echo: remote_addr {resp.remote_addr!r}, want 127.0.0.1:<port>")
    client_port = int(m.group(1))
    check(
        0 < client_port < 65536 and client_port != server_port,
        f"Echo: remote_addr port {client_port} is not a client port (server is {server_port})",
    )

    names = ("received_at", "handler_reached_at", "handler_responded_at", "sent_at")
    for name in names:
        check(resp.HasField(name), f"Echo: {name} is not set: {resp}")
    stamps = [getattr(resp, name) for name in names]
    for (a, ta), (b, tb) in zip(zip(names, stamps), zip(names[1:], stamps[1:])):
        check(
            ts_tuple(ta) <= ts_tuple(tb),
            f"Echo: {a} {ta.ToJsonString()} is after {b} {tb.ToJsonString()}",
        )
    for name, ts in zip(names, stamps):
        t = ts.seconds + ts.nanos / 1e9
        check(
            before - CLOCK_SLACK_S <= t <= after + CLOCK_SLACK_S,
            f"Echo: {name} {ts.ToJsonString()} is not within {CLOCK_SLACK_S} s of now "
            f"({before:.3f}..{after:.3f})",
        )
    server_ns = (stamps[3].seconds - stamps[0].seconds) * 1_000_000_000 + (
        stamps[3].nanos - stamps[0].nanos
    )
    return {
        "remote_addr": resp.remote_addr,
        "user_agent": ua,
        "server_ns": server_ns,
    }


def check_health(health_pb2, channel, timeout: float) -> str:
    # proto/health.proto declares only the messages (no service), so call the method by path.
    check_rpc = channel.unary_unary(
        HEALTH_METHOD,
        request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
        response_deserializer=health_pb2.HealthCheckResponse.FromString,
    )
    resp = check_rpc(health_pb2.HealthCheckRequest(service=""), timeout=timeout)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    check(
        resp.status == health_pb2.HealthCheckResponse.SERVING,
        f"Health/Check: status {status}, want SERVING",
    )
    return status


def check_unknown_method(channel, timeout: float) -> str:
    import grpc

    # No serializers: the request and the response are raw bytes.
    call = channel.unary_unary(UNKNOWN_METHOD)
    try:
        resp = call(b"", timeout=timeout)
    except grpc.RpcError as e:
        check(
            e.code() == grpc.StatusCode.UNIMPLEMENTED,
            f"{UNKNOWN_METHOD}: status {e.code()} ({e.details()!r}), want UNIMPLEMENTED",
        )
        return e.code().name
    raise Failure(f"{UNKNOWN_METHOD}: succeeded with {resp!r}, want UNIMPLEMENTED")


def check_concurrent(echo_pb2, stub, timeout: float) -> dict:
    def one(i: int) -> None:
        ping = f"{PING} #{i}"
        resp = stub.Echo(echo_pb2.EchoRequest(ping=ping), timeout=timeout)
        check(resp.body == ping, f"concurrent Echo #{i}: body {resp.body!r}, want {ping!r}")

    started = time.monotonic()
    errors = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=CONCURRENT_THREADS) as pool:
        futures = [pool.submit(one, i) for i in range(CONCURRENT_CALLS)]
        for f in concurrent.futures.as_completed(futures):
            e = f.exception()
            if e is not None:
                errors.append(e)
    elapsed = time.monotonic() - started
    check(
        not errors,
        f"concurrent Echo: {len(errors)} of {CONCURRENT_CALLS} calls failed; first: "
        f"{errors[0] if errors else ''}",
    )
    return {
        "calls": CONCURRENT_CALLS,
        "threads": CONCURRENT_THREADS,
        "ok": CONCURRENT_CALLS - len(errors),
        "elapsed_s": round(elapsed, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="host:port of `wirebench serve`")
    parser.add_argument("--timeout", type=float, default=10.0, help="per-call deadline, s")
    parser.add_argument(
        "--ready-timeout", type=float, default=10.0, help="wait this long for the channel, s"
    )
    opts = parser.parse_args()
    if not re.fullmatch(r"[^:]+:\d+", opts.target):
        print(f"FAIL: --target {opts.target!r} is not host:port", file=sys.stderr)
        return 2

    try:
        import grpc  # noqa: F401
        import grpc_tools  # noqa: F401
    except ImportError as e:
        print(
            f"FAIL: {e}: run with the python3 of scripts/test.sh's virtual environment, "
            "which has grpcio and grpcio-tools (~/.cache/wirebench/venv/bin/python3)",
            file=sys.stderr,
        )
        return 2

    with tempfile.TemporaryDirectory(prefix="wirebench-stubs-") as out_dir:
        try:
            echo_pb2, echo_grpc, health_pb2 = generate_stubs(out_dir)
        except Exception as e:  # noqa: BLE001
            print(f"FAIL: generating stubs: {e}", file=sys.stderr)
            return 2

        import grpc

        summary: dict = {"target": opts.target, "grpcio": grpc.__version__}
        step = "connect"
        try:
            with grpc.insecure_channel(opts.target) as channel:
                try:
                    grpc.channel_ready_future(channel).result(timeout=opts.ready_timeout)
                except grpc.FutureTimeoutError:
                    raise Failure(
                        f"channel to {opts.target} not ready within {opts.ready_timeout} s"
                    ) from None
                stub = echo_grpc.EchoServiceStub(channel)
                step = "echo"
                summary["echo"] = check_echo(echo_pb2, stub, opts.target, opts.timeout)
                step = "health"
                summary["health"] = check_health(health_pb2, channel, opts.timeout)
                step = "unknown_method"
                summary["unknown_method"] = check_unknown_method(channel, opts.timeout)
                step = "concurrent"
                summary["concurrent"] = check_concurrent(echo_pb2, stub, opts.timeout)
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
        except grpc.RpcError as e:
            print(
                f"FAIL: {step}: RPC failed with {e.code()}: {e.details()!r}", file=sys.stderr
            )
            return 1
        except Exception as e:  # noqa: BLE001
            print(f"FAIL: {step}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1

    summary["ok"] = True
    print(json.dumps(summary, sort_keys=True))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    # grpcio's C core logs fork/poll notices to stderr; keep the output to our own lines.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    sys.exit(main())
