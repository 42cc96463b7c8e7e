#!/usr/bin/env bash
# The whole check, as CI runs it (.ci/run execs this): install what the tests need when it is
# absent (etcd, tshark, perf, h2load and nghttp, chromium, Prometheus' promtool, cargo-fuzz, and
# Python's grpcio with its tools and reflection, hypercorn, hdrhistogram and kubernetes-validate
# in a virtual environment of this script's own), then the Kubernetes manifests against the
# schemas kubernetes-validate ships (offline), rustfmt, clippy with warnings denied, the test
# suite, and every fuzz target for 20 s (WIREBENCH_FUZZ_SECONDS; nightly, or the stable
# toolchain with RUSTC_BOOTSTRAP=1). A fuzz target that cannot run fails the check;
# WIREBENCH_FUZZ_SECONDS=0 skips fuzzing, and the last line says so.
#
# The Python packages go into WIREBENCH_VENV (default ~/.cache/wirebench/venv, kept between
# runs and clones), never into the system interpreter (Debian marks it externally managed,
# PEP 668). Its bin/ goes first on PATH, so every `python3` of the tests is its python; to run
# one test by hand the same way: PATH=~/.cache/wirebench/venv/bin:$PATH cargo test --test NAME
#
# Works unattended as root on a fresh Debian 12 (no stdin, CI=true), with the system's Python
# only or none; as another user it uses sudo for apt-get. Set WIREBENCH_SKIP_INSTALL=1 to
# install nothing (no apt-get, no pip): the virtual environment is used when it exists, else
# python3 as found.
#
# Tests run in the dev profile: building h2/tokio in release takes about twice as long on two
# cores, and the suite's checks (counts, bytes, syscalls) do not depend on optimisation.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
# CI builds from scratch: incremental state only costs time and disk there.
if [[ "${CI:-}" == "true" ]]; then
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi

section() {
    printf '\n==== %s ====\n' "$*"
}

die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}

started=$SECONDS

# ---------------------------------------------------------------------------------------------
section "system packages"

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    SUDO=(sudo -n)
fi

apt_updated=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
    export DEBIAN_FRONTEND=noninteractive
    if [[ $apt_updated -eq 0 ]]; then
        "${SUDO[@]}" apt-get update -q </dev/null
        apt_updated=1
    fi
    # Do not let package scripts start daemons (etcd-server would start one on :2379),
    # unless the system already has a policy (Docker images do).
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
        "${SUDO[@]}" chmod 755 "$policy"
        added_policy=1
    fi
    local rc=0
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        --no-install-recommends "$@" </dev/null || rc=$?
    if [[ $added_policy -eq 1 ]]; then
        "${SUDO[@]}" rm -f "$policy"
    fi
    return $rc
}

if [[ "${WIREBENCH_SKIP_INSTALL:-0}" == "1" ]]; then
    echo "WIREBENCH_SKIP_INSTALL=1: not installing anything"
