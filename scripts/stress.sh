#!/usr/bin/env bash
# High-concurrency stress against the built-in server (a separate `wirebench serve` process, so
# the client's memory figures are the client's alone), loopback only, bounded in time:
#
#   1. 10,000 HTTP/1.1 keepalive connections (one request in flight each), opened at 5,000/s
#   2. 1,000 HTTP/1.1 connections x 16 pipelined requests = 16,000 requests in flight
#   3. a connection per request (--requests-per-conn 1), 100 clients: connection churn, past the
#      16,384 connection records a thread keeps one by one (the rest are folded into sums)
#   4. 100 gRPC connections x 1,000 concurrent streams = 100,000 requests in flight
#   5. a client ramp (--client-stages): 100 HTTP/1.1 clients up to 5,000 over 10 s, held 5 s,
#      down to 0 over 10 s, each connecting as it joins and closing as it leaves, with
#      --interval 1s lines that must add up to the report's count
#
#   scripts/stress.sh [--duration 10s] [--http-conns 10000] [--pipelined-conns 1000]
#                     [--churn-clients 100] [--grpc-conns 100] [--streams 1000]
#                     [--ramp-clients 5000] [--bind 127.0.0.1-127.0.0.4]
#
# Prints one summary line per scenario (requests, failures, req/s, p50/p99, connect times, peak
# RSS and RSS per connection) and keeps the JSON reports in $OUT (default /tmp/wirebench-stress).
# Exits 1 when a scenario failed a request. Each scenario is killed after LIMIT seconds (300).
set -euo pipefail

DURATION=10s
HTTP_CONNS=10000
PIPELINED_CONNS=1000
CHURN_CLIENTS=100
GRPC_CONNS=100
STREAMS=1000
RAMP_CLIENTS=5000
BIND=""
OUT="${OUT:-/tmp/wirebench-stress}"
LIMIT="${LIMIT:-300}"

usage() {
    sed -n '2,22s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION="${2:?}"; shift ;;
        --http-conns) HTTP_CONNS="${2:?}"; shift ;;
        --pipelined-conns) PIPELINED_CONNS="${2:?}"; shift ;;
        --churn-clients) CHURN_CLIENTS="${2:?}"; shift ;;
        --grpc-conns) GRPC_CONNS="${2:?}"; shift ;;
        --streams) STREAMS="${2:?}"; shift ;;
        --ramp-clients) RAMP_CLIENTS="${2:?}"; shift ;;
        --bind) BIND="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done

cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=target/release/wirebench
mkdir -p "$OUT"

# The server raises its own open-file limit to the hard limit; say early if that is too low.
need=$((HTTP_CONNS + 512))
hard=$(ulimit -Hn)
if [[ $hard != unlimited && $hard -lt $need ]]; then
    die "the hard open-file limit is $hard; $HTTP_CONNS connections need about $need (raise it with ulimit -Hn as root)"
fi

"$BIN" serve --addr 127.0.0.1:0 --threads 1 2>"$OUT/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
addr=""
for _ in $(seq 100); do
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$OUT/serve.log")
    [[ -n $addr ]] && break
    sleep 0.1
done
[[ -n $addr ]] || die "wirebench serve did not start: $(cat "$OUT/serve.log")"

bind=()
[[ -n $BIND ]] && bind=(--bind "$BIND")

summary() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
name, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))["runs"][0]
s, m, c = r["summary"], r["memory"], r["connect_times"]
p = {x["percentile"]: x["latency_ms"] for x in r["latency_distribution"]}
cp = {x["percentile"]: x["latency_ms"] for x in c["distribution"]}
print(f"{name}: {s['count']} requests, {s['failed']} failed, {s['requests_per_sec']:.0f} req/s, "
      f"p50 {p.get(50.0, 0):.1f} ms, p99 {p.get(99.0, 0):.1f} ms; "
      f"{r['wire']['connections_opened']} connections, connect p50 {cp[50.0]:.3f} ms p99 {cp[99.0]:.3f} ms; "
      f"client RSS {m['rss_steady_kib'] / 1024:.1f} MiB mid-run, {m['rss_baseline_kib'] / 1024:.1f} MiB before connecting "
      f"({m['rss_per_connection_bytes'] / 1024:.1f} KiB per connection, {m['rss_per_in_flight_bytes'] / 1024:.2f} KiB per request in flight), "
      f"peak {m['peak_rss_kib'] / 1024:.1f} MiB")
