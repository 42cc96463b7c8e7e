#!/usr/bin/env bash
# Side-by-side peer benchmark: wirebench's client against wrk (HTTP/1.1), h2load (gRPC) and a
# quinn + h3 client (HTTP/3, examples/h3_reference.rs) on the same work and the same server, one
# `wirebench serve --threads 1` pinned to CPU 0, every client pinned to CPU 1, peer and wirebench
# alternating within each round (the order flips every round):
#
#   1. HTTP/1.1, 10 connections x 1 request in flight   wrk -t1 -c10          vs wirebench --proto http -c 10
#   2. HTTP/1.1, 100 connections x 1                     wrk -t1 -c100         vs wirebench --proto http -c 100
#   3. HTTP/1.1, 16 pipelined on 1 connection            wrk -t1 -c1 (PIPE16)  vs wirebench --proto http -c 16 --pipeline 16
#   4. gRPC, 1 connection x 10 streams                  h2load -c1 -m10       vs wirebench --proto grpc -c 10 --conns 1
#   5. gRPC, 10 connections x 1 stream                  h2load -c10 -m1       vs wirebench --proto grpc -c 10 --conns 10
#   6. HTTP/3, 1 connection x 10 streams                h3_reference --conns 1 -m 10  vs wirebench --proto h3 -c 10 --conns 1
#   7. HTTP/3, 10 connections x 1 stream                h3_reference --conns 10 -m 1  vs wirebench --proto h3 -c 10 --conns 10
#   8. gRPC bidi ping-pong, 1 connection x 10 streams   wirebench unary (shape 4's command, per call)
#                                                       vs wirebench grpc BidiEcho --stream-messages 1000 (per message)
#   9. HTTP/1.1 requests that vary, 10 connections      wirebench http, a fixed header and body
#                                                       vs the same with {{uuid}} and {{rand}} (same sizes)
#  10. gRPC calls that vary, 1 connection x 10 streams  wirebench grpc Echo, fixed metadata and message
#                                                       vs the same with {{uuid}} and {{rand}} (same sizes)
#
# The HTTP/1.1 shapes also run the floor client (benches/floor.c, built with cc): blocking
# connections, one write of the request on each, then one read of each answer, no event loop and
# no parsing: the fewest syscalls and the least user time a client can spend, so its CPU per
# request is the kernel's floor that the table names ("floor", and wirebench ÷ floor). For the
# pipelined shape it writes 16 copies of the request with one call, then reads until the 16
# answers are in (DEPTH 16).
#
# Their names for --shapes: http, http-100, http-pipe16, grpc-1x10, grpc-10x1, h3-1x10, h3-10x1,
# grpc-bidi, http-vary, grpc-vary. The last three compare wirebench with itself, against the
# built-in server: grpc-bidi what a message on an open stream costs against a unary call on the
# same connection (its wirebench.stream.v1.StreamEcho/BidiEcho; its requests are the messages
# answered); http-vary and grpc-vary what rendering placeholders per request costs against the
# same bytes fixed ("wirebench-fixed").
#
# The HTTP/1.1 shapes use fixed commands: wrk -t1 -cC -dDs -s LUA (PIPE16: the script that
# returns 16 copies of LUA's request, built with wrk.format() in init(), from each request()
# call), wirebench echo --target URL --proto http -c C -n N --threads 1, every other setting at
# its default (--format json only changes how the report is printed), and the floor client
# with N requests, where D is --duration in seconds and N = 120,000 x D (about D seconds at
# the 110,000-130,000 req/s these shapes make on a 2-CPU VM). The gRPC and HTTP/3 shapes run
# --duration each. HTTP/3 is POST /v1/echo with the same JSON body over QUIC, the
# server's self-signed certificate (serve --h3-cert-out) trusted with --cacert on both sides; the
# peer is examples/h3_reference.rs, one thread of quinn + h3 + h3-quinn in a closed loop, as
# "quinn+h3" ($H3_REFERENCE, or the release example in CARGO_TARGET_DIR or target/, built with
# cargo build --release --example h3_reference when absent).
#
#   scripts/peers.sh [--duration 10s] [--rounds 3] [--quick] [--shapes LIST] [--sample-user]
#                    [-o FILE] [--raw DIR]
#
# --quick is 2 s per run and 1 round (for checking the script). --shapes runs only the shapes of
# its comma list (default: all ten, in the order above). --raw keeps every tool's output.
# Takes about 46 x rounds x duration plus about 1 s per run with all shapes: about 24 min by
# default, 2 min with --quick (each shape 4 runs a round, and the floor's 2 beside each of the
# three HTTP/1.1 shapes; --sample-user adds one run a client: about 35 min by default).
#
# Each client runs twice per round, back to back: timed, `taskset -c 1 python3 CPUTIME FILE --
# CLIENT`, for the CPU figures, req/s, the server's CPU and the wall time; then counted,
# `taskset -c 1 perf stat -e raw_syscalls:sys_enter,context-switches -- CLIENT`, for syscalls and
# context switches (over the counted run's requests). Apart, because the tracepoint perf counts
# syscalls with costs something in every syscall: CPU measured under it would charge a client for
# its syscall count twice. The CPU figure is the user + sys time of the client process alone
# (all its threads, its whole life: start, connects, run, close) as the kernel reports it to
# wait4(2), the figures /usr/bin/time prints, written to the microsecond (CPUTIME, a few lines
# of Python) where GNU time rounds to 10 ms. The kernel splits that time between user and
# system at its tick (250 Hz on a typical VM), so the user figure of one run is a sample: some
# 10% off either way in a 5 s run. With --sample-user each client runs a third time, under
# `perf record -e cpu-clock:u -F 10000` (a sample every 100 µs the client spends in user
# space), for "user sampled": the same time counted forty times finer (that run's requests are
# its denominator; its CPU is not used). Requests are what the client counted as answered: wrk's
# "N requests in", h2load's "N succeeded" (all 2xx, each carrying a gRPC message), wirebench's
# summary.ok, the floor's "N requests in" (every answer whole by its Content-Length).
# "own" is wirebench's own syscall count (its measured window, worker threads only); server CPU is
# the server's run time (/proc/PID/task/*/schedstat) during the run divided by the same requests.
# "CPU busy" is client and server CPU time over the run's wall time: near 100% on both sides means
# the pair is saturated (on loopback each side's sends also pay for the other side's receive), and
# CPU per request then follows 1 / (req/s) more than the client's own cost; syscalls do not.
#
# Prints a markdown table (medians over the rounds; ratios are wirebench / peer of the medians) on
# stdout and to FILE with -o; progress goes to stderr. Needs wrk and cc (HTTP/1.1 shapes), h2load
# (gRPC shapes), perf (allowed to count raw_syscalls:sys_enter), taskset, curl, python3, the
# release binary wirebench in CARGO_TARGET_DIR or target/ ($WIREBENCH to use another), and for
# the HTTP/3 shapes cargo or $H3_REFERENCE. Each run is killed after duration + 60 s.
set -euo pipefail

