#!/usr/bin/env bash
# A local single-member etcd for manual wirebench runs, on loopback only, data on tmpfs.
#
#   scripts/etcd-local.sh                 run in the foreground (Ctrl-C stops it)
#   scripts/etcd-local.sh --background    start in the background, wait until it answers
#   scripts/etcd-local.sh --stop          stop the background one (--purge: delete its data too)
#   scripts/etcd-local.sh --status        say whether the background one is running
#
# Options: --fresh deletes the data directory before starting.
# Environment: PORT (client port, default 2379), PEER_PORT (default PORT+1),
#   DATA_DIR (default /dev/shm/wirebench-etcd-PORT), LOG_LEVEL (default warn), ETCD (binary).
# Installs etcd-server with apt-get when no etcd is found.
set -euo pipefail

PORT="${PORT:-2379}"
PEER_PORT="${PEER_PORT:-$((PORT + 1))}"
RUN_DIR=/dev/shm
[[ -d $RUN_DIR && -w $RUN_DIR ]] || RUN_DIR="${TMPDIR:-/tmp}"
DATA_DIR="${DATA_DIR:-$RUN_DIR/wirebench-etcd-$PORT}"
PID_FILE="$RUN_DIR/wirebench-etcd-$PORT.pid"
LOG_LEVEL="${LOG_LEVEL:-warn}"
ENDPOINT="http://127.0.0.1:$PORT"
READY_TIMEOUT=15

usage() {
    sed -n '2,13s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

mode=foreground
fresh=0
purge=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --background | -b) mode=background ;;
        --stop) mode=stop ;;
        --status) mode=status ;;
        --fresh) fresh=1 ;;
        --purge) purge=1 ;;
        -h | --help)
            usage
            exit 0
            ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
    shift
done

[[ $PORT =~ ^[0-9]+$ && $PORT -ge 1 && $PORT -le 65535 ]] || die "PORT must be a port number, got '$PORT'"
[[ $PEER_PORT =~ ^[0-9]+$ && $PEER_PORT -ge 1 && $PEER_PORT -le 65535 ]] ||
    die "PEER_PORT must be a port number, got '$PEER_PORT'"
[[ $PORT != "$PEER_PORT" ]] || die "PORT and PEER_PORT must differ"

running_pid() {
    etcd_pid "$PID_FILE"
}

port_open() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

case "$mode" in
    stop)
        if pid="$(running_pid)"; then
            kill "$pid"
            for _ in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            if kill -0 "$pid" 2>/dev/null; then
                kill -9 "$pid"
            fi
            echo "stopped etcd (pid $pid) on $ENDPOINT"
        else
            echo "no background etcd for port $PORT (pid file $PID_FILE)"
        fi
        rm -f "$PID_FILE"
        if [[ $purge -eq 1 ]]; then
            rm -rf "$DATA_DIR"
            echo "removed $DATA_DIR"
        fi
        exit 0
        ;;
    status)
        if pid="$(running_pid)"; then
            echo "etcd running (pid $pid) on $ENDPOINT, data in $DATA_DIR"
            exit 0
        fi
        echo "no background etcd for port $PORT"
        exit 1
        ;;
esac

# --- install -----------------------------------------------------------------------------------
find_etcd

# --- start -------------------------------------------------------------------------------------
if pid="$(running_pid)"; then
    die "etcd already running in the background (pid $pid) on $ENDPOINT; stop it with --stop"
fi
for p in "$PORT" "$PEER_PORT"; do
    if port_open "$p"; then
        die "127.0.0.1:$p is already in use (a system etcd? try: systemctl stop etcd)"
    fi
done

if [[ $fresh -eq 1 ]]; then
    rm -rf "$DATA_DIR"
fi
mkdir -p "$DATA_DIR"
chmod 700 "$DATA_DIR"

args=(
    --name wirebench
    --data-dir "$DATA_DIR"
    --listen-client-urls "$ENDPOINT"
    --advertise-client-urls "$ENDPOINT"
    --listen-peer-urls "http://127.0.0.1:$PEER_PORT"
    --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT"
    --initial-cluster "wirebench=http://127.0.0.1:$PEER_PORT"
    --logger zap
    --log-level "$LOG_LEVEL"
)

echo "etcd $("$ETCD" --version | sed -n 's/^etcd Version: //p') on $ENDPOINT (peer port $PEER_PORT), data in $DATA_DIR"
echo "try: cargo run --release -- etcd put --endpoints $ENDPOINT"

if [[ $mode == foreground ]]; then
    exec "$ETCD" "${args[@]}"
fi

log="$DATA_DIR/etcd.log"
nohup "$ETCD" "${args[@]}" >"$log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PID_FILE"
for ((i = 0; i < READY_TIMEOUT * 10; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$PID_FILE"
        cat "$log" >&2
        die "etcd exited at startup (log above)"
    fi
    if port_open "$PORT"; then
        echo "started in the background: pid $pid (in $PID_FILE), log $log"
        if [[ $PORT == 2379 ]]; then
            echo "stop it with: $0 --stop"
        else
            echo "stop it with: PORT=$PORT $0 --stop"
        fi
        echo "$ENDPOINT"
        exit 0
    fi
    sleep 0.1
done
kill "$pid" 2>/dev/null || true
rm -f "$PID_FILE"
die "etcd did not answer on $ENDPOINT within ${READY_TIMEOUT}s (log: $log)"
