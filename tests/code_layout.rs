//! The shape of the code, read from the source tree (docs/ARCHITECTURE.md, "Layer order" and
//! "Invariants"): the binary crate's top-level modules import each other without a cycle, no
//! non-test source file is over 800 lines, and a `String` error appears only at the command-line
//! edge (`app/`, `cli/`), at most 15 times.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;
const MAX_STRING_ERRORS: usize = 15;

/// Every `.rs` file below `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("read {}: {e}", d.display())) {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A file that holds tests only: `tests.rs`, or anything under a `tests/` folder.
fn test_only(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n == "tests.rs")
        || p.components().any(|c| c.as_os_str() == "tests")
}

/// The file's code before its first `#[cfg(test)]` at the start of a line.
fn non_test(text: &str) -> &str {
    text.find("\n#[cfg(test)]").map_or(text, |i| &text[..i])
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Each top-level module of the binary crate and the ones it names as `crate::NAME`.
fn module_edges() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let top = |p: &Path| {
        let rel = p.strip_prefix(&src).expect("under src/");
        let first = rel
            .components()
            .next()
            .expect("a path")
            .as_os_str()
            .to_string_lossy();
        first.trim_end_matches(".rs").to_string()
    };
    // test files of their own count too (a test of a lower module that parses a command line
    // ties the two); the tests inside a file, after its `#[cfg(test)]`, do not
    let files: Vec<PathBuf> = sources(&src);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| top(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &files {
        let from = top(p);
        if !modules.contains(&from) {
            continue;
        }
        let text = fs::read_to_string(p).expect("a source file");
        let code = non_test(&text);
        let to = edges.entry(from.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name != from && modules.contains(&name) {
                to.insert(name);
            }
        }
    }
    edges
}

/// A cycle in `edges`, if there is one: the modules around it.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            return Some(path[i..].to_vec());
        }
        if !done.insert(m.to_string()) {
            return None;
        }
        path.push(m.to_string());
        for next in edges.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, edges, done, path) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|m| visit(m, edges, &mut done, &mut Vec::new()))
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    let edges = module_edges();
    // the layer order's ends: the edge of the command line on top, the leaves below
    assert!(edges["app"].contains("engine"), "{edges:?}");
    for leaf in ["outcome", "rng", "stack", "threshold"] {
        assert!(edges[leaf].is_empty(), "{leaf} imports {:?}", edges[leaf]);
    }
    assert!(edges.values().all(|to| !to.contains("cli")), "{edges:?}");
    assert_eq!(cycle(&edges), None, "{edges:?}");
    // the check sees a cycle where there is one
    let mut with_cycle = edges.clone();
    with_cycle
        .entry("net".into())
        .or_default()
        .insert("engine".into());
    assert!(cycle(&with_cycle).is_some());
}

#[test]
fn no_source_file_is_over_800_lines_of_code() {
    let mut long = Vec::new();
    for dir in ["src", "crates/wire/src"] {
        for p in sources(&root().join(dir)) {
            if test_only(&p) {
                continue;
            }
            let text = fs::read_to_string(&p).expect("a source file");
            let lines = non_test(&text).lines().count();
            if lines > MAX_LINES {
                long.push(format!("{}: {lines}", p.display()));
            }
        }
    }
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

#[test]
fn string_errors_are_only_at_the_command_line_edge() {
    let src = root().join("src");
    let (mut edge, mut below) = (0, Vec::new());
    for p in sources(&src) {
        let text = fs::read_to_string(&p).expect("a source file");
        let n = text
            .match_indices("Result<")
            .filter(|(i, _)| {
                let rest = &text[*i..];
                let end = rest.find('>').unwrap_or(rest.len());
                rest[..end].ends_with(", String")
            })
            .count();
        let rel = p.strip_prefix(&src).expect("under src/");
        if rel.starts_with("app") || rel.starts_with("cli") {
            edge += n;
        } else if n > 0 {
            below.push(format!("{}: {n}", rel.display()));
        }
    }
    assert!(
        below.is_empty(),
        "Result<_, String> below app/ and cli/: {below:?}"
    );
    assert!(
        edge <= MAX_STRING_ERRORS,
        "{edge} Result<_, String> in app/ and cli/ (at most {MAX_STRING_ERRORS})"
    );
}
