#!/usr/bin/env bash
# Runs the cargo-fuzz targets of fuzz/ (the wirebench-wire protocol cores) one after another,
# each for a fixed time, against its corpus in fuzz/corpus/TARGET (the committed seed-* files
# plus whatever earlier runs grew there), bounded in time:
#
#   scripts/fuzz.sh [--minutes 10 | --seconds S] [--jobs 1] [TARGET ...]
#
# All targets by default (see fuzz/Cargo.toml); --jobs J runs J targets at the same time.
# Toolchain: `cargo +nightly` when rustup has a nightly, else the default toolchain with
# RUSTC_BOOTSTRAP=1 (WIREBENCH_FUZZ_TOOLCHAIN=NAME picks `cargo +NAME`). Installs cargo-fuzz
# with `cargo install --locked` when it is absent, unless WIREBENCH_SKIP_INSTALL=1.
#
# Prints one line per target as it ends and a summary table: runs, exec/s, coverage (cov:,
# ft:), corpus size, and the crash files (fuzz/artifacts/TARGET/). libFuzzer's logs stay in
# $OUT (default /tmp/wirebench-fuzz). Exits 1 when a target crashed or failed, 3 (after one
# line saying why) when fuzzing cannot run on this machine. Each run is killed after its time
# plus LIMIT seconds (300).
set -euo pipefail

SECONDS_EACH=600
JOBS=1
OUT="${OUT:-/tmp/wirebench-fuzz}"
LIMIT="${LIMIT:-300}"
# libFuzzer's own per-input limit is 1200 s; an input that hangs should end the run sooner.
UNIT_TIMEOUT="${UNIT_TIMEOUT:-25}"

usage() {
    sed -n '2,18s/^# \{0,1\}//p' "$0"
}

# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

# Fuzzing cannot run here: say why in one line and exit 3 (scripts/test.sh fails on that, as
# on a crash).
cannot_run() {
    printf 'fuzz: cannot run here: %s\n' "$*"
    exit 3
}

# Runs target $1 for SECONDS_EACH; its libFuzzer output goes to $OUT/$1.log, and the exit code
# of the run to $OUT/$1.rc.
run_target() {
    local t=$1 rc=0
    mkdir -p "fuzz/corpus/$t"
    timeout -k 30 $((SECONDS_EACH + LIMIT)) \
        "${CARGO[@]}" fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -timeout="$UNIT_TIMEOUT" -print_final_stats=1 \
        </dev/null >"$OUT/$t.log" 2>&1 || rc=$?
    echo "$rc" >"$OUT/$t.rc"
}

# Prints "runs seconds exec/s cov ft corp corpus_files corpus_bytes" for target $1 from its log
# (corp: the inputs libFuzzer keeps; the folder also holds inputs later ones superseded).
stats() {
    local t=$1 log="$OUT/$1.log" runs last cov ft corp secs rate files bytes
    runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n1)"
    [[ -n $runs ]] || runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n1)"
    last="$(grep -E '^#[0-9]+' "$log" | tail -n1 || true)"
    [[ -n $runs ]] || runs="$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")"
    cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
    ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
    corp="$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")"
    secs="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n1)"
    files="$(find "fuzz/corpus/$t" -type f | wc -l)"
    bytes="$(du -sb "fuzz/corpus/$t" | cut -f1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$log" | tail -n1)"
    echo "${runs:--} ${secs:--} ${rate:--} ${cov:--} ${ft:--} ${corp:--} $files $bytes"
}

# The files libFuzzer wrote for a failing input (crash-, timeout-, oom-, leak-; not slow-unit-).
crash_files() {
    sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$OUT/$1.log" | { grep -v '/slow-unit-' || true; } |
        sed -e 's#^\./##' -e "s#^$PWD/##" | tr '\n' ' ' | sed 's/ $//'
}

