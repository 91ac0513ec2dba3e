//! Diagnostics in tool output: the lines an agent needs to carry on after
//! a compaction (a compiler error and where, a failing test, a panic, an
//! exception, a non-zero exit, a missing file, a refused permission).
//!
//! The recognizer is language- and tool-agnostic: it knows the shapes
//! diagnostics take (`error[E0308]: …` then `--> src/x.rs:3:5`,
//! `src/x.c:3:5: error: …`, `thread '…' panicked at src/x.rs:3:5:` then
//! the message, `Traceback …` down to `ValueError: …`, `test x ... FAILED`,
//! `exit code 101`), not the tools. It reads a result once, line by line
//! (a JSON-wrapped result, `{"message": "…\n…"}`, by its strings), and
//! skips what only mentions errors: indented source code, log lines at
//! info level or below, comments.
//!
//! Results are deduplicated and in output order; [`headline`] picks the
//! one that matters most (errors, panics and failures before warnings).
//!
//! Reading a large result costs time proportional to it, and a view is
//! projected, counted and rendered before every model call: a loaded
//! [`Log`](crate::log::Log) keeps what was found in each of its tool
//! results ([`ResultScan`], in a [`ScanCell`]), so the recognizer reads a
//! result at most once for the life of the loaded log.

use std::sync::{LazyLock, OnceLock};

use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::text::literal_pattern;

// `collapse` is still reached through here (by `kept`).
pub(crate) use crate::text::collapse;
use crate::text::cut_chars;

/// A diagnostic line is cut to about this many characters.
pub const DIAGNOSTIC_CHARS: usize = 240;

/// An assertion's compared value is cut to this many characters: enough to
/// tell `0` from `1` or two short strings apart, not a dumped structure.
pub const VALUE_CHARS: usize = 60;

/// What a diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// A compiler or tool error.
    Error,
    /// A panic or a crash.
    Panic,
    /// An exception (a traceback's last line, `TypeError: …`).
    Exception,
    /// A failing test, or a test run that reports failures.
    TestFailure,
    /// A command that ended with a non-zero status.
    ExitStatus,
    /// A file or command that is not there.
    NotFound,
    /// A permission refused.
    PermissionDenied,
    /// A compiler warning.
    Warning,
}

impl DiagnosticKind {
    /// How severe, most first: what stopped the work (errors, panics,
    /// exceptions, failing tests), then what the tool said about the run
    /// (an exit status, a missing file, a refusal), then warnings.
    fn rank(self) -> u8 {
        match self {
            DiagnosticKind::Error
            | DiagnosticKind::Panic
            | DiagnosticKind::Exception
            | DiagnosticKind::TestFailure => 0,
            DiagnosticKind::ExitStatus
            | DiagnosticKind::NotFound
            | DiagnosticKind::PermissionDenied => 1,
            DiagnosticKind::Warning => 2,
        }
    }

    /// Whether it is a primary diagnostic: anything but a warning (what the
    /// retention report counts).
    pub fn is_primary(self) -> bool {
        self != DiagnosticKind::Warning
    }
}

/// One diagnostic found in tool output.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What it says.
    pub kind: DiagnosticKind,
    /// The line, whitespace collapsed, with its location when the output
    /// gave it on another line, cut at [`DIAGNOSTIC_CHARS`].
    pub text: String,
    /// The line alone, as the output has it (whitespace collapsed, cut).
    #[serde(skip)]
    pub line: String,
    /// Where, when the output says (`src/x.rs:3:5`).
    pub location: Option<String>,
}