DURATION=10s
ROUNDS=3
QUICK=0
SAMPLE=0
OUTFILE=""
RAW=""
ALL_SHAPES=(http http-100 http-pipe16 grpc-1x10 grpc-10x1 h3-1x10 h3-10x1 grpc-bidi http-vary grpc-vary)
SHAPE_LIST=""

usage() {
    sed -n '2,/^set -euo/ { /^#/ s/^# \{0,1\}//p }' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION="${2:?}"; shift ;;
        --rounds) ROUNDS="${2:?}"; shift ;;
        --quick) QUICK=1 ;;
        --sample-user) SAMPLE=1 ;;
        --shapes) SHAPE_LIST="${2:?}"; shift ;;
        -o | --output) OUTFILE="${2:?}"; shift ;;
        --raw) RAW="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
if [[ $QUICK -eq 1 ]]; then
    DURATION=2s
    ROUNDS=1
fi

case "$DURATION" in
    *[0-9]m) SECS=$((${DURATION%m} * 60)) ;;
    *[0-9]s) SECS=${DURATION%s} ;;
    *) SECS=$DURATION ;;
esac
[[ $SECS =~ ^[0-9]+$ && $SECS -ge 1 ]] || die "--duration must be whole seconds or minutes (10s, 1m), not $DURATION"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || die "--rounds must be a positive integer, not $ROUNDS"
LIMIT=$((SECS + 60))
# the HTTP/1.1 shapes' requests a run (wirebench's -n, the floor's): about SECS seconds
HTTP_N=$((SECS * 120000))

select_shapes "${ALL_SHAPES[*]}" "$SHAPE_LIST"
# which kinds of shape run: they decide the tools needed and the answers checked first
wants() {
    local s
    for s in "${SHAPES[@]}"; do
        [[ $s != "$1"* ]] || return 0
    done
    return 1
}

