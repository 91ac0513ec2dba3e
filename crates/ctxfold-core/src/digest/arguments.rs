//! What tool-call arguments mean: the class of a key (path, command,
//! query, content), what a call does by its name and mode, and whether a
//! word looks like a path. The word lists that decide it live here too.

use serde_json::Value;

/// Longer strings are never taken for a path.
pub(super) const PATH_MAX: usize = 300;
/// Parts of an argument key (split at `_`, `-` and case changes) whose
/// values are paths.
pub(super) const PATH_PARTS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filenames",
    "filepath",
    "filepaths",
    "dir",
    "dirs",
    "directory",
    "directories",
    "folder",
    "prefix",
    "prefixes",
    "cwd",
    "workdir",
    "root",
];

/// Parts of keys whose values are commands (labels of commands run, and
/// scanned for paths).
pub(super) const COMMAND_PARTS: &[&str] = &["command", "commands", "cmd", "script"];

/// Parts of keys whose values search for or name things (patterns,
/// queries, packages, revisions, repositories): never taken for paths, nor
/// listed as identifiers.
pub(super) const QUERY_PARTS: &[&str] = &[
    "pattern",
    "patterns",
    "regex",
    "glob",
    "query",
    "package",
    "packages",
    "crate",
    "crates",
    "test",
    "testname",
    "tests",
    "revision",
    "rev",
    "ref",
    "branch",
    "commit",
    "sha",
    "repository",
    "repo",
    "symbol",
    "identifier",
    "module",
    "url",
    "uri",
];

/// Parts of keys whose values are content, never scanned for paths (but
/// read for the names written code defines).
pub(super) const CONTENT_PARTS: &[&str] = &[
    "content",
    "contents",
    "text",
    "body",
    "old",
    "new",
    "patch",
    "diff",
    "code",
    "data",
    "message",
    "description",
    "prompt",
    "input",
    "replacement",
];

/// Parts of a tool name that say it changes files.
pub(super) const WRITE_PARTS: &[&str] = &[
    "create", "write", "modify", "edit", "patch", "delete", "remove", "rm", "move", "mv", "rename",
    "replace", "insert", "apply", "update", "append", "save", "mkdir", "touch",
];

/// Parts of a tool name that say it makes new files.
pub(super) const CREATE_PARTS: &[&str] = &["create", "write", "touch", "mkdir"];

/// Parts of a tool name that say it removes files.
pub(super) const DELETE_PARTS: &[&str] = &["delete", "remove", "rm"];

/// Parts of a tool name (or modes) that say it searches.
pub(super) const SEARCH_PARTS: &[&str] = &[
    "grep", "search", "find", "glob", "list", "ls", "rg", "locate", "tree",
];

/// Parts of a tool name that say it runs something (a build, the tests, a
/// shell).
pub(super) const RUN_PARTS: &[&str] = &[
    "run", "exec", "execute", "bash", "shell", "sh", "terminal", "cargo", "npm", "npx", "yarn",
    "pnpm", "make", "pytest", "test", "tests", "check", "build", "format", "fmt", "lint", "clippy",
    "compile",
];

/// A `command`/`action`/`mode` argument that makes an editor tool read
/// only (the `view` of an editor tool), or search.
pub(super) const READ_MODES: &[&str] = &[
    "view", "read", "list", "show", "get", "cat", "search", "grep", "find",
];

/// File extensions that make a slash-less word a path.
pub(super) const EXTENSIONS: &[&str] = &[
    "rs",
    "md",
    "toml",
    "json",
    "jsonl",
    "yaml",
    "yml",
    "lock",
    "txt",
    "py",
    "ts",
    "tsx",
    "js",
    "jsx",
    "mjs",
    "go",
    "java",
    "kt",
    "swift",
    "rb",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "cs",
    "sh",
    "bash",
    "zsh",
    "fish",
    "html",
    "css",
    "scss",
    "sql",
    "xml",
    "proto",
    "nix",
    "zig",
    "lua",
    "vue",
    "svelte",
    "cfg",
    "ini",
    "conf",
    "env",
    "csv",
    "tsv",
    "log",
    "dockerfile",
    "mk",
    "gradle",
];

/// Characters that never occur in a path we would name.
pub(super) const NOT_IN_PATH: &[char] = &[
    '|', '(', ')', '<', '>', '"', '\'', '`', '{', '}', '[', ']', '\\', ';', ',', '=', '^', '$', '!',
];

/// What a tool call does, by its name and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKind {
    /// Changes the files it names.
    Write,
    /// Searches (grep, list, find).
    Search,
    /// Runs something: a command, a build, the tests.
    Command,
    /// Anything else (reads, fetches).
    Read,
}