/// The patterns, in the order of [`RULES`]; the first that matches a line
/// decides.
const PATTERNS: &[&str] = &[
    // `file.ext:12:5: error: msg` (gcc, clang, go vet, eslint…), or
    // `file.ts(12,5): error TS2322: msg`.
    r"^\s*([\w./\\-]+\.\w+)(?::(\d+)(?::(\d+))?|\((\d+),(\d+)\)):?\s+(?:-\s+)?(?:fatal )?(error|warning)(?-u:\b):?\s*(\S.*)$",
    // `error[E0308]: msg` / `error: msg` at the start of a line or after a
    // prefix ending in ": " (`Cargo command failed: error: …`).
    r"(?:^|: )(error(?:\[[A-Za-z]*\d+\])?): (\S.*)$|^(make(?:\[\d+\])?: \*\*\*) (\S.*)$|^(npm (?:ERR!|error)) (\S.*)$",
    // `warning: msg` at the start of a line.
    r"^(warning(?:\[[\w-]+\])?): (\S.*)$",
    // `thread 'main' panicked at src/x.rs:3:5:` (the message follows).
    r"panicked at ([\w./\\-]+:\d+:\d+):?\s*(.*)$|panicked at '(.*)', ([\w./\\-]+:\d+:\d+)",
    // `panic: msg` (Go), `fatal error: msg`, `Segmentation fault`.
    r"^(?:panic|fatal error|fatal): (\S.*)$|^(Segmentation fault|Aborted)(?-u:\b).*$",
    // `Traceback (most recent call last):`
    r"^Traceback \(most recent call last\):",
    // `ValueError: msg`, `java.lang.IllegalStateException: msg`,
    // `Uncaught TypeError: msg`, `Error: msg` at the start of a line.
    r"^(?:Uncaught )?((?:[a-z][\w]*\.)*[A-Z]\w*(?:Error|Exception)|Error): (\S.*)$|^(?:E\s+|Exception in thread .*? )(?:[a-z][\w]*\.)*[A-Z]\w*(?:Error|Exception)(?::\s*\S.*)?$",
    // Failing tests: `test a::b ... FAILED`, `--- FAIL: TestX`,
    // `FAILED tests/x.py::test_y - …`, `FAIL src/x.test.ts`, `not ok 3 - x`,
    // `test result: FAILED.`, `… of which 2 failed`, `3 failed, 10 passed`.
    r"^test (\S+) \.\.\. FAILED$|^--- FAIL: (\S+)|^FAILED (\S+)|^\s*FAIL\s+\S*[./]\S*|^\s*FAIL \[|^ERROR \S|(?-u:\b)[1-9]\d* errors? in \d|^not ok \d+(?-u:\b)|^test result: FAILED(?-u:\b)|(?-u:\b)of which [1-9]\d* failed(?-u:\b)|^=*\s*[1-9]\d* (?:failed|failing)(?-u:\b)",
    // Non-zero exit statuses.
    r"(?i)(?-u:\b)(?:exit(?:ed)?(?: with)? (?:code|status)|exit code|non-zero exit status|returned exit code)[ :=]*([1-9]\d*)(?-u:\b)",
    // Missing files and commands.
    r"No such file or directory|(?-u:\b)ENOENT(?-u:\b)|command not found|FileNotFoundError|(?i:(?-u:\b)(?:file|directory|folder|path) not found(?::| at(?-u:\b)))|cannot find (?:the )?(?:file|path)(?-u:\b)",
    // Refused permissions.
    r"Permission denied|(?-u:\b)EACCES(?-u:\b)|(?-u:\b)EPERM(?-u:\b)|Operation not permitted|PermissionError|Access is denied",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    Error,
    LocatedError,
    Warning,
    Panicked,
    Panic,
    Traceback,
    Exception,
    TestFailure,
    ExitStatus,
    NotFound,
    PermissionDenied,
}

const RULES: [Rule; 11] = [
    Rule::LocatedError,
    Rule::Error,
    Rule::Warning,
    Rule::Panicked,
    Rule::Panic,
    Rule::Traceback,
    Rule::Exception,
    Rule::TestFailure,
    Rule::ExitStatus,
    Rule::NotFound,
    Rule::PermissionDenied,
];

// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(PATTERNS).expect("the diagnostic patterns compile"));
/// All patterns over a whole text (`^`/`$` at line ends): most results hold
/// no diagnostic at all, and are passed over in one scan.
// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(PATTERNS.iter().map(|p| format!("(?m:{p})")))
        .expect("the diagnostic patterns compile")
});
// A literal pattern: it compiles (`every_pattern_compiles` builds them all).
#[allow(clippy::expect_used)]
static ONE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    PATTERNS
        .iter()
        .map(|p| Regex::new(p).expect("the diagnostic patterns compile"))
        .collect()
});
/// `--> src/x.rs:3:5` (rustc), `at f (src/x.js:3:5)`, `File "x.py", line 3`.
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r#"^\s*--> ([^\s]+:\d+(?::\d+)?)|^\s*File "([^"]+)", line (\d+)|^\s*at .*?\(?([\w./\\-]+\.\w+:\d+:\d+)\)?\s*$"#,
    )
});
/// The thread that panicked: in a test run, the failing test's name.
static THREAD: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"thread '([^']+)'(?: \(\d+\))? panicked at"));
/// An assertion's compared values (Rust's `left:`/`right:`, also before
/// 1.73 as `left: `…``).
static COMPARED: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"^\s*(left|right): (\S.*?),?$"));
/// A test run's count of failures (`of which 2 failed`, `2 failed, 3
/// passed`, `test result: FAILED. 2 passed; 1 failed`).
static FAILED_TALLY: LazyLock<Regex> =
    LazyLock::new(|| literal_pattern(r"(?-u:\b)(?:of which )?(\d+) (?:failed|failing)(?-u:\b)"));
