//! The one pass over a range: the user's requests, the assistant's texts,
//! the tool calls with their outcomes and the distinct diagnostics, read
//! once so every section works from the same facts.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::diagnostics::{Diagnostic, first_of};
use crate::log::Log;
use crate::projection::KEEP_DIAGNOSTICS;
use crate::record::Body;
use crate::summarizer::SummarizeError;

use super::arguments::{CallKind, call_kind};
use super::failure;
use super::tools::Tally;

/// A user message.
pub(super) struct Request<'a> {
    pub(super) turn: u32,
    /// The user record's index in the log.
    pub(super) idx: usize,
    pub(super) content: &'a str,
    pub(super) author: Option<&'a str>,
    /// Not the first user message of its turn (an interrupt reply).
    pub(super) follow_up: bool,
}

/// Assistant text (or a structured answer, rendered as JSON).
pub(super) struct Text<'a> {
    pub(super) idx: usize,
    pub(super) turn: u32,
    pub(super) content: Cow<'a, str>,
    pub(super) structured: bool,
}

/// How a tool call came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// No diagnostic.
    Ok,
    /// Only warnings.
    Warnings,
    /// The tool said it failed, or its output holds an error, a panic, a
    /// failing test, a non-zero exit…
    Failed,
}

/// A tool call and what became of it within the range.
pub(super) struct Call<'a> {
    pub(super) idx: usize,
    pub(super) turn: u32,
    pub(super) name: &'a str,
    /// Parsed once here: the digest looks inside them many times.
    pub(super) arguments: Value,
    pub(super) kind: CallKind,
    /// `None` when its result is not in the range.
    pub(super) outcome: Option<Outcome>,
    /// The tool flagged its result as an error.
    pub(super) is_error: bool,
}

/// A distinct failure (by its headline's text) and where it was seen.
pub(super) struct Seen<'a> {
    pub(super) diag: Diagnostic,
    /// Other primary diagnostics of the results that printed this
    /// headline, each once, with it at most [`KEEP_DIAGNOSTICS`].
    pub(super) also: Vec<Diagnostic>,
    /// The tool whose result printed it (the latest time).
    pub(super) tool: &'a str,
    /// Index in `calls` of that call, when it is in the range.
    pub(super) call: Option<usize>,
    /// Record index and turn of the latest result that printed it.
    pub(super) last: usize,
    pub(super) last_turn: u32,
    pub(super) count: usize,
}

/// One pass over the range.
pub(super) struct Scan<'a> {
    pub(super) visible: usize,
    pub(super) first_visible: usize,
    pub(super) last_visible: usize,
    pub(super) requests: Vec<Request<'a>>,
    pub(super) texts: Vec<Text<'a>>,
    pub(super) calls: Vec<Call<'a>>,
    /// Index of the last tool call of each turn.
    pub(super) last_call_in_turn: BTreeMap<u32, usize>,
    /// The calls counted, once the results are in.
    pub(super) tally: Tally,
    /// In order of first appearance.
    pub(super) seen: Vec<Seen<'a>>,
}

/// Read `records[lo..=hi]` once (a range checked here).
pub(super) fn scan(log: &Log, lo: usize, hi: usize) -> Result<Scan<'_>, SummarizeError> {
    let records = log.records();
    if lo > hi || hi >= records.len() {
        return Err(failure(format!(
            "empty range: records {lo}..={hi} of a log of {}",
            records.len()
        )));
    }
    let scan = Scan::new(log, lo, hi);
    if scan.visible == 0 {
        return Err(failure(format!(
            "records {lo}..={hi} hold no event the model sees: nothing to summarize"
        )));
    }
    Ok(scan)
}

