#!/usr/bin/env bash
# Fixed gRPC peer benchmark: client CPU per request of h2load (nghttp2) against wirebench's gRPC
# clients, on the same work and the same server: one `wirebench serve --threads 1` pinned to CPU 0,
# every client pinned to CPU 1, h2load and each wirebench client variant alternating within each
# round (the order flips every round). Shapes are C connections x M streams each:
#
#   h2load:    h2load -n 200000 -c C -m M -t 1 -d FILE -H 'content-type: application/grpc'
#                  -H 'te: trailers' http://127.0.0.1:PORT/grpc_echo.v1.EchoService/Echo
#   wirebench: wirebench echo --target http://127.0.0.1:PORT --proto grpc -c $((C*M)) --conns C
#                  -n 200000 --threads 1 --format json [--h2-client VARIANT]
#
# FILE is one gRPC-framed EchoRequest {ping: "Hello, world!"}: 00 00 00 00 0f 0a 0d 'Hello, world!'.
#
#   scripts/peers-grpc.sh [--shapes 1x10,10x1,4x64] [--clients wire,h2] [--rounds 3] [--quick]
#                         [-o FILE] [--raw DIR]
#
# --clients lists the wirebench variants, each run with --h2-client VARIANT; the variant `default`
# adds no flag (for a binary without --h2-client). --quick is -n 20000 and 1 round (for checking
# the script). --raw keeps every tool's output. Takes about rounds x shapes x (1 + variants) x 2
# runs of a few seconds each (200000 requests at 20k-300k req/s): 3-5 min by default.
#
# Each client runs twice per round, back to back: timed, `taskset -c 1 /usr/bin/time -f '%U %S'
# -- CLIENT`, for the CPU figures and req/s; then counted, `taskset -c 1 perf stat -e
# raw_syscalls:sys_enter,context-switches -- CLIENT`, for syscalls and context switches (each over
# the counted run's answered requests). Apart, because the tracepoint perf counts syscalls with
# costs something in every syscall: CPU measured under it would charge a client for its syscall
# count twice (at 10x1 it added about 6% to h2load's CPU per request and 1% to wirebench's). The
# CPU figures are GNU time's user and sys of the client process alone (all its threads, its whole
# life: start, connects, run, close); the counts are perf's over the client process. GNU time
# prints user and sys in 10 ms steps: 0.05 µs/req at 200000 requests, 0.5 µs/req with --quick.
# Requests are what the client counted as answered: h2load's "N succeeded", wirebench's summary.ok; req/s is h2load's
# "finished in ..., N req/s" and wirebench's summary.requests_per_sec. A run with failures
# (h2load failed, errored or timed out > 0, or answers without an EchoResponse; wirebench
# summary.failed > 0; a non-zero exit; no result within 120 s) is named in the failures column
# and makes the script exit 1 after printing the tables.
#
# Prints two markdown tables on stdout and to FILE with -o: medians over the rounds (the ratio is
# wirebench's median CPU/req over h2load's in the same shape), then every round's client CPU
# µs/req. Progress goes to stderr. Needs h2load, perf (allowed to count raw_syscalls:sys_enter),
# taskset, python3, timeout and GNU time (installed with apt-get when absent), and the release
# binary target/release/wirebench ($WIREBENCH to use another). Each run is killed after 120 s.
set -euo pipefail

SHAPES_ARG=1x10,10x1,4x64
CLIENTS_ARG=wire,h2
ROUNDS=3
QUICK=0
OUTFILE=""
RAW=""
TOTAL=200000
LIMIT=120

usage() {
    sed -n '2,39s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --shapes) SHAPES_ARG="${2:?}"; shift ;;
        --clients) CLIENTS_ARG="${2:?}"; shift ;;
        --rounds) ROUNDS="${2:?}"; shift ;;
        --quick) QUICK=1 ;;
        -o | --output) OUTFILE="${2:?}"; shift ;;
        --raw) RAW="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
if [[ $QUICK -eq 1 ]]; then
    TOTAL=20000
    ROUNDS=1
fi
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || die "--rounds must be a positive integer, not $ROUNDS"