/// A failed tool's generic first line (`An error occurred while running
/// the 'x' tool.`): it names no cause, the lines after it do.
static WRAPPER: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"(?i)^(?:an? )?(?:unexpected |unknown |internal )?error (?:occurred|happened|while)(?-u:\b)|^(?:the )?(?:tool|command|call|request|operation)(?: call)? (?:failed|errored)(?:\.|!|$)|^(?:error|failed|failure)[.!:]?$|^something went wrong(?-u:\b)",
    )
});
/// Words one of which every line that starts a diagnostic holds (what the
/// patterns need, ASCII case ignored): a line without one is passed over
/// without running the patterns.
static TRIGGER: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"(?i-u)error|npm err|warning|panic|fatal|segmentation fault|aborted|traceback|exception|fail|not ok|exit|no such file|enoent|not found|cannot find|permission|eacces|eperm|not permitted|access is denied",
    )
});
/// Lines of code that name errors (`except FileNotFoundError:`, `errno ==
/// EACCES`, `let msg = "exit code 2";`, `error!("…")`): not diagnostics.
static CODE: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r#"\s[=!]==?\s|(?-u:\b)(?:except|catch|raise|throw|throws|return|let|const|var|case|elif)(?-u:\b)|(?-u:\b)(?:error|warn|panic)!\(|=\s*["']"#,
    )
});
/// Lines that only mention errors: a log line at info level or below.
static QUIET_LOG: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"(?-u:\b)(?:INFO|DEBUG|TRACE)(?-u:\b)|(?-u:\b)level=(?:info|debug|trace)(?-u:\b)|(?-u:\b)(?:info|debug|trace):|^\s*(?://|#|--\s|\*|/\*)",
    )
});
/// A warning line that only counts warnings (`warning: 3 warnings emitted`).
static WARNING_TALLY: LazyLock<Regex> = LazyLock::new(|| {
    literal_pattern(
        r"^warning: .*(?-u:\b)\d+ warnings? (?:emitted|generated)|^warning: build failed",
    )
});

