//! What a compaction kept and what it lost (the retention report): of the
//! facts an agent needs to carry on (the files it acted on, the
//! diagnostics its tools printed, the user's own requests), how many are
//! still visible in the view.
//!
//! How "kept" is decided, the same for every compaction (mechanical or
//! summary), by text:
//! - **files acted on**: every path a tool call in the range was given (an
//!   argument string under a key naming a path: `path`, `paths`, `file`,
//!   `dir`, `prefixes`…). Kept when the path appears in the view.
//! - **diagnostics**: every distinct primary diagnostic of the tool results
//!   in the range ([`crate::diagnostics::result_diagnostics`], all but
//!   compiler and log warnings: each compiler error with its code, message
//!   and location, each failing test, panic with its test and compared
//!   values, exception, log line at level ERROR/FATAL/CRITICAL, exit
//!   status, missing file or refusal, and each line naming where a full
//!   output was saved), each distinct text once over the range. Kept when
//!   its text appears in the view, or its line with its location shortly
//!   after.
//! - **user requests**: every user message in the range of at most
//!   [`REQUEST_WORDS_MAX`] characters. Kept when it appears in the view
//!   whole, word for word.
//!
//! "Appears" compares text with runs of whitespace collapsed to one space,
//! so a request re-wrapped by a summary still counts; anything else
//! (paraphrase, a cut) is lost.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde::Serialize;

use crate::diagnostics::{Diagnostic, collapse};
use crate::log::Log;
use crate::projection::{Item, View};
use crate::record::Body;

mod batch;
mod finder;
mod listing;
mod own;
mod paths;
mod workers;
pub use batch::{RangeFacts, Retentions};
pub use listing::{Listed, listing};

/// User requests up to this many characters must be kept word for word.
pub const REQUEST_WORDS_MAX: usize = 2_000;

/// The facts of a range of raw records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Paths given to tools.
    pub files: BTreeSet<String>,
    /// Distinct primary diagnostics (all but warnings: log errors and
    /// saved-output lines too), each once, in order.
    pub diagnostics: Vec<Diagnostic>,
    /// User messages of at most [`REQUEST_WORDS_MAX`] characters, in order.
    pub requests: Vec<String>,
}

/// How many of a kind of fact are still visible, and which are not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// In the range.
    pub total: usize,
    /// Still visible in the view.
    pub kept: usize,
    /// Those not visible.
    pub lost: Vec<String>,
}

impl Tally {
    /// The share kept, 1 when there was nothing to keep.
    pub fn ratio(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.kept as f64 / self.total as f64
        }
    }
}

/// What a view kept of a range's facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Kept {
    /// Files acted on.
    pub files: Tally,
    /// Diagnostics.
    pub diagnostics: Tally,
    /// User requests.
    pub requests: Tally,
    /// Estimated tokens of the range: raw, and what the view shows for it
    /// (the items that stand for its records). Zero when not measured.
    pub tokens: (usize, usize),
}

impl Kept {
    /// One line for a report: `kept 12/12 files, 3/4 diagnostics, 2/2
    /// requests`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "kept {}/{} files acted on, {}/{} diagnostics, {}/{} user requests",
            self.files.kept,
            self.files.total,
            self.diagnostics.kept,
            self.diagnostics.total,
            self.requests.kept,
            self.requests.total
        );
        if self.tokens.0 > 0 {
            line.push_str(&format!(
                "; the range ~{} → ~{} tokens",
                self.tokens.0, self.tokens.1
            ));
        }
        line
    }

    /// How much smaller the range is in the view (0 when not measured).
    pub fn shrink(&self) -> f64 {
        if self.tokens.0 == 0 {
            0.0
        } else {
            1.0 - self.tokens.1 as f64 / self.tokens.0 as f64
        }
    }
}

