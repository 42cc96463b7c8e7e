//! What the clap grammar gives besides parsing, checked on the real binary: `--help` grouped
//! under headings for every command, the shell completion scripts (bash's run in bash), and
//! the man pages (valid roff with NAME and SYNOPSIS, rendered by groff where it is installed:
//! scripts/test.sh installs it).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::{run_bounded, run_command};

/// Nothing here connects anywhere: each command answers at once.
const LIMIT: Duration = Duration::from_secs(20);

/// `wirebench ARGS`, which must exit 0 and say nothing on stderr.
fn ok(args: &[&str]) -> String {
    let run = run_bounded(args, LIMIT);
    assert_eq!(run.code, Some(0), "wirebench {args:?}: {run:?}");
    assert!(run.stderr.is_empty(), "wirebench {args:?}: {}", run.stderr);
    run.stdout
}

/// The subcommands `help` lists under `Commands:`, without clap's own `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Every command path below `path` (the leaves and the groups), depth first.
fn walk(path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = ok(&args);
    found.push(path.clone());
    for sub in subcommands(&help) {
        path.push(sub);
        walk(path, found);
        path.pop();
    }
}

/// The headings (`Load:`, `TLS:`, ...) of one `--help`.
fn headings(help: &str) -> Vec<&str> {
    help.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .map(|l| l.trim_end_matches(':'))
        .collect()
}

