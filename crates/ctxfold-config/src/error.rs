//! What can go wrong loading config, worded for the person who wrote it.

use std::path::PathBuf;

use crate::Source;

/// Why config could not be loaded. Every variant names where the problem
/// is (file and line, environment variable, or flag) and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named with `-c` does not exist.
    #[error("{}: no such config file (named with -c)", path.display())]
    Missing {
        /// The path as given.
        path: PathBuf,
    },
    /// A config file exists but could not be read (permissions, a
    /// directory, not UTF-8, …).
    #[error("{}: cannot read config file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file is not valid TOML. `message` is toml's own report, which
    /// starts with the line and column.
    #[error("{}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The 1-based line of the error, when known.
        line: Option<usize>,
        /// toml's message, with the position and the offending line.
        message: String,
    },
    /// A known key has a value of the wrong type or out of range.
    #[error("{}: {key} = {value}: expected {expected}", at(origin, line))]
    Invalid {
        /// Where the value came from.
        origin: Source,
        /// The 1-based line in the file, when the value came from a file.
        line: Option<usize>,
        /// Dotted key path; rules are numbered from 1
        /// (`compaction.rules[1].tool_calls`).
        key: String,
        /// The offending value, as TOML.
        value: String,
        /// What would have been accepted.
        expected: String,
    },
    /// A key ctxfold does not know, at the top level or inside a section
    /// (typos must not be silent).
    #[error("{}: unknown key {key}: expected one of {}{}", at(origin, line), expected.join(", "), hint(nearest))]
    UnknownKey {
        /// Where the key came from.
        origin: Source,
        /// The 1-based line in the file, when the key came from a file.
        line: Option<usize>,
        /// Dotted key path of the unknown key.
        key: String,
        /// The keys accepted at that place.
        expected: Vec<&'static str>,
        /// The accepted key nearest to the unknown one, when one is close
        /// enough to be the likely intent.
        nearest: Option<&'static str>,
    },
    /// An environment variable in the `CTXFOLD_COMPACTION_` namespace that
    /// maps to no setting.
    #[error(
        "environment variable {name}: not a ctxfold setting: expected one of {}{}",
        expected.join(", "),
        hint(nearest)
    )]
    UnknownEnv {
        /// The variable.
        name: String,
        /// The variables ctxfold reads (see [`crate::ENV_VARS`]).
        expected: Vec<&'static str>,
        /// The variable nearest to the unknown one, when close enough.
        nearest: Option<&'static str>,
    },
    /// A flag named a key path that is not a TOML key.
    #[error(
        "flag {flag}: `{key}` is not a config key: expected a dotted key such as compaction.auto.enabled"
    )]
    BadKey {
        /// The flag.
        flag: String,
        /// The key path as given.
        key: String,
    },
}

/// `; did you mean X?`, or nothing.
fn hint(nearest: &Option<&'static str>) -> String {
    nearest.map_or_else(String::new, |n| format!("; did you mean {n}?"))
}

/// The candidate nearest to `given`, if it is close enough to be what was
/// meant: a normalized Damerau-Levenshtein similarity of at least 0.7
/// (one slip in a short word: `tool`/`tools`, `enabeld`/`enabled`,
/// `Compaction`/`compaction`), else a candidate that `given` begins
/// (`timeout`/`timeout_secs`).
pub(crate) fn nearest(given: &str, candidates: &[&'static str]) -> Option<&'static str> {
    let given = given.to_ascii_lowercase();
    let lower = |c: &str| c.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| {
            (
                strsim::normalized_damerau_levenshtein(&given, &lower(c)),
                *c,
            )
        })
        .filter(|(score, _)| *score >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
        .or_else(|| {
            candidates
                .iter()
                .find(|c| given.len() >= 3 && lower(c).starts_with(given.as_str()))
                .copied()
        })
}

/// `PATH:LINE`, `PATH`, `environment variable X`, `flag X`.
pub(crate) fn at(origin: &Source, line: &Option<usize>) -> String {
    match origin {
        Source::User(p) | Source::Workspace(p) | Source::File(p) => match line {
            Some(l) => format!("{}:{l}", p.display()),
            None => p.display().to_string(),
        },
        Source::Env(v) => format!("environment variable {v}"),
        Source::Flag(f) => format!("flag {f}"),
        Source::Builtin => "built-in defaults".to_owned(),
    }
}