# Paths given relative to where the script was started from.
[[ -z $OUTFILE ]] || OUTFILE="$(realpath -m -- "$OUTFILE")"
[[ -z $RAW ]] || RAW="$(realpath -m -- "$RAW")"
H3REF="${H3_REFERENCE:-}"
[[ $H3REF != */* ]] || H3REF="$(realpath -m -- "$H3REF")"
find_wirebench
if [[ -n "$(find src Cargo.toml -newer "$BIN" -print -quit 2>/dev/null)" ]]; then
    echo "peers: warning: $BIN is older than the sources (it is measured as it is)" >&2
fi
if wants h3; then
    if [[ -z $H3REF ]]; then
        H3REF="$TARGET_DIR/release/examples/h3_reference"
        if [[ ! -x $H3REF ]]; then
            command -v cargo >/dev/null 2>&1 || die "$H3REF not found and no cargo to build it"
            echo "peers: $H3REF not found: cargo build --release --example h3_reference" >&2
            CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --example h3_reference >&2 || die "building examples/h3_reference failed"
        fi
    fi
    [[ -x $H3REF ]] || die "$H3REF not found (the HTTP/3 peer: cargo build --release --example h3_reference)"
    if [[ -z ${H3_REFERENCE:-} && -n "$(find examples/h3_reference.rs -newer "$H3REF" -print -quit 2>/dev/null)" ]]; then
        echo "peers: warning: $H3REF is older than examples/h3_reference.rs (it is measured as it is)" >&2
    fi
fi

# ---------------------------------------------------------------------------------------------
# Tools

needed=(perf:linux-perf taskset:util-linux curl:curl python3:python3 timeout:coreutils)
! wants http || needed+=(wrk:wrk cc:gcc)
! wants grpc || needed+=(h2load:nghttp2-client)
for tool in "${needed[@]}"; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || die "${tool%%:*} not found (Debian package ${tool#*:})"
done
perf stat -x, -e raw_syscalls:sys_enter,context-switches -o /dev/null -- "$BASH" -c : 2>/dev/null ||
    die "perf stat cannot count raw_syscalls:sys_enter here (run as root or lower kernel.perf_event_paranoid)"
[[ $SAMPLE -eq 0 ]] || perf record -q -e cpu-clock:u -F 10000 -o /dev/null -- "$BASH" -c : 2>/dev/null ||
    die "perf record cannot sample cpu-clock:u here (--sample-user; run as root or lower kernel.perf_event_paranoid)"
check_pinning

# ---------------------------------------------------------------------------------------------
# Work directory, server, cleanup

WORK="$(mktemp -d /tmp/wirebench-peers.XXXXXX)"
SERVER=""
CLIENT=""
cleanup() {
    # A client runs under timeout, which leads its own process group.
    [[ -z $CLIENT ]] || kill -- "-$CLIENT" 2>/dev/null || true
    if [[ -n $SERVER ]]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
    if [[ -n $RAW ]]; then
        mkdir -p "$RAW" && cp -r "$WORK"/. "$RAW"/ && echo "peers: raw outputs in $RAW" >&2
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

write_peer_inputs "$WORK"
# CPUTIME FILE -- COMMAND...: runs COMMAND, writes its user and system CPU seconds (wait4's
# rusage, to the microsecond) to FILE, exits as COMMAND did (128 + N after signal N)
CPUTIME="$WORK/cputime.py"
cat >"$CPUTIME" <<'EOF'
import os, sys
out, sep, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if sep != "--" or not argv:
    sys.exit("usage: cputime.py FILE -- COMMAND...")
try:
    pid = os.posix_spawnp(argv[0], argv, os.environ)
except OSError as e:
    sys.exit(f"cputime.py: {argv[0]}: {e.strerror}")
_, status, ru = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
EOF
LUA="$WORK/echo.lua"
PIPE16="$WORK/pipeline16.lua"
BODY="$WORK/echo-request.bin"
# the floor client and its request: the bytes wrk sends for LUA (Host, Content-Type, Content-Length)
FLOOR="$WORK/floor"
FLOOR_REQUEST="$WORK/floor-request.txt"
if wants http; then
    cc -O2 -o "$FLOOR" benches/floor.c || die "cannot build benches/floor.c with cc"
fi
# HTTP/3's self-signed certificate, for the clients' --cacert (written before "listening")
CERT="$WORK/h3-cert.pem"
start_pinned_server "$BIN" "$WORK/serve.log" --h3-cert-out "$CERT"
echo "peers: server on $ADDR (CPU 0), clients on CPU 1, $ROUNDS round(s) of ${SECS} s runs" >&2
printf 'POST /v1/echo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{"ping":"Hello, world!"}' \
    "$ADDR" >"$FLOOR_REQUEST"

# Check one answer of each kind before measuring: the HTTP/1.1 echo, a gRPC OK with a message
# (when a gRPC shape runs), and an HTTP/3 200 through the reference client (when an HTTP/3 one does).
code=$(curl -sS -o "$WORK/http.resp" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary '{"ping":"Hello, world!"}' "http://$ADDR/v1/echo") || die "curl POST /v1/echo failed"
[[ $code == 200 ]] || die "POST /v1/echo answered $code"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["body"] == "Hello, world!"' \
    "$WORK/http.resp" 2>/dev/null || die "POST /v1/echo did not echo the ping: $(head -c 200 "$WORK/http.resp")"
if wants grpc; then
    curl -sS --http2-prior-knowledge -D "$WORK/grpc.head" -o "$WORK/grpc.resp" \
        -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @"$BODY" \
        "http://$ADDR/grpc_echo.v1.EchoService/Echo" || die "curl gRPC Echo failed"
    grep -qi '^grpc-status: *0' "$WORK/grpc.head" || die "gRPC Echo did not end with grpc-status 0: $(tr '\r\n' '  ' <"$WORK/grpc.head")"
    python3 - "$WORK/grpc.resp" <<'EOF' || die "gRPC Echo answer is not one framed EchoResponse with the ping"
import sys
b = open(sys.argv[1], "rb").read()
assert len(b) >= 5 and b[0] == 0 and int.from_bytes(b[1:5], "big") == len(b) - 5
assert b"Hello, world!" in b[5:]
EOF
fi
if wants h3; then
    [[ -s $CERT ]] || die "wirebench serve wrote no certificate to --h3-cert-out (no HTTP/3?)"
    out=$(timeout 30 "$H3REF" --conns 1 -m 1 -n 1 --cacert "$CERT" "https://$ADDR/v1/echo" 2>&1) ||
        die "the HTTP/3 reference client could not make one request: $out"
    [[ $out == "1 succeeded, 0 failed,"* ]] || die "POST /v1/echo over HTTP/3 did not answer 200: $out"
fi

# ---------------------------------------------------------------------------------------------
# Runs

RESULTS="$WORK/results.tsv"
: >"$RESULTS"

# Sum of the server's threads' run time, in ns.
server_ns() {
    { cat /proc/"$SERVER"/task/*/schedstat 2>/dev/null || true; } | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# perf's count of event $2 in perf stat -x, file $1.
perf_count() {
    awk -F, -v e="$2" '$3 == e { print $1 }' "$1" 2>/dev/null || true
}

# run SHAPE CLIENT ROUND COMMAND...: one pinned, timed, counted run; appends a line to $RESULTS.
# parse CLIENT OUT: requests, req/s and wirebench's own syscalls/request ("-" for the peers) from
# one run's output; exits non-zero (the reason on stderr) for a run with errors.
parse() {
    python3 - "$1" "$2" <<'EOF'
import json, re, sys
client, path = sys.argv[1], sys.argv[2]
text = open(path).read()
def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)
if client == "wrk":
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    if not m or not rps:
        fail("no request count in wrk's output")
    if "Non-2xx" in text or "Socket errors" in text:
        fail("wrk saw errors: " + " ".join(l.strip() for l in text.splitlines() if "Non-2xx" in l or "Socket errors" in l))
    print(m.group(1), rps.group(1), "-")
elif client == "h2load":
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    codes = re.search(r"status codes: (\d+) 2xx", text)
    rps = re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", text)
    data = re.search(r"traffic: .*, ([\d.]+\w*) \((\d+)\) data", text)
    if not (m and codes and rps and data):
        fail("no request counts in h2load's output")
    ok, failed, errored, timedout = int(m.group(4)), int(m.group(5)), int(m.group(6)), int(m.group(7))
    if ok == 0 or failed or errored or timedout:
        fail(f"h2load: {ok} succeeded, {failed} failed, {errored} errored, {timedout} timeout")
    if int(codes.group(1)) != ok:
        fail(f"h2load: {ok} succeeded but {codes.group(1)} 2xx")
    # A gRPC error is a trailers-only answer with no DATA; each EchoResponse is at least
    # 5 + 2 + 13 bytes (the echoed ping), so fewer data bytes than that means errors.
    if int(data.group(2)) < ok * 20:
        fail(f"h2load: {data.group(2)} data bytes for {ok} answers: not every answer carried an EchoResponse")
    print(ok, rps.group(1), "-")
elif client == "floor":
    m = re.search(r"^(\d+) requests in ([\d.]+) s, ([\d.]+) req/s$", text, re.M)
    if not m:
        fail("no request count in the floor client's output")
    print(m.group(1), m.group(3), "-")
elif client == "quinn+h3":
    m = re.search(r"^(\d+) succeeded, (\d+) failed, ([\d.]+) s, ([\d.]+) req/s$", text, re.M)
    if not m:
        fail("no request counts in h3_reference's output")
    ok, failed = int(m.group(1)), int(m.group(2))
    if ok == 0 or failed:
        fail(f"h3_reference: {ok} succeeded, {failed} failed")
    print(ok, m.group(4), "-")
else:
    r = json.loads(text)["runs"][0]
    s, c = r["summary"], r["cost"]
    if s["failed"] != 0 or s["ok"] == 0:
        fail(f"wirebench: {s['ok']} ok, {s['failed']} failed")
    own = c.get("syscalls_per_request")
    st = r.get("streaming") or {}
    if st.get("messages_sent"):
        # a stream's requests are its messages answered (the calls are streams)
        own = None if own is None or not st["messages"] else own * s["ok"] / st["messages"]
        print(st["messages"], st["messages_per_sec"], "-" if own is None else own)
    else:
        print(s["ok"], s["requests_per_sec"], "-" if own is None else own)
EOF
}

