# Shell helpers shared by the scripts in this folder (sourced, not run).

die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

# The pid in pid file $1, if that process is still an etcd.
etcd_pid() {
    [[ -f $1 ]] || return 1
    local pid
    pid="$(cat "$1")"
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q etcd || return 1
    echo "$pid"
}

# Sets ETCD to the etcd binary ($ETCD, or etcd on PATH), installing Debian's etcd-server with
# apt-get (without letting the package start its own service on :2379) when there is none.
find_etcd() {
    ETCD="${ETCD:-$(command -v etcd || true)}"
    [[ -z $ETCD ]] || return 0
    command -v apt-get >/dev/null 2>&1 || die "etcd not found and no apt-get: install etcd 3.4+ by hand"
    echo "etcd not found: installing etcd-server with apt-get"
    local sudo=() added_policy=0 rc=0
    [[ "$(id -u)" -eq 0 ]] || sudo=(sudo)
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${sudo[@]}" chmod 755 /usr/sbin/policy-rc.d
        added_policy=1
    fi
    {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends etcd-server
    } </dev/null || rc=$?
    [[ $added_policy -eq 0 ]] || "${sudo[@]}" rm -f /usr/sbin/policy-rc.d
    [[ $rc -eq 0 ]] || die "apt-get install etcd-server failed"
    ETCD="$(command -v etcd)" || die "etcd-server installed but no etcd on PATH"
}

# The peer scripts' shapes: the names of comma list $2 (empty: every one) among the known ones
# ($1, space-separated), in the known order, each once, into SHAPES; dies on an unknown name.
select_shapes() {
    local -a known wanted
    read -r -a known <<<"$1"
    SHAPES=()
    if [[ -z $2 ]]; then
        SHAPES=("${known[@]}")
        return
    fi
    IFS=, read -r -a wanted <<<"$2"
    local w s
    for w in "${wanted[@]}"; do
        [[ " ${known[*]} " == *" $w "* ]] || die "--shapes: unknown shape '$w' (known: ${known[*]})"
    done
    for s in "${known[@]}"; do
        [[ ",$2," != *",$s,"* ]] || SHAPES+=("$s")
    done
    [[ ${#SHAPES[@]} -gt 0 ]] || die "--shapes: no shape selected"
}

# The peer scripts' inputs, written into directory $1: echo.lua (LUA: wrk's POST of the echo
# ping), pipeline16.lua (PIPE16: LUA plus a request() that returns 16 wrk.format() copies in one
# string) and echo-request.bin (BODY: the gRPC-framed EchoRequest {ping: "Hello, world!"}).
write_peer_inputs() {
    cat >"$1/echo.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"ping":"Hello, world!"}'
wrk.headers["Content-Type"] = "application/json"
LUA
    cat "$1/echo.lua" - >"$1/pipeline16.lua" <<'LUA'
init = function(args)
    local r = {}
    for i = 1, 16 do
        r[i] = wrk.format()
    end
    pipelined = table.concat(r)
end
request = function()
    return pipelined
end
LUA
    # flag 0, length 15; field 1, 13 bytes
    printf '\x00\x00\x00\x00\x0f\x0a\x0dHello, world!' >"$1/echo-request.bin"
}

# Starts `$1 serve --addr 127.0.0.1:0 --threads 1` and the further arguments pinned to CPU 0,
# its stderr into file $2: sets SERVER (its pid) and ADDR (the address it listens on), or dies.
start_pinned_server() {
    local bin=$1 log=$2
    shift 2
    taskset -c 0 "$bin" serve --addr 127.0.0.1:0 --threads 1 "$@" 2>"$log" </dev/null &
    SERVER=$!
    ADDR=""
    for _ in $(seq 100); do
        ADDR=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$log")
        [[ -n $ADDR ]] && return 0
        kill -0 "$SERVER" 2>/dev/null || break
        sleep 0.1
    done
    die "wirebench serve did not start: $(tr '\n' ' ' <"$log")"
}

# The release binary the peer scripts measure: $WIREBENCH (relative to where the script was
# started), else wirebench in CARGO_TARGET_DIR or target/ under release/. Changes to the
# repository's root (paths the caller was given must be made absolute first): sets TARGET_DIR
# and BIN, or dies.
find_wirebench() {
    BIN="${WIREBENCH:-}"
    [[ $BIN != */* ]] || BIN="$(realpath -m -- "$BIN")"
    TARGET_DIR=""
    [[ -z ${CARGO_TARGET_DIR:-} ]] || TARGET_DIR="$(realpath -m -- "$CARGO_TARGET_DIR")"
    cd "$(dirname "$0")/.."
    TARGET_DIR="${TARGET_DIR:-target}"
    BIN="${BIN:-$TARGET_DIR/release/wirebench}"
    [[ -x $BIN ]] || die "$BIN not found: build it first with cargo build --release"
}

# Installs Debian package $2 with apt-get (sudo -n when not root), saying so as $1 on stderr,
# or dies.
apt_install() {
    local who=$1 package=$2
    local -a sudo=()
    [[ "$(id -u)" -eq 0 ]] || sudo=(sudo -n)
    command -v apt-get >/dev/null 2>&1 || die "$package is missing and there is no apt-get: install it by hand"
    echo "$who: installing $package with apt-get" >&2
    {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$package"
    } </dev/null >&2 || die "apt-get install $package failed"
}

# Dies unless processes can be pinned to CPU 0 (the server) and CPU 1 (the client).
check_pinning() {
    taskset -c 0 "$BASH" -c : 2>/dev/null && taskset -c 1 "$BASH" -c : 2>/dev/null ||
        die "cannot pin to CPUs 0 and 1 (this machine or cgroup has $(nproc) CPU(s))"
}
