//! The files a range acted on, from its tool-call arguments, and the
//! "Files" section that lists them as written, read, searched or named.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::arguments::{
    CREATE_PARTS, CallKind, DELETE_PARTS, KeyClass, PATH_MAX, looks_like_path, name_parts,
    walk_strings,
};
use super::prose::capped_list;
use super::scan::Scan;

/// At most this many entries per file list.
pub(super) const FILES_MAX: usize = 150;
/// What the range did with a file.
#[derive(Debug, Default)]
pub(super) struct FileUse {
    pub(super) read: bool,
    pub(super) searched: bool,
    /// Named in a command or under a key that does not say.
    pub(super) named: bool,
    pub(super) written: usize,
    pub(super) failed_writes: usize,
    pub(super) created: bool,
    pub(super) deleted: bool,
}

/// A successful write: record index, turn, path.
pub(super) struct Write<'a> {
    pub(super) idx: usize,
    pub(super) turn: u32,
    pub(super) path: Cow<'a, str>,
}

/// The files of the range's tool calls, by repository ("" for the local
/// files) and path, and the successful writes in order.
pub(super) struct Files<'a> {
    pub(super) uses: BTreeMap<(&'a str, Cow<'a, str>), FileUse>,
    pub(super) writes: Vec<Write<'a>>,
}

/// The paths of a path argument: the whole value, or its lines.
pub(super) fn path_values(s: &str, mut f: impl FnMut(&str)) {
    let t = s.trim();
    if !t.contains(char::is_whitespace) {
        if !t.is_empty() && t.len() <= PATH_MAX && t.contains(char::is_alphanumeric) {
            f(t);
        }
        return;
    }
    for line in t.lines() {
        let p = line.trim();
        if !p.is_empty()
            && p.len() <= PATH_MAX
            && !p.contains(char::is_whitespace)
            && p.contains(char::is_alphanumeric)
        {
            f(p);
        }
    }
}