# pinned TAG ROUND-NAME WRAPPER... -- COMMAND...: one run of COMMAND on CPU 1 under WRAPPER, killed
# after LIMIT s; output in TAG.out and TAG.err; dies on a failed run.
pinned() {
    local tag=$1 what=$2 rc=0
    shift 2
    timeout -k 5 "$LIMIT" taskset -c 1 "$@" >"$tag.out" 2>"$tag.err" </dev/null &
    CLIENT=$!
    wait "$CLIENT" || rc=$?
    CLIENT=""
    kill -0 "$SERVER" 2>/dev/null || die "the server exited during $what: $(tail -n +2 "$WORK/serve.log" | tail -n 3 | tr '\n' ' ')"
    [[ $rc -ne 124 && $rc -ne 137 ]] || die "$what did not finish within $LIMIT s"
    [[ $rc -eq 0 ]] || die "$what failed (exit $rc): $(tail -q -n 2 "$tag.err" "$tag.out" 2>/dev/null | tr '\n' ' ')"
}

# run SHAPE CLIENT ROUND COMMAND...: the client twice, pinned: timed (GNU time alone: CPU, req/s,
# the server's CPU and the wall time) and counted (perf stat alone: syscalls and context
# switches, over that run's requests), since the tracepoint perf counts syscalls with adds to
# every syscall, which would charge a client for its syscall count twice.
run() {
    local shape=$1 client=$2 round=$3
    shift 3
    local tag="$WORK/$shape-$client-$round"
    kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(tail -n +2 "$WORK/serve.log" | tail -n 3 | tr '\n' ' ')"
    echo "peers: round $round/$ROUNDS $shape $client" >&2
    local s0 t0 s1 t1
    s0=$(server_ns)
    t0=$EPOCHREALTIME
    pinned "$tag" "$shape $client round $round" python3 -S "$CPUTIME" "$tag.time" -- "$@"
    t1=$EPOCHREALTIME
    s1=$(server_ns)
    local user="" sys=""
    read -r user sys < <(tail -n 1 "$tag.time" 2>/dev/null) || true
    [[ $user =~ ^[0-9.]+$ && $sys =~ ^[0-9.]+$ ]] || die "$shape $client round $round: no CPU times from wait4"
    local parsed requests rps own
    parsed=$(parse "$client" "$tag.out" 2>"$tag.check") || die "$shape $client round $round: $(tail -n 1 "$tag.check")"
    read -r requests rps own <<<"$parsed"

    pinned "$tag.count" "$shape $client round $round (counted)" \
        perf stat -x, -e raw_syscalls:sys_enter,context-switches -o "$tag.perf" -- "$@"
    local syscalls cs counted rest
    syscalls=$(perf_count "$tag.perf" raw_syscalls:sys_enter)
    cs=$(perf_count "$tag.perf" context-switches)
    [[ $syscalls =~ ^[0-9]+$ && $cs =~ ^[0-9]+$ ]] || die "$shape $client round $round: perf counted nothing: $(tr '\n' ' ' <"$tag.perf")"
    parsed=$(parse "$client" "$tag.count.out" 2>"$tag.count.check") || die "$shape $client round $round (counted): $(tail -n 1 "$tag.count.check")"
    read -r counted rest <<<"$parsed"

    # sampled: the user time perf's 10 kHz clock found in user space (ns), over that run's requests
    local sampled_ns=- sampled=-
    if [[ $SAMPLE -eq 1 ]]; then
        pinned "$tag.sampled" "$shape $client round $round (sampled)" \
            perf record -q -e cpu-clock:u -F 10000 -o "$tag.data" -- "$@"
        sampled_ns=$(perf script -i "$tag.data" -F period 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }')
        [[ $sampled_ns =~ ^[0-9]+$ && $sampled_ns -gt 0 ]] || die "$shape $client round $round: perf recorded no user-time samples"
        rm -f "$tag.data"
        parsed=$(parse "$client" "$tag.sampled.out" 2>"$tag.sampled.check") || die "$shape $client round $round (sampled): $(tail -n 1 "$tag.sampled.check")"
        read -r sampled rest <<<"$parsed"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$client" "$round" "$requests" \
        "$rps" "$user" "$sys" "$syscalls" "$cs" "$own" "$((s1 - s0))" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
        "$counted" "$sampled_ns" "$sampled" >>"$RESULTS"
}