// How many times this thread ran the recognizer (`diagnostics`): tests
// check that a loaded log reads each result once.
#[cfg(test)]
thread_local! {
    pub(crate) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The diagnostics in `content`, in output order, each once.
pub fn diagnostics(content: &str) -> Vec<Diagnostic> {
    #[cfg(test)]
    RUNS.with(|r| r.set(r.get() + 1));
    let text = unwrap_json(content);
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    scan(&text, &mut |hit| {
        let Hit {
            kind,
            text,
            location,
            ..
        } = hit;
        let line = cut_chars(&collapse(&text), DIAGNOSTIC_CHARS);
        let text = match &location {
            Some(loc) if !line.contains(loc.as_str()) => {
                cut_chars(&format!("{} ({loc})", collapse(&text)), DIAGNOSTIC_CHARS)
            }
            _ => line.clone(),
        };
        if seen.insert(text.clone()) {
            out.push(Diagnostic {
                kind,
                text,
                line,
                location,
            });
        }
        out.len() < MAX_PER_RESULT
    });
    out
}

/// The error-like lines of `content`: 0-based indices into
/// `content.lines()` of every line a diagnostic is read from (see
/// [`diagnostics`]: its own line, and the lines its message, location or
/// compared values come from, such as rustc's `--> src/x.rs:3:5` or a
/// traceback's header and last frame), in order, each index once.
///
/// Every line counts, not only the first of each distinct diagnostic, and
/// there is no bound: an excerpt that keeps these lines keeps every
/// error-like line of the output. The content is read line by line as it
/// stands: a JSON-wrapped result (`{"stdout": "…\n…"}`) is not unwrapped,
/// since the indices are into its own lines.
///
/// What an excerpt keeps between an output's head and tail.
pub fn error_like_lines(content: &str) -> Vec<usize> {
    let mut at: Vec<usize> = Vec::new();
    scan(content, &mut |hit| {
        at.extend(hit.lines);
        true
    });
    at.sort_unstable();
    at.dedup();
    at
}

/// One diagnostic as the recognizer reads it, before it is cut and
/// deduplicated.
struct Hit {
    kind: DiagnosticKind,
    /// What it says, as read (not yet collapsed or cut).
    text: String,
    location: Option<String>,
    /// The lines it was read from (0-based), its own first.
    lines: Vec<usize>,
}

/// Run the recognizer over `text`, handing each diagnostic to `each` in
/// output order, until `each` says `false`.
fn scan(text: &str, each: &mut dyn FnMut(Hit) -> bool) {
    if !ANY.is_match(text) {
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let mut line = lines[i].trim_end();
        let at = i;
        i += 1;
        if line.len() > 2_000 {
            // A very long line (a C++ template error) is read by its start.
            let mut cut_at = 2_000;
            while !line.is_char_boundary(cut_at) {
                cut_at -= 1;
            }
            line = &line[..cut_at];
        }
        // pytest's `E   assert a == b` lines quote code, and are diagnostics.
        let code = CODE.is_match(line) && !line.starts_with("E ");
        if !TRIGGER.is_match(line) || QUIET_LOG.is_match(line) || code {
            continue;
        }
        let matched = SET.matches(line);
        let Some(k) = matched.iter().next() else {
            continue;
        };
        let caps = ONE[k].captures(line);
        // The other lines the diagnostic is read from.
        let mut more: Vec<usize> = Vec::new();
        let found = match (RULES[k], caps) {
            (Rule::Error, Some(c)) => match (c.get(3).or(c.get(5)), c.get(4).or(c.get(6))) {
                // `make: *** [x] Error 1`, `npm ERR! …`.
                (Some(head), Some(msg)) => Some((
                    DiagnosticKind::Error,
                    format!("{} {}", head.as_str(), msg.as_str()),
                    None,
                )),
                _ => {
                    let head = c.get(1).map_or("error", |m| m.as_str());
                    let msg = c.get(2).map_or("", |m| m.as_str());
                    // A field (`error: String,`) or a flag (`error: true`) is
                    // not a diagnostic: a message has words.
                    (msg.split_whitespace().count() >= 2 || msg.contains('`')).then(|| {
                        let loc = location_after(&lines, i, &mut more);
                        (DiagnosticKind::Error, format!("{head}: {msg}"), loc)
                    })
                }
            },
            (Rule::LocatedError, Some(c)) => {
                let file = &c[1];
                let (l, col) = match (c.get(2), c.get(4)) {
                    (Some(l), _) => (l.as_str(), c.get(3).map(|m| m.as_str())),
                    (None, Some(l)) => (l.as_str(), c.get(5).map(|m| m.as_str())),
                    _ => ("", None),
                };
                let loc = match col {
                    Some(col) => format!("{file}:{l}:{col}"),
                    None => format!("{file}:{l}"),
                };
                let kind = if &c[6] == "warning" {
                    DiagnosticKind::Warning
                } else {
                    DiagnosticKind::Error
                };
                // `src/x.rs:55:    error: String,` in grep output is a field:
                // a message has words.
                let msg = c.get(7).map_or("", |m| m.as_str());
                (msg.split_whitespace().count() >= 2 || msg.contains('`'))
                    .then(|| (kind, line.trim().to_owned(), Some(loc)))
            }
            (Rule::Warning, Some(c)) => {
                let msg = c.get(2).map_or("", |m| m.as_str());
                (msg.split_whitespace().count() >= 2 && !WARNING_TALLY.is_match(line)).then(|| {
                    let loc = location_after(&lines, i, &mut more);
                    (DiagnosticKind::Warning, format!("{}: {msg}", &c[1]), loc)
                })
            }
            (Rule::Panicked, Some(c)) => {
                // `panicked at src/x.rs:3:5: msg`, or before Rust 1.73
                // `panicked at 'msg', src/x.rs:3:5`.
                let loc = c.get(1).or(c.get(4)).map_or("", |m| m.as_str()).to_owned();
                let mut msg = c
                    .get(2)
                    .or(c.get(3))
                    .map_or("", |m| m.as_str())
                    .trim()
                    .to_owned();
                if msg.is_empty() {
                    // The message is on the next line.
                    if let Some(next) = lines.get(i).map(|l| l.trim())
                        && !next.is_empty()
                        && !next.starts_with("note:")
                    {
                        msg = next.to_owned();
                        more.push(i);
                    }
                }
                // The failing test is the thread's name (`thread
                // 'a::tests::b' (1234) panicked at`); the id in brackets
                // changes every run, so it is left out.
                let who = THREAD
                    .captures(line)
                    .map(|t| format!("thread '{}' ", &t[1]))
                    .unwrap_or_default();
                let mut text = if msg.is_empty() {
                    format!("{who}panicked at {loc}")
                } else {
                    format!("{who}panicked at {loc}: {msg}")
                };
                text.push_str(&compared_values(&lines, i, &mut more));
                Some((DiagnosticKind::Panic, text, Some(loc)))
            }
            (Rule::Panic, _) => Some((DiagnosticKind::Panic, line.trim().to_owned(), None)),
            (Rule::Traceback, _) => {
                // The exception is the first line back at the margin; the
                // location, the last `File "…", line N` before it.
                let mut loc = None;
                let mut found = None;
                while i < lines.len() {
                    let l = lines[i].trim_end();
                    i += 1;
                    if let Some(c) = LOCATION.captures(l)
                        && let (Some(f), Some(n)) = (c.get(2), c.get(3))
                    {
                        loc = Some((format!("{}:{}", f.as_str(), n.as_str()), i - 1));
                        continue;
                    }
                    if !l.is_empty() && !l.starts_with(char::is_whitespace) {
                        found = Some(l.trim().to_owned());
                        break;
                    }
                }
                found.map(|text| {
                    more.extend(loc.as_ref().map(|(_, at)| *at));
                    more.push(i - 1);
                    (DiagnosticKind::Exception, text, loc.map(|(l, _)| l))
                })
            }
            (Rule::Exception, Some(_)) => {
                let loc = location_after(&lines, i, &mut more);
                Some((DiagnosticKind::Exception, line.trim().to_owned(), loc))
            }
            (Rule::TestFailure, _) => {
                Some((DiagnosticKind::TestFailure, line.trim().to_owned(), None))
            }
            (Rule::ExitStatus, _) => {
                Some((DiagnosticKind::ExitStatus, line.trim().to_owned(), None))
            }
            (Rule::NotFound, _) => Some((DiagnosticKind::NotFound, line.trim().to_owned(), None)),
            (Rule::PermissionDenied, _) => Some((
                DiagnosticKind::PermissionDenied,
                line.trim().to_owned(),
                None,
            )),
            _ => None,
        };
        let Some((kind, text, location)) = found else {
            continue;
        };
        let mut read = vec![at];
        read.append(&mut more);
        if !each(Hit {
            kind,
            text,
            location,
            lines: read,
        }) {
            break;
        }
    }
}

/// At most this many distinct diagnostics are read from one result (a
/// build with thousands of errors): what is kept and shown is far fewer.
pub const MAX_PER_RESULT: usize = 100;

/// The diagnostics of a tool result: those in its content, and for a
/// failed result in which none is recognized, its first line (a failure is
/// a diagnostic whatever its shape).
pub fn result_diagnostics(content: &str, is_error: bool) -> Vec<Diagnostic> {
    let found = diagnostics(content);
    if !found.is_empty() || !is_error {
        return found;
    }
    let text = unwrap_json(content);
    // The first line that states a cause: past a generic wrapper, to what
    // it wraps (a trace, the tool's stderr), else the wrapper itself.
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let head = lines.next();
    let first = match head {
        Some(h) if WRAPPER.is_match(h) => lines.find(|l| !WRAPPER.is_match(l)).or(head),
        other => other,
    };
    first
        .map(|l| Diagnostic {
            kind: DiagnosticKind::Error,
            text: cut_chars(&collapse(l), DIAGNOSTIC_CHARS),
            line: cut_chars(&collapse(l), DIAGNOSTIC_CHARS),
            location: None,
        })
        .into_iter()
        .collect()
}

/// The diagnostic that matters most in `content`: the first error, panic,
/// exception, failure, exit status or refusal, else the first warning.
pub fn headline(content: &str) -> Option<Diagnostic> {
    first(diagnostics(content), 1).into_iter().next()
}

/// The `n` diagnostics that matter most, most severe first (see
/// [`DiagnosticKind`]'s order: errors, panics, exceptions and failing
/// tests, then exit statuses, missing files and refusals, then warnings),
/// in output order among equals.
pub fn first(all: Vec<Diagnostic>, n: usize) -> Vec<Diagnostic> {
    first_of(&all, n).cloned().collect()
}

/// [`first`], borrowed from `all` (a cached [`ResultScan`] is not copied).
pub fn first_of(all: &[Diagnostic], n: usize) -> impl Iterator<Item = &Diagnostic> {
    let rank = |r: u8| all.iter().filter(move |d| d.kind.rank() == r);
    rank(0).chain(rank(1)).chain(rank(2)).take(n)
}

/// What a result flagged a success printed, when it says the work failed:
/// `1 test failed`, `3 tests failed`, `panicked`, `2 errors`. `None` when
/// its diagnostics hold no failing test, panic or error (warnings, an exit
/// status, an exception quoted in a document read: not enough to say the
/// run failed).
pub fn printed_outcome(found: &[Diagnostic]) -> Option<String> {
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    // A run's own tally (`of which 2 failed`, `2 failed, 3 passed`) is the
    // count; else the failing tests it names.
    let tally = found
        .iter()
        .filter(|d| d.kind == DiagnosticKind::TestFailure)
        .find_map(|d| {
            FAILED_TALLY
                .captures(&d.line)?
                .get(1)?
                .as_str()
                .parse()
                .ok()
        });
    let named = found
        .iter()
        .filter(|d| d.kind == DiagnosticKind::TestFailure && !FAILED_TALLY.is_match(&d.line))
        .count();
    match tally
        .filter(|&n: &usize| n > 0)
        .or((named > 0).then_some(named))
    {
        Some(n) => return Some(format!("{} failed", plural(n, "test"))),
        None if found.iter().any(|d| d.kind == DiagnosticKind::TestFailure) => {
            return Some("tests failed".into());
        }
        None => {}
    }
    if found.iter().any(|d| d.kind == DiagnosticKind::Panic) {
        return Some("panicked".into());
    }
    let errors = found
        .iter()
        .filter(|d| d.kind == DiagnosticKind::Error)
        .count();
    (errors > 0).then(|| plural(errors, "error"))
}

/// What the recognizer found in one tool result, with its size: all that a
/// stripped result, the retention report and the digest need of it, so
/// none of them reads the result again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultScan {
    /// Characters of the content.
    pub chars: usize,
    /// [`result_diagnostics`] of the content.
    pub diagnostics: Vec<Diagnostic>,
}

