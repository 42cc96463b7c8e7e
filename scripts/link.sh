#!/usr/bin/env bash
# The link's targets measured through real links (needs root, /dev/net/tun and network
# namespaces), then its sweep tables; each part bounded, one after another:
#
#   1. delay: wirebench echo, HTTP/1.1, 1 client, 300 requests at rtt=40ms: p50, TCP_INFO's
#      RTT, the delay the emulator applied and its timing error
#   2. connect: wirebench link rtt=40ms -- curl, 10 times: curl's time_connect
#   3. rate: wirebench echo, 1 client, 20 responses of 1 MiB at rate=20mbit: the throughput the
#      link carried down
#   4. loss: wirebench echo, 4 clients, 5000 requests at rtt=2ms,loss=2%: drops against the
#      binomial 99.9% interval, every request answered, retransmissions
#   5. the emulator: cargo bench --bench pump (20,000 UDP packets/s at rtt=20ms, asleep and with
#      spin; a bulk TCP transfer)
#   6. tables: sweep echo over links x connection counts; sweep etcd put on a 3-member cluster
#      (scripts/etcd-cluster.sh, client ports on 0.0.0.0) over links
#
#   scripts/link.sh [-o DIR] [--skip tables]
#
# Output in DIR (default /tmp/wirebench-link): one log and JSON per part, the tables as
# sweep-echo.md and sweep-etcd.md; a summary line per target at the end. Needs the release
# binary ($WIREBENCH, default target/release/wirebench). Exits 1 when a part failed.
set -euo pipefail

OUT=/tmp/wirebench-link
SKIP=""

usage() {
    sed -n '2,22s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        -o) OUT="${2:?}"; shift ;;
        --skip) SKIP="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
OUT="$(realpath -m -- "$OUT")"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN="${WIREBENCH:-target/release/wirebench}"
[[ -x $BIN ]] || die "no release binary at $BIN (cargo build --release)"
[[ -c /dev/net/tun ]] || die "no /dev/net/tun: the link needs TUN devices"
command -v curl >/dev/null || die "curl is needed (apt-get install curl)"

declare -a summary=()
say() {
    summary+=("$*")
    echo "link: $*" >&2
}

# A figure of JSON file $1 by Python expression $2 (the report is `v`).
fig() {
    python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print($2)" "$1"
}

# 1. delay
"$BIN" echo --proto http -c 1 -n 300 --link rtt=40ms --format json >"$OUT/delay.json"
say "delay rtt=40ms, 1 client: $(fig "$OUT/delay.json" "'p50 %.2f ms, p99 %.2f ms; TCP_INFO rtt %.2f ms (min %.2f); applied p50 up %.3f / down %.3f ms; error p50 %.1f / p99 %.1f us' % (v['runs'][0]['per_endpoint'][0]['p50_ms'], v['runs'][0]['per_endpoint'][0]['p99_ms'], v['runs'][0]['link']['tcp']['rtt_p50_ms'], v['runs'][0]['link']['tcp']['min_rtt_ms'], v['runs'][0]['link']['up']['applied_delay_p50_ms'], v['runs'][0]['link']['down']['applied_delay_p50_ms'], v['runs'][0]['link']['up']['timing_error_p50_us'], v['runs'][0]['link']['up']['timing_error_p99_us'])")"

# 2. connect
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN" serve --addr "0.0.0.0:$port" 2>"$OUT/serve.log" &
serve_pid=$!
trap 'kill $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    grep -q "listening on" "$OUT/serve.log" && break
    sleep 0.1
done
: >"$OUT/connect.txt"
for _ in $(seq 10); do
    # shellcheck disable=SC2016
    "$BIN" link rtt=40ms -- sh -c "curl -s -o /dev/null -w '%{time_connect}\n' http://\$WIREBENCH_LINK_HOST:$port/v1/echo" \
        >>"$OUT/connect.txt" 2>>"$OUT/connect.log"