/// The retention report of the records `lo..=hi` of `log` in `view` (a
/// projection of `log`, or of `log` with compactions appended) whose
/// [`view_text`] is `text`: what it keeps of the facts, and the range's
/// size raw and in the view. It reads the whole view and text each call:
/// for more than one range, [`Retentions`] makes the same reports at the
/// cost of one.
pub fn retention(log: &Log, (lo, hi): (usize, usize), view: &View<'_>, text: &str) -> Kept {
    let mut k = kept(&facts(log, lo, hi), text);
    let raw = crate::estimate::raw_tokens(&log.records()[lo..=hi]);
    let shown: usize = view
        .items
        .iter()
        .filter(|i| {
            let o = i.origin();
            !o.is_empty() && lo <= *o.start() && *o.start() <= hi
        })
        .map(crate::estimate::item_tokens)
        .sum();
    k.tokens = (raw, shown);
    k
}

/// The facts of the raw records `lo..=hi` of `log`.
pub fn facts(log: &Log, lo: usize, hi: usize) -> Facts {
    let mut out = Facts::default();
    let mut seen_diag = BTreeSet::new();
    for i in (0..log.len()).take(hi + 1).skip(lo) {
        let f = record_facts(log, i);
        out.files.extend(f.files.into_iter().map(Cow::into_owned));
        for d in f.diagnostics {
            if seen_diag.insert(d.text.as_str()) {
                out.diagnostics.push(d.clone());
            }
        }
        out.requests.extend(f.request.map(str::to_owned));
    }
    out
}

/// What one record adds to the facts of a range that holds it, borrowed
/// from the log (a report over a long log reads every record's facts, and
/// copying each diagnostic and request out was a tenth of `c show`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordFacts<'a> {
    /// Paths given to a tool call, sorted, each once (borrowed from the
    /// arguments' text unless written with escapes).
    pub files: Vec<Cow<'a, str>>,
    /// A tool result's diagnostics that count, in order (a range keeps the
    /// first of each text).
    pub diagnostics: Vec<&'a Diagnostic>,
    /// A user message of at most [`REQUEST_WORDS_MAX`] characters, trimmed.
    pub request: Option<&'a str>,
}

/// The facts of record `i` of `log` alone: the one place a record's facts
/// are read, for [`facts`] and for [`Retentions`].
pub fn record_facts(log: &Log, i: usize) -> RecordFacts<'_> {
    let mut out = RecordFacts::default();
    match &log.records()[i].body {
        Body::ToolCall { arguments, .. } => {
            out.files = paths::call_paths(arguments).into_keys().collect();
        }
        Body::ToolResult { .. } => {
            // What the log found in the result (once per loaded log).
            // Every distinct primary diagnostic: each compiler error,
            // failing test, panic, exception, log error or saved-output
            // path counts, not one headline per result (warnings do not
            // count).
            let found = log.result_scan(i).map_or(&[][..], |s| &s.diagnostics);
            let mut seen = BTreeSet::new();
            out.diagnostics.extend(
                found
                    .iter()
                    .filter(|d| d.kind.is_primary() && seen.insert(d.text.as_str())),
            );
        }
        Body::User { content, .. } => {
            let c = content.trim();
            if !c.is_empty() && c.chars().count() <= REQUEST_WORDS_MAX {
                out.request = Some(c);
            }
        }
        _ => {}
    }
    out
}

/// [`record_tokens`](crate::estimate::record_tokens) of record `i` of
/// `log`, a tool result's from the characters the log's scan of it
/// counted: a report reads every result's scan for its diagnostics, and
/// counting the characters of every result again was a twentieth of a
/// listing (issue 48).
pub(crate) fn record_tokens_at(log: &Log, i: usize) -> usize {
    use crate::estimate::{BLOCK_OVERHEAD, chars_tokens, record_tokens};
    let record = &log.records()[i];
    match log.result_scan(i) {
        Some(scan) => chars_tokens(scan.chars) + BLOCK_OVERHEAD,
        None => record_tokens(record),
    }
}

