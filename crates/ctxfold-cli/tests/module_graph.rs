//! No crate's modules form an import cycle (issue 47: every crate under
//! `crates/`, not only the binary), no command module of the binary
//! imports another, and no source file holds more than 800 lines of
//! non-test code (ARCHITECTURE.md).
//!
//! The graph of each crate is read from its sources: every `crate::…` path
//! in code (`use crate::…` lines, braces included, and paths written
//! inline), comments left out, each path taken for the longest module it
//! names; `lib.rs` or `main.rs` is the root.
//!
//! Test code is counted as scripts/check-structure counts it: a
//! `#[cfg(test)] mod … { … }` block and a file declared as
//! `#[cfg(test)] mod …;` are test code, every other line is not.

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

/// The module a file is: `lib.rs` or `main.rs` the root (`crate`),
/// `a/b.rs` and `a/b/mod.rs` both `a::b`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["main"] || parts == ["lib"] {
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

/// Every crate of the workspace (its folder's name, e.g. `ctxfold-core`)
/// and its `src` folder.
fn crates() -> Vec<(String, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, p.join("src"))
        })
        .collect();
    out.sort();
    out
}

/// The binary's `src` folder.
fn binary_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules of the crate whose sources are in `src` and, for each, the
/// modules it imports. A `#[cfg(test)] mod … { … }` block is a module of
/// its own (`record::tests`), as the compiler has it: a test may import
/// what imports the module it tests without making a cycle.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(src, &mut files);
    // Each module and its code: a file's, less its inline test modules,
    // and each inline test module's.
    let mut parts: BTreeMap<String, String> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let (spans, _) = test_modules(&text);
        let lines: Vec<&str> = text.lines().collect();
        let mut own = vec![true; lines.len()];
        for (first, last, name) in spans {
            own[first..=last].iter_mut().for_each(|o| *o = false);
            let test = if module == "crate" {
                name
            } else {
                format!("{module}::{name}")
            };
            parts.insert(test, lines[first..=last].join("\n"));
        }
        let kept: Vec<&str> = lines
            .iter()
            .zip(&own)
            .map(|(l, &o)| if o { *l } else { "" })
            .collect();
        parts.insert(module, kept.join("\n"));
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &parts {
        let text = code(text);
        let targets = edges.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            // Not part of a longer name (`mycrate::`); `$crate::` is ours.
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            for path in paths_after(&text[i + "crate::".len()..]) {
                // The longest module the path names.
                let names: Vec<&str> = path.split("::").collect();
                let found = (1..=names.len())
                    .rev()
                    .map(|n| names[..n].join("::"))
                    .find(|m| parts.contains_key(m));
                if let Some(m) = found
                    && &m != module
                {
                    targets.insert(m);
                }
            }
        }
    }
    edges
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

/// The groups of modules that import each other in a cycle (the strongly
/// connected components of more than one module), each sorted, in order.
fn cyclic_groups(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm; a crate's graph is small enough to recurse.
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        groups: Vec<Vec<String>>,
    }
    fn visit<'a>(node: &'a str, st: &mut State<'a>) {
        let n = st.index.len();
        st.index.insert(node, n);
        st.low.insert(node, n);
        st.stack.push(node);
        st.on_stack.insert(node);
        let edges = st.edges;
        for next in edges.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !st.index.contains_key(next) {
                visit(next, st);
                let low = st.low[node].min(st.low[next]);
                st.low.insert(node, low);
            } else if st.on_stack.contains(next) {
                let low = st.low[node].min(st.index[next]);
                st.low.insert(node, low);
            }
        }
        if st.low[node] == st.index[node] {
            let mut group = Vec::new();
            loop {
                let m = st.stack.pop().unwrap();
                st.on_stack.remove(m);
                group.push(m.to_owned());
                if m == node {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                st.groups.push(group);
            }
        }
    }
    let mut st = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for node in edges.keys() {
        if !st.index.contains_key(node.as_str()) {
            visit(node, &mut st);
        }
    }
    st.groups.sort();
    st.groups
}

