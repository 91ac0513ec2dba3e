//! The "Identifiers" section: names the range's code defined or edited
//! and names that failed, never search patterns, queries or hashes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;

use crate::text::literal_pattern;

use super::arguments::{CallKind, KeyClass, classify, name_parts, walk_keyed, walk_strings};
use super::prose::capped_list;
use super::scan::Scan;

/// At most this many identifiers per list.
pub(super) const IDENTS_MAX: usize = 30;
/// Longer names are not identifiers.
pub(super) const IDENT_CHARS: usize = 80;
/// Extensions of source files, whose written content is read for the
/// names it defines (prose is not).
pub(super) const CODE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "swift", "rb", "c",
    "h", "cc", "cpp", "hpp", "cs", "sh", "bash", "zsh", "lua", "zig", "vue", "svelte", "scala",
    "php", "ex", "exs", "hs", "ml", "dart", "proto",
];

/// Names that are never worth listing as identifiers.
pub(super) const NOT_IDENTS: &[&str] = &[
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
    "f64", "bool", "char", "str", "Self", "self", "crate", "super", "None", "Some", "Ok", "Err",
    "true", "false", "__init__",
];

/// A definition in source code: `fn name(`, `struct Name {`, `class
/// Name:`, `def name(`, `const NAME:`…
pub(super) static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"\b(?:fn|struct|enum|trait|union|type|mod|class|def|function|interface|func)\s+([A-Za-z_][A-Za-z0-9_]*)\s*[<({:;=]|\b(?:const|static)\s+([A-Z][A-Z0-9_]*)\s*[:=]",
    )
});

/// A name in backticks (`crate::Error`, `x`).
pub(super) static TICKED: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"`([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)`"));

/// A failing test's name (`test a::b ... FAILED`, `--- FAIL: TestX`,
/// `FAILED tests/x.py::test_y`).
pub(super) static FAILED_TEST: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(r"^test (\S+) \.\.\. FAILED|^--- FAIL: (\S+)|^FAILED \S*?::([\w:\[\]-]+)")
});

/// Whether a name is worth listing: not a keyword or a primitive, not a
/// hash.
pub(super) fn is_ident(name: &str) -> bool {
    let hex = name.len() >= 7
        && name.bytes().all(|b| b.is_ascii_hexdigit())
        && name.bytes().any(|b| b.is_ascii_digit());
    name.len() <= IDENT_CHARS && !hex && !NOT_IDENTS.contains(&name)
}

