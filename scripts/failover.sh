#!/usr/bin/env bash
# Repeated failovers: a fresh 3-member etcd cluster (scripts/etcd-cluster.sh) per round,
# `etcd put --target leader --verify` for 9 s over each stack, the leader SIGKILLed 3 s in.
# Prints one line per round (first failure, the cluster's election as the re-discoveries saw
# it, move, first success, the gap, puts lost) and per stack the rounds that resumed and the
# gaps' median and maximum; exits 1 when a round lost an acknowledged put, did not resume
# within --max-gap of its first failure, or broke ok <= revision delta <= ok + unknown.
# Then, per round and stack, on a fresh cluster again, `etcd watch` on every member (a stream
# each, the puts on the first, a follower) with that follower SIGKILLed 2.3 s in: the line
# gives its stream's move and the puts' gap; exits 1 when an event is missing or duplicated, or
# the stream or the puts did not move.
#
# The clusters keep etcd's 1 s election timeout with a 10 ms heartbeat (HEARTBEAT_MS, passed to
# scripts/etcd-cluster.sh; etcd's tuning guide sets it near the members' round trip, which is
# microseconds here): with the default 100 ms heartbeat the election ticks are so coarse that
# the two survivors often stand at once and split the vote, and a round then waits two or
# three election timeouts for etcd alone. HEARTBEAT_MS=100 runs with etcd's defaults.
#
#   scripts/failover.sh [--rounds 20] [--max-gap 2.5] [-o DIR]
set -euo pipefail

ROUNDS=20
MAX_GAP=2.5
OUT=/tmp/wirebench-failover
export HEARTBEAT_MS="${HEARTBEAT_MS:-10}"

usage() {
    sed -n '2,19s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --rounds) ROUNDS="${2:?}"; shift ;;
        --max-gap) MAX_GAP="${2:?}"; shift ;;
        -o) OUT="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -ge 1 ]] || die "--rounds must be a positive integer, not $ROUNDS"
[[ $MAX_GAP =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--max-gap must be a number of seconds, not $MAX_GAP"
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=target/release/wirebench
mkdir -p "$OUT"
rm -f "$OUT"/http-*.json "$OUT"/grpc-*.json "$OUT"/watch-*.json
export CLUSTER_DIR="$OUT/cluster"
trap 'scripts/etcd-cluster.sh --stop >/dev/null 2>&1 || true' EXIT
echo "etcd clusters: heartbeat ${HEARTBEAT_MS} ms, election timeout ${ELECTION_MS:-1000} ms; $ROUNDS rounds per stack, gaps up to $MAX_GAP s"

# (member id, leader id) of the member at URL $1, or nothing when it does not answer
status_of() {
    curl -s -m 1 -X POST "$1/v3/maintenance/status" -d '{}' |
        python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["header"]["member_id"], v.get("leader", "0"))' 2>/dev/null || true
}

# the current revision, through the first member of $1 (comma-separated URLs) that answers
revision_of() {
    local u
    for u in ${1//,/ }; do
        curl -s -m 1 -X POST "$u/v3/kv/range" -d '{"key":"AA=="}' |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])' 2>/dev/null && return 0
    done
    return 1
}

