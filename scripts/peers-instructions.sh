#!/usr/bin/env bash
# Client instructions a request: wirebench against wrk (HTTP/1.1) and h2load (gRPC) on the same
# work and the same server, counted by callgrind. What a client does itself (its user-space
# work) counted exactly: /usr/bin/time's user time is sampled at the kernel's tick (250 Hz on a
# typical VM), so in scripts/peers.sh a user-time ratio moves by 10-20% between runs of the same
# binaries; an instruction count does not move with the machine's load. Instructions are not
# time (what an instruction costs differs between clients), so this table stands beside
# peers.sh's, not in its place. The kernel's work is in neither count's reach here: that is
# peers.sh's system time. Under callgrind a client runs some 50 times slower, so the server is
# always ahead of it: each client finds larger batches of answers at each wait than in a timed
# run (fewer waits a request), every client alike.
#
# The shapes and commands are peers.sh's (every wirebench setting at its default but the
# request count; wrk with the same LUA and PIPE16 scripts, h2load with the same BODY):
#
#   http         wrk -t1 -c10 -dD -s LUA            vs wirebench echo --proto http -c 10 -n N
#   http-100     wrk -t1 -c100 -dD -s LUA           vs wirebench echo --proto http -c 100 -n N
#   http-pipe16  wrk -t1 -c1 -dD -s PIPE16          vs wirebench echo --proto http -c 16 --pipeline 16 -n N
#   grpc-1x10    h2load -c1 -m10 -n N               vs wirebench echo --proto grpc -c 10 --conns 1 -n N
#   grpc-10x1    h2load -c10 -m1 -n N               vs wirebench echo --proto grpc -c 10 --conns 10 -n N
#
# Each client runs twice under `taskset -c 1 valgrind --tool=callgrind`, small and large (N
# 10,000 and 30,000; wrk, which runs by time, 3 s and 9 s), against one `wirebench serve
# --threads 1` on CPU 0; instructions a request = (large run's total - small run's) / (its
# requests - the small run's), so start-up, connecting and closing cancel out. Requests are
# what each client counted: wrk's "N requests in", h2load's "N succeeded", wirebench's summary.ok.
#
#   scripts/peers-instructions.sh [--shapes LIST] [-o FILE]
#
# Prints a markdown table on stdout (and to FILE with -o); progress goes to stderr. Takes about
# 2 minutes for the five shapes. Needs valgrind (installed with apt-get when absent), wrk,
# h2load, taskset, python3 and the release binary wirebench in CARGO_TARGET_DIR or target/
# ($WIREBENCH to use another).
set -euo pipefail

OUTFILE=""
ALL_SHAPES=(http http-100 http-pipe16 grpc-1x10 grpc-10x1)
SHAPE_LIST=""

usage() {
    sed -n '2,36s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --shapes) SHAPE_LIST="${2:?}"; shift ;;
        -o | --output) OUTFILE="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done

select_shapes "${ALL_SHAPES[*]}" "$SHAPE_LIST"

[[ -z $OUTFILE ]] || OUTFILE="$(realpath -m -- "$OUTFILE")"
find_wirebench

command -v valgrind >/dev/null 2>&1 || apt_install peers-instructions valgrind
for tool in callgrind_annotate:valgrind wrk:wrk h2load:nghttp2-client taskset:util-linux python3:python3; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || die "${tool%%:*} not found (Debian package ${tool#*:})"
done
check_pinning

WORK="$(mktemp -d /tmp/wirebench-instructions.XXXXXX)"
SERVER=""
cleanup() {
    if [[ -n $SERVER ]]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# peers.sh's request scripts and gRPC body
write_peer_inputs "$WORK"
LUA="$WORK/echo.lua"
PIPE16="$WORK/pipeline16.lua"
BODY="$WORK/echo-request.bin"

start_pinned_server "$BIN" "$WORK/serve.log" --no-h3
echo "peers-instructions: server on $ADDR (CPU 0), clients on CPU 1 under callgrind" >&2

GRPC_URL="http://$ADDR/grpc_echo.v1.EchoService/Echo"
H2LOAD=(h2load --header 'content-type: application/grpc' --header 'te: trailers' -d "$BODY")
WB=("$BIN" echo --target "http://$ADDR" --threads 1 --format json)

# The client command of `shape` for `who` at size `size` (small or large), into CMD.
command_for() {
    local shape=$1 who=$2 size=$3 n d
    if [[ $size == small ]]; then n=10000 d=3s; else n=30000 d=9s; fi
    case "$who:$shape" in
        peer:http) CMD=(wrk -t1 -c10 "-d$d" -s "$LUA" "http://$ADDR/v1/echo") ;;
        peer:http-100) CMD=(wrk -t1 -c100 "-d$d" -s "$LUA" "http://$ADDR/v1/echo") ;;
        peer:http-pipe16) CMD=(wrk -t1 -c1 "-d$d" -s "$PIPE16" "http://$ADDR/v1/echo") ;;
        peer:grpc-1x10) CMD=("${H2LOAD[@]}" -c1 -m10 -n "$n" "$GRPC_URL") ;;
        peer:grpc-10x1) CMD=("${H2LOAD[@]}" -c10 -m1 -n "$n" "$GRPC_URL") ;;
        ours:http) CMD=("${WB[@]}" --proto http -c 10 -n "$n") ;;
        ours:http-100) CMD=("${WB[@]}" --proto http -c 100 -n "$n") ;;
        ours:http-pipe16) CMD=("${WB[@]}" --proto http -c 16 --pipeline 16 -n "$n") ;;
        ours:grpc-1x10) CMD=("${WB[@]}" --proto grpc -c 10 --conns 1 -n "$n") ;;
        ours:grpc-10x1) CMD=("${WB[@]}" --proto grpc -c 10 --conns 10 -n "$n") ;;
    esac
}

