//! Diagnostics in tool output: the lines an agent needs to carry on after
//! a compaction (a compiler error and where, a failing test, a panic, an
//! exception, an error or warning a log printed, a non-zero exit, a missing
//! file, a refused permission), and the lines naming where a full output
//! was saved (its way back).
//!
//! The recognizer is language- and tool-agnostic: it knows the shapes
//! diagnostics take (`error[E0308]: …` then `--> src/x.rs:3:5`,
//! `src/x.c:3:5: error: …`, `thread '…' panicked at src/x.rs:3:5:` then
//! the message, `Traceback …` down to `ValueError: …`, `test x ... FAILED`,
//! `FAILED tests/x.py::t`, jest's `✕ t`, `--- FAIL: TestX`, `exit code
//! 101`), log lines by their level wherever the logger puts it (ERROR,
//! FATAL, CRITICAL, WARN: `<time> ERROR msg`, `[ERROR] msg`, `ERROR: msg`,
//! glog's `E1206 …]`, logfmt's `level=error`, JSON lines'
//! `"level":"error"`, log4j's `<time> [main] ERROR x.Y - msg`, Python's
//! `ERROR:root:msg`), and saved-output lines (Claude Code's `Output too
//! large (29.4KB). Full output saved to: PATH`, `see PATH for the full
//! output`), not the tools. It reads a result once, line by line (a
//! JSON-wrapped result, `{"message": "…\n…"}`, by its strings), and skips
//! what only mentions errors: indented source code, log lines at info
//! level or below, comments.
//!
//! Results are deduplicated and in output order; [`headline`] picks the
//! one that matters most (errors, panics and failures before warnings).
//! [`error_like_lines`] gives the lines they were read from, for an
//! excerpt that keeps them verbatim.
//!
//! Reading a large result costs time proportional to it, and a view is
//! projected, counted and rendered before every model call: a loaded
//! [`Log`](crate::log::Log) keeps what was found in each of its tool
//! results ([`ResultScan`], in a [`ScanCell`]), so the recognizer reads a
//! result at most once for the life of the loaded log.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod logs;
mod recognize;
#[cfg(test)]
mod tests;

use recognize::{FAILED_TALLY, Hit, WRAPPER, scan};

// `collapse` is still reached through here (by `kept`).
pub(crate) use crate::text::collapse;
use crate::text::cut_chars;

/// A diagnostic line is cut to about this many characters.
pub const DIAGNOSTIC_CHARS: usize = 240;

/// A saved-output line is cut to this many characters: far more than a
/// diagnostic, so that the path it names stays whole.
pub const SAVED_CHARS: usize = 1_000;

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
    /// An exception (a traceback's last line, `TypeError: …`), or what a
    /// failing test's assertion says (pytest's `E   assert 1 == 2`).
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
    /// A log line at level ERROR, FATAL or CRITICAL (or SEVERE, EMERG,
    /// ALERT, PANIC), in any logger's shape.
    LogError,
    /// A log line at level WARN or WARNING.
    LogWarning,
    /// A line naming where the full output was saved (Claude Code's `Full
    /// output saved to: PATH`): the way back to what a fold left out.
    SavedOutput,
}

impl DiagnosticKind {
    /// How severe, most first: what stopped the work (errors, panics,
    /// exceptions, failing tests, log errors), then what the tool said
    /// about the run (an exit status, a missing file, a refusal), then
    /// warnings, then where the output was saved (which a stripped result
    /// shows whatever its budget).
    fn rank(self) -> u8 {
        match self {
            DiagnosticKind::Error
            | DiagnosticKind::Panic
            | DiagnosticKind::Exception
            | DiagnosticKind::TestFailure
            | DiagnosticKind::LogError => 0,
            DiagnosticKind::ExitStatus
            | DiagnosticKind::NotFound
            | DiagnosticKind::PermissionDenied => 1,
            DiagnosticKind::Warning | DiagnosticKind::LogWarning => 2,
            DiagnosticKind::SavedOutput => 3,
        }
    }

    /// Whether it is a warning (a compiler's or a log's).
    pub fn is_warning(self) -> bool {
        matches!(self, DiagnosticKind::Warning | DiagnosticKind::LogWarning)
    }

    /// Whether it says the work went wrong: anything but a warning or a
    /// saved-output line.
    pub fn is_failure(self) -> bool {
        self.rank() <= 1
    }

    /// Whether it is a primary diagnostic: anything but a warning, so log
    /// errors and saved-output lines too (what the retention report
    /// counts).
    pub fn is_primary(self) -> bool {
        !self.is_warning()
    }
}

/// One diagnostic found in tool output.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// What it says.
    pub kind: DiagnosticKind,
    /// The line, whitespace collapsed, with its location when the output
    /// gave it on another line, cut at [`DIAGNOSTIC_CHARS`] (a saved-output
    /// line at [`SAVED_CHARS`]).
    pub text: String,
    /// The line alone, as the output has it (whitespace collapsed, cut).
    #[serde(skip)]
    pub line: String,
    /// Where, when the output says (`src/x.rs:3:5`).
    pub location: Option<String>,
}