#[test]
fn every_command_has_help_and_the_load_commands_group_their_flags() {
    let mut commands = Vec::new();
    walk(&mut Vec::new(), &mut commands);
    // the top level, 11 commands, and the etcd, call, sweep and compare families
    assert!(commands.len() > 40, "{commands:?}");
    for name in ["echo", "etcd", "sweep", "merge", "completions", "man"] {
        assert!(commands.contains(&vec![name.to_string()]), "{name}");
    }

    let echo = ok(&["echo", "--help"]);
    let groups = headings(&echo);
    for want in [
        "Options",
        "Request",
        "Load",
        "Connections",
        "HTTP/1.1",
        "HTTP/2",
        "TLS",
        "etcd",
        "Output",
        "Measurement",
        "Thresholds",
        "Distributed runs",
    ] {
        assert!(
            groups.contains(&want),
            "echo --help lacks {want}: {groups:?}"
        );
    }
    // a flag sits under its group: -c under Load, --cacert under TLS, --fail-if under Thresholds
    let under = |flag: &str| {
        let at = echo.find(flag).unwrap_or_else(|| panic!("{flag} missing"));
        echo[..at]
            .lines()
            .rev()
            .find(|l| !l.starts_with(' ') && l.ends_with(':'))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(under("--clients <CLIENTS>"), "Load:");
    assert_eq!(under("--conns <CONNS>"), "Connections:");
    assert_eq!(under("--hpack <HPACK>"), "HTTP/2:");
    assert_eq!(under("--cacert <CACERT>"), "TLS:");
    assert_eq!(under("--format <FORMAT>"), "Output:");
    assert_eq!(under("--fail-if <THRESHOLD>"), "Thresholds:");

    let put = headings(&ok(&["etcd", "put", "--help"])).join(",");
    assert!(put.contains("etcd") && put.contains("Load"), "{put}");
    let serve = headings(&ok(&["serve", "--help"])).join(",");
    assert!(serve.contains("Faults") && serve.contains("TLS"), "{serve}");
}

#[test]
fn bash_completion_completes_commands_and_flags() {
    let script = ok(&["completions", "bash"]);
    for word in [
        "etcd",
        "echo",
        "sweep",
        "merge",
        "completions",
        "--fail-if",
        "--payload-size",
        "--endpoints",
        "--proto",
    ] {
        assert!(
            script.contains(word),
            "the bash script never mentions {word}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wirebench.bash");
    std::fs::write(&file, &script).unwrap();
    // bash itself completes a line with it, as a shell that sourced it would
    let complete = |words: &[&str]| -> Vec<String> {
        let line = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let cword = words.len() - 1;
        let (cur, prev) = (words[cword], words[cword - 1]);
        let program = format!(
            "source '{}' && COMP_WORDS=({line}) && COMP_CWORD={cword} && \
             _wirebench wirebench '{cur}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.display()
        );
        let mut bash = Command::new("bash");
        bash.args(["--norc", "--noprofile", "-c", &program]);
        let run = run_command(bash, LIMIT);
        assert_eq!(run.code, Some(0), "bash on {words:?}: {run:?}");
        run.stdout.lines().map(str::to_string).collect()
    };
    assert_eq!(complete(&["wirebench", "ec"]), ["echo"]);
    assert_eq!(complete(&["wirebench", "echo", "--fail-i"]), ["--fail-if"]);
    let etcd = complete(&["wirebench", "etcd", ""]);
    for op in ["put", "range", "txn-mixed", "watch-latency"] {
        assert!(etcd.iter().any(|w| w == op), "etcd {op}: {etcd:?}");
    }

    assert!(ok(&["completions", "zsh"]).starts_with("#compdef wirebench"));
    assert!(ok(&["completions", "fish"]).contains("complete -c wirebench"));
    let refused = run_bounded(&["completions", "tcsh"], LIMIT);
    assert_eq!(refused.code, Some(2), "{refused:?}");
}

/// Checks `roff` is a section-1 man page of `name` whose NAME and SYNOPSIS come first; with
/// groff installed, renders it and wants no warning and both sections in the text.
fn check_page(name: &str, roff: &str, groff: bool) {
    // ASCII, other characters as roff escapes: groff without preconv and mandoc read it alike
    assert!(roff.is_ascii(), "{name}: not ASCII");
    let requests: Vec<&str> = roff.lines().filter(|l| l.starts_with('.')).collect();
    let th = requests
        .iter()
        .find(|l| l.starts_with(".TH "))
        .unwrap_or_else(|| panic!("{name}: no .TH"));
    assert!(th.starts_with(&format!(".TH {name} 1 ")), "{name}: {th}");
    let sections: Vec<&str> = requests
        .iter()
        .filter_map(|l| l.strip_prefix(".SH "))
        .collect();
    assert_eq!(sections.get(..2), Some(&["NAME", "SYNOPSIS"][..]), "{name}");
    let title = roff
        .lines()
        .skip_while(|l| *l != ".SH NAME")
        .nth(1)
        .unwrap_or_default();
    // roff writes the name's hyphens as \- too
    let escaped = name.replace('-', "\\-");
    assert!(
        title.starts_with(&format!("{escaped} \\- ")),
        "{name}: {title:?}"
    );
    // every request is one roff knows (clap_mangen writes these and no others)
    for l in &requests {
        let req = l[1..].split_whitespace().next().unwrap_or_default();
        assert!(
            [
                "TH", "SH", "SS", "TP", "PP", "IP", "RS", "RE", "br", "ie", "el", "ds", "B", "I"
            ]
            .contains(&req),
            "{name}: unexpected request {l:?}"
        );
    }
    if !groff {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{name}.1"));
    std::fs::write(&file, roff).unwrap();
    let mut render = Command::new("groff");
    // plain text: no SGR escapes, no overstriking
    render
        .args(["-man", "-Tutf8", "-ww", "-P", "-cbou"])
        .arg(&file);
    let run = run_command(render, LIMIT);
    assert_eq!(run.code, Some(0), "groff on {name}: {}", run.stderr);
    assert!(
        run.stderr.is_empty(),
        "groff warns on {name}: {}",
        run.stderr
    );
    for section in ["NAME", "SYNOPSIS"] {
        assert!(
            run.stdout.lines().any(|l| l == section),
            "{name} rendered without {section}:\n{}",
            run.stdout
        );
    }
}

/// Whether groff is on PATH; when it is not, the pages' structure is still checked, and the
/// test says that it rendered none.
fn groff_installed() -> bool {
    let found = Command::new("groff")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "groff is not installed: the man pages' structure is checked, their rendering is not \
             (scripts/test.sh installs groff-base)"
        );
    }
    found
}

#[test]
fn man_pages_are_roff_with_name_and_synopsis() {
    let groff = groff_installed();
    let page = ok(&["man"]);
    check_page("wirebench", &page, groff);
    for sub in ["etcd", "echo", "sweep", "merge", "completions", "man"] {
        assert!(page.contains(&format!("wirebench\\-{sub}(1)")), "{sub}");
    }

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let listing = ok(&["man", "--dir", out.to_str().unwrap()]);
    let written: Vec<&Path> = listing.lines().map(Path::new).collect();
    assert!(written.len() > 40, "{listing}");
    for path in &written {
        assert_eq!(path.parent(), Some(out.as_path()), "{}", path.display());
        let name = path.file_stem().unwrap().to_str().unwrap();
        let roff = std::fs::read_to_string(path).unwrap();
        check_page(name, &roff, groff);
    }
    // the top page is the one `wirebench man` prints; a command's page has its flags' groups
    assert_eq!(
        std::fs::read_to_string(out.join("wirebench.1")).unwrap(),
        page
    );
    let echo = std::fs::read_to_string(out.join("wirebench-echo.1")).unwrap();
    for section in ["LOAD", "CONNECTIONS", "TLS", "OUTPUT", "THRESHOLDS"] {
        assert!(echo.contains(&format!(".SH {section}\n")), "{section}");
    }
    assert!(out.join("wirebench-etcd-put.1").is_file());
    assert!(out.join("wirebench-sweep-etcd-txn-mixed.1").is_file());

    // a directory that cannot be made: exit 1, one line
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let run = run_bounded(&["man", "--dir", file.join("x").to_str().unwrap()], LIMIT);
    support::assert_one_error_line(&run, "man --dir under a file");
    assert!(
        run.stderr.starts_with("error: cannot write "),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, Some(1), "{run:?}");
}