H2=(--header 'content-type: application/grpc' --header 'te: trailers' -d "$BODY")
URL_GRPC="http://$ADDR/grpc_echo.v1.EchoService/Echo"
URL_H3="https://$ADDR/v1/echo"
STREAM_PROTO="$PWD/crates/wire/proto/stream.proto"
WB=("$BIN" echo --target "http://$ADDR" -c 10 --threads 1 -z "${SECS}s" --format json)
WB1=("$BIN" echo --target "http://$ADDR" --proto http)
WRK=(wrk -t1 -d"${SECS}s")
ECHO_PROTO="$PWD/crates/wire/proto/echo.proto"
# the vary shapes: the same sizes fixed and rendered (a UUID is 36 characters, the number 6 digits)
VARY_FIXED=(-H 'X-Id: 6f1c2a9e-4b7d-4c1e-9a3f-2d5e8b7c0a14' -d '{"ping":"Hello, world! 123456"}')
VARY_TEMPLATED=(-H 'X-Id: {{uuid}}' -d '{"ping":"Hello, world! {{rand 100000 999999}}"}')
VARY_HTTP=("$BIN" http "http://$ADDR/v1/echo" --proto http -c 10 -n "$HTTP_N" --threads 1 --format json)
VARY_GRPC=("$BIN" grpc "$ADDR" grpc_echo.v1.EchoService/Echo --proto-file "$ECHO_PROTO" -c 10 --conns 1
    --threads 1 -z "${SECS}s" --format json)