sys.exit(1 if s["failed"] else 0)
EOF
}

status=0
echo "stress: $HTTP_CONNS HTTP/1.1 connections for $DURATION against $addr"
timeout "$LIMIT" "$BIN" echo --target "http://$addr" --proto http -c "$HTTP_CONNS" \
    -z "$DURATION" --connect-rate 5000 --timeout 30s --server-pid "$SERVER" "${bind[@]}" \
    --format json -o "$OUT/http.json"
summary "HTTP/1.1 x$HTTP_CONNS" "$OUT/http.json" || status=1

pipelined=$((PIPELINED_CONNS * 16))
echo "stress: $PIPELINED_CONNS HTTP/1.1 connections x 16 pipelined for $DURATION against $addr"
timeout "$LIMIT" "$BIN" echo --target "http://$addr" --proto http -c "$pipelined" --pipeline 16 \
    -z "$DURATION" --connect-rate 5000 --timeout 30s --server-pid "$SERVER" "${bind[@]}" \
    --format json -o "$OUT/pipelined.json"
summary "HTTP/1.1 ${PIPELINED_CONNS}x16 pipelined" "$OUT/pipelined.json" || status=1

echo "stress: a connection per request, $CHURN_CLIENTS clients, for $DURATION against $addr"
timeout "$LIMIT" "$BIN" echo --target "http://$addr" --proto http -c "$CHURN_CLIENTS" \
    --requests-per-conn 1 -z "$DURATION" --timeout 30s --server-pid "$SERVER" "${bind[@]}" \
    --format json -o "$OUT/churn.json"
summary "HTTP/1.1 connection per request x$CHURN_CLIENTS" "$OUT/churn.json" || status=1

clients=$((GRPC_CONNS * STREAMS))
echo "stress: $GRPC_CONNS gRPC connections x $STREAMS streams for $DURATION against $addr"
timeout "$LIMIT" "$BIN" echo --target "http://$addr" --proto grpc -c "$clients" \
    --conns "$GRPC_CONNS" -z "$DURATION" --timeout 30s --server-pid "$SERVER" "${bind[@]}" \
    --format json -o "$OUT/grpc.json"
summary "gRPC ${GRPC_CONNS}x$STREAMS" "$OUT/grpc.json" || status=1

echo "stress: HTTP/1.1 clients ramped 100 -> $RAMP_CLIENTS -> 0 over 25 s against $addr"
timeout "$LIMIT" "$BIN" echo --target "http://$addr" --proto http \
    --client-stages "0s:100,10s:$RAMP_CLIENTS,5s:$RAMP_CLIENTS,10s:0" --interval 1s \
    --interval-format csv --timeout 30s --server-pid "$SERVER" "${bind[@]}" \
    --format json -o "$OUT/ramp.json" 2>"$OUT/ramp.intervals.csv"
summary "HTTP/1.1 client ramp to $RAMP_CLIENTS" "$OUT/ramp.json" || status=1
python3 - "$OUT/ramp.json" "$OUT/ramp.intervals.csv" "$RAMP_CLIENTS" <<'EOF' || status=1
import csv, json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
rows = [x for x in csv.DictReader(open(sys.argv[2])) if x.get("stack") == "http"]
lines = sum(int(x["ok"]) + int(x["errors"]) for x in rows)
stages = sum(x["count"] for x in r["stages"])
opened = r["wire"]["connections_opened"]
print(f"  {len(rows)} interval lines, {lines} requests in them, {stages} in the stage rows, "
      f"{r['summary']['count']} in the report; {opened} connections opened, "
      f"{r['wire']['reconnects']} reconnects; stages: "
      + ", ".join(f"{x['spec']} {x['requests_per_sec']:.0f} req/s p99 {x['p99_ms']:.1f} ms" for x in r["stages"]))
ok = lines == stages == r["summary"]["count"] and opened <= int(sys.argv[3]) and r["wire"]["reconnects"] == 0
sys.exit(0 if ok else 1)
EOF
exit $status