# Prints the line for target $1 once it ended; returns 1 if it crashed or failed.
report() {
    local t=$1 rc runs secs rate cov ft corp files bytes crashes
    rc="$(cat "$OUT/$t.rc")"
    read -r runs secs rate cov ft corp files bytes < <(stats "$t")
    crashes="$(crash_files "$t")"
    if [[ $rc -eq 0 && -z $crashes ]]; then
        echo "fuzz: $t: $runs runs in $secs s ($rate/s), cov $cov, ft $ft, corpus $corp inputs ($files files, $((bytes / 1024)) KiB), no crash"
        return 0
    fi
    # What a CI log needs to reproduce it: the panic or sanitizer report and the input in base64
    # (the artifact is lost with CI's clone); the whole log is in $OUT.
    echo "---- from $OUT/$t.log"
    {
        grep -E -A2 "panicked at" "$OUT/$t.log" | head -n 3
        grep -E "==[0-9]+== ?ERROR|^SUMMARY:|^Base64:" "$OUT/$t.log"
    } >"$OUT/$t.excerpt" || true
    [[ -s $OUT/$t.excerpt ]] || tail -n 20 "$OUT/$t.log" >"$OUT/$t.excerpt"
    sed 's/^/    /' "$OUT/$t.excerpt"
    if [[ -n $crashes ]]; then
        printf 'error: fuzz target %s crashed after %s runs: %s\n' "$t" "$runs" "$crashes" >&2
    elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
        printf 'error: fuzz target %s did not stop within %s s (log: %s)\n' "$t" $((SECONDS_EACH + LIMIT)) "$OUT/$t.log" >&2
    else
        printf 'error: fuzz target %s failed with exit code %s (log: %s)\n' "$t" "$rc" "$OUT/$t.log" >&2
    fi
    return 1
}

