#!/usr/bin/env bash
# The whole check, as CI runs it (.ci/run execs this): install what the tests need when it is
# absent (etcd, tshark, perf, h2load and nghttp, chromium, Python's grpcio with its tools and
# reflection, hypercorn, hdrhistogram and kubernetes-validate, cargo-fuzz), then the Kubernetes
# manifests against the schemas kubernetes-validate ships (offline), rustfmt, clippy with
# warnings denied, the test suite, and every fuzz target for 20 s
# (WIREBENCH_FUZZ_SECONDS; nightly, or the stable toolchain with RUSTC_BOOTSTRAP=1).
#
# Works unattended as root on a fresh Debian 12 (no stdin, CI=true); as another user it uses
# sudo for apt-get. Set WIREBENCH_SKIP_INSTALL=1 to never call apt-get.
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
    # Kernel-count tests (tests/kernel_counts.rs) compare with `perf stat`.
    if command -v perf >/dev/null 2>&1 && perf --version >/dev/null 2>&1; then
        echo "perf: $(perf --version 2>/dev/null | head -n1)"
    else
        echo "perf: installing linux-perf"
        apt_install linux-perf
    fi
    # Interop tests (tests/interop.rs): nghttp2's h2load and nghttp, and Python's grpcio.
    if command -v h2load >/dev/null 2>&1 && command -v nghttp >/dev/null 2>&1; then
        echo "h2load: $(h2load --version 2>/dev/null | head -n1)"
    else
        echo "h2load: installing nghttp2-client"
        apt_install nghttp2-client
    fi
    command -v python3 >/dev/null 2>&1 || die "python3 not found: the interop tests need it"
    # tests/grpc_any.rs: its grpcio server also serves reflection.
    if python3 -c 'import grpc, grpc_tools, grpc_reflection' >/dev/null 2>&1; then
        echo "grpcio: $(python3 -c 'import grpc; print(grpc.__version__)')"
    else
        echo "grpcio: installing grpcio grpcio-tools grpcio-reflection with pip"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
            grpcio grpcio-tools grpcio-reflection </dev/null
    fi
    # tests/results.rs loads the HTML report in a headless browser and takes a screenshot.
    if command -v chromium >/dev/null 2>&1; then
        echo "chromium: $(chromium --version 2>/dev/null | head -n1)"
    else
        echo "chromium: installing"
        apt_install chromium
    fi
    # tests/http.rs: Hypercorn serves HTTP/1.1 and h2c on one port.
    if python3 -c 'import hypercorn' >/dev/null 2>&1; then
        echo "hypercorn: $(python3 -c 'import importlib.metadata as m; print(m.version("hypercorn"))')"
    else
        echo "hypercorn: installing with pip"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
            hypercorn </dev/null
    fi
    # tests/merge.rs: HdrHistogram_py (PyPI hdrhistogram) reads the reports' histograms; the
    # manifests of docs/kubernetes/ are validated offline with kubernetes-validate below.
    if python3 -c 'import hdrh, kubernetes_validate' >/dev/null 2>&1; then
        echo "hdrhistogram: $(python3 -c 'import importlib.metadata as m; print(m.version("hdrhistogram"))')," \
            "kubernetes-validate: $(python3 -m kubernetes_validate --version)"
    else
        echo "hdrhistogram, kubernetes-validate: installing with pip"
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
            hdrhistogram kubernetes-validate </dev/null
    fi
fi
[[ -x /usr/bin/etcd ]] || die "/usr/bin/etcd is missing: the etcd tests need it (apt-get install etcd-server)"

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
python3 -c 'import kubernetes_validate' >/dev/null 2>&1 ||
    die "kubernetes-validate is missing: python3 -m pip install kubernetes-validate"
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
# Exit 3: it said in one line why fuzzing cannot run here, so skip; any other failure (a crash,
# with its file's path) fails the check. WIREBENCH_FUZZ_SECONDS=0 skips the section.
fuzz_rc=0
if [[ "${WIREBENCH_FUZZ_SECONDS:-20}" == "0" ]]; then
    echo "skipped (WIREBENCH_FUZZ_SECONDS=0)"
else
    scripts/fuzz.sh --seconds "${WIREBENCH_FUZZ_SECONDS:-20}" || fuzz_rc=$?
fi
if [[ $fuzz_rc -ne 0 && $fuzz_rc -ne 3 ]]; then
    die "fuzz targets failed (see above)"
fi

section "all checks passed in $((SECONDS - started)) s"