/// The text of a view as the model reads it, whitespace collapsed: what
/// "appears in the view" is looked for in.
pub fn view_text(view: &View<'_>) -> String {
    view_text_each(view, |_, _| {})
}

/// [`view_text`], calling `each` with every item and, for a stripped
/// result or a clipped text, the text it was made into (so a caller that
/// also counts the item's tokens does not make it again).
pub(crate) fn view_text_each(
    view: &View<'_>,
    mut each: impl FnMut(&Item<'_>, Option<&str>),
) -> String {
    // Collapsed as it is written, into room for the whole: a view as long
    // as a million-record log is hundreds of MB, and building it raw,
    // then collapsing it, doubled a buffer that size again and again.
    let room: usize = view.items.iter().map(raw_len).sum();
    let mut out = Collapsed(String::with_capacity(room));
    for item in &view.items {
        match item {
            Item::Summary { text, .. } => {
                out.push(&item.summary_lead().unwrap_or_default());
                out.push(text);
                each(item, None);
            }
            other => {
                let texts = crate::anchor::item_texts(other);
                for t in &texts {
                    out.push(t);
                }
                let made = match (other, texts.as_slice()) {
                    (Item::StrippedResult { .. } | Item::Clipped { .. }, [t]) => Some(t.as_ref()),
                    _ => None,
                };
                each(item, made);
            }
        }
    }
    out.0
}

/// About how many bytes `item` adds to a view's text: its record's text
/// as it is (a stripped or clipped one adds less), or its summary's.
fn raw_len(item: &Item<'_>) -> usize {
    let body = match item {
        Item::Summary { text, .. } => return text.len() + 64,
        // One line in place of the result.
        Item::StrippedResult { .. } => return 256,
        Item::Event { record, .. }
        | Item::StrippedCall { record, .. }
        | Item::Clipped { record, .. } => &record.body,
        Item::Preamble => return 0,
    };
    1 + match body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content }
        | Body::ToolResult { content, .. } => content.len(),
        Body::ToolCall {
            name, arguments, ..
        } => name.len() + arguments.text().len(),
        _ => 0,
    }
}

/// Text with every run of whitespace made one space, trimmed: `collapse`
/// of the pieces pushed, each piece's ends a word break.
struct Collapsed(String);

impl Collapsed {
    fn push(&mut self, piece: &str) {
        for w in piece.split_whitespace() {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            self.0.push_str(w);
        }
    }
}

/// What `text` (a [`view_text`]) keeps of `facts`. A diagnostic is kept
/// when its line and its location both appear (a location rustc printed on
/// the next line may be anywhere).
pub fn kept(facts: &Facts, text: &str) -> Kept {
    let mut out = Kept::default();
    let count = |t: &mut Tally, shown: String, is_kept: bool| {
        t.total += 1;
        if is_kept {
            t.kept += 1;
        } else {
            t.lost.push(shown);
        }
    };
    for f in &facts.files {
        count(&mut out.files, f.clone(), appears(text, f, path_char));
    }
    for d in &facts.diagnostics {
        count(
            &mut out.diagnostics,
            d.text.clone(),
            diagnostic_appears(text, d),
        );
    }
    for r in &facts.requests {
        count(&mut out.requests, r.clone(), appears(text, r, word_char));
    }
    out
}

fn path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '/' | '\\' | '.' | '_' | '-' | '~')
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `needle` (whitespace collapsed) appears in `text` as a whole:
/// not inside a longer path or word (`src/lib.rs` in `crates/x/src/lib.rs`,
/// `go` in `go on`). Every occurrence counts, overlapping ones too: `a a`
/// is whole at the end of `xa a a`.
fn appears(text: &str, needle: &str, inner: fn(char) -> bool) -> bool {
    let needle = collapse(needle);
    if needle.is_empty() {
        return false;
    }
    let first = needle.chars().next().is_some_and(inner);
    let last = needle.chars().next_back().is_some_and(inner);
    occurrences(text, &needle).any(|at| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !(first && before.is_some_and(inner) || last && after.is_some_and(inner))
    })
}