status=0
for round in $(seq "$ROUNDS"); do
    for proto in http grpc; do
        scripts/etcd-cluster.sh --stop >/dev/null 2>&1 || true
        scripts/etcd-cluster.sh --background >"$OUT/cluster.log" 2>&1 || die "the cluster did not start: $(tail -n 3 "$OUT/cluster.log")"
        eps=$(scripts/etcd-cluster.sh --endpoints)
        before=$(revision_of "$eps")
        (
            sleep 3
            for u in ${eps//,/ }; do
                read -r id leader <<<"$(status_of "$u")"
                if [[ -n ${id:-} && $id == "$leader" ]]; then
                    port=${u##*:}
                    pid=$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
                    kill -9 "$pid"
                    echo "$u" >"$OUT/killed"
                    break
                fi
            done
        ) &
        killer=$!
        "$BIN" etcd put --endpoints "$eps" --target leader --proto "$proto" -c 8 -z 9s \
            --timeout 1s --key-space-size 1000 --verify --format json >"$OUT/$proto-$round.json" || status=1
        wait "$killer" || true
        after=$(revision_of "$eps")
        python3 - "$OUT/$proto-$round.json" "$proto" "$round" "$(cat "$OUT/killed")" "$((after - before))" "$MAX_GAP" <<'EOF' || status=1
import json, sys
path, proto, rnd, killed, delta, max_gap = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
try:
    r = json.load(open(path))["runs"][0]
except (OSError, ValueError, KeyError, IndexError):
    print(f"{proto} round {rnd}: no report  <-- FAILED")
    sys.exit(1)
s, v = r["summary"], r["verify"]
ev = [e for e in r["failover"]["events"] if e["from"] == killed]
e = ev[0] if ev else {}
gap = e.get("gap_s")
ok = gap is not None and gap <= max_gap and v["lost"] == 0 \
    and s["ok"] <= delta <= s["ok"] + s["outcome_unknown"]
# the re-discoveries that found no leader: until the last of them the wait was etcd's election
until = e.get("unresolved_until_s")
election = (f"no leader until {until:.3f} s ({e.get('unresolved', 0)} re-discoveries)" if until is not None
            else "a leader at the first re-discovery")
after = (f", first success {1000 * (e['first_success_s'] - until):.0f} ms after the last" if until is not None
         and e.get("first_success_s") is not None else "")
print(f"{proto} round {rnd}: first failure {e.get('first_failure_s', 0):.3f} s, {election}, "
      f"moved {e.get('moved_s') or 0:.3f} s, first success {e.get('first_success_s') or 0:.3f} s{after}, "
      f"gap {gap or 0:.3f} s; ok {s['ok']}, unknown {s['outcome_unknown']}, revision delta {delta}; "
      f"verified {v['checked']}, lost {v['lost']}, asked again {v.get('retried', 0)}"
      + ("" if ok else "  <-- FAILED"))
sys.exit(0 if ok else 1)
EOF
    done
done
# the first follower of $1 (comma-separated URLs), by the members' own statuses
follower_of() {
    local u id leader
    for u in ${1//,/ }; do
        read -r id leader <<<"$(status_of "$u")"
        if [[ -n ${id:-} && $id != "$leader" ]]; then
            echo "$u"
            return 0
        fi
    done
    return 1
}

for round in $(seq "$ROUNDS"); do
    for proto in http grpc; do
        scripts/etcd-cluster.sh --stop >/dev/null 2>&1 || true
        scripts/etcd-cluster.sh --background >"$OUT/cluster.log" 2>&1 || die "the cluster did not start: $(tail -n 3 "$OUT/cluster.log")"
        eps=$(scripts/etcd-cluster.sh --endpoints)
        victim=$(follower_of "$eps") || die "no follower in $eps"
        ordered="$victim"
        for u in ${eps//,/ }; do
            [[ $u == "$victim" ]] || ordered="$ordered,$u"
        done
        (
            sleep 2.3
            port=${victim##*:}
            pid=$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
            kill -9 "$pid"
        ) &
        killer=$!
        "$BIN" etcd watch --endpoints "$ordered" --proto "$proto" --watchers 6 --streams 3 \
            --conns 3 --put-total 3000 --put-rate 500 --put-clients 4 --put-timeout 1s \
            --timeout 10s --format json >"$OUT/watch-$proto-$round.json" || status=1
        wait "$killer" || true
        python3 - "$OUT/watch-$proto-$round.json" "$proto" "$round" "$victim" <<'EOF' || status=1
import json, sys
path, proto, rnd, killed = sys.argv[1:5]
try:
    r = json.load(open(path))["runs"][0]
except (OSError, ValueError, KeyError, IndexError):
    print(f"watch {proto} round {rnd}: no report  <-- FAILED")
    sys.exit(1)
moves = [m for m in r["stream_moves"] if m["from"] == killed]
puts = [e for e in ((r["puts"]["failover"] or {}).get("events") or []) if e["from"] == killed]
m = moves[0] if moves else {}
e = puts[0] if puts else {}
ok = r["missing"] == 0 and r["duplicated"] == 0 and bool(moves) \
    and m.get("recreated_after_ms") is not None and bool(puts) and e.get("gap_s") is not None
print(f"watch {proto} round {rnd}: stream moved {m.get('from', '-')} -> {m.get('to', '-')}, "
      f"{m.get('watchers', 0)} watchers re-created after {m.get('recreated_after_ms') or 0:.1f} ms; "
      f"puts gap {e.get('gap_s') or 0:.3f} s, ok {r['puts']['ok']}; events {r['events']} of "
      f"{r['expected_events']}, missing {r['missing']}, duplicated {r['duplicated']}, "
      f"unexpected {r['unexpected']}" + ("" if ok else "  <-- FAILED"))
sys.exit(0 if ok else 1)
EOF
    done
done
python3 - "$OUT" "$ROUNDS" "$MAX_GAP" <<'EOF'
import glob, json, statistics, sys
out, rounds, max_gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for proto in ("http", "grpc"):
    gaps, lost = [], 0
    for f in glob.glob(f"{out}/{proto}-*.json"):
        try:
            run = json.load(open(f))["runs"][0]
            events = run["failover"]["events"]
            lost += run["verify"]["lost"]
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
        gaps += [e["gap_s"] for e in events if e["gap_s"] is not None][:1]
    print(f"{proto}: {len(gaps)} of {rounds} leader kills resumed, {sum(g <= max_gap for g in gaps)} within {max_gap} s"
          + (f", gap median {statistics.median(gaps):.3f} s, max {max(gaps):.3f} s" if gaps else "")
          + f"; acknowledged puts lost {lost}")
EOF
exit $status