/// The distinct diagnostics of a result as kept (a [`ResultScan`]'s):
/// up to [`MAX_PER_RESULT`] of them and the saved-output lines (up to
/// [`MAX_SAVED`]), with how many more distinct ones there were. Reads as
/// the slice of those kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// The diagnostics kept, in output order, each text once.
    pub list: Vec<Diagnostic>,
    /// Distinct diagnostics found past the bound, not kept: what a stripped
    /// result counts among the ones it does not show.
    pub unkept: usize,
}

impl std::ops::Deref for Findings {
    type Target = [Diagnostic];

    fn deref(&self) -> &[Diagnostic] {
        &self.list
    }
}

impl From<Vec<Diagnostic>> for Findings {
    fn from(list: Vec<Diagnostic>) -> Self {
        Findings { list, unkept: 0 }
    }
}

/// One diagnostic where an output has it: see [`error_like`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorLike {
    /// The diagnostic, as [`diagnostics`] gives it.
    pub diagnostic: Diagnostic,
    /// The 0-based indices into the output's lines it was read from, its
    /// own line first.
    pub lines: Vec<usize>,
}

// How many times this thread ran the recognizer (`diagnostics`): tests
// check that a loaded log reads each result once.
#[cfg(test)]
thread_local! {
    pub(crate) static RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The diagnostics in `content`, in output order, each once: up to
/// [`MAX_PER_RESULT`], and the saved-output lines past them (up to
/// [`MAX_SAVED`]).
pub fn diagnostics(content: &str) -> Vec<Diagnostic> {
    findings(&unwrap_json(content)).list
}

/// [`diagnostics`] of an unwrapped text, with how many distinct ones were
/// past the bounds.
fn findings(text: &str) -> Findings {
    #[cfg(test)]
    RUNS.with(|r| r.set(r.get() + 1));
    let mut out = Findings::default();
    let (mut kept, mut saved) = (0, 0);
    let mut seen: HashSet<String> = HashSet::new();
    scan(text, &mut |hit| {
        let d = diagnostic(hit);
        if !seen.insert(d.text.clone()) {
            return true;
        }
        let room = if d.kind == DiagnosticKind::SavedOutput {
            &mut saved
        } else {
            &mut kept
        };
        let bound = if d.kind == DiagnosticKind::SavedOutput {
            MAX_SAVED
        } else {
            MAX_PER_RESULT
        };
        if *room < bound {
            *room += 1;
            out.list.push(d);
        } else {
            out.unkept += 1;
        }
        true
    });
    out
}

/// A diagnostic as kept: its text collapsed and cut, its location after it
/// when the line does not hold it.
fn diagnostic(hit: Hit) -> Diagnostic {
    let Hit {
        kind,
        text,
        location,
        ..
    } = hit;
    let max = if kind == DiagnosticKind::SavedOutput {
        SAVED_CHARS
    } else {
        DIAGNOSTIC_CHARS
    };
    let line = cut_chars(&collapse(&text), max);
    let text = match &location {
        Some(loc) if !line.contains(loc.as_str()) => {
            cut_chars(&format!("{} ({loc})", collapse(&text)), max)
        }
        _ => line.clone(),
    };
    Diagnostic {
        kind,
        text,
        line,
        location,
    }
}

/// Every diagnostic of `content` where it has it: each occurrence (not
/// deduplicated, not bounded), in output order, with the lines it was read
/// from. `content` is read line by line as it stands (see
/// [`error_like_lines`]); [`result_text`] gives what a tool result's
/// diagnostics are read from.
pub fn error_like(content: &str) -> Vec<ErrorLike> {
    let mut out = Vec::new();
    scan(content, &mut |hit| {
        let lines = hit.lines.clone();
        out.push(ErrorLike {
            diagnostic: diagnostic(hit),
            lines,
        });
        true
    });
    out
}

/// The error-like lines of `content`: 0-based indices into
/// `content.lines()` of every line a diagnostic is read from, in order,
/// each index once. A diagnostic is read from its own line and the lines
/// its message, location or compared values come from: rustc's `-->
/// src/x.rs:3:5` after `error[E0308]: …`, a panic's message and `left:`
/// `right:` lines, a traceback's header, last frame and exception. The
/// lines are those of compiler errors and warnings, panics, exceptions,
/// failing tests, log lines at level ERROR/FATAL/CRITICAL/WARN in any
/// logger's shape, non-zero exit statuses, missing files, refusals, and
/// lines naming where the full output was saved (see the module docs).
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

/// The text a tool result's diagnostics are read from: the content, or
/// for a JSON-wrapped result (`{"message": "…", "stderr": "…"}`) its
/// strings, each on its own lines (a JSON log line is read as it is).
pub fn result_text(content: &str) -> Cow<'_, str> {
    unwrap_json(content)
}