impl ResultScan {
    /// Read a tool result's `content` (runs the recognizer).
    pub fn new(content: &str, is_error: bool) -> Self {
        ResultScan {
            chars: content.chars().count(),
            diagnostics: result_diagnostics(content, is_error),
        }
    }
}

/// A [`ResultScan`] made the first time it is asked for, then kept: one per
/// record of a loaded [`Log`](crate::log::Log).
///
/// It sits beside the records, in the log, rather than in [`Record`] or
/// [`Body::ToolResult`]: records are built with struct literals all over
/// the workspace, their fields are public and mutable (a cache inside one
/// would go stale when its content is changed, and a clone that rewrites
/// its content, as materializing does, would carry a wrong one), while the
/// records a log holds never change once pushed. Records, their equality
/// and their bytes on disk stay as they were. A `OnceLock` keeps the log
/// `Send + Sync` and the projection pure: filling the cell is invisible
/// but for time.
///
/// [`Record`]: crate::record::Record
/// [`Body::ToolResult`]: crate::record::Body::ToolResult
#[derive(Clone, Default)]
pub struct ScanCell(OnceLock<Box<ResultScan>>);

impl ScanCell {
    /// The scan of `content`, made now if this cell has none yet. The cell
    /// belongs to one record: `content` and `is_error` must be that
    /// record's, which is why only the log and its view items fill it
    /// (outside the crate: [`Log::result_scan`](crate::log::Log::result_scan)).
    pub(crate) fn get_or_scan(&self, content: &str, is_error: bool) -> &ResultScan {
        self.0
            .get_or_init(|| Box::new(ResultScan::new(content, is_error)))
    }