SHAPES=()
IFS=, read -r -a shape_list <<<"$SHAPES_ARG"
for shape in "${shape_list[@]}"; do
    [[ $shape =~ ^([0-9]+)x([0-9]+)$ ]] || die "--shapes takes CxM,... (e.g. 1x10,4x64), not $SHAPES_ARG"
    ((BASH_REMATCH[1] >= 1 && BASH_REMATCH[2] >= 1)) || die "shape $shape: C and M must be at least 1"
    ((BASH_REMATCH[1] <= TOTAL)) || die "shape $shape: more connections than the $TOTAL requests"
    [[ " ${SHAPES[*]} " != *" $shape "* ]] || die "shape $shape given twice"
    SHAPES+=("$shape")
done
[[ ${#SHAPES[@]} -ge 1 ]] || die "--shapes is empty"

VARIANTS=()
IFS=, read -r -a variant_list <<<"$CLIENTS_ARG"
for variant in "${variant_list[@]}"; do
    [[ $variant =~ ^[a-z0-9][a-z0-9_-]*$ ]] || die "--clients takes names like wire,h2 or default, not $CLIENTS_ARG"
    [[ " ${VARIANTS[*]} " != *" $variant "* ]] || die "client variant $variant given twice"
    VARIANTS+=("$variant")
done
[[ ${#VARIANTS[@]} -ge 1 ]] || die "--clients is empty"

# Paths given relative to where the script was started from.
[[ -z $OUTFILE ]] || OUTFILE="$(realpath -m -- "$OUTFILE")"
[[ -z $RAW ]] || RAW="$(realpath -m -- "$RAW")"
BIN="${WIREBENCH:-}"
[[ $BIN != */* ]] || BIN="$(realpath -m -- "$BIN")"
cd "$(dirname "$0")/.."
BIN="${BIN:-target/release/wirebench}"
[[ -x $BIN ]] || die "$BIN not found: build it first with cargo build --release"
if [[ -n "$(find src Cargo.toml -newer "$BIN" -print -quit 2>/dev/null)" ]]; then
    echo "peers-grpc: warning: $BIN is older than the sources (it is measured as it is)" >&2
fi
for variant in "${VARIANTS[@]}"; do
    if [[ $variant != default ]]; then
        "$BIN" echo --help 2>/dev/null | grep -q -- '--h2-client' ||
            die "$BIN has no --h2-client (an older binary?): use --clients default"
        break
    fi
done

# ---------------------------------------------------------------------------------------------
# Tools

SUDO=()
[[ "$(id -u)" -eq 0 ]] || SUDO=(sudo -n)
missing=()
[[ -x /usr/bin/time ]] || missing+=(time)
for tool in h2load:nghttp2-client perf:linux-perf taskset:util-linux python3:python3 timeout:coreutils; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get: install them by hand"
    echo "peers-grpc: installing ${missing[*]} with apt-get" >&2
    {
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    } </dev/null >&2 || die "apt-get install ${missing[*]} failed"
fi
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package time)"
/usr/bin/time -f '%U %S' -o /dev/null -- "$BASH" -c : 2>/dev/null || die "/usr/bin/time is not GNU time (needs -f and -o)"
for tool in h2load:nghttp2-client perf:linux-perf taskset:util-linux python3:python3 timeout:coreutils; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || die "${tool%%:*} not found (Debian package ${tool#*:})"
done
perf stat -x, -e raw_syscalls:sys_enter,context-switches -o /dev/null -- "$BASH" -c : 2>/dev/null ||
    die "perf stat cannot count raw_syscalls:sys_enter here (run as root or lower kernel.perf_event_paranoid)"
if ! taskset -c 0 "$BASH" -c : 2>/dev/null || ! taskset -c 1 "$BASH" -c : 2>/dev/null; then
    die "cannot pin to CPUs 0 and 1 (this machine or cgroup has $(nproc) CPU(s))"
fi

# ---------------------------------------------------------------------------------------------
# Work directory, server, cleanup

WORK="$(mktemp -d /tmp/wirebench-peers-grpc.XXXXXX)"
SERVER=""
CLIENT=""
cleanup() {
    # Only the script itself: a background job forked from it (server, client) can take a signal
    # before it execs, and would run this trap too.
    [[ $BASHPID -eq $$ ]] || return 0
    # A client runs under timeout, which leads its own process group.
    [[ -z $CLIENT ]] || kill -- "-$CLIENT" 2>/dev/null || true
    if [[ -n $SERVER ]]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
    if [[ -n $RAW ]]; then
        mkdir -p "$RAW" && cp -r "$WORK"/. "$RAW"/ && echo "peers-grpc: raw outputs in $RAW" >&2
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# EchoRequest {ping: "Hello, world!"} with the gRPC prefix: flag 0, length 15; field 1, 13 bytes.
BODY="$WORK/echo-request.bin"
printf '\x00\x00\x00\x00\x0f\x0a\x0dHello, world!' >"$BODY"

# The log exists before the server starts writing it, so the first read cannot miss the file.
: >"$WORK/serve.log"
taskset -c 0 "$BIN" serve --addr 127.0.0.1:0 --threads 1 2>>"$WORK/serve.log" </dev/null &
SERVER=$!
ADDR=""
for _ in $(seq 100); do
    ADDR=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$WORK/serve.log" || true)
    [[ -n $ADDR ]] && break
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
done
[[ -n $ADDR ]] || die "wirebench serve did not start: $(tr '\n' ' ' <"$WORK/serve.log")"
echo "peers-grpc: server on $ADDR (CPU 0), clients on CPU 1, $ROUNDS round(s) of $TOTAL requests per run," \
    "shapes ${SHAPES[*]}, wirebench variants ${VARIANTS[*]}" >&2

URL="http://$ADDR/grpc_echo.v1.EchoService/Echo"
# Check one gRPC answer before measuring (OK with a message), with curl when there is one.
if command -v curl >/dev/null 2>&1; then
    curl -sS --http2-prior-knowledge -D "$WORK/grpc.head" -o "$WORK/grpc.resp" \
        -H 'content-type: application/grpc' -H 'te: trailers' --data-binary @"$BODY" "$URL" ||
        die "curl gRPC Echo failed"
    grep -qi '^grpc-status: *0' "$WORK/grpc.head" ||
        die "gRPC Echo did not end with grpc-status 0: $(tr '\r\n' '  ' <"$WORK/grpc.head")"
    python3 - "$WORK/grpc.resp" <<'EOF' || die "gRPC Echo answer is not one framed EchoResponse with the ping"
import sys
b = open(sys.argv[1], "rb").read()
assert len(b) >= 5 and b[0] == 0 and int.from_bytes(b[1:5], "big") == len(b) - 5
assert b"Hello, world!" in b[5:]
EOF
fi

# ---------------------------------------------------------------------------------------------
# Runs

RESULTS="$WORK/results.tsv"
: >"$RESULTS"

# perf's count of event $2 in perf stat -x, file $1.
perf_count() {
    awk -F, -v e="$2" '$3 == e { print $1 }' "$1" 2>/dev/null || true
}

# One line, no tabs: for the failures column.
oneline() {
    tr '\t\n' '  ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-200
}

# check CLIENT OUT: answered requests, req/s and failures (tab-separated) from one run's output.
check() {
    python3 - "$1" "$2" <<'EOF'
import json, re, sys
client, path = sys.argv[1], sys.argv[2]
text = open(path, errors="replace").read()
fails = []
if client == "h2load":
    m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    codes = re.search(r"status codes: (\d+) 2xx", text)
    rps = re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", text)
    data = re.search(r"traffic: .*, ([\d.]+\w*) \((\d+)\) data", text)
    if not (m and codes and rps and data):
        sys.exit("no request counts in h2load's output")
    total, ok, failed, errored, timedout = int(m.group(1)), int(m.group(4)), int(m.group(5)), int(m.group(6)), int(m.group(7))
    if failed or errored or timedout:
        fails.append(f"h2load: {failed} failed, {errored} errored, {timedout} timeout")
    if ok != total:
        fails.append(f"h2load: {ok} of {total} succeeded")
    if int(codes.group(1)) != ok:
        fails.append(f"h2load: {ok} succeeded but {codes.group(1)} 2xx")
    # A gRPC error is a trailers-only answer with no DATA; each EchoResponse is at least
    # 5 + 2 + 13 bytes (the echoed ping), so fewer data bytes than that means errors.
    if int(data.group(2)) < ok * 20:
        fails.append(f"h2load: {data.group(2)} data bytes for {ok} answers: not every answer carried an EchoResponse")
    print(ok, rps.group(1), "; ".join(fails), sep="\t")
else:
    try:
        r = json.loads(text)["runs"][0]
        s = r["summary"]
        ok, failed, rps = int(s["ok"]), int(s["failed"]), float(s["requests_per_sec"])
    except (ValueError, KeyError, IndexError, TypeError) as e:
        sys.exit(f"no summary in wirebench's JSON ({type(e).__name__}: {e})")
    if failed:
        fails.append(f"wirebench: {ok} ok, {failed} failed")
    if r.get("interrupted"):
        fails.append("wirebench: run interrupted")
    print(ok, rps, "; ".join(fails), sep="\t")
EOF
}

# pinned TAG WRAPPER... -- COMMAND...: one run of COMMAND on CPU 1 under WRAPPER, killed after
# LIMIT s; output in TAG.out and TAG.err. Sets RC and FAILS (its failures, if any).
pinned() {
    local tag=$1
    shift
    RC=0
    timeout -k 5 "$LIMIT" taskset -c 1 "$@" >"$tag.out" 2>"$tag.err" </dev/null &
    CLIENT=$!
    wait "$CLIENT" || RC=$?
    CLIENT=""
    FAILS=()
    if [[ $RC -eq 124 || $RC -eq 137 ]]; then
        FAILS+=("killed after $LIMIT s")
    elif [[ $RC -ne 0 ]]; then
        FAILS+=("exit $RC: $(tail -q -n 2 "$tag.err" 2>/dev/null | oneline)")
    fi
}

# run SHAPE CLIENT ROUND COMMAND...: the client twice, pinned: timed (GNU time alone: the CPU
# figures and req/s) and counted (perf stat alone: syscalls and context switches), since the
# tracepoint perf counts syscalls with adds to every syscall, which would charge a client for its
# syscall count twice. Appends a line to $RESULTS ("-" for what could not be measured, the
# failures of either run in the last field).
run() {
    local shape=$1 client=$2 round=$3
    shift 3
    local tag="$WORK/$shape-$client-$round"
    kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(tail -n +2 "$WORK/serve.log" | tail -n 3 | tr '\n' ' ')"
    echo "peers-grpc: round $round/$ROUNDS $shape $client" >&2
    local fails=() parsed requests=- rps=- failed="" counted=- rest=""

    pinned "$tag" /usr/bin/time -f '%U %S' -o "$tag.time" -- "$@"
    fails+=(${FAILS[@]+"${FAILS[@]}"})
    local user="" sys=""
    read -r user sys < <(tail -n 1 "$tag.time" 2>/dev/null) || true
    [[ $user =~ ^[0-9.]+$ && $sys =~ ^[0-9.]+$ ]] || { user=-; sys=-; fails+=("no CPU times from /usr/bin/time"); }
    if parsed=$(check "$client" "$tag.out" 2>"$tag.check"); then
        IFS=$'\t' read -r requests rps failed <<<"$parsed"
        [[ -z $failed ]] || fails+=("$failed")
    else
        fails+=("$(tail -n 1 "$tag.check" | oneline)")
    fi
    [[ $requests != 0 ]] || { requests=-; fails+=("no request answered"); }

    pinned "$tag.count" perf stat -x, -e raw_syscalls:sys_enter,context-switches -o "$tag.perf" -- "$@"
    fails+=(${FAILS[@]+"${FAILS[@]}"})
    local syscalls cs
    syscalls=$(perf_count "$tag.perf" raw_syscalls:sys_enter)
    cs=$(perf_count "$tag.perf" context-switches)
    [[ $syscalls =~ ^[0-9]+$ && $cs =~ ^[0-9]+$ ]] || { syscalls=-; cs=-; fails+=("perf counted nothing"); }
    if parsed=$(check "$client" "$tag.count.out" 2>"$tag.count.check"); then
        IFS=$'\t' read -r counted rest failed <<<"$parsed"
        [[ -z $failed ]] || fails+=("counted run: $failed")
    else
        fails+=("counted run: $(tail -n 1 "$tag.count.check" | oneline)")
    fi
    [[ $counted != 0 ]] || { counted=-; fails+=("counted run: no request answered"); }
    kill -0 "$SERVER" 2>/dev/null || die "the server exited during $shape $client round $round: $(tail -n +2 "$WORK/serve.log" | tail -n 3 | tr '\n' ' ')"

    local fail_text=""
    if [[ ${#fails[@]} -gt 0 ]]; then
        fail_text=$(printf '%s; ' "${fails[@]}" | sed 's/; $//' | oneline)
        echo "peers-grpc: FAILED: round $round $shape $client: $fail_text" >&2
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$client" "$round" "$requests" "$rps" \
        "$user" "$sys" "$syscalls" "$cs" "$counted" "$fail_text" >>"$RESULTS"
}

H2=(-H 'content-type: application/grpc' -H 'te: trailers')

# peer_cmd C M: PEER is h2load's command for C connections x M streams.
peer_cmd() {
    PEER=(h2load -n "$TOTAL" -c "$1" -m "$2" -t 1 -d "$BODY" "${H2[@]}" "$URL")
}
# wb_cmd C IN_FLIGHT VARIANT: OURS is wirebench's command for C connections, IN_FLIGHT = C x M.
wb_cmd() {
    OURS=("$BIN" echo --target "http://$ADDR" --proto grpc -c "$2" --conns "$1" -n "$TOTAL" --threads 1 --format json)
    [[ $3 == default ]] || OURS+=(--h2-client "$3")
}

started=$SECONDS
runs=0
for round in $(seq "$ROUNDS"); do
    for shape in "${SHAPES[@]}"; do
        conns=${shape%x*}
        streams=${shape#*x}
        peer_cmd "$conns" "$streams"
        order=(h2load "${VARIANTS[@]}")
        if ((round % 2 == 0)); then
            reversed=()
            for ((i = ${#order[@]} - 1; i >= 0; i--)); do reversed+=("${order[i]}"); done
            order=("${reversed[@]}")
        fi
        for client in "${order[@]}"; do
            if [[ $client == h2load ]]; then
                run "$shape" h2load "$round" "${PEER[@]}"
            else
                wb_cmd "$conns" "$((conns * streams))" "$client"
                run "$shape" "wirebench-$client" "$round" "${OURS[@]}"
            fi
            runs=$((runs + 1))
        done
    done
done
echo "peers-grpc: $runs runs in $((SECONDS - started)) s" >&2

# ---------------------------------------------------------------------------------------------
# Tables

quote() {
    local out="" a
    for a in "$@"; do
        a=${a//"$WORK"\/echo-request.bin/FILE}
        a=${a//"$ADDR"/127.0.0.1:PORT}
        a=${a//"$BIN"/wirebench}
        if [[ $a =~ [^A-Za-z0-9_./:=,@+-] ]]; then a="'$a'"; fi
        out+="${out:+ }$a"
    done
    printf '%s' "$out"
}
peer_cmd C M
cmd_peer=$(quote "${PEER[@]}")
wb_cmd C IN_FLIGHT default
cmd_wb=$(quote "${OURS[@]}")
cmd_wb=${cmd_wb//IN_FLIGHT/\$((C*M))}
variant_text=""
for variant in "${VARIANTS[@]}"; do
    if [[ $variant == default ]]; then
        variant_text+="${variant_text:+, }default (no flag)"
    else
        variant_text+="${variant_text:+, }$variant (--h2-client $variant)"
    fi
done
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
header="<!-- wirebench peers-grpc.sh, $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs, Linux $(uname -r), ${cpu_model:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; wirebench = $(quote "$BIN") ($("$BIN" --version 2>/dev/null | head -n 1)), $(h2load --version 2>/dev/null | head -n 1); median of $ROUNDS round(s) of $TOTAL requests per run; server: taskset -c 0 wirebench serve --addr 127.0.0.1:0 --threads 1 (PORT=${ADDR##*:}); each client twice per round: taskset -c 1 /usr/bin/time -f '%U %S' -o OUT -- CLIENT (CPU, req/s), then taskset -c 1 perf stat -x, -e raw_syscalls:sys_enter,context-switches -o OUT -- CLIENT (syscalls, context switches); FILE is 00 00 00 00 0f 0a 0d 'Hello, world!'; h2load: $cmd_peer; wirebench: $cmd_wb [--h2-client VARIANT]; variants: $variant_text; shapes (C x M): ${SHAPES[*]} -->"

table=$(python3 - "$RESULTS" "$header" "$ROUNDS" "${SHAPES[*]}" "${VARIANTS[*]}" <<'EOF'
import statistics, sys
path, header, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
shapes, variants = sys.argv[4].split(), sys.argv[5].split()
clients = ["h2load"] + ["wirebench-" + v for v in variants]
rows = {}
for line in open(path):
    shape, client, rnd, req, rps, user, sys_, sc, cs, counted, fail = line.rstrip("\n").split("\t")
    r = rows.setdefault((shape, client), {"rps": [], "cpu": [], "user": [], "sys": [], "sc": [], "cs": [],
                                          "round_cpu": {}, "fails": []})
    if fail:
        r["fails"].append(f"round {rnd}: {fail}")
    if sc != "-" and counted != "-":
        r["sc"].append(int(sc) / int(counted))
        r["cs"].append(int(cs) / int(counted))
    if req == "-":
        continue
    req = int(req)
    if rps != "-":
        r["rps"].append(float(rps))
    if user != "-":
        cpu = (float(user) + float(sys_)) * 1e6 / req
        r["cpu"].append(cpu)
        r["user"].append(float(user) * 1e6 / req)
        r["sys"].append(float(sys_) * 1e6 / req)
        r["round_cpu"][int(rnd)] = cpu
med = lambda xs: statistics.median(xs) if xs else None
def fmt(x, spec):
    return "—" if x is None else format(x, spec)
def name(shape, client):
    c, m = shape.split("x")
    return f"{c} conn{'s' if c != '1' else ''} x {m} stream{'s' if m != '1' else ''}"
def label(client):
    if client == "h2load":
        return "h2load"
    v = client[len("wirebench-"):]
    return "wirebench" if v == "default" else f"wirebench ({v})"
empty = {"rps": [], "cpu": [], "user": [], "sys": [], "sc": [], "cs": [], "round_cpu": {}, "fails": ["no run"]}
print(header)
print("| shape | client | req/s | client CPU µs/req | user µs/req | sys µs/req | syscalls/req (perf) "
      "| ctx switches/req | CPU/req ÷ h2load | failures |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|---|")
for shape in shapes:
    p = rows.get((shape, "h2load"), empty)
    for client in clients:
        r = rows.get((shape, client), empty)
        m = {k: med(v) for k, v in r.items() if isinstance(v, list) and k != "fails"}
        ratio = "—"
        pc = med(p["cpu"])
        if client != "h2load" and m["cpu"] is not None and pc:
            ratio = f"{m['cpu'] / pc:.2f}x"
        fails = "**FAILED: " + "; ".join(r["fails"]) + "**" if r["fails"] else "none"
        fails = fails.replace("|", "\\|")
        print(f"| {name(shape, client)} | {label(client)} | {fmt(m['rps'], ',.0f')} | {fmt(m['cpu'], '.2f')} "
              f"| {fmt(m['user'], '.2f')} | {fmt(m['sys'], '.2f')} | {fmt(m['sc'], '.2f')} | {fmt(m['cs'], '.3f')} "
              f"| {ratio} | {fails} |")
print()
print("Client CPU µs/req in every round (! marks a round with failures):")
print()
print("| shape | client | " + " | ".join(f"round {i}" for i in range(1, rounds + 1)) + " | median |")
print("|---|---|" + "--:|" * (rounds + 1))
for shape in shapes:
    for client in clients:
        r = rows.get((shape, client), empty)
        failed_rounds = {f.split(":")[0] for f in r["fails"]}
        cells = []
        for i in range(1, rounds + 1):
            cell = fmt(r["round_cpu"].get(i), ".2f")
            if f"round {i}" in failed_rounds:
                cell += " !"
            cells.append(cell)
        print(f"| {name(shape, client)} | {label(client)} | " + " | ".join(cells) + f" | {fmt(med(r['cpu']), '.2f')} |")
EOF
)
printf '%s\n' "$table"
if [[ -n $OUTFILE ]]; then
    printf '%s\n' "$table" >"$OUTFILE"
fi

failures=$(awk -F'\t' '$11 != "" { n++ } END { print n + 0 }' "$RESULTS")
[[ $failures -eq 0 ]] || die "$failures of $runs run(s) had failures: see the failures column"
