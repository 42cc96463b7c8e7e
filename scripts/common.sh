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