/// The names a text of code defines, each with the line defining it.
pub(super) fn definitions<'c>(code: &'c str, out: &mut BTreeMap<&'c str, &'c str>) {
    for c in DEFINITION.captures_iter(code) {
        if let Some(m) = c.get(1).or(c.get(2))
            && is_ident(m.as_str())
        {
            let from = code[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            let to = code[m.end()..]
                .find('\n')
                .map_or(code.len(), |i| m.end() + i);
            out.entry(m.as_str()).or_insert(code[from..to].trim());
        }
    }
}

pub(super) fn section_identifiers(scan: &Scan<'_>) -> String {
    let (mut defined, mut edited, mut failed): (
        BTreeSet<String>,
        BTreeSet<String>,
        BTreeSet<String>,
    ) = Default::default();
    for c in scan
        .calls
        .iter()
        .filter(|c| c.kind == CallKind::Write && !c.is_error)
    {
        // Only code: prose says "type of" and "class of" too.
        let mut code = false;
        walk_strings(&c.arguments, KeyClass::Other, &mut |class, s| {
            if class == KeyClass::Path
                && let Some((_, ext)) = s.trim().rsplit_once('.')
                && CODE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
            {
                code = true;
            }
        });
        if !code {
            continue;
        }
        let (mut old, mut new) = (BTreeMap::new(), BTreeMap::new());
        walk_keyed(&c.arguments, "", &mut |key, s| {
            if classify(key) != KeyClass::Content {
                return;
            }
            if name_parts(key).iter().any(|p| p == "old") {
                definitions(s, &mut old);
            } else {
                definitions(s, &mut new);
            }
        });
        // New: defined. Gone or changed: edited. Unchanged: edited when it
        // opens a block the edit is in, not when it is a line of context
        // (`mod db;`).
        for (&name, &line) in &new {
            match old.get(name) {
                None => {
                    defined.insert(name.to_owned());
                }
                Some(&before) if before != line || !line.ends_with(';') => {
                    edited.insert(name.to_owned());
                }
                Some(_) => {}
            }
        }
        for &name in old.keys() {
            if !new.contains_key(name) {
                edited.insert(name.to_owned());
            }
        }
    }
    for s in &scan.seen {
        if !s.diag.kind.is_failure() {
            continue;
        }
        for c in TICKED.captures_iter(&s.diag.line) {
            if is_ident(&c[1]) {
                failed.insert(c[1].to_owned());
            }
        }
        if let Some(c) = FAILED_TEST.captures(&s.diag.line)
            && let Some(m) = c.get(1).or(c.get(2)).or(c.get(3))
            && is_ident(m.as_str())
        {
            failed.insert(m.as_str().to_owned());
        }
    }
    for name in &edited {
        defined.remove(name);
    }
    let mut out = String::new();
    for (label, set) in [
        ("Defined", &defined),
        ("Edited", &edited),
        ("Failed", &failed),
    ] {
        if !set.is_empty() {
            let list: Vec<String> = set.iter().map(|s| format!("`{s}`")).collect();
            let _ = writeln!(
                out,
                "- {label}: {}",
                capped_list(list.iter(), list.len(), IDENTS_MAX)
            );
        }
    }
    if !out.is_empty() {
        out.insert_str(0, "## Identifiers\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::digest::fixtures::{build, call, digest_all, result, section, user};
    use serde_json::json;

    /// The statics' `expect`s cannot fail: every pattern compiles.
    #[test]
    fn every_pattern_compiles() {
        for re in [&super::DEFINITION, &super::TICKED, &super::FAILED_TEST] {
            std::sync::LazyLock::force(re);
        }
    }

    #[test]
    fn identifiers_are_names_defined_edited_or_failed() {
        let log = build(vec![
            user("add a tokenizer"),
            call(
                "s",
                "fs_grep_files",
                json!({"pattern": "fn login", "paths": ["src"]}),
            ),
            call("g", "git_show", json!({"revision": "2c1f006abc"})),
            call(
                "a",
                "fs_create_file",
                json!({"path": "src/tok.rs", "content": "pub fn tokenize(s: &str) {}\nstruct Token;\nconst MAX: usize = 3;\n// the type of thing: x\n"}),
            ),
            call(
                "b",
                "fs_modify_file",
                json!({"path": "src/lib.rs", "patterns": [
                    {"old": "mod db;\nfn run(x: u8) {", "new": "mod db;\nmod tok;\nfn run(x: u16) {"},
                    {"old": "fn gone() {}\nimpl A {\n    fn keep(&self) {\n        1", "new": "impl A {\n    fn keep(&self) {\n        2"}
                ]}),
            ),
            call(
                "c",
                "fs_create_file",
                json!({"path": "docs/x.md", "content": "The struct Foo { is prose here\n"}),
            ),
            call("d", "cargo_check", json!({})),
            result(
                "d",
                "error[E0425]: cannot find value `missing_thing` in this scope\n --> src/lib.rs:3:5\nerror[E0308]: mismatched types: expected `u32`, found `deadbeef1`\n --> src/lib.rs:4:5\n",
                false,
            ),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Identifiers"),
            [
                "- Defined: `MAX`, `Token`, `tok`, `tokenize`",
                "- Edited: `gone`, `keep`, `run`",
                "- Failed: `missing_thing`",
            ],
            "{text}"
        );
    }
}