impl<'a> Scan<'a> {
    pub(super) fn new(log: &'a Log, lo: usize, hi: usize) -> Self {
        let records = log.records();
        let mut scan = Scan {
            visible: 0,
            first_visible: lo,
            last_visible: hi,
            requests: Vec::new(),
            texts: Vec::new(),
            calls: Vec::new(),
            last_call_in_turn: BTreeMap::new(),
            tally: Tally::default(),
            seen: Vec::new(),
        };
        // Call id → index in `calls` (the latest call with that id).
        let mut call_by_id: BTreeMap<&str, usize> = BTreeMap::new();
        let mut seen_by_text: BTreeMap<String, usize> = BTreeMap::new();
        // Every diagnostic text an entry lists (headlines and the others).
        let mut listed: BTreeSet<String> = BTreeSet::new();
        let mut last_request_turn: Option<u32> = None;
        for (idx, record) in records.iter().enumerate().take(hi + 1).skip(lo) {
            let turn = log.turn_of(idx);
            if record.body.is_model_visible() {
                if scan.visible == 0 {
                    scan.first_visible = idx;
                }
                scan.visible += 1;
                scan.last_visible = idx;
            }
            match &record.body {
                Body::User { content, author } => {
                    scan.requests.push(Request {
                        turn,
                        idx,
                        content,
                        author: author.as_deref(),
                        follow_up: last_request_turn == Some(turn),
                    });
                    last_request_turn = Some(turn);
                }
                Body::Assistant { content } => scan.texts.push(Text {
                    idx,
                    turn,
                    content: Cow::Borrowed(content),
                    structured: false,
                }),
                Body::Structured { data } => scan.texts.push(Text {
                    idx,
                    turn,
                    content: Cow::Owned(serde_json::to_string(data).unwrap_or_default()),
                    structured: true,
                }),
                Body::ToolCall {
                    id,
                    name,
                    arguments,
                } => {
                    call_by_id.insert(id, scan.calls.len());
                    let arguments = arguments.value();
                    scan.calls.push(Call {
                        idx,
                        turn,
                        name,
                        kind: call_kind(name, &arguments),
                        arguments,
                        outcome: None,
                        is_error: false,
                    });
                    scan.last_call_in_turn.insert(turn, idx);
                }
                Body::ToolResult { id, is_error, .. } => {
                    // What the log found in the result (once per loaded log:
                    // the digest may render a range in several forms, and
                    // the view and the retention report read it too).
                    let found: &[Diagnostic] = log.result_scan(idx).map_or(&[], |s| &s.diagnostics);
                    // A log's error line says the work went wrong; where
                    // the output was saved says nothing of how it went.
                    let failed = *is_error || found.iter().any(|d| d.kind.is_failure());
                    let warned = found.iter().any(|d| d.kind.is_warning());
                    let outcome = match (failed, warned) {
                        (true, _) => Outcome::Failed,
                        (false, true) => Outcome::Warnings,
                        (false, false) => Outcome::Ok,
                    };
                    let call = call_by_id.get(id.as_str()).copied();
                    let tool = match call {
                        Some(c) => {
                            scan.calls[c].outcome = Some(outcome);
                            scan.calls[c].is_error = *is_error;
                            scan.calls[c].name
                        }
                        None => "unknown tool",
                    };
                    if found.is_empty() {
                        continue;
                    }
                    // The headline (what the retention report counts), with
                    // a few more errors of the same result in the same
                    // entry: one failed run is one entry, not one per line.
                    let Some(head) = first_of(found, 1).next() else {
                        continue;
                    };
                    // Every other distinct primary diagnostic of the result
                    // (each compiler error, failing test, panic: what the
                    // retention report counts), most severe first, up to
                    // the per-result budget; one listed in an earlier
                    // entry is not listed again.
                    let extras: Vec<Diagnostic> = first_of(found, KEEP_DIAGNOSTICS)
                        .filter(|d| {
                            d.kind.is_primary() && d.text != head.text && !listed.contains(&d.text)
                        })
                        .cloned()
                        .collect();
                    let s = match seen_by_text.get(&head.text) {
                        Some(&s) => {
                            let s = &mut scan.seen[s];
                            s.tool = tool;
                            s.call = call;
                            s.last = idx;
                            s.last_turn = turn;
                            s.count += 1;
                            s
                        }
                        None => {
                            seen_by_text.insert(head.text.clone(), scan.seen.len());
                            scan.seen.push_mut(Seen {
                                diag: head.clone(),
                                also: Vec::new(),
                                tool,
                                call,
                                last: idx,
                                last_turn: turn,
                                count: 1,
                            })
                        }
                    };
                    listed.insert(head.text.clone());
                    for d in extras {
                        if s.also.len() + 1 >= KEEP_DIAGNOSTICS {
                            break;
                        }
                        listed.insert(d.text.clone());
                        s.also.push(d);
                    }
                }
                _ => {}
            }
        }
        scan.tally = Tally::new(&scan.calls);
        scan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digest;
    use crate::digest::fixtures::{build, user};
    use crate::summarizer::{Summarizer, SummaryInput};

    #[test]
    fn empty_or_invisible_ranges_are_refused() {
        let log = build(vec![
            Body::TurnStart,
            Body::Other {
                kind: "config_delta".into(),
                fields: Default::default(),
            },
            user("hi"),
        ]);
        for range in [(2, 1), (0, 1), (0, 3), (5, 9)] {
            let err = Digest
                .summarize(SummaryInput {
                    log: &log,
                    range,
                    instructions: None,
                })
                .unwrap_err();
            assert_eq!(err.summarizer, "digest", "{range:?}");
        }
        let empty = Log::new();
        assert!(
            Digest
                .summarize(SummaryInput {
                    log: &empty,
                    range: (0, 0),
                    instructions: None,
                })
                .is_err()
        );
    }
}
