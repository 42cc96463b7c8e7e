#!/usr/bin/env bash
# The long suite: what is too long for CI (scripts/test.sh keeps a short, real version of each),
# run before an issue is resolved, each part bounded in time, one after another so that none
# measures on a machine busy with another:
#
#   1. fuzzing: every cargo-fuzz target of the wire crate for --fuzz-minutes each (default 2)
#   2. stress: scripts/stress.sh (10,000 HTTP/1.1 connections, 1,000 pipelined connections,
#      a connection per request, 100 gRPC connections x 1,000 streams)
#   3. peers: scripts/peers.sh --sample-user (the client against wrk and h2load, user time also
#      sampled at 10 kHz), scripts/peers-grpc.sh and scripts/peers-instructions.sh (the clients'
#      instructions a request, counted by callgrind)
#   4. failover: scripts/failover.sh (20 rounds per stack of a leader SIGKILLed mid-run, and of a
#      watch run's follower SIGKILLed mid-run)
#   5. link: scripts/link.sh (the emulated path's delay, rate, loss and timing targets, and its
#      sweep tables over links and connection counts)
#   6. capacity: scripts/capacity.sh (--find-max against a known delay, optimized, through a
#      link, and the etcd put table on a 3-member cluster)
#
#   scripts/long.sh [--fuzz-minutes 2] [--skip fuzz,stress,peers,peers-grpc,peers-instructions,
#                    failover,link,capacity] [-o DIR]
#
# Each part's output goes to DIR (default /tmp/wirebench-long) as PART.log, the peer tables as
# peers.md, peers-grpc.md and peers-instructions.md; a summary line per part is printed at the end. Exits 1 when a part
# failed. Needs the release binary (built here with cargo build --release).
set -euo pipefail

FUZZ_MINUTES=2
SKIP=""
OUT=/tmp/wirebench-long

usage() {
    sed -n '2,21s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --fuzz-minutes) FUZZ_MINUTES="${2:?}"; shift ;;
        --skip) SKIP="${2:?}"; shift ;;
        -o) OUT="${2:?}"; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument $1" ;;
    esac
    shift
done
[[ $FUZZ_MINUTES =~ ^[0-9]+$ && $FUZZ_MINUTES -ge 1 ]] || die "--fuzz-minutes must be a positive integer, not $FUZZ_MINUTES"
OUT="$(realpath -m -- "$OUT")"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

cargo build --release >"$OUT/build.log" 2>&1 || die "cargo build --release failed: $(tail -n 3 "$OUT/build.log" | tr '\n' ' ')"

declare -a results=()
status=0
part() {
    local name=$1
    shift
    if [[ ",$SKIP," == *",$name,"* ]]; then
        results+=("$name: skipped")
        return
    fi
    local t0=$SECONDS rc=0
    echo "long: $name ($*)" >&2
    "$@" >"$OUT/$name.log" 2>&1 || rc=$?
    if [[ $rc -eq 0 ]]; then
        results+=("$name: ok in $((SECONDS - t0)) s")
    else
        results+=("$name: FAILED (exit $rc) after $((SECONDS - t0)) s, see $OUT/$name.log")
        status=1
    fi
}

part fuzz scripts/fuzz.sh --minutes "$FUZZ_MINUTES"
part stress env OUT="$OUT/stress" scripts/stress.sh
part peers scripts/peers.sh --sample-user -o "$OUT/peers.md"
part peers-grpc scripts/peers-grpc.sh -o "$OUT/peers-grpc.md"
part peers-instructions scripts/peers-instructions.sh -o "$OUT/peers-instructions.md"
part failover scripts/failover.sh -o "$OUT/failover"
part link scripts/link.sh -o "$OUT/link"
part capacity scripts/capacity.sh -o "$OUT/capacity"

printf '%s\n' "${results[@]}"
for f in fuzz stress failover link capacity; do
    [[ -f $OUT/$f.log ]] && { echo "--- $f"; tail -n 20 "$OUT/$f.log"; }
done
for f in peers.md peers-grpc.md peers-instructions.md; do
    [[ -f $OUT/$f ]] && { echo "--- $f"; cat "$OUT/$f"; }
done
exit $status