    /// Keep `scan`, made elsewhere of this cell's record, unless one is
    /// made already.
    pub(crate) fn fill(&self, scan: ResultScan) {
        let _ = self.0.set(Box::new(scan));
    }

    /// The scan, if one was made.
    pub fn get(&self) -> Option<&ResultScan> {
        self.0.get().map(|b| &**b)
    }
}

/// Says only whether the cell is filled: the diagnostics would swamp a
/// printed log or view.
impl std::fmt::Debug for ScanCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.get() {
            Some(_) => "ScanCell(scanned)",
            None => "ScanCell(empty)",
        })
    }
}

/// An assertion's compared values on the lines after a panic (`  left: 0`
/// then ` right: 1`), as ` (left: 0, right: 1)`, each cut at
/// [`VALUE_CHARS`]; empty when there are none. The lines they are on are
/// added to `read`.
fn compared_values(lines: &[&str], at: usize, read: &mut Vec<usize>) -> String {
    let mut found: Vec<String> = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(at).take(6) {
        if let Some(c) = COMPARED.captures(l) {
            read.push(k);
            found.push(format!(
                "{}: {}",
                &c[1],
                cut_chars(&collapse(&c[2]), VALUE_CHARS)
            ));
        }
    }
    if found.is_empty() {
        String::new()
    } else {
        format!(" ({})", found.join(", "))
    }
}

/// A location on one of the two lines after `at` (rustc's `-->`, a stack
/// frame); the line it is on is added to `read`.
fn location_after(lines: &[&str], at: usize, read: &mut Vec<usize>) -> Option<String> {
    let (k, loc) = lines.iter().enumerate().skip(at).take(2).find_map(|(k, l)| {
        let c = LOCATION.captures(l)?;
        c.get(1)
            .or(c.get(4))
            .map(|m| m.as_str().to_owned())
            .or_else(|| Some(format!("{}:{}", c.get(2)?.as_str(), c.get(3)?.as_str())))
            .map(|loc| (k, loc))
    })?;
    read.push(k);
    Some(loc)
}

/// The text of a result: a JSON object or array is read by its strings
/// (tools often wrap output as `{"message": "…", "stderr": "…"}`), each
/// on its own lines.
fn unwrap_json(content: &str) -> std::borrow::Cow<'_, str> {
    let t = content.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return content.into();
    }
    let Ok(v) = serde_json::from_str::<Value>(t) else {
        return content.into();
    };
    let mut out = String::new();
    strings(&v, &mut out);
    out.into()
}

