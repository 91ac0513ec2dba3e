//! The binary's modules form no import cycle, no command module imports
//! another, and no source file grows past 800 lines (ARCHITECTURE.md).
//!
//! The graph is read from the sources: every `crate::…` path in code
//! (`use crate::…` lines, braces included, and paths written inline),
//! comments left out, each path taken for the longest module it names.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is: `main.rs` the root (`crate`), `a/b.rs` and
/// `a/b/mod.rs` both `a::b`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["main"] {
        return "crate".into();
    }
    parts.join("::")
}

/// The code of a file without its comments (line comments, doc comments
/// and block comments; string literals are left as they are).
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut in_block = 0usize;
    for line in text.lines() {
        let mut rest = line;
        let mut kept = String::new();
        loop {
            if in_block > 0 {
                match rest.find("*/") {
                    Some(i) => {
                        in_block -= 1;
                        rest = &rest[i + 2..];
                    }
                    None => break,
                }
            } else {
                let line_comment = rest.find("//");
                let block = rest.find("/*");
                match (line_comment, block) {
                    (Some(l), b) if b.is_none_or(|b| l < b) => {
                        kept.push_str(&rest[..l]);
                        break;
                    }
                    (_, Some(b)) => {
                        kept.push_str(&rest[..b]);
                        in_block += 1;
                        rest = &rest[b + 2..];
                    }
                    _ => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// The paths after one `crate::`: `a::b::C`, or a brace group
/// `{a::{self, B}, c::D}` expanded to each path in it.
fn paths_after(s: &str) -> Vec<String> {
    let s = s.trim_start();
    if let Some(inner) = s.strip_prefix('{') {
        let mut depth = 0usize;
        let mut end = inner.len();
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = i;
                    break;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return split_top(&inner[..end])
            .into_iter()
            .flat_map(|item| paths_after(&item))
            .collect();
    }
    let mut path = String::new();
    let mut rest = s;
    loop {
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            break;
        }
        if !path.is_empty() {
            path.push_str("::");
        }
        path.push_str(&ident);
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(r) if r.trim_start().starts_with('{') => {
                return paths_after(r)
                    .into_iter()
                    .map(|p| format!("{path}::{p}"))
                    .collect();
            }
            Some(r) => rest = r,
            None => break,
        }
    }
    vec![path]
}

/// `a, b::{c, d}, e` split at its top-level commas.
fn split_top(s: &str) -> Vec<String> {
    let mut items = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for ch in s.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    items.push(current);
    items
        .into_iter()
        .map(|i| i.trim().to_owned())
        .filter(|i| !i.is_empty())
        .collect()
}

/// The modules of the binary and, for each, the modules it imports.
fn graph() -> (
    BTreeMap<String, BTreeSet<String>>,
    BTreeMap<String, PathBuf>,
) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let targets = edges.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            // Not part of a longer name (`mycrate::`); `$crate::` is ours.
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            for path in paths_after(&text[i + "crate::".len()..]) {
                // The longest module the path names.
                let parts: Vec<&str> = path.split("::").collect();
                let found = (1..=parts.len())
                    .rev()
                    .map(|n| parts[..n].join("::"))
                    .find(|m| modules.contains_key(m));
                if let Some(m) = found
                    && &m != module
                {
                    targets.insert(m);
                }
            }
        }
    }
    (edges, modules)
}

/// A cycle of `edges`, as the path around it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_owned(), Mark::Open);
        stack.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let start = stack.iter().position(|m| m == next).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(c) = visit(next, edges, marks, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if marks.get(node).copied().unwrap_or(Mark::New) == Mark::New {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, edges, &mut marks, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_import_cycle() {
    let (edges, _) = graph();
    assert!(edges.len() > 5, "the sources were not found: {edges:?}");
    if let Some(cycle) = find_cycle(&edges) {
        panic!(
            "modules import each other in a cycle: {}",
            cycle.join(" → ")
        );
    }
}

#[test]
fn finds_a_cycle() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.entry(a.into()).or_default().insert(b.into());
    }
    assert_eq!(
        find_cycle(&edges).map(|c| c.join(" → ")),
        Some("a → b → c → a".to_owned())
    );
    assert_eq!(
        paths_after("{cli::X, render::{self, Printer}};"),
        ["cli::X", "render::self", "render::Printer"]
    );
}

#[test]
fn no_command_imports_another() {
    let (edges, _) = graph();
    let command = |m: &str| m.strip_prefix("commands::").map(str::to_owned);
    let mut wrong = Vec::new();
    for (from, targets) in &edges {
        let Some(a) = command(from) else { continue };
        for to in targets {
            let Some(b) = command(to) else { continue };
            // A group's own module (`commands::conversation`) may hold
            // what its commands share; commands do not import each other.
            let related = a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"));
            if !related {
                wrong.push(format!("{from} → {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "command modules import each other: {wrong:?}"
    );
}

#[test]
fn no_source_file_over_800_lines() {
    let (_, modules) = graph();
    let long: Vec<String> = modules
        .values()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 800).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over 800 lines: {long:?}");
}
