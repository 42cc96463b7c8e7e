#!/usr/bin/env bash
# The capacity search (`--find-max`) measured where its answer is known, then its etcd table;
# each part bounded, one after another:
#
#   1. test: tests/load_capacity.rs optimized (cargo test --release): p99 < 5 ms against
#      `serve --delay 2ms`, the answer against the closed loop's rate and c / 2 ms
#   2. delay: `serve --delay 2ms --threads 1`, -c 4 and -c 8 (gRPC, then HTTP/1.1 at -c 4),
#      --find-max 'p99<5ms', ROUNDS times each (default 3): the answers, each beside the closed
#      loop's rate measured just before it and c / 2 ms
#   3. link: -c 8 gRPC through --link rtt=10ms (each request then held 2 ms + 10 ms), objective
#      p99 < 20 ms: the answer beside 8 / 12 ms
#   4. etcd: sweep etcd put --find-max 'p99<20ms' on a 3-member cluster (scripts/etcd-cluster.sh):
#      key 64 and 256 B x 1, 64 and 256 clients x leader and all members x both stacks, the
#      table docs/RESULTS.md shows
#
#   scripts/capacity.sh [-o DIR] [--rounds 3] [--skip test,delay,link,etcd]
#
# Output in DIR (default /tmp/wirebench-capacity): one log and JSON per part, the etcd table as
# sweep-etcd.md; a summary line per answer at the end. Needs the release binary ($WIREBENCH,
# default target/release/wirebench). Exits 1 when a part failed.
set -euo pipefail

OUT=/tmp/wirebench-capacity
ROUNDS=3
SKIP=""

usage() {
    sed -n '2,21s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        -o) OUT="${2:?}"; shift ;;
        --rounds) ROUNDS="${2:?}"; shift ;;
        --skip) SKIP="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || die "--rounds must be a positive integer, not $ROUNDS"
OUT="$(realpath -m -- "$OUT")"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN="${WIREBENCH:-target/release/wirebench}"
[[ -x $BIN ]] || die "no release binary at $BIN (cargo build --release)"

declare -a summary=()
status=0
say() {
    summary+=("$*")
    echo "capacity: $*" >&2
}
skipped() {
    [[ ",$SKIP," == *",$1,"* ]]
}

# A figure of JSON file $1 by Python expression $2 (the report is `v`).
fig() {
    python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print($2)" "$1"
}

# One search's answer in a line: JSON file $1, stack $2.
answer() {
    fig "$1" "(lambda c: '%s req/s (%s; broken at %s; %d steps, %.0f s; confirmation %s)' % (c['answer_rps'], c['ending'], c['broken_rps'], len(c['steps']), c['elapsed_s'], 'met' if c['confirmation'] and c['confirmation']['met'] == c['confirmation']['runs'] else 'broke' if c['confirmation'] else 'none'))([r for r in v['runs'] if r['proto'] == '$2'][0]['capacity'])"
}

# 1. the test, optimized
if ! skipped test; then
    if cargo test --release --test load_capacity -- --nocapture >"$OUT/test.log" 2>&1; then
        say "test (release): passed; $(grep -E 'req/s; closed loop' "$OUT/test.log" | tr '\n' ';')"
    else
        say "test (release): FAILED, see $OUT/test.log"
        status=1
    fi
fi

serve_pid=""
stop_serve() {
    if [[ -n $serve_pid ]]; then
        kill "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
        serve_pid=""
    fi
}
trap stop_serve EXIT

# Starts `serve` with flags "$@" on a free port of $1's address; sets serve_pid and TARGET (on
# 127.0.0.1, which a link reaches at its host address when the server listens on 0.0.0.0).
start_serve() {
    local host=$1
    shift
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
    "$BIN" serve --addr "$host:$port" --no-h3 "$@" 2>"$OUT/serve.log" &
    serve_pid=$!
    for _ in $(seq 50); do
        grep -q "listening on" "$OUT/serve.log" && break
        sleep 0.1
    done
    grep -q "listening on" "$OUT/serve.log" || die "serve did not start: $(cat "$OUT/serve.log")"
    TARGET="http://127.0.0.1:$port"
}

# 2. against a known delay
if ! skipped delay; then
    start_serve 127.0.0.1 --delay 2ms --threads 1
    for round in $(seq "$ROUNDS"); do
        for shape in 4:grpc 8:grpc 4:http; do
            c=${shape%%:*} proto=${shape#*:}
            tag="delay-c$c-$proto-$round"
            "$BIN" echo --target "$TARGET" --proto "$proto" -c "$c" -z 2s --format json >"$OUT/$tag-closed.json" 2>"$OUT/$tag.log"
            if "$BIN" echo --target "$TARGET" --proto "$proto" -c "$c" --find-max 'p99<5ms' \
                --start-rate 500 --step 2s --settle 500ms --format json >"$OUT/$tag.json" 2>>"$OUT/$tag.log"; then
                say "delay 2ms, -c $c, $proto, round $round: $(answer "$OUT/$tag.json" "$proto"); closed loop $(fig "$OUT/$tag-closed.json" "'%.0f' % v['runs'][0]['summary']['ok_per_sec']") req/s; c / 2 ms = $((c * 500))"
            else
                say "delay 2ms, -c $c, $proto, round $round: FAILED, see $OUT/$tag.log"
                status=1
            fi
        done
    done
    stop_serve
fi

# 3. through a link
if ! skipped link; then
    if [[ -c /dev/net/tun ]]; then
        start_serve 0.0.0.0 --delay 2ms --threads 1
        if "$BIN" echo --target "$TARGET" --proto grpc -c 8 --link rtt=10ms --find-max 'p99<20ms' \
            --start-rate 100 --step 2s --settle 500ms --format json >"$OUT/link.json" 2>"$OUT/link.log"; then
            say "link rtt=10ms, delay 2ms, -c 8, grpc: $(answer "$OUT/link.json" grpc); c / 12 ms = 667"
        else
            say "link: FAILED, see $OUT/link.log"
            status=1
        fi
        stop_serve
    else
        say "link: FAILED, no /dev/net/tun"
        status=1
    fi
fi

# 4. etcd
if ! skipped etcd; then
    CLUSTER_DIR="$OUT/cluster" scripts/etcd-cluster.sh --background >"$OUT/endpoints" 2>"$OUT/cluster.log"
    trap 'stop_serve; CLUSTER_DIR="$OUT/cluster" scripts/etcd-cluster.sh --stop >/dev/null 2>&1 || true' EXIT
    if "$BIN" sweep etcd put --endpoints "$(cat "$OUT/endpoints")" -c 1,64,256 --key-size 64,256 \
        --target leader,all --proto http,grpc --find-max 'p99<20ms' --start-rate 1000 --step 2s \
        --settle 1s --max-duration 60s >"$OUT/sweep-etcd.md" 2>"$OUT/sweep-etcd.log"; then
        say "sweep etcd put --find-max 'p99<20ms': $OUT/sweep-etcd.md"
    else
        say "sweep etcd put: FAILED, see $OUT/sweep-etcd.log"
        status=1
    fi
fi

printf '%s\n' "${summary[@]}"
exit $status