fn strings(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(content: &str) -> Vec<String> {
        diagnostics(content).into_iter().map(|d| d.text).collect()
    }

    fn kinds(content: &str) -> Vec<DiagnosticKind> {
        diagnostics(content).into_iter().map(|d| d.kind).collect()
    }

    /// The statics' `expect`s cannot fail: every pattern compiles.
    #[test]
    fn every_pattern_compiles() {
        LazyLock::force(&SET);
        LazyLock::force(&ANY);
        LazyLock::force(&ONE);
        for re in [
            &LOCATION,
            &THREAD,
            &COMPARED,
            &FAILED_TALLY,
            &WRAPPER,
            &TRIGGER,
            &CODE,
            &QUIET_LOG,
            &WARNING_TALLY,
        ] {
            LazyLock::force(re);
        }
    }

    #[test]
    fn compiler_errors_and_warnings_keep_their_location() {
        let rustc = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\n   |\n4  |     let x: u32 = \"a\";\n   |            ---   ^^^ expected `u32`\n\nwarning: unused variable: `y`\n --> src/lib.rs:2:9\n\nerror: could not compile `x` (bin \"x\") due to 1 previous error; 1 warning emitted\n";
        assert_eq!(
            texts(rustc),
            [
                "error[E0308]: mismatched types (src/main.rs:4:18)",
                "warning: unused variable: `y` (src/lib.rs:2:9)",
                "error: could not compile `x` (bin \"x\") due to 1 previous error; 1 warning emitted",
            ]
        );
        let gcc = "main.c: In function 'main':\nmain.c:5:3: error: 'x' undeclared (first use in this function)\nmain.c:7:1: warning: control reaches end of non-void function\n";
        let d = diagnostics(gcc);
        assert_eq!(d[0].location.as_deref(), Some("main.c:5:3"));
        assert_eq!(d[1].kind, DiagnosticKind::Warning);
        let tsc =
            "src/app.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.";
        assert_eq!(
            diagnostics(tsc)[0].location.as_deref(),
            Some("src/app.ts:12:5")
        );
        // Wrapped in JSON, after a prefix.
        let wrapped = r#"{"message":"Cargo command failed: error[E0433]: failed to resolve: could not find `vtab` in `rusqlite`\n   --> crates/g/src/search.rs:59:15\n","trace":[]}"#;
        assert_eq!(
            texts(wrapped),
            [
                "error[E0433]: failed to resolve: could not find `vtab` in `rusqlite` (crates/g/src/search.rs:59:15)"
            ]
        );
    }

    #[test]
    fn panics_tracebacks_and_failing_tests() {
        let panic = "running 3 tests\ntest a::b ... FAILED\n\nthread 'a::b' panicked at src/a.rs:10:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1`\ntest result: FAILED. 2 passed; 1 failed\n";
        assert_eq!(
            texts(panic),
            [
                "test a::b ... FAILED",
                "thread 'a::b' panicked at src/a.rs:10:5: assertion `left == right` failed (left: 1, right: 2)",
                "test result: FAILED. 2 passed; 1 failed",
            ]
        );
        let py = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\n  File \"app.py\", line 2, in main\n    int('x')\nValueError: invalid literal for int() with base 10: 'x'\n";
        let d = diagnostics(py);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].kind, DiagnosticKind::Exception);
        assert_eq!(
            d[0].text,
            "ValueError: invalid literal for int() with base 10: 'x' (app.py:2)"
        );
        let go = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\nFAIL\nexit status 1\n";
        assert_eq!(
            kinds(go),
            [DiagnosticKind::TestFailure, DiagnosticKind::ExitStatus]
        );
        let node = "TypeError: x.map is not a function\n    at render (src/view.js:14:9)\n";
        assert_eq!(
            texts(node),
            ["TypeError: x.map is not a function (src/view.js:14:9)"]
        );
        assert_eq!(
            kinds(
                "pytest\nFAILED tests/test_a.py::test_b - AssertionError\n=== 1 failed, 3 passed in 0.1s ==="
            ),
            [DiagnosticKind::TestFailure, DiagnosticKind::TestFailure]
        );
    }

    #[test]
    fn more_tools_shapes() {
        let cases: &[(&str, DiagnosticKind)] = &[
            (
                "make: *** [Makefile:12: build] Error 1",
                DiagnosticKind::Error,
            ),
            (
                "make[2]: *** [src/Makefile:40: app.o] Error 2",
                DiagnosticKind::Error,
            ),
            ("npm ERR! code ELIFECYCLE", DiagnosticKind::Error),
            ("npm error Missing script: \"build\"", DiagnosticKind::Error),
            (
                "src/app.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.",
                DiagnosticKind::Error,
            ),
            (" FAIL  src/sum.test.js", DiagnosticKind::TestFailure),
            (
                "        FAIL [   0.004s] crate::tests::adds",
                DiagnosticKind::TestFailure,
            ),
            (
                "ERROR tests/test_io.py - ModuleNotFoundError: No module named 'x'",
                DiagnosticKind::TestFailure,
            ),
            (
                "==== 1 failed, 2 errors in 0.12s ====",
                DiagnosticKind::TestFailure,
            ),
            (
                "E       AssertionError: assert 1 == 2",
                DiagnosticKind::Exception,
            ),
            (
                "Exception in thread \"main\" java.lang.NullPointerException: name",
                DiagnosticKind::Exception,
            ),
            (
                "thread 'main' panicked at 'index out of bounds', src/main.rs:4:5",
                DiagnosticKind::Panic,
            ),
        ];
        for (line, kind) in cases {
            assert_eq!(kinds(line).first(), Some(kind), "{line}: {:?}", texts(line));
        }
        assert_eq!(
            texts("thread 'main' panicked at 'boom', src/main.rs:4:5"),
            ["thread 'main' panicked at src/main.rs:4:5: boom"]
        );
        // Since Rust 1.87 the thread's id follows its name: it changes
        // every run, and is left out so the same panic is one diagnostic.
        assert_eq!(
            texts("thread 'a::t' (2323049) panicked at src/a.rs:1:2:\nboom"),
            ["thread 'a::t' panicked at src/a.rs:1:2: boom"]
        );
        // Compared values are cut.
        let long = format!(
            "thread 't' panicked at src/a.rs:1:2:\nassertion `left == right` failed\n  left: {}\n right: 1\n",
            "x".repeat(500)
        );
        let d = texts(&long);
        assert!(
            d[0].contains(&format!(
                "(left: {}…, right: 1)",
                "x".repeat(VALUE_CHARS - 1)
            )),
            "{d:?}"
        );
        // Not tests or exceptions: a constant, a class named in prose.
        assert!(texts("    FAIL = 1").is_empty());
        assert!(texts("ValueError").is_empty());
    }

    #[test]
    fn exits_missing_files_and_refusals() {
        assert_eq!(
            kinds("Process exited with code 101"),
            [DiagnosticKind::ExitStatus]
        );
        assert!(kinds("Process exited with code 0").is_empty());
        assert_eq!(
            kinds("cat: x.txt: No such file or directory"),
            [DiagnosticKind::NotFound]
        );
        assert_eq!(
            kinds("sh: 1: rg: command not found"),
            [DiagnosticKind::NotFound]
        );
        assert_eq!(
            kinds(
                "open /etc/shadow: permission denied\nmkdir: cannot create directory 'x': Permission denied"
            ),
            [DiagnosticKind::PermissionDenied]
        );
    }

    #[test]
    fn code_and_grep_hits_that_name_errors_do_not_count() {
        for line in [
            "src/model.rs:55:    error: String,",
            "src/net.rs:88: error!(\"connection lost: {e}\");",
            "    except FileNotFoundError:",
            "except PermissionError as e:",
            "if (err.code === 'ENOENT') {",
            "if (errno == EACCES) return -1;",
            "let msg = \"exit code 2\";",
            "2024-05-01T10:00:00 info: error: transient failure, retrying",
        ] {
            assert!(texts(line).is_empty(), "{line}: {:?}", texts(line));
        }
        // A long line is read by its start, not skipped.
        let long = format!("error: template instantiation failed {}", "x".repeat(5_000));
        assert_eq!(kinds(&long), [DiagnosticKind::Error]);
        // Thousands of distinct diagnostics: read up to a bound, linearly.
        let many: String = (0..50_000)
            .map(|k| format!("test t{k} ... FAILED\n"))
            .collect();
        assert_eq!(diagnostics(&many).len(), MAX_PER_RESULT);
    }

    #[test]
    fn what_only_mentions_errors_does_not_count() {
        let code = "pub enum Error {\n    NotFound,\n}\nfn error(&self) -> Error {\n    error: String,\n    // error: this is a comment about errors\n    return Err(anyhow!(\"error: {e}\"));\n}\nimpl From<io::Error> for Error {}\n";
        assert!(texts(code).is_empty(), "{:?}", texts(code));
        let log = "2026-01-01T00:00:00Z  INFO server: error: connection retried, error_count=0\n[DEBUG] warning: cache miss on key a\nlevel=info msg=\"no errors found\"\n";
        assert!(texts(log).is_empty(), "{:?}", texts(log));
        let prose = "Runtime error - IO errors, file not found, etc.\nThe test failed once last week, then passed.\nerror: true\n";
        assert!(texts(prose).is_empty(), "{:?}", texts(prose));
        assert!(texts("warning: 3 warnings emitted").is_empty());
    }

    #[test]
    fn error_like_lines_are_every_line_a_diagnostic_is_read_from() {
        let out = "   Compiling x v0.1.0\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\n   |\nerror[E0308]: mismatched types\n  --> src/main.rs:4:18\nTraceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nValueError: bad\nall done\n";
        // Repeated diagnostics count at each of their lines.
        assert_eq!(error_like_lines(out), [1, 2, 4, 5, 6, 7, 9]);
        assert!(error_like_lines("1\n2\n3\n").is_empty());
    }

    #[test]
    fn a_failed_result_is_a_diagnostic_whatever_its_shape() {
        let d = result_diagnostics("\n  The tool timed out after 60 s\nmore", true);
        assert_eq!(d[0].text, "The tool timed out after 60 s");
        assert!(result_diagnostics("all good", false).is_empty());
        // The headline is the first error, not the first warning.
        let h =
            headline("warning: unused import: `a`\nerror[E0425]: cannot find value `x`").unwrap();
        assert_eq!(h.kind, DiagnosticKind::Error);
        // Long lines are cut, each result's diagnostics once.
        let long = format!("error: {}", "word ".repeat(100));
        assert_eq!(diagnostics(&format!("{long}\n{long}")).len(), 1);
        assert!(diagnostics(&long)[0].text.chars().count() <= DIAGNOSTIC_CHARS);
    }
}