/// The repository a call reads from, when it names one (`owner/name`).
pub(super) fn repository(arguments: &Value) -> &str {
    ["repository", "repo"]
        .iter()
        .find_map(|k| arguments.get(k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|r| r.contains('/') && !r.contains(char::is_whitespace) && r.len() <= PATH_MAX)
        .unwrap_or("")
}

pub(super) fn files<'a>(scan: &'a Scan<'a>) -> Files<'a> {
    let mut out = Files {
        uses: BTreeMap::new(),
        writes: Vec::new(),
    };
    for call in &scan.calls {
        let repo = repository(&call.arguments);
        let parts = name_parts(call.name);
        let has = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
        let (creates, deletes) = (has(CREATE_PARTS), has(DELETE_PARTS));
        walk_strings(
            &call.arguments,
            KeyClass::Other,
            &mut |class, s| match class {
                KeyClass::Path => path_values(s, |p| {
                    let u = out
                        .uses
                        .entry((repo, Cow::Owned(p.to_owned())))
                        .or_default();
                    match call.kind {
                        CallKind::Write if call.is_error => u.failed_writes += 1,
                        CallKind::Write => {
                            u.written += 1;
                            u.created |= creates;
                            u.deleted |= deletes;
                            out.writes.push(Write {
                                idx: call.idx,
                                turn: call.turn,
                                path: Cow::Owned(p.to_owned()),
                            });
                        }
                        CallKind::Search => u.searched = true,
                        CallKind::Command => u.named = true,
                        CallKind::Read => u.read = true,
                    }
                }),
                KeyClass::Command => {
                    for token in s.split(|c: char| c.is_whitespace() || "'\";|&()<>=".contains(c)) {
                        let token = token.trim_end_matches([':', ',', '.']);
                        if looks_like_path(token) && !token.starts_with("/dev/") {
                            out.uses
                                .entry((repo, Cow::Owned(token.to_owned())))
                                .or_default()
                                .named = true;
                        }
                    }
                }
                KeyClass::Other if looks_like_path(s) => {
                    out.uses
                        .entry((repo, Cow::Owned(s.to_owned())))
                        .or_default()
                        .named = true;
                }
                _ => {}
            },
        );
    }
    out
}

pub(super) fn section_files<'f>(files: &Files<'f>) -> String {
    // Per list, per repository ("" first): the paths with their notes.
    type Lists<'f> = BTreeMap<&'f str, Vec<String>>;
    let (mut written, mut read, mut searched, mut named): (
        Lists<'f>,
        Lists<'f>,
        Lists<'f>,
        Lists<'f>,
    ) = Default::default();
    for ((repo, path), u) in &files.uses {
        let entry = |list: &mut Lists<'f>, note: &str| {
            list.entry(*repo)
                .or_default()
                .push(format!("`{path}`{note}"));
        };
        if u.written + u.failed_writes > 0 {
            let note = if u.written == 0 {
                " (edit failed)"
            } else if u.deleted {
                " (deleted)"
            } else if u.created {
                " (created)"
            } else {
                ""
            };
            entry(&mut written, note);
        } else if u.read {
            entry(&mut read, "");
        } else if u.searched {
            entry(&mut searched, "");
        } else if u.named {
            entry(&mut named, "");
        }
    }
    let mut out = String::new();
    for (label, lists) in [
        ("Written or edited", &written),
        ("Read", &read),
        ("Searched", &searched),
        ("Named in commands or other arguments", &named),
    ] {
        for (repo, list) in lists {
            if repo.is_empty() {
                let _ = write!(out, "- {label}: ");
            } else {
                let _ = write!(out, "- {label} in `{repo}`: ");
            }
            let _ = writeln!(out, "{}", capped_list(list.iter(), list.len(), FILES_MAX));
        }
    }
    if !out.is_empty() {
        out.insert_str(0, "## Files\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::digest::fixtures::{build, call, digest_all, result, sample, section, user};
    use crate::log::Log;
    use crate::record::Body;
    use crate::record::Record;
    use serde_json::json;

    #[test]
    fn files_are_split_into_written_read_searched_and_named() {
        let mut bodies = sample().into_records();
        let mut push = |b: Body| {
            let seq = bodies.len() as u64;
            bodies.push(Record::new(seq, "t", b));
        };
        push(call(
            "g",
            "fs_grep_files",
            json!({"pattern": "fn login", "paths": ["src", "tests"]}),
        ));
        push(result("g", "src/auth.rs:1: fn login() {}", false));
        push(call(
            "h",
            "github_read_file",
            json!({"repository": "o/r", "path": "README.md"}),
        ));
        push(call(
            "i",
            "fs_create_file",
            json!({"path": "src/new.rs", "content": "x"}),
        ));
        push(call(
            "j",
            "fs_modify_file",
            json!({"path": "src/bad.rs", "patterns": []}),
        ));
        push(result("j", "Pattern(s) #1 not found", true));
        let text = digest_all(&Log::from_records(bodies));
        assert_eq!(
            section(&text, "Files"),
            [
                "- Written or edited: `src/bad.rs` (edit failed), `src/new.rs` (created), `tests/auth_test.rs`",
                "- Read: `src/auth.rs`",
                "- Read in `o/r`: `README.md`",
                "- Searched: `src`, `tests`",
            ],
            "{text}"
        );
    }

    #[test]
    fn paths_in_commands_and_unknown_keys_are_named() {
        let log = build(vec![
            user("build it"),
            call(
                "1",
                "bash",
                json!({"command": "cat crates/a/src/lib.rs | grep foo > /dev/null"}),
            ),
            call(
                "2",
                "fetch",
                json!({"target": "Cargo.toml", "where": "https://example.com/x", "note": "a b/c"}),
            ),
            call(
                "3",
                "str_replace_based_edit_tool",
                json!({"command": "view", "path": "README.md"}),
            ),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Files"),
            [
                "- Read: `README.md`",
                "- Named in commands or other arguments: `Cargo.toml`, `crates/a/src/lib.rs`",
            ],
            "{text}"
        );
        assert!(text.contains(
            "- Ran bash `cat crates/a/src/lib.rs | grep foo > /dev/null` (turn 1): no result yet\n"
        ));
        assert!(!text.contains("## Identifiers"), "{text}");
    }

    #[test]
    fn file_lists_are_capped() {
        let mut bodies = vec![user("read them all")];
        for i in 0..200 {
            bodies.push(call(
                &i.to_string(),
                "read",
                json!({"path": format!("src/f{i:03}.rs")}),
            ));
            bodies.push(result(&i.to_string(), "x", false));
        }
        let text = digest_all(&build(bodies));
        let line = section(&text, "Files")[0];
        assert!(line.starts_with("- Read: `src/f000.rs`, `src/f001.rs`"));
        assert!(line.ends_with("`src/f149.rs`, and 50 more"), "{line}");
    }
}