peer_cmd() {
    case "$1" in
        http) PEER=("${WRK[@]}" -c10 -s "$LUA" "http://$ADDR/v1/echo") ;;
        http-100) PEER=("${WRK[@]}" -c100 -s "$LUA" "http://$ADDR/v1/echo") ;;
        http-pipe16) PEER=("${WRK[@]}" -c1 -s "$PIPE16" "http://$ADDR/v1/echo") ;;
        grpc-1x10) PEER=(h2load -c1 -m10 -D "$SECS" "${H2[@]}" "$URL_GRPC") ;;
        grpc-10x1) PEER=(h2load -c10 -m1 -D "$SECS" "${H2[@]}" "$URL_GRPC") ;;
        h3-1x10) PEER=("$H3REF" --conns 1 -m 10 -d "$SECS" --cacert "$CERT" "$URL_H3") ;;
        h3-10x1) PEER=("$H3REF" --conns 10 -m 1 -d "$SECS" --cacert "$CERT" "$URL_H3") ;;
        grpc-bidi) PEER=("${WB[@]}" --proto grpc --conns 1) ;;
        http-vary) PEER=("${VARY_HTTP[@]}" "${VARY_FIXED[@]}") ;;
        grpc-vary) PEER=("${VARY_GRPC[@]}" "${VARY_FIXED[@]}") ;;
    esac
}
wb_cmd() {
    case "$1" in
        http) OURS=("${WB1[@]}" -c 10 -n "$HTTP_N" --threads 1 --format json) ;;
        http-100) OURS=("${WB1[@]}" -c 100 -n "$HTTP_N" --threads 1 --format json) ;;
        http-pipe16) OURS=("${WB1[@]}" -c 16 --pipeline 16 -n "$HTTP_N" --threads 1 --format json) ;;
        grpc-1x10) OURS=("${WB[@]}" --proto grpc --conns 1) ;;
        grpc-10x1) OURS=("${WB[@]}" --proto grpc --conns 10) ;;
        h3-1x10) OURS=("${WB[@]}" --proto h3 --conns 1 --cacert "$CERT") ;;
        h3-10x1) OURS=("${WB[@]}" --proto h3 --conns 10 --cacert "$CERT") ;;
        grpc-bidi) OURS=("$BIN" grpc "$ADDR" wirebench.stream.v1.StreamEcho/BidiEcho --proto-file "$STREAM_PROTO"
            -d '{"ping":"Hello, world!"}' --stream-messages 1000 -c 10 --conns 1 --threads 1 -z "${SECS}s" --format json) ;;
        http-vary) OURS=("${VARY_HTTP[@]}" "${VARY_TEMPLATED[@]}") ;;
        grpc-vary) OURS=("${VARY_GRPC[@]}" "${VARY_TEMPLATED[@]}") ;;
    esac
}
# the connections the floor client opens beside a shape (none: the shape has no floor row)
floor_conns() {
    case "$1" in
        http) echo 10 ;;
        http-100) echo 100 ;;
        http-pipe16) echo 1 ;;
    esac
}
# the requests the floor client pipelines on each connection
floor_depth() {
    case "$1" in
        http-pipe16) echo 16 ;;
        *) echo 1 ;;
    esac
}
peer_name() {
    case "$1" in
        http-vary) echo wirebench-fixed ;;
        http*) echo wrk ;;
        h3*) echo quinn+h3 ;;
        grpc-bidi) echo wirebench-unary ;;
        *-vary) echo wirebench-fixed ;;
        *) echo h2load ;;
    esac
}