# The whole run is one function, read in full before it starts: editing this file while a long
# run goes on cannot change what that run does.
main() {
    TARGETS=()
    while [[ $# -gt 0 ]]; do
        case "$1" in
            --minutes) SECONDS_EACH=$((${2:?} * 60)); shift ;;
            --seconds) SECONDS_EACH="${2:?}"; shift ;;
            --jobs) JOBS="${2:?}"; shift ;;
            -h | --help) usage; exit 0 ;;
            -*) usage >&2; die "unknown argument $1" ;;
            *) TARGETS+=("$1") ;;
        esac
        shift
    done
    [[ $SECONDS_EACH =~ ^[0-9]+$ && $SECONDS_EACH -gt 0 ]] || die "the time per target must be a positive number"
    [[ $JOBS =~ ^[0-9]+$ && $JOBS -gt 0 ]] || die "--jobs must be a positive number"

    cd "$(dirname "$0")/.."
    [[ -f fuzz/Cargo.toml ]] || die "fuzz/Cargo.toml not found"
    command -v cargo >/dev/null 2>&1 || cannot_run "cargo not found"

    # --- toolchain: nightly if rustup has one, else stable with RUSTC_BOOTSTRAP=1 -------------
    CARGO=(cargo)
    RUSTC=(rustc)
    toolchain="${WIREBENCH_FUZZ_TOOLCHAIN:-}"
    if [[ -z $toolchain ]] && cargo +nightly --version >/dev/null 2>&1; then
        toolchain=nightly
    fi
    if [[ -n $toolchain ]]; then
        CARGO=(cargo "+$toolchain")
        RUSTC=(rustc "+$toolchain")
    fi
    "${RUSTC[@]}" --version >/dev/null 2>&1 || cannot_run "no rustc for toolchain '${toolchain:-default}'"
    rustc_version="$("${RUSTC[@]}" --version)"
    if [[ $rustc_version != *nightly* && $rustc_version != *dev* ]]; then
        # cargo-fuzz builds with -Zsanitizer=address and other -Z flags: nightly-only features
        # that a stable compiler accepts under RUSTC_BOOTSTRAP=1.
        export RUSTC_BOOTSTRAP=1
        echo "fuzz: toolchain: $rustc_version with RUSTC_BOOTSTRAP=1 (no nightly)"
    else
        echo "fuzz: toolchain: $rustc_version"
    fi

    # The one thing that can fail on a given compiler: the AddressSanitizer build and runtime.
    probe="$(mktemp -d)"
    echo 'fn main() {}' >"$probe/probe.rs"
    if ! "${RUSTC[@]}" -Zsanitizer=address -Cpasses=sancov-module -o "$probe/probe" "$probe/probe.rs" \
        >"$probe/probe.log" 2>&1 || ! "$probe/probe" >>"$probe/probe.log" 2>&1; then
        why="$(grep -m1 -i error "$probe/probe.log" || head -n1 "$probe/probe.log")"
        rm -rf "$probe"
        cannot_run "$rustc_version cannot build with -Zsanitizer=address${RUSTC_BOOTSTRAP:+ even with RUSTC_BOOTSTRAP=1}: $why"
    fi
    rm -rf "$probe"

    # --- cargo-fuzz ---------------------------------------------------------------------------
    if ! "${CARGO[@]}" fuzz --version >/dev/null 2>&1; then
        if [[ "${WIREBENCH_SKIP_INSTALL:-0}" == "1" ]]; then
            cannot_run "cargo-fuzz is not installed and WIREBENCH_SKIP_INSTALL=1 (cargo install --locked cargo-fuzz)"
        fi
        echo "fuzz: installing cargo-fuzz (cargo install --locked cargo-fuzz)"
        # Built with the default toolchain: cargo-fuzz itself needs no nightly.
        (unset RUSTC_BOOTSTRAP; cargo install --locked cargo-fuzz </dev/null)
        "${CARGO[@]}" fuzz --version >/dev/null 2>&1 || die "cargo-fuzz installed but \`cargo fuzz\` does not run"
    fi
    echo "fuzz: $("${CARGO[@]}" fuzz --version)"

    # --- build --------------------------------------------------------------------------------
    all_targets=()
    while IFS= read -r t; do
        all_targets+=("$t")
    done < <("${CARGO[@]}" fuzz list)
    [[ ${#all_targets[@]} -gt 0 ]] || die "cargo fuzz list found no targets"
    if [[ ${#TARGETS[@]} -eq 0 ]]; then
        TARGETS=("${all_targets[@]}")
    fi
    for t in "${TARGETS[@]}"; do
        [[ " ${all_targets[*]} " == *" $t "* ]] || die "unknown fuzz target $t (have: ${all_targets[*]})"
    done

    # fuzz/ is its own workspace with its own Cargo.lock; --locked fails if that lock is stale
    # (cargo fuzz build has no --locked of its own and would rewrite it).
    "${CARGO[@]}" fetch --locked --quiet --manifest-path fuzz/Cargo.toml
    build_started=$SECONDS
    "${CARGO[@]}" fuzz build
    echo "fuzz: built ${#all_targets[@]} targets in $((SECONDS - build_started)) s"

    # --- run ----------------------------------------------------------------------------------
    mkdir -p "$OUT"
    echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_EACH} s each, $JOBS at a time, logs in $OUT"
    run_started=$SECONDS
    status=0
    running=0
    for t in "${TARGETS[@]}"; do
        rm -f "$OUT/$t.rc"
        if [[ $JOBS -eq 1 ]]; then
            run_target "$t"
            report "$t" || status=1
            continue
        fi
        if [[ $running -ge $JOBS ]]; then
            wait -n || true
            running=$((running - 1))
        fi
        run_target "$t" &
        running=$((running + 1))
    done
    if [[ $JOBS -gt 1 ]]; then
        wait || true
        for t in "${TARGETS[@]}"; do
            report "$t" || status=1
        done
    fi

    # --- summary ------------------------------------------------------------------------------
    echo
    printf '%-14s %12s %9s %6s %7s %7s %16s  %s\n' target runs exec/s cov ft corpus "files/KiB" crashes
    for t in "${TARGETS[@]}"; do
        read -r runs secs rate cov ft corp files bytes < <(stats "$t")
        crashes="$(crash_files "$t")"
        rc="$(cat "$OUT/$t.rc")"
        if [[ -z $crashes ]]; then
            if [[ $rc -eq 0 ]]; then crashes=0; else crashes="failed (exit $rc)"; fi
        fi
        printf '%-14s %12s %9s %6s %7s %7s %16s  %s\n' "$t" "$runs" "$rate" "$cov" "$ft" "$corp" \
            "$files/$((bytes / 1024))" "$crashes"
    done
    echo "fuzz: ${#TARGETS[@]} targets in $((SECONDS - run_started)) s of fuzzing, $((SECONDS - build_started)) s with the build"
    return $status
}

main "$@"
