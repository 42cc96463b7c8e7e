//! The command line contract, without a server: exit codes and the shape of error output.
//!
//! Exit codes: 0 ok, 1 runtime failure, 2 bad flags. An error is exactly one stderr line
//! starting with "error:" and nothing on stdout.

mod support;

use std::time::Duration;

use support::{assert_one_error_line, run_bounded, unused_port};

/// Flag errors are found before any connection is made, so they must be quick.
const LIMIT: Duration = Duration::from_secs(10);

#[test]
fn bad_flags_exit_2_with_one_error_line() {
    // Point every case at a dead port: if validation ever lets one through, it fails with
    // exit 1 at once instead of loading whatever listens on the default 127.0.0.1:2379.
    let dead = format!("http://127.0.0.1:{}", unused_port());
    let cases: &[&[&str]] = &[
        &["etcd", "put", "--no-such-flag"],
        &["etcd", "put", "-n", "0"],
        &["etcd", "put", "-n", "5", "-z", "1s"],
        &["etcd", "put", "--conns", "3", "-c", "2"],
        &["etcd", "put", "-c", "0"],
        &["etcd", "put", "--key-size", "1", "--key-space-size", "1000"],
        &["etcd", "put", "--key-space-size", "0"],
        &["etcd", "put", "--timeout", "0s"],
        &["etcd", "put", "--connect-timeout", "0s"],
        &["etcd", "put", "--timeout", "banana"],
        &["etcd", "put", "-z", "0s"],
        &["etcd", "put", "--max-frame-size", "10"],
        &["etcd", "put", "--max-frame-size", "16M"],
        &["etcd", "put", "--initial-conn-window-size", "100"],
        &["etcd", "put", "--proto", "quic"],
        &["etcd", "put", "--format", "yaml"],
        &["etcd", "put", "-n"],
        &["etcd", "range"],
        &["etcd", "range", ""],
        &["etcd", "range", "k", "--consistency", "x"],
        &["etcd", "delete", "k"],
        &["etcd", "watch", "--streams", "3", "--watchers", "2"],
        &["etcd", "watch", "--conns", "2"],
        &["etcd", "watch", "--val-size", "4"],
        &["etcd", "watch", "--put-rate", "0"],
        &["etcd", "watch", "--put-total", "0"],
        &["etcd", "watch", "--watched-keys", "0"],
        &["etcd", "watch", "--put-timeout", "0s"],
        &["etcd", "watch", "--put-timeout", "soon"],
        &["etcd", "put", "--pipeline", "0"],
        &["etcd", "put", "--pipeline", "4", "--proto", "grpc"],
        &["etcd", "put", "--requests-per-conn", "0"],
        &["etcd", "put", "--requests-per-conn", "1", "--pipeline", "2"],
        &["etcd", "put", "--tls-resume", "off"],
        &["etcd", "put", "--tls-resume", "maybe"],
        &["etcd", "put", "--rate", "0"],
        &["etcd", "put", "--rate", "-5"],
        &["etcd", "put", "--rate", "fast"],
        &["etcd", "put", "--rate", "inf"],
        &["etcd", "put", "--connect-rate", "0"],
        &["etcd", "put", "--bind", "127.0.0.9-127.0.0.1"],
        &["etcd", "put", "--bind", "not-an-ip"],
        &["etcd", "put", "--bind", "::1"],
        &["etcd", "put", "--target", "majority"],
        &["etcd", "range", "k", "--target", ""],
        &["sweep", "etcd", "put", "--clients", "0"],
        &["sweep", "etcd", "put", "--clients", "1,x"],
        &["sweep", "etcd", "range", "--key-size", "0"],
        &["sweep", "etcd", "put", "--target", "leader,nobody"],
        &["sweep", "etcd", "put", "--proto", "http,quic"],
        &["sweep", "etcd", "put", "--format", "xml"],
        &["sweep", "etcd", "put", "-n", "0"],
        &[
            "sweep",
            "etcd",
            "put",
            "--key-size",
            "1",
            "--key-space-size",
            "1000",
        ],
        &["sweep", "etcd", "watch"],
        &["bogus"],
    ];
    for case in cases {
        let mut args = case.to_vec();
        args.extend(["--endpoints", &dead]);
        let run = run_bounded(&args, LIMIT);
        let what = format!("wirebench {}", args.join(" "));
        assert_eq!(run.code, Some(2), "{what}: {run:?}");
        assert_one_error_line(&run, &what);
    }

    // Endpoint errors (without a valid --endpoints after them).
    for endpoints in [
        "https://x:1",
        "x:1",
        "",
        "http://",
        "http://127.0.0.1:notaport",
    ] {
        let args = ["etcd", "put", "--endpoints", endpoints];
        let run = run_bounded(&args, LIMIT);
        let what = format!("wirebench {}", args.join(" "));
        assert_eq!(run.code, Some(2), "{what}: {run:?}");
        assert_one_error_line(&run, &what);
    }
}