done
say "curl's connect through rtt=40ms, 10 runs: $(python3 -c "
import sys; v=sorted(float(x)*1e3 for x in open(sys.argv[1]) if x.strip())
print('min %.2f, median %.2f, max %.2f ms' % (v[0], v[len(v)//2], v[-1]))" "$OUT/connect.txt")"
kill $serve_pid 2>/dev/null || true
wait $serve_pid 2>/dev/null || true
trap - EXIT

# 3. rate
"$BIN" echo --proto http -c 1 -n 20 --response-size 1M --link rate=20mbit --format json >"$OUT/rate.json"
say "rate=20mbit, 20 x 1 MiB: $(fig "$OUT/rate.json" "'%.2f Mbit/s down (first packet to last), queue peak %d packets, %d ok' % (v['runs'][0]['link']['down']['throughput_mbps'], v['runs'][0]['link']['down']['queue_peak_packets'], v['runs'][0]['summary']['ok'])")"

# 4. loss
"$BIN" echo --proto http -c 4 -n 5000 --link rtt=2ms,loss=2% --format json >"$OUT/loss.json"
say "loss=2%: $(fig "$OUT/loss.json" "(lambda l, r: '%d of %d packets dropped (%.3f%%; 99.9%% interval %.0f..%.0f), %d of 5000 ok, %d retransmitted' % (l['up']['dropped_random'] + l['down']['dropped_random'], l['up']['packets'] + l['down']['packets'], 100.0 * (l['up']['dropped_random'] + l['down']['dropped_random']) / (l['up']['packets'] + l['down']['packets']), 0.02 * (l['up']['packets'] + l['down']['packets']) - 3.29 * (0.0196 * (l['up']['packets'] + l['down']['packets'])) ** 0.5, 0.02 * (l['up']['packets'] + l['down']['packets']) + 3.29 * (0.0196 * (l['up']['packets'] + l['down']['packets'])) ** 0.5, r['summary']['ok'], l['tcp']['retransmits']))(v['runs'][0]['link'], v['runs'][0])")"

# 5. the emulator
for spec in rtt=20ms rtt=20ms,spin; do
    cargo bench -q -p wirebench-link --bench pump -- 20000 5 "$spec" >"$OUT/pump-$spec.log" 2>&1 ||
        die "cargo bench --bench pump failed: $(tail -n 3 "$OUT/pump-$spec.log" | tr '\n' ' ')"
    while read -r line; do say "pump $spec: $line"; done < <(grep -E "paced|error|emulator|bulk" "$OUT/pump-$spec.log")
done

# 6. tables
if [[ ",$SKIP," != *",tables,"* ]]; then
    "$BIN" sweep echo --payload-size 1k,1M --proto http,h2,grpc -c 8 --conns 1,8 -z 5s \
        --links 'none;rtt=40ms;rtt=40ms,loss=1%' >"$OUT/sweep-echo.md" 2>"$OUT/sweep-echo.log"
    say "sweep echo: $OUT/sweep-echo.md"
    CLUSTER_DIR="$OUT/cluster" CLIENT_LISTEN_IP=0.0.0.0 scripts/etcd-cluster.sh --background >"$OUT/endpoints" 2>"$OUT/cluster.log"
    trap 'CLUSTER_DIR="$OUT/cluster" scripts/etcd-cluster.sh --stop >/dev/null 2>&1 || true' EXIT
    "$BIN" sweep etcd put --endpoints "$(cat "$OUT/endpoints")" -c 1,64 --conns 1,8 --target leader,all \
        -z 5s --key-size 256 --links 'none;rtt=10ms;rtt=10ms,loss=1%' >"$OUT/sweep-etcd.md" 2>"$OUT/sweep-etcd.log"
    say "sweep etcd put: $OUT/sweep-etcd.md"
fi

printf '%s\n' "${summary[@]}"
