//! The "Where it left off" section: the last request, the tail of the
//! last assistant text, errors nothing answered, and what was still
//! waiting when the range ended.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::log::Log;
use crate::record::Body;
use crate::text::{collapse, normalize_words, tail_words, truncate_words};

use super::arguments::CallKind;
use super::decisions::Answer;
use super::fixes::Fix;
use super::prose::without_code;
use super::scan::{Scan, Seen};

/// The tail of the last assistant text shown in "where it left off".
pub(super) const LEFT_OFF_TAIL: usize = 400;

pub(super) fn section_left_off(
    log: &Log,
    scan: &Scan<'_>,
    answers: &BTreeMap<u32, Answer>,
    fixes: &[Option<Fix<'_>>],
    lo: usize,
    hi: usize,
) -> String {
    let records = log.records();
    let mut out = String::from("## Where it left off\n");
    if let Some(r) = scan.requests.last() {
        // Quoted under "What the user asked".
        let _ = writeln!(out, "- Last user message: turn {}.", r.turn + 1);
    }
    if let Some(t) = scan.texts.last() {
        let prose = if t.structured {
            collapse(&t.content)
        } else {
            without_code(&t.content)
        };
        let tail = tail_words(&prose, LEFT_OFF_TAIL);
        // Said once: a short last text is often its turn's whole answer.
        let shown = answers
            .get(&t.turn)
            .is_some_and(|a| a.idx == t.idx && a.norm.contains(normalize_words(&tail).as_str()));
        if shown {
            let _ = writeln!(
                out,
                "- Last assistant text (turn {}): shown above.",
                t.turn + 1
            );
        } else {
            let _ = writeln!(out, "- Last assistant text (turn {}): {tail}", t.turn + 1);
        }
    }
    // Errors of commands that no later run or edit answered.
    let open: Vec<&Seen<'_>> = scan
        .seen
        .iter()
        .zip(fixes)
        .filter(|(s, fix)| {
            fix.is_none()
                && s.diag.kind.is_failure()
                && s.call
                    .is_some_and(|c| scan.calls[c].kind == CallKind::Command)
        })
        .map(|(s, _)| s)
        .collect();
    if let Some(latest) = open.iter().max_by_key(|s| s.last) {
        let n = open.len();
        let (s, no) = if n == 1 { ("", "its") } else { ("s", "their") };
        let _ = writeln!(
            out,
            "- Open: {n} command error{s} with no fix seen after {no} last run (latest, turn {}: {}).",
            latest.last_turn + 1,
            truncate_words(&latest.diag.text, 160)
        );
    }
    let last = scan.last_visible;
    let turn = log.turn_of(last);
    match &records[last].body {
        Body::User { .. } => {
            let _ = writeln!(
                out,
                "- Pending: the range ends with the user's message (turn {}), not yet answered.",
                turn + 1
            );
        }
        body => {
            let step = log
                .steps(turn)
                .into_iter()
                .rev()
                .find(|s| s.start <= hi && s.end > lo);
            let (mut calls, mut answered) = (Vec::new(), BTreeSet::new());
            if let Some(step) = step {
                let from = step.start.max(lo);
                for r in &records[from..step.end.min(hi + 1)] {
                    if let Body::ToolCall { id, name, .. } = &r.body {
                        calls.push((id.as_str(), name.as_str()));
                    }
                }
                for r in &records[from..=hi] {
                    if let Body::ToolResult { id, .. } = &r.body {
                        answered.insert(id.as_str());
                    }
                }
            }
            let waiting: Vec<&str> = calls
                .iter()
                .filter(|(id, _)| !answered.contains(id))
                .map(|&(_, name)| name)
                .collect();
            if !waiting.is_empty() {
                let n = waiting.len();
                let s = if n == 1 { "" } else { "s" };
                let _ = writeln!(
                    out,
                    "- Pending: the last step ended with {n} tool call{s} without a result: {}.",
                    waiting.join(", ")
                );
            } else if matches!(body, Body::ToolResult { .. }) {
                let _ = writeln!(
                    out,
                    "- Pending: the range ends with tool results the assistant has not acted on yet."
                );
            } else {
                let _ = writeln!(
                    out,
                    "- The last step is complete: no tool call is waiting for a result."
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::digest::fixtures::{build, call, digest_all, result, said, sample, section, user};
    use crate::digest::forms::render;
    use serde_json::json;

    #[test]
    fn left_off_names_the_last_request_text_open_errors_and_waiting_calls() {
        let text = digest_all(&sample());
        let lines = section(&text, "Where it left off");
        assert_eq!(
            lines,
            [
                "- Last user message: turn 2.",
                "- Last assistant text (turn 1): The root cause is a missing import of `Session` in the login path. I'll add it. I fixed the import and the check passes now. Would you like me to add a test?",
                "- Open: 1 command error with no fix seen after its last run (latest, turn 1: error[E0433]: failed to resolve: use of undeclared type `Session` (src/auth.rs:3:5)).",
                "- Pending: the last step ended with 1 tool call without a result: cargo_test.",
            ]
        );
    }

    #[test]
    fn left_off_when_the_range_ends_on_a_user_message_or_results() {
        let log = build(vec![
            user("one"),
            said("answer one"),
            user("two"),
            call("a", "read", json!({})),
            result("a", "x", false),
        ]);
        let upto = |hi| render(&log, 0, hi).unwrap();
        assert!(upto(2).contains(
            "- Pending: the range ends with the user's message (turn 1), not yet answered."
        ));
        assert!(upto(4).contains("- Pending: the range ends with tool results"));
        assert!(upto(1).contains("- The last step is complete"));
        let long: String = "lorem ipsum ".repeat(100);
        let log = build(vec![user("q"), said(&long)]);
        let text = digest_all(&log);
        let line = section(&text, "Where it left off")[1];
        assert!(line.starts_with("- Last assistant text (turn 1): …lorem"));
        assert!(line.chars().count() < 450);
    }
}