#[test]
fn watch_put_timeout_must_be_positive() {
    let dead = format!("http://127.0.0.1:{}", unused_port());
    for value in ["0s", "0ms"] {
        let args = [
            "etcd",
            "watch",
            "--put-timeout",
            value,
            "--endpoints",
            &dead,
        ];
        let what = format!("wirebench {}", args.join(" "));
        let run = run_bounded(&args, LIMIT);
        assert_eq!(run.code, Some(2), "{what}: {run:?}");
        assert_one_error_line(&run, &what);
        assert_eq!(
            run.stderr.trim_end(),
            "error: --put-timeout must be positive",
            "{what}"
        );
    }
    // A positive one passes validation: the run then fails to connect (exit 1), not on flags.
    let args = [
        "etcd",
        "watch",
        "--put-timeout",
        "300ms",
        "--endpoints",
        &dead,
        "--connect-timeout",
        "1s",
    ];
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(1), "{run:?}");
}

#[test]
fn missing_argument_error_names_the_argument() {
    let run = run_bounded(&["etcd", "range"], LIMIT);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_one_error_line(&run, "wirebench etcd range");
    assert!(
        run.stderr.contains("KEY"),
        "the one error line must say which argument is missing, got {:?}",
        run.stderr
    );
}

#[test]
fn missing_subcommand_prints_usage_and_exits_2() {
    for args in [&[][..], &["etcd"][..]] {
        let run = run_bounded(args, LIMIT);
        assert_eq!(run.code, Some(2), "wirebench {args:?}: {run:?}");
        assert!(run.stdout.is_empty(), "wirebench {args:?}: {run:?}");
        assert!(run.stderr.contains("Usage:"), "wirebench {args:?}: {run:?}");
    }
}

#[test]
fn help_exits_0() {
    for args in [
        &["--help"][..],
        &["etcd", "--help"],
        &["etcd", "put", "--help"],
        &["etcd", "range", "-h"],
    ] {
        let run = run_bounded(args, LIMIT);
        assert_eq!(run.code, Some(0), "wirebench {args:?}: {run:?}");
        assert!(run.stdout.contains("Usage:"), "wirebench {args:?}: {run:?}");
        assert!(run.stderr.is_empty(), "wirebench {args:?}: {run:?}");
    }
    let run = run_bounded(&["etcd", "put", "--help"], LIMIT);
    for flag in [
        "--endpoints",
        "--proto",
        "--clients",
        "--total",
        "--duration",
        "--format",
    ] {
        assert!(
            run.stdout.contains(flag),
            "`etcd put --help` does not mention {flag}"
        );
    }
}

#[test]
fn version_prints_the_package_version() {
    let run = run_bounded(&["--version"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout.trim(),
        format!("wirebench {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(run.stderr.is_empty(), "{run:?}");
}

#[test]
fn unreachable_endpoint_exits_1_with_one_connect_error() {
    let endpoint = format!("http://127.0.0.1:{}", unused_port());
    for proto in ["both", "http", "grpc"] {
        let args = [
            "etcd",
            "put",
            "--endpoints",
            &endpoint,
            "--proto",
            proto,
            "-n",
            "10",
            "--connect-timeout",
            "2s",
            "--timeout",
            "2s",
        ];
        let what = format!("wirebench {}", args.join(" "));
        let run = run_bounded(&args, Duration::from_secs(15));
        assert!(
            run.elapsed < Duration::from_secs(5),
            "{what} took {:?}",
            run.elapsed
        );
        assert_eq!(run.code, Some(1), "{what}: {run:?}");
        assert_one_error_line(&run, &what);
        assert!(run.stderr.contains("connect"), "{what}: {:?}", run.stderr);
    }
}

#[test]
fn progress_bar_only_on_a_terminal() {
    let bin = env!("CARGO_BIN_EXE_wirebench");
    let args = ["echo", "-z", "1500ms", "--proto", "grpc", "-o", "/dev/null"];
    // stderr is a pipe: nothing but errors goes there
    let quiet = run_bounded(&args, LIMIT);
    assert_eq!(quiet.code, Some(0), "{quiet:?}");
    assert_eq!(quiet.stderr, "", "no progress output without a terminal");
    // under script(1) stderr is a pseudo-terminal: the bar appears with req/s and errors
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("{bin} {}", args.join(" ")), "/dev/null"]);
    let tty = support::run_command(cmd, LIMIT);
    assert_eq!(tty.code, Some(0), "{tty:?}");
    assert!(tty.stdout.contains("gRPC ["), "{:?}", tty.stdout);
    assert!(tty.stdout.contains("req/s, 0 errors"), "{:?}", tty.stdout);
}