/// At most this many distinct diagnostics are kept of one result (a build
/// with thousands of errors): what is shown is far fewer; the rest are
/// counted ([`Findings::unkept`]).
pub const MAX_PER_RESULT: usize = 100;

/// At most this many distinct saved-output lines are kept of one result,
/// besides [`MAX_PER_RESULT`] diagnostics: an output names where it was
/// saved once or twice; a document listing many such lines has the rest
/// counted.
pub const MAX_SAVED: usize = 4;

/// The diagnostics of a tool result: those in its content, and for a
/// failed result in which none is recognized, its first line (a failure is
/// a diagnostic whatever its shape).
pub fn result_diagnostics(content: &str, is_error: bool) -> Vec<Diagnostic> {
    result_findings(content, is_error).list
}

/// [`result_diagnostics`], with how many distinct ones were past the
/// bounds.
pub fn result_findings(content: &str, is_error: bool) -> Findings {
    let text = unwrap_json(content);
    let found = findings(&text);
    // Only a saved-output line is no cause.
    if !is_error || found.iter().any(|d| d.kind != DiagnosticKind::SavedOutput) {
        return found;
    }
    // The first line that states a cause: past a generic wrapper, to what
    // it wraps (a trace, the tool's stderr), else the wrapper itself.
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let head = lines.next();
    let first = match head {
        Some(h) if WRAPPER.is_match(h) => lines.find(|l| !WRAPPER.is_match(l)).or(head),
        other => other,
    };
    let mut out = found;
    if let Some(l) = first {
        let text = cut_chars(&collapse(l), DIAGNOSTIC_CHARS);
        if !out.iter().any(|d| d.text == text) {
            out.list.insert(
                0,
                Diagnostic {
                    kind: DiagnosticKind::Error,
                    line: text.clone(),
                    text,
                    location: None,
                },
            );
        }
    }
    out
}

/// The diagnostic that matters most in `content`: the first error, panic,
/// exception, failure, exit status or refusal, else the first warning.
pub fn headline(content: &str) -> Option<Diagnostic> {
    first(diagnostics(content), 1).into_iter().next()
}

/// The `n` diagnostics that matter most, most severe first (see
/// [`DiagnosticKind`]'s order: errors, panics, exceptions, failing tests
/// and log errors, then exit statuses, missing files and refusals, then
/// warnings, then saved-output lines), in output order among equals.
pub fn first(all: Vec<Diagnostic>, n: usize) -> Vec<Diagnostic> {
    first_of(&all, n).cloned().collect()
}

/// [`first`], borrowed from `all` (a cached [`ResultScan`] is not copied).
pub fn first_of(all: &[Diagnostic], n: usize) -> impl Iterator<Item = &Diagnostic> {
    let rank = |r: u8| all.iter().filter(move |d| d.kind.rank() == r);
    rank(0).chain(rank(1)).chain(rank(2)).chain(rank(3)).take(n)
}

/// What a result flagged a success printed, when it says the work failed:
/// `1 test failed`, `3 tests failed`, `panicked`, `2 errors`. `None` when
/// its diagnostics hold no failing test, panic or error (warnings, an exit
/// status, an exception quoted in a document read: not enough to say the
/// run failed; nor a log's error lines, which a run that did its work
/// prints too).
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
    // Go's bare `FAIL` names no test.
    let named = found
        .iter()
        .filter(|d| {
            d.kind == DiagnosticKind::TestFailure
                && !FAILED_TALLY.is_match(&d.line)
                && d.line != "FAIL"
        })
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
    /// [`result_findings`] of the content: its diagnostics (read as a
    /// slice) and how many more distinct ones it held.
    pub diagnostics: Findings,
}

impl ResultScan {
    /// Read a tool result's `content` (runs the recognizer).
    pub fn new(content: &str, is_error: bool) -> Self {
        ResultScan {
            chars: content.chars().count(),
            diagnostics: result_findings(content, is_error),
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
// A boxed `Vec`: one word per record while empty (most records), where a
// `Vec` would take three.
#[allow(clippy::box_collection)]
pub struct ScanCell(OnceLock<Box<ResultScan>>, OnceLock<Box<Vec<u32>>>);

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

    /// [`error_like_lines`] of `content` (this cell's record's), found
    /// the first time they are asked for: an excerpt shows them at every
    /// render of every request, and the record never changes.
    pub(crate) fn error_like_lines(&self, content: &str) -> &[u32] {
        self.1.get_or_init(|| {
            Box::new(
                error_like_lines(content)
                    .into_iter()
                    .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
                    .collect(),
            )
        })
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

/// The text of a result: a JSON object or array is read by its strings
/// (tools often wrap output as `{"message": "…", "stderr": "…"}`), each
/// on its own lines; a JSON log line (`{"level":"error","msg":"…"}`) is
/// read as it is, by its level.
fn unwrap_json(content: &str) -> Cow<'_, str> {
    let t = content.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return content.into();
    }
    if !t.contains('\n') && logs::log_level(t).is_some() {
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
