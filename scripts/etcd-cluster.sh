#!/usr/bin/env bash
# A local 3-member etcd cluster (m1..m3) for manual wirebench runs, on loopback only, data on tmpfs.
#
#   scripts/etcd-cluster.sh                 run in the foreground (Ctrl-C stops it, deletes its data)
#   scripts/etcd-cluster.sh --background    start in the background, wait for a leader, print endpoints
#   scripts/etcd-cluster.sh --stop          stop the background cluster and delete its data
#   scripts/etcd-cluster.sh --endpoints     print the running cluster's client endpoints
#   scripts/etcd-cluster.sh --status        say whether the background cluster is running
#
# Free client and peer ports are picked at start. The endpoints go to stdout as one line,
# http://127.0.0.1:P1,http://127.0.0.1:P2,http://127.0.0.1:P3 (ready for --endpoints).
# Environment: CLUSTER_DIR (pids, endpoints, logs, data; default /dev/shm/wirebench-etcd-cluster),
#   LOG_LEVEL (default warn), READY_TIMEOUT (seconds, default 20), ETCD (binary; Debian's etcd-server is installed when absent),
#   HEARTBEAT_MS and ELECTION_MS (raft timing, etcd's --heartbeat-interval and --election-timeout; etcd's defaults, 100 and 1000, when unset),
#   CLIENT_LISTEN_IP (where the client ports listen, default 127.0.0.1; 0.0.0.0 for runs through --link, the
#   advertised URLs staying 127.0.0.1).
set -euo pipefail

MEMBERS=(m1 m2 m3)
RUN_DIR=/dev/shm
[[ -d $RUN_DIR && -w $RUN_DIR ]] || RUN_DIR="${TMPDIR:-/tmp}"
CLUSTER_DIR="${CLUSTER_DIR:-$RUN_DIR/wirebench-etcd-cluster}"
ENDPOINTS_FILE="$CLUSTER_DIR/endpoints"
LOG_LEVEL="${LOG_LEVEL:-warn}"
READY_TIMEOUT="${READY_TIMEOUT:-20}"
HEARTBEAT_MS="${HEARTBEAT_MS:-}"
ELECTION_MS="${ELECTION_MS:-}"
CLIENT_LISTEN_IP="${CLIENT_LISTEN_IP:-127.0.0.1}"

usage() {
    sed -n '2,15s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

mode=foreground
while [[ $# -gt 0 ]]; do
    case "$1" in
        --background | -b) mode=background ;;
        --stop) mode=stop ;;
        --endpoints) mode=endpoints ;;
        --status) mode=status ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done

[[ $READY_TIMEOUT =~ ^[0-9]+$ && $READY_TIMEOUT -ge 1 ]] ||
    die "READY_TIMEOUT must be a whole number of seconds, got '$READY_TIMEOUT'"

# The pid of member $1 from its pid file, if that process is still an etcd.
member_pid() {
    etcd_pid "$CLUSTER_DIR/$1.pid"
}

# Succeeds when at least one member is running.
any_running() {
    local m
    for m in "${MEMBERS[@]}"; do
        member_pid "$m" >/dev/null && return 0
    done
    return 1
}

# Stops every member (TERM, then KILL after 10 s) and deletes pid files, endpoints and data.
# Only the files this script creates are removed; CLUSTER_DIR itself goes only when empty.
stop_cluster() {
    local m pid pids=()
    for m in "${MEMBERS[@]}"; do
        if pid="$(member_pid "$m")"; then
            kill "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    for _ in $(seq 100); do
        local alive=0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        [[ $alive -eq 1 ]] || break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    done
    for m in "${MEMBERS[@]}"; do
        rm -rf "${CLUSTER_DIR:?}/$m.data"
        rm -f "$CLUSTER_DIR/$m.pid" "$CLUSTER_DIR/$m.log"
    done
    rm -f "$ENDPOINTS_FILE"
    rmdir "$CLUSTER_DIR" 2>/dev/null || true
    if [[ ${#pids[@]} -gt 0 ]]; then
        echo "stopped etcd members (pids ${pids[*]}), removed their data in $CLUSTER_DIR" >&2
    fi
}

case "$mode" in
    stop)
        if ! any_running; then
            echo "no background etcd cluster (state in $CLUSTER_DIR)" >&2
        fi
        stop_cluster
        exit 0
        ;;
    endpoints)
        any_running && [[ -s $ENDPOINTS_FILE ]] ||
            die "no etcd cluster running (state in $CLUSTER_DIR); start one with $0 --background"
        cat "$ENDPOINTS_FILE"
        exit 0
        ;;
    status)
        if any_running && [[ -s $ENDPOINTS_FILE ]]; then
            for m in "${MEMBERS[@]}"; do
                if pid="$(member_pid "$m")"; then
                    echo "$m: running (pid $pid)"
                else
                    echo "$m: not running"
                fi
            done
            echo "endpoints: $(cat "$ENDPOINTS_FILE")"
            exit 0
        fi
        echo "no background etcd cluster (state in $CLUSTER_DIR)"
        exit 1
        ;;
esac

# --- start -------------------------------------------------------------------------------------
find_etcd
command -v curl >/dev/null 2>&1 || die "curl is needed to wait for the cluster's leader"