#[test]
fn no_import_cycle_in_any_crate() {
    let crates = crates();
    assert!(
        crates.iter().any(|(name, _)| name == "ctxfold-core"),
        "the crates were not found: {crates:?}"
    );
    let mut wrong = Vec::new();
    for (name, src) in &crates {
        let edges = graph(src);
        assert!(!edges.is_empty(), "no sources found in {}", src.display());
        let groups = cyclic_groups(&edges);
        if !groups.is_empty() {
            let cycle = find_cycle(&edges).unwrap_or_default();
            wrong.push(format!(
                "{name}: {} (modules in cycles: {})",
                cycle.join(" → "),
                groups
                    .iter()
                    .map(|g| format!("[{}]", g.join(", ")))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "modules import each other in a cycle:\n{}",
        wrong.join("\n")
    );
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
        cyclic_groups(&edges),
        [["a", "b", "c"].map(String::from).to_vec()]
    );
    assert_eq!(
        paths_after("{cli::X, render::{self, Printer}};"),
        ["cli::X", "render::self", "render::Printer"]
    );
}

#[test]
fn no_command_imports_another() {
    let edges = graph(&binary_src());
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

/// `text`'s comments, string literals and character literals blanked
/// (every character but a newline made a space), so braces and attributes
/// in them are not read as code; lines stay where they were.
fn blank_literals(text: &str) -> Vec<char> {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let find = |from: usize, pat: &[char]| {
        (from..c.len())
            .find(|&k| c[k..].starts_with(pat))
            .map_or(c.len(), |k| k + pat.len())
    };
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied();
        let end = if c[i] == '/' && at(1) == Some('/') {
            (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len())
        } else if c[i] == '/' && at(1) == Some('*') {
            find(i + 2, &['*', '/'])
        } else if c[i] == 'r'
            && matches!(at(1), Some('"' | '#'))
            && (i == 0 || !ident(c[i - 1]) || (c[i - 1] == 'b' && (i < 2 || !ident(c[i - 2]))))
        {
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            if at(1 + hashes) == Some('"') {
                let mut close = vec!['"'];
                close.extend(std::iter::repeat_n('#', hashes));
                find(i + 2 + hashes, &close)
            } else {
                i + 1
            }
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(c.len())
        } else if c[i] == '\'' && at(1) == Some('\\') {
            find(i + 3, &['\''])
        } else if c[i] == '\'' && at(2) == Some('\'') {
            i + 3
        } else {
            i + 1
        };
        if end > i + 1 || c[i] == '"' {
            for ch in &mut out[i..end] {
                if *ch != '\n' {
                    *ch = ' ';
                }
            }
        }
        i = end;
    }
    out
}

/// The test modules of a file: the line spans (first, last, from 0) and
/// names of its `#[cfg(test)] mod … { … }` blocks, and the names of the
/// modules it declares as `#[cfg(test)] mod …;`.
fn test_modules(text: &str) -> (Vec<(usize, usize, String)>, Vec<String>) {
    let c = blank_literals(text);
    let line = |k: usize| c[..k].iter().filter(|&&ch| ch == '\n').count();
    let skip_ws = |mut k: usize| {
        while k < c.len() && c[k].is_whitespace() {
            k += 1;
        }
        k
    };
    let word = |k: usize| {
        c[k..]
            .iter()
            .take_while(|ch| ch.is_alphanumeric() || **ch == '_')
            .collect::<String>()
    };
    // From an opening bracket at `k`, the index after its match.
    let closing = |k: usize, open: char, close: char| {
        let mut depth = 0usize;
        for (j, &ch) in c.iter().enumerate().skip(k) {
            if ch == open {
                depth += 1;
            } else if ch == close {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
        }
        c.len()
    };
    let attr: Vec<char> = "#[cfg(test)]".chars().collect();
    let (mut spans, mut declared) = (Vec::new(), Vec::new());
    for start in (0..c.len()).filter(|&k| c[k..].starts_with(&attr)) {
        let mut k = skip_ws(start + attr.len());
        while c[k..].starts_with(&['#', '[']) {
            k = skip_ws(closing(k + 1, '[', ']'));
        }
        if word(k) == "pub" {
            k = skip_ws(k + 3);
            if c.get(k) == Some(&'(') {
                k = skip_ws(closing(k, '(', ')'));
            }
        }
        if word(k) != "mod" {
            continue;
        }
        k = skip_ws(k + 3);
        let name = word(k);
        k = skip_ws(k + name.len());
        match c.get(k) {
            Some('{') => spans.push((line(start), line(closing(k, '{', '}') - 1), name)),
            Some(';') => declared.push(name),
            _ => {}
        }
    }
    (spans, declared)
}

/// How many lines of `text` are not test code (outside its
/// `#[cfg(test)] mod … { … }` blocks).
fn non_test_lines(text: &str) -> usize {
    let (spans, _) = test_modules(text);
    text.lines().count() - spans.iter().map(|(a, b, _)| b - a + 1).sum::<usize>()
}

/// The files among `files` that are test modules declared out of line
/// (`#[cfg(test)] mod tests;` in `a/b.rs`: `a/b/tests.rs`,
/// `a/b/tests/mod.rs`, everything under `a/b/tests/`).
fn test_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for f in files {
        let (_, declared) = test_modules(&std::fs::read_to_string(f).unwrap());
        let stem = f.file_stem().unwrap().to_string_lossy();
        let dir = if ["lib", "main", "mod"].contains(&stem.as_ref()) {
            f.parent().unwrap().to_path_buf()
        } else {
            f.with_extension("")
        };
        for name in declared {
            let under = dir.join(&name);
            out.extend(
                files
                    .iter()
                    .filter(|g| g.starts_with(&under) || **g == under.with_extension("rs"))
                    .cloned(),
            );
        }
    }
    out
}

#[test]
fn counts_test_modules_only() {
    let text = "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nfn helper() -> char {\n    '{'\n}\nfn f() {\n    let s = \"}\";\n}\n#[cfg(test)]\n#[allow(dead_code)]\nmod inline {\n    const C: char = '}';\n    /* } */\n    const S: &str = r#\"}\"#;\n}\nfn g() {}\n";
    assert_eq!(
        test_modules(text),
        (vec![(9, 15, "inline".to_owned())], vec!["tests".to_owned()])
    );
    assert_eq!(non_test_lines(text), 10);
}

#[test]
fn no_source_file_over_800_lines() {
    let mut long = Vec::new();
    for (_, src) in crates() {
        let mut files = Vec::new();
        sources(&src, &mut files);
        let tests = test_files(&files);
        for f in files.iter().filter(|f| !tests.contains(*f)) {
            let n = non_test_lines(&std::fs::read_to_string(f).unwrap());
            if n > 800 {
                long.push(format!("{}: {n} lines of non-test code", f.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "source files over 800 lines of non-test code (split them into modules by job): {long:?}"
    );
}