else
    if [[ -x /usr/bin/etcd ]]; then
        echo "etcd: $(/usr/bin/etcd --version | head -n1)"
    else
        echo "etcd: installing etcd-server"
        apt_install etcd-server
    fi
    if ! command -v cc >/dev/null 2>&1; then
        # rustc links with cc, and mimalloc's build script compiles C.
        echo "cc: installing gcc"
        apt_install gcc libc6-dev
    fi
    if command -v tshark >/dev/null 2>&1; then
        echo "tshark: $(tshark --version 2>/dev/null | head -n1)"
    else
        echo "tshark: installing"
        # wireshark-common asks whether non-root users may capture; answer it up front.
        echo "wireshark-common wireshark-common/install-setuid boolean false" |
            "${SUDO[@]}" debconf-set-selections
        apt_install tshark
    fi
    # Kernel-count tests (tests/measure_kernel_counts.rs) compare with `perf stat`.
    if command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; then
        echo "perf: $(perf --version 2>/dev/null | head -n1)"
    else
        echo "perf: installing linux-perf"
        apt_install linux-perf
    fi
    # Interop tests (tests/serve_interop.rs): nghttp2's h2load and nghttp (grpcio: the virtual
    # environment below).
    if command -v h2load >/dev/null 2>&1 && command -v nghttp >/dev/null 2>&1; then
        echo "h2load: $(h2load --version 2>/dev/null | head -n1)"
    else
        echo "h2load: installing nghttp2-client"
        apt_install nghttp2-client
    fi
    # tests/report_outputs.rs loads the HTML report in a headless browser and takes a screenshot.
    if command -v chromium >/dev/null 2>&1; then
        echo "chromium: $(chromium --version 2>/dev/null | head -n1)"
    else
        echo "chromium: installing"
        apt_install chromium
    fi
    # tests/report_outputs.rs checks the /metrics page with Prometheus' own promtool; Debian ships it
    # in the server's package, whose daemon apt_install keeps from starting.
    if command -v promtool >/dev/null 2>&1; then
        echo "promtool: $(promtool --version 2>&1 | head -n1)"
    else
        echo "promtool: installing prometheus"
        apt_install prometheus
    fi
    # tests/completions_man.rs renders the man pages with groff and wants no warning.
    if command -v groff >/dev/null 2>&1; then
        echo "groff: $(groff --version 2>/dev/null | head -n1)"
    else
        echo "groff: installing groff-base"
        apt_install groff-base
    fi
    # tests/link_path.rs and crates/link/tests: ip (iproute2) and lsns (util-linux) look for what
    # a link leaves behind, curl runs through `wirebench link`.
    # tests/client_h3.rs loads Caddy's HTTP/3 file server (its daemon kept from starting).
    # tests/client_unix.rs puts nginx on Unix sockets (its daemon kept from starting too).
    for tool in ip:iproute2 lsns:util-linux curl:curl caddy:caddy nginx:nginx; do
        if command -v "${tool%%:*}" >/dev/null 2>&1; then
            echo "${tool%%:*}: present"
        else
            echo "${tool%%:*}: installing ${tool#*:}"
            apt_install "${tool#*:}"
        fi
    done
    # Python and its venv module for the virtual environment below (Debian puts ensurepip in
    # python3-venv, and a fresh system may have no python3 at all).
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        echo "python3: installing python3 python3-venv"
        apt_install python3 python3-venv
        VENV_PYTHON=/usr/bin/python3
    fi
fi
[[ -x /usr/bin/etcd ]] || die "/usr/bin/etcd is missing: the etcd tests need it (apt-get install etcd-server)"
command -v promtool >/dev/null 2>&1 ||
    die "promtool is missing: tests/report_outputs.rs checks the metrics page with it (apt-get install prometheus)"
# the link's tests need TUN devices and network namespaces (root): they fail, not skip, without
[[ -c /dev/net/tun ]] || die "/dev/net/tun is missing: the link's tests need TUN devices (modprobe tun)"

# ---------------------------------------------------------------------------------------------
section "Python packages (virtual environment)"
# The tests' Python peers: grpcio with its tools and reflection (tests/serve_interop.rs,
# tests/client_h2.rs, tests/client_grpc_any.rs), Hypercorn (tests/client_http1.rs: HTTP/1.1 and h2c on one
# port) with aioquic (tests/client_h3.rs: HTTP/3), HdrHistogram_py (tests/report_merge.rs reads the reports' histograms with it) and
# kubernetes-validate (the manifests, below), in a virtual environment of this script's own.
VENV="${WIREBENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/wirebench/venv}"
PY_PACKAGES=(grpcio grpcio-tools grpcio-reflection hypercorn aioquic hdrhistogram kubernetes-validate)
PY_IMPORTS='import grpc, grpc_tools, grpc_reflection, hypercorn, aioquic, hdrh, kubernetes_validate'