if any_running; then
    die "an etcd cluster is already running (state in $CLUSTER_DIR); stop it with $0 --stop"
fi

# Six distinct free loopback ports: all sockets are held until every port is known.
pick_ports() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
'
        return
    fi
    # No python3: random ports from the dynamic range that nothing listens on now.
    local busy picked=() p
    busy=" $(ss -Htln 2>/dev/null | awk '{n = split($4, a, ":"); printf "%s ", a[n]}') "
    while [[ ${#picked[@]} -lt 6 ]]; do
        p=$((49152 + RANDOM % 16000))
        [[ $busy == *" $p "* || " ${picked[*]} " == *" $p "* ]] && continue
        picked+=("$p")
    done
    echo "${picked[*]}"
}

read -r -a ports <<<"$(pick_ports)"
[[ ${#ports[@]} -eq 6 ]] || die "could not pick free ports"

mkdir -p "$CLUSTER_DIR"
client_urls=()
peer_urls=()
initial_cluster=""
for i in 0 1 2; do
    client_urls+=("http://127.0.0.1:${ports[i]}")
    peer_urls+=("http://127.0.0.1:${ports[i + 3]}")
    initial_cluster+="${initial_cluster:+,}${MEMBERS[i]}=${peer_urls[i]}"
done
endpoints="$(
    IFS=,
    echo "${client_urls[*]}"
)"
token="wirebench-$(date +%s)-$$-$RANDOM"

# Stops everything when the foreground run ends or the start fails.
cleanup_on_exit=1
on_exit() {
    if [[ $cleanup_on_exit -eq 1 ]]; then
        stop_cluster
    fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

version="$("$ETCD" --version 2>/dev/null | sed -n 's/^etcd Version: //p' || true)"
echo "etcd ${version:-(unknown version)}: 3 members, state and data in $CLUSTER_DIR" >&2
for i in 0 1 2; do
    m="${MEMBERS[i]}"
    rm -rf "${CLUSTER_DIR:?}/$m.data"
    mkdir -p "$CLUSTER_DIR/$m.data"
    chmod 700 "$CLUSTER_DIR/$m.data"
    args=(
        --name "$m"
        --data-dir "$CLUSTER_DIR/$m.data"
        --listen-client-urls "${client_urls[i]/127.0.0.1/$CLIENT_LISTEN_IP}"
        --advertise-client-urls "${client_urls[i]}"
        --listen-peer-urls "${peer_urls[i]}"
        --initial-advertise-peer-urls "${peer_urls[i]}"
        --initial-cluster "$initial_cluster"
        --initial-cluster-state new
        --initial-cluster-token "$token"
        --logger zap
        --log-level "$LOG_LEVEL"
    )
    [[ -z $HEARTBEAT_MS ]] || args+=(--heartbeat-interval "$HEARTBEAT_MS")
    [[ -z $ELECTION_MS ]] || args+=(--election-timeout "$ELECTION_MS")
    nohup "$ETCD" "${args[@]}" >"$CLUSTER_DIR/$m.log" 2>&1 </dev/null &
    echo "$!" >"$CLUSTER_DIR/$m.pid"
done

# Prints the tail of every member's log to stderr.
show_logs() {
    local m
    for m in "${MEMBERS[@]}"; do
        printf '\n--- %s (%s) ---\n' "$m" "$CLUSTER_DIR/$m.log" >&2
        tail -n 20 "$CLUSTER_DIR/$m.log" >&2 || true
    done
}

# The leader member $1's /v3/maintenance/status names (uint64 as a decimal string), or nothing.
leader_of() {
    curl -fsS -m 1 -X POST -H 'Content-Type: application/json' -d '{}' \
        "$1/v3/maintenance/status" 2>/dev/null |
        sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' || true
}

ready=0
for ((tick = 0; tick < READY_TIMEOUT * 5; tick++)); do
    for i in 0 1 2; do
        if ! member_pid "${MEMBERS[i]}" >/dev/null; then
            show_logs
            die "etcd member ${MEMBERS[i]} exited at startup (log tails above)"
        fi
    done
    leaders=()
    for url in "${client_urls[@]}"; do
        leaders+=("$(leader_of "$url")")
    done
    if [[ -n ${leaders[0]} && ${leaders[0]} != 0 && ${leaders[0]} == "${leaders[1]}" &&
        ${leaders[0]} == "${leaders[2]}" ]]; then
        ready=1
        break
    fi
    sleep 0.2
done
if [[ $ready -ne 1 ]]; then
    show_logs
    die "the members did not agree on a leader within ${READY_TIMEOUT}s (log tails above)"
fi

echo "$endpoints" >"$ENDPOINTS_FILE"
echo "ready: leader $(printf '%x' "${leaders[0]}"), logs in $CLUSTER_DIR/m*.log" >&2
echo "try: cargo run --release -- etcd put --endpoints $endpoints" >&2
echo "$endpoints"

if [[ $mode == background ]]; then
    cleanup_on_exit=0
    echo "stop it with: $0 --stop" >&2
    exit 0
fi

echo "running in the foreground; Ctrl-C stops the cluster and deletes its data" >&2
# `wait` returns when a member exits or a signal arrives; either way the EXIT trap cleans up.
wait -n || true
echo "an etcd member exited; stopping the cluster" >&2