started=$SECONDS
for round in $(seq "$ROUNDS"); do
    for shape in "${SHAPES[@]}"; do
        peer_cmd "$shape"
        wb_cmd "$shape"
        peer=$(peer_name "$shape")
        if ((round % 2 == 1)); then
            run "$shape" "$peer" "$round" "${PEER[@]}"
            run "$shape" wirebench "$round" "${OURS[@]}"
        else
            run "$shape" wirebench "$round" "${OURS[@]}"
            run "$shape" "$peer" "$round" "${PEER[@]}"
        fi
        conns=$(floor_conns "$shape")
        [[ -z $conns ]] || run "$shape" floor "$round" "$FLOOR" "${ADDR%:*}" "${ADDR##*:}" "$conns" "$HTTP_N" \
            "$FLOOR_REQUEST" "$(floor_depth "$shape")"
    done
done
echo "peers: runs done in $((SECONDS - started)) s" >&2

# ---------------------------------------------------------------------------------------------
# Table

quote() {
    local out="" a
    for a in "$@"; do
        a=${a//"$WORK"\/echo.lua/LUA}
        a=${a//"$WORK"\/pipeline16.lua/PIPE16}
        a=${a//"$WORK"\/echo-request.bin/BODY}
        a=${a//"$WORK"\/h3-cert.pem/CERT}
        a=${a//"$WORK"\/floor-request.txt/REQUEST}
        a=${a//"$WORK"\/floor/FLOOR}
        a=${a//"$PWD"\//}
        if [[ $a =~ [^A-Za-z0-9_./:=,@+-] ]]; then a="'$a'"; fi
        out+="${out:+ }$a"
    done
    printf '%s' "$out"
}
label() {
    case "$1" in
        http) echo "HTTP/1.1 10x1" ;;
        http-100) echo "HTTP/1.1 100x1" ;;
        http-pipe16) echo "HTTP/1.1 pipelined 16" ;;
        grpc-1x10) echo "gRPC 1x10" ;;
        grpc-10x1) echo "gRPC 10x1" ;;
        h3-1x10) echo "HTTP/3 1x10" ;;
        h3-10x1) echo "HTTP/3 10x1" ;;
        grpc-bidi) echo "gRPC bidi ping-pong 1x10" ;;
        http-vary) echo "HTTP/1.1 requests that vary 10x1" ;;
        grpc-vary) echo "gRPC calls that vary 1x10" ;;
    esac
}
# the version of crate $1 in Cargo.lock
locked() {
    awk -v n="name = \"$1\"" '$0 == n { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock 2>/dev/null || true
}
versions="$("$BIN" --version 2>/dev/null | head -n 1)"
! wants http || versions+=", $({ wrk --version 2>&1 || true; } | head -n 1 | awk '{print "wrk " $2}')"
! wants grpc || versions+=", $(h2load --version 2>/dev/null | head -n 1)"
! wants h3 || versions+=", h3_reference on quinn $(locked quinn), h3 $(locked h3), h3-quinn $(locked h3-quinn)"
inputs=""
! wants http || inputs+="FLOOR is benches/floor.c built with cc -O2, REQUEST the bytes wrk sends for LUA; "
! wants http || inputs+="LUA sets wrk.method POST, wrk.body {\"ping\":\"Hello, world!\"}, Content-Type: application/json; PIPE16 is LUA plus an init() that concatenates 16 wrk.format() copies and a request() that returns them; "
! wants grpc || inputs+="BODY is 00 00 00 00 0f 0a 0d 'Hello, world!'; "
! wants h3 || inputs+="CERT is the server's --h3-cert-out; h3_reference POSTs {\"ping\":\"Hello, world!\"} with content-type application/json; "
cmds=""
for shape in "${SHAPES[@]}"; do
    peer_cmd "$shape"
    wb_cmd "$shape"
    cmds+="${cmds:+; }$(label "$shape"): $(quote "${PEER[@]}") vs $(quote "${OURS[@]}")"
    conns=$(floor_conns "$shape")
    [[ -z $conns ]] || cmds+=" and FLOOR $(quote "${ADDR%:*}" "${ADDR##*:}") $conns $HTTP_N REQUEST $(floor_depth "$shape")"
done
passes=twice
sampling=""
if [[ $SAMPLE -eq 1 ]]; then
    passes="three times"
    sampling=", then taskset -c 1 perf record -q -e cpu-clock:u -F 10000 -o FILE -- CLIENT (user sampled: perf script -F period summed)"
fi
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
header="<!-- wirebench peers.sh, $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs, Linux $(uname -r), ${cpu_model:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; $versions; median of $ROUNDS round(s) of ${SECS} s runs; server: taskset -c 0 $(quote "$BIN") serve --addr 127.0.0.1:0 --threads 1 --h3-cert-out CERT (ADDR=$ADDR); each client $passes per round: taskset -c 1 python3 -S CPUTIME FILE -- CLIENT (CPU from wait4's rusage, req/s, server CPU), then taskset -c 1 perf stat -x, -e raw_syscalls:sys_enter,context-switches -o FILE -- CLIENT (syscalls, context switches)$sampling; $inputs$cmds -->"

table=$(IFS=,; python3 - "$RESULTS" "$header" "${SHAPES[*]}" <<'EOF'
import statistics, sys
path, header, shapes = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
rows = {}
for line in open(path):
    (shape, client, rnd, req, rps, user, sys_, sc, cs, own, server, wall, counted, sampled_ns,
     sampled) = line.rstrip("\n").split("\t")
    req, wall = int(req), float(wall)
    r = rows.setdefault((shape, client), {"rps": [], "cpu": [], "user": [], "sys": [], "sc": [], "own": [],
                                          "cs": [], "srv": [], "cbusy": [], "sbusy": [], "sampled": []})
    if sampled_ns != "-":
        r["sampled"].append(int(sampled_ns) / 1e3 / int(sampled))
    r["cbusy"].append((float(user) + float(sys_)) / wall * 100)
    r["sbusy"].append(int(server) / 1e9 / wall * 100)
    r["rps"].append(float(rps))
    r["cpu"].append((float(user) + float(sys_)) * 1e6 / req)
    r["user"].append(float(user) * 1e6 / req)
    r["sys"].append(float(sys_) * 1e6 / req)
    r["sc"].append(int(sc) / int(counted))
    r["cs"].append(int(cs) / int(counted))
    r["srv"].append(int(server) / 1e3 / req)
    if own != "-":
        r["own"].append(float(own))
med = lambda xs: statistics.median(xs) if xs else None
names = {"http": "HTTP/1.1, 10 conns x 1", "http-100": "HTTP/1.1, 100 conns x 1",
         "http-pipe16": "HTTP/1.1, 16 pipelined on 1 conn", "grpc-1x10": "gRPC, 1 conn x 10 streams",
         "grpc-10x1": "gRPC, 10 conns x 1 stream", "h3-1x10": "HTTP/3, 1 conn x 10 streams",
         "h3-10x1": "HTTP/3, 10 conns x 1 stream",
         "grpc-bidi": "gRPC 1 conn x 10: unary per call vs bidi ping-pong per message",
         "http-vary": "HTTP/1.1, 10 conns x 1: fixed vs placeholders",
         "grpc-vary": "gRPC, 1 conn x 10 streams: fixed vs placeholders"}
sampling = any(r["sampled"] for r in rows.values())
print(header)
print("| shape | client | req/s | client CPU µs/req | user / sys µs/req | syscalls/req (perf) "
      "| syscalls/req (own) | ctx switches/req | server CPU µs/req | CPU busy client / server "
      "| CPU/req wirebench÷peer | user/req wirebench÷peer | syscalls/req wirebench÷peer |"
      + (" user sampled µs/req | user sampled wirebench÷peer |" if sampling else ""))
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|" + ("--:|--:|" if sampling else ""))
for shape in shapes:
    clients = [c for (s, c) in rows if s == shape]
    peer = next(c for c in clients if c not in ("wirebench", "floor"))
    p = {k: med(v) for k, v in rows[(shape, peer)].items()}
    ours = {k: med(v) for k, v in rows[(shape, "wirebench")].items()}
    for client in (peer, "wirebench", "floor"):
        if (shape, client) not in rows:
            continue
        m = {k: med(v) for k, v in rows[(shape, client)].items()}
        own = "—" if m["own"] is None else f"{m['own']:.2f}"
        ratio_cpu = ratio_user = ratio_sc = ratio_sampled = "—"
        if client == "wirebench":
            ratio_cpu = f"{m['cpu'] / p['cpu']:.2f}x"
            ratio_user = f"{m['user'] / p['user']:.2f}x" if p["user"] else "—"
            ratio_sc = f"{m['sc'] / p['sc']:.2f}x"
            if m["sampled"] and p["sampled"]:
                ratio_sampled = f"{m['sampled'] / p['sampled']:.2f}x"
        elif client == "floor":
            # the floor row: wirebench against the floor
            ratio_cpu = f"{ours['cpu'] / m['cpu']:.2f}x of the floor"
        sampled = "" if not sampling else (
            f" {'—' if m['sampled'] is None else format(m['sampled'], '.3f')} | {ratio_sampled} |")
        print(f"| {names[shape]} | {client} | {m['rps']:,.0f} | {m['cpu']:.2f} | {m['user']:.2f} / {m['sys']:.2f} "
              f"| {m['sc']:.2f} | {own} | {m['cs']:.3f} | {m['srv']:.2f} | {m['cbusy']:.0f}% / {m['sbusy']:.0f}% "
              f"| {ratio_cpu} | {ratio_user} | {ratio_sc} |{sampled}")
EOF
)
printf '%s\n' "$table"
if [[ -n $OUTFILE ]]; then
    printf '%s\n' "$table" >"$OUTFILE"
fi