/// What an argument key says about its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyClass {
    Path,
    Command,
    Query,
    Content,
    Other,
}

/// The lowercase parts of a key or tool name: split at non-alphanumerics
/// and where a lowercase letter meets an uppercase one (`filePath`).
pub(super) fn name_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

pub(super) fn classify(key: &str) -> KeyClass {
    let parts = name_parts(key);
    let any = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
    if any(PATH_PARTS) {
        KeyClass::Path
    } else if any(COMMAND_PARTS) {
        KeyClass::Command
    } else if any(QUERY_PARTS) {
        KeyClass::Query
    } else if any(CONTENT_PARTS) {
        KeyClass::Content
    } else {
        KeyClass::Other
    }
}

/// Call `f` with every string in `v` and the class of the key it sits under
/// (array items inherit their array's key; everything under a path key is
/// a path).
pub(super) fn walk_strings<'v>(
    v: &'v Value,
    class: KeyClass,
    f: &mut dyn FnMut(KeyClass, &'v str),
) {
    let under = |class: KeyClass, k: &str| {
        if class == KeyClass::Path {
            class
        } else {
            classify(k)
        }
    };
    walk(v, class, &under, f);
}

/// Call `f` with every string in `v` and the key it sits under.
pub(super) fn walk_keyed<'v>(v: &'v Value, key: &'v str, f: &mut dyn FnMut(&'v str, &'v str)) {
    walk(v, key, &|_, k| k, f);
}

/// Call `f` with every string in `v` and what it sits under: `at` for `v`
/// itself and its array items, `under(at, key)` inside an object's key.
fn walk<'v, A: Copy>(
    v: &'v Value,
    at: A,
    under: &dyn Fn(A, &'v str) -> A,
    f: &mut dyn FnMut(A, &'v str),
) {
    match v {
        Value::String(s) => f(at, s),
        Value::Array(items) => {
            for item in items {
                walk(item, at, under, f);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                walk(item, under(at, k), under, f);
            }
        }
        _ => {}
    }
}

/// The `command`/`action`/`mode` argument of an editor tool, lowercase.
pub(super) fn mode(arguments: &Value) -> Option<String> {
    ["command", "action", "mode"]
        .iter()
        .find_map(|k| arguments.get(k).and_then(Value::as_str))
        .map(|m| m.trim().to_ascii_lowercase())
}

/// What a tool call does: writes when its name says it changes files (and
/// no read-only mode says otherwise), searches when its name or mode says
/// so, runs a command when its name says it runs, builds or tests or it
/// is given a command; else it reads.
pub(super) fn call_kind(name: &str, arguments: &Value) -> CallKind {
    let parts = name_parts(name);
    let has = |set: &[&str]| parts.iter().any(|p| set.contains(&p.as_str()));
    let mode = mode(arguments);
    let read_mode = mode.as_deref().is_some_and(|m| READ_MODES.contains(&m));
    if has(WRITE_PARTS) && !read_mode {
        return CallKind::Write;
    }
    if has(SEARCH_PARTS) || mode.as_deref().is_some_and(|m| SEARCH_PARTS.contains(&m)) {
        return CallKind::Search;
    }
    if read_mode {
        return CallKind::Read;
    }
    let mut command = false;
    walk_strings(arguments, KeyClass::Other, &mut |class, s| {
        command |= class == KeyClass::Command && !s.trim().is_empty();
    });
    if command || has(RUN_PARTS) {
        CallKind::Command
    } else {
        CallKind::Read
    }
}

/// Whether a word looks like a path: a slash or a known extension, no
/// spaces or shell punctuation, at least one letter.
pub(super) fn looks_like_path(s: &str) -> bool {
    if !(2..=PATH_MAX).contains(&s.len())
        || s.contains("://")
        || s.contains(|c: char| c.is_whitespace() || NOT_IN_PATH.contains(&c))
        || !s.contains(char::is_alphabetic)
    {
        return false;
    }
    if s.contains('/') {
        return true;
    }
    match s.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !stem.ends_with('.') => {
            EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_split_into_parts_and_paths_are_told_apart() {
        assert_eq!(name_parts("filePath_x-Y"), ["file", "path", "x", "y"]);
        assert!(looks_like_path("Cargo.toml"));
        assert!(looks_like_path("crates/ctxfold-core"));
        assert!(!looks_like_path("e.g"));
        assert!(!looks_like_path("1/2"));
        assert!(!looks_like_path("a|b/c"));
    }
}