# One run under callgrind: prints "REQUESTS INSTRUCTIONS".
counted() {
    local out=$1
    shift
    timeout 600 taskset -c 1 valgrind --tool=callgrind --callgrind-out-file="$out.cg" -- "$@" \
        >"$out.out" 2>"$out.err" || die "$(basename "$out") failed: $(tail -n 3 "$out.err" | tr '\n' ' ')"
    python3 - "$out" <<'EOF'
import json, re, subprocess, sys
out = sys.argv[1]
text = open(out + ".out").read()
m = re.search(r"(\d+) requests in", text) or re.search(r"(\d+) succeeded", text)
if m:
    requests = int(m.group(1))
else:
    try:
        requests = json.loads(text)["runs"][0]["summary"]["ok"]
    except (ValueError, KeyError, IndexError):
        sys.exit(f"no request count in {out}.out")
ann = subprocess.run(["callgrind_annotate", out + ".cg"], capture_output=True, text=True).stdout
t = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", ann)
if not t:
    sys.exit(f"no instruction total in {out}.cg")
print(requests, t.group(1).replace(",", ""))
EOF
}

ROWS="$WORK/rows.tsv"
: >"$ROWS"
for shape in "${SHAPES[@]}"; do
    for who in peer ours; do
        for size in small large; do
            command_for "$shape" "$who" "$size"
            echo "peers-instructions: $shape $who $size" >&2
            read -r req ins < <(counted "$WORK/$shape-$who-$size" "${CMD[@]}")
            printf '%s\t%s\t%s\t%s\t%s\n' "$shape" "$who" "$size" "$req" "$ins" >>"$ROWS"
        done
    done
done

wrk_v=$(wrk -v 2>&1 | head -n 1 | cut -d' ' -f1-2 || true)
h2_v=$(h2load --version 2>&1 | head -n 1 || true)
header="<!-- wirebench peers-instructions.sh, $(date -u '+%Y-%m-%d %H:%M UTC'): $(nproc) CPUs, Linux $(uname -r); $("$BIN" --version 2>/dev/null || echo wirebench), $wrk_v, $h2_v, $(valgrind --version); server: taskset -c 0 BIN serve --addr 127.0.0.1:0 --threads 1 --no-h3; each client: taskset -c 1 valgrind --tool=callgrind -- CLIENT, at 10,000 and 30,000 requests (wrk: -d3s and -d9s), the difference's instructions over the difference's requests -->"
table=$(python3 - "$ROWS" "$header" <<'EOF'
import sys
rows, header = sys.argv[1], sys.argv[2]
names = {"http": "HTTP/1.1, 10 conns x 1", "http-100": "HTTP/1.1, 100 conns x 1",
         "http-pipe16": "HTTP/1.1, 16 pipelined on 1 conn", "grpc-1x10": "gRPC, 1 conn x 10 streams",
         "grpc-10x1": "gRPC, 10 conns x 1 stream"}
runs = {}
order = []
for line in open(rows):
    shape, who, size, req, ins = line.split("\t")
    runs[(shape, who, size)] = (int(req), int(ins))
    if shape not in order:
        order.append(shape)
print(header)
print("| shape | client | requests (small / large) | instructions a request | wirebench ÷ peer |")
print("|---|---|--:|--:|--:|")
for shape in order:
    per = {}
    for who in ("peer", "ours"):
        (r1, i1), (r2, i2) = runs[(shape, who, "small")], runs[(shape, who, "large")]
        if r2 <= r1:
            sys.exit(f"{shape} {who}: the large run answered no more requests ({r2}) than the small ({r1})")
        per[who] = ((i2 - i1) / (r2 - r1), r1, r2)
    peer = "wrk" if shape.startswith("http") else "h2load"
    for who, name in (("peer", peer), ("ours", "wirebench")):
        ipr, r1, r2 = per[who]
        ratio = f"{ipr / per['peer'][0]:.2f}x" if who == "ours" else "—"
        print(f"| {names[shape]} | {name} | {r1:,} / {r2:,} | {ipr:,.0f} | {ratio} |")
EOF
)
printf '%s\n' "$table"
[[ -z $OUTFILE ]] || printf '%s\n' "$table" >"$OUTFILE"