if [[ "${WIREBENCH_SKIP_INSTALL:-0}" != "1" ]]; then
    mkdir -p "$(dirname "$VENV")"
    # One run at a time makes and fills it: the clones and worktrees of a machine share it.
    venv_lock=""
    if command -v flock >/dev/null 2>&1; then
        exec {venv_lock}>"$VENV.lock"
        flock "$venv_lock"
    fi
    # One whose interpreter is gone (a Python removed or upgraded) is made again.
    if [[ -e $VENV ]] && ! "$VENV/bin/python3" -c '' >/dev/null 2>&1; then
        echo "venv: $VENV does not run, making it again"
        rm -rf "$VENV"
    fi
    if [[ ! -e $VENV ]]; then
        echo "venv: creating $VENV ($("${VENV_PYTHON:-python3}" --version 2>&1))"
        "${VENV_PYTHON:-python3}" -m venv "$VENV" </dev/null
    fi
    if ! "$VENV/bin/python3" -c "$PY_IMPORTS" >/dev/null 2>&1; then
        echo "venv: installing ${PY_PACKAGES[*]}"
        "$VENV/bin/python3" -m pip install --quiet --disable-pip-version-check \
            "${PY_PACKAGES[@]}" </dev/null
    fi
    if [[ -n $venv_lock ]]; then
        exec {venv_lock}>&-
    fi
fi
# Every `python3` from here on, the tests' included, is the virtual environment's.
if [[ -x $VENV/bin/python3 ]]; then
    export VIRTUAL_ENV="$VENV"
    export PATH="$VENV/bin:$PATH"
    unset PYTHONHOME
    hash -r
fi
python3 -c "$PY_IMPORTS" >/dev/null 2>&1 ||
    die "$(command -v python3 || echo python3) cannot import ${PY_PACKAGES[*]}: scripts/test.sh installs them into $VENV unless WIREBENCH_SKIP_INSTALL=1"
echo "python3: $(command -v python3), $(python3 --version 2>&1)"
python3 -c 'import importlib.metadata as m, sys; print(", ".join(f"{p} {m.version(p)}" for p in sys.argv[1:]))' \
    "${PY_PACKAGES[@]}"

# ---------------------------------------------------------------------------------------------
section "toolchain"

command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (https://rustup.rs)"
if command -v rustup >/dev/null 2>&1; then
    for component in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
            rustup component add "$component"
        fi
    done
fi
cargo --version
rustc --version

# ---------------------------------------------------------------------------------------------
section "Kubernetes manifests (docs/kubernetes, offline schema check)"
# kubernetes-validate carries the API schemas of every Kubernetes release it knows: no cluster
# and no network. --strict refuses fields the schema does not have (a misspelt one).
python3 -m kubernetes_validate --strict --kubernetes-version 1.30.0 \
    docs/kubernetes/target.yaml docs/kubernetes/agents.yaml

# ---------------------------------------------------------------------------------------------
section "cargo fmt --check"
cargo fmt --all --check

# ---------------------------------------------------------------------------------------------
section "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings

# ---------------------------------------------------------------------------------------------
section "cargo test --workspace"
cargo test --locked --workspace

# ---------------------------------------------------------------------------------------------
section "fuzz targets"
# scripts/fuzz.sh picks the toolchain (nightly, else stable with RUSTC_BOOTSTRAP=1), installs
# cargo-fuzz when absent (not with WIREBENCH_SKIP_INSTALL=1), builds every target and runs each
# for WIREBENCH_FUZZ_SECONDS (20) against fuzz/corpus/TARGET, printing its runs and coverage.
# Exit 3: it said in one line why fuzzing cannot run here, which fails the check as a crash
# (with its file's path) does. WIREBENCH_FUZZ_SECONDS=0 skips the section, and the last line
# says so.
skipped=""
if [[ "${WIREBENCH_FUZZ_SECONDS:-20}" == "0" ]]; then
    skipped="fuzzing (skipped by WIREBENCH_FUZZ_SECONDS=0)"
    echo "skipped (WIREBENCH_FUZZ_SECONDS=0)"
else
    fuzz_rc=0
    scripts/fuzz.sh --seconds "${WIREBENCH_FUZZ_SECONDS:-20}" || fuzz_rc=$?
    case $fuzz_rc in
        0) ;;
        3) die "the fuzz targets cannot run here (why: above); WIREBENCH_FUZZ_SECONDS=0 skips them" ;;
        *) die "fuzz targets failed (see above)" ;;
    esac
fi

if [[ -n $skipped ]]; then
    section "all checks passed except $skipped, in $((SECONDS - started)) s"
else
    section "all checks passed in $((SECONDS - started)) s"
fi