/// Where `needle` (not empty) starts in `text`, every occurrence,
/// overlapping ones too, left to right.
fn occurrences<'t>(text: &'t str, needle: &'t str) -> impl Iterator<Item = usize> + 't {
    let mut from = 0;
    std::iter::from_fn(move || {
        let at = from + text.get(from..)?.find(needle)?;
        // On from the next character: an occurrence may overlap this one.
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
        Some(at)
    })
}

/// A diagnostic appears as its text, or as its line with its location
/// shortly after (where the output put it, on the next lines).
fn diagnostic_appears(text: &str, d: &Diagnostic) -> bool {
    if text.contains(&collapse(&d.text)) {
        return true;
    }
    let line = collapse(&d.line);
    occurrences(text, &line).any(|at| match &d.location {
        None => true,
        Some(loc) => {
            let start = at + line.len();
            let mut end = (start + 400).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[start..end].contains(loc.as_str())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_of(log: &Log) -> Facts {
        facts(log, 0, log.len() - 1)
    }

    #[test]
    fn kept_means_the_whole_path_word_or_diagnostic() {
        let d = crate::diagnostics::diagnostics(
            "error[E0425]: cannot find value `x`\n --> src/lib.rs:3:5",
        )
        .remove(0);
        let facts = Facts {
            files: ["src/lib.rs".to_owned()].into_iter().collect(),
            diagnostics: vec![d],
            requests: vec!["go".to_owned()],
        };
        // Only inside longer words and paths, or the location far away.
        let text = format!(
            "gone with crates/other/src/lib.rs error[E0425]: cannot find value `x` {} at src/lib.rs5",
            "filler ".repeat(100)
        );
        let k = kept(&facts, &text);
        assert_eq!(
            (k.files.kept, k.diagnostics.kept, k.requests.kept),
            (0, 0, 0),
            "{k:?}"
        );
        // As a whole: kept.
        let k = kept(
            &facts,
            "go. Read src/lib.rs: error[E0425]: cannot find value `x` --> src/lib.rs:3:5",
        );
        assert_eq!(
            (k.files.kept, k.diagnostics.kept, k.requests.kept),
            (1, 1, 1),
            "{k:?}"
        );
        // `.` names no file acted on.
        let log = {
            let mut log = Log::new();
            log.push(crate::record::Record::new(
                0,
                "t",
                Body::ToolCall {
                    id: "a".into(),
                    name: "ls".into(),
                    arguments: serde_json::json!({"path": "."}).into(),
                },
            ));
            log
        };
        assert!(facts_of(&log).files.is_empty());
    }

    use crate::compaction::{Compaction, ReasoningPolicy, Source, ToolPolicy};
    use crate::projection::project;
    use crate::record::Record;
    use serde_json::json;

    fn log_of(bodies: Vec<Body>) -> Log {
        let mut log = Log::new();
        for b in bodies {
            log.push(Record::new(log.next_seq(), "t", b));
        }
        log
    }

    #[test]
    fn a_records_tokens_read_from_its_scan_are_its_tokens() {
        let result = |id: &str, content: String| Body::ToolResult {
            id: id.into(),
            content,
            is_error: false,
        };
        let log = log_of(vec![
            Body::User {
                content: "héllo wörld".into(),
                author: None,
            },
            result("a", String::new()),
            // Multi-byte characters: characters, not bytes, are counted.
            result("b", "ß→ü ".repeat(33)),
            result("c", format!("error: boom\n{}", "é".repeat(4001))),
            Body::Assistant {
                content: "done".into(),
            },
        ]);
        let all_counted = |log: &Log| {
            for (i, r) in log.records().iter().enumerate() {
                let from_scan = record_tokens_at(log, i);
                assert_eq!(from_scan, crate::estimate::record_tokens(r), "{i}");
            }
        };
        all_counted(&log);
        // And from a scan the log was given (a snapshot's), the same.
        let made: Vec<_> = (0..log.len())
            .filter_map(|i| log.result_scan(i).map(|s| (i, s.clone())))
            .collect();
        let given =
            log_of(log.records().iter().map(|r| r.body.clone()).collect()).with_result_scans(made);
        all_counted(&given);
    }

    #[test]
    fn a_mechanical_compaction_keeps_paths_requests_and_headlines() {
        let mut bodies = vec![
            Body::TurnStart,
            Body::User {
                content: "Fix the build,\n  please.".into(),
                author: None,
            },
            Body::ToolCall {
                id: "a".into(),
                name: "cargo_check".into(),
                arguments: json!({"package": "core", "paths": ["crates/core/src"]}).into(),
            },
            Body::ToolResult {
                id: "a".into(),
                content: format!(
                    "error[E0425]: cannot find value `x` in this scope\n --> crates/core/src/lib.rs:3:5\n{}",
                    "detail\n".repeat(100)
                ),
                is_error: true,
            },
            Body::Reasoning {
                content: "thinking".into(),
            },
            Body::Assistant {
                content: "Fixed.".into(),
            },
        ];
        let log0 = log_of(bodies.clone());
        let f = facts(&log0, 0, log0.len() - 1);
        assert_eq!(f.files.iter().collect::<Vec<_>>(), ["crates/core/src"]);
        assert_eq!(
            f.diagnostics[0].text,
            "error[E0425]: cannot find value `x` in this scope (crates/core/src/lib.rs:3:5)"
        );
        assert_eq!(f.requests, ["Fix the build,\n  please."]);
        // Before any compaction everything is visible.
        let all = kept(&f, &view_text(&project(&log0)));
        assert_eq!(
            (all.files.kept, all.diagnostics.kept, all.requests.kept),
            (1, 1, 1)
        );
        // Omitting the tools loses the path and the diagnostic.
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Omit);
        c.reasoning = Some(ReasoningPolicy::Strip);
        bodies.push(Body::Compaction(Box::new(c)));
        let log = log_of(bodies);
        let k = kept(&f, &view_text(&project(&log)));
        assert_eq!(k.files.lost, ["crates/core/src"]);
        assert_eq!(k.diagnostics.kept, 0);
        assert_eq!(k.requests.kept, 1);
        assert_eq!(
            k.line(),
            "kept 0/1 files acted on, 0/1 diagnostics, 1/1 user requests"
        );
    }

    #[test]
    fn log_errors_and_saved_output_paths_count_log_warnings_do_not() {
        let bodies = vec![
            Body::TurnStart,
            Body::ToolCall {
                id: "a".into(),
                name: "Bash".into(),
                arguments: json!({"command": "./run.sh"}).into(),
            },
            Body::ToolResult {
                id: "a".into(),
                content: "Output too large (29.4KB). Full output saved to: /tmp/r/toolu_1.txt\n\nPreview (first 2KB):\n2026-12-06T10:00:00Z INFO start\n2026-12-06T10:00:01Z WARN slow disk\n2026-12-06T10:00:02Z ERROR job 7 failed\n".into(),
                is_error: false,
            },
        ];
        let log0 = log_of(bodies.clone());
        let f = facts(&log0, 0, log0.len() - 1);
        assert_eq!(
            f.diagnostics
                .iter()
                .map(|d| d.text.as_str())
                .collect::<Vec<_>>(),
            [
                "Output too large (29.4KB). Full output saved to: /tmp/r/toolu_1.txt",
                "2026-12-06T10:00:02Z ERROR job 7 failed",
            ]
        );
        // A stripped result keeps both.
        let mut bodies = bodies;
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Strip);
        bodies.push(Body::Compaction(Box::new(c)));
        let log = log_of(bodies);
        let k = kept(&f, &view_text(&project(&log)));
        assert_eq!((k.diagnostics.kept, k.diagnostics.total), (2, 2), "{k:?}");
    }
}
