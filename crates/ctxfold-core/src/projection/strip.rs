//! Stripping: tool-call arguments with their long strings replaced by
//! placeholders, and the one line that replaces a stripped tool result
//! (its outcome, size, where its full output was saved, and its
//! diagnostics: compiler errors, failing tests, panics, exceptions, log
//! errors and warnings, exit statuses). What `strip`, `strip-requests` and
//! `strip-responses` show instead of the raw event. Each placeholder ends
//! with the recall handle of what it replaced (see [`crate::handle`]).

use std::fmt::Write as _;

use serde_json::Value;

use crate::diagnostics::{
    Diagnostic, DiagnosticKind, Findings, first_of, printed_outcome, result_findings,
};
use crate::handle::{Handle, Tag, recall_hint};
use crate::json_text::JsonText;

/// Argument strings up to this many characters survive `strip-requests`:
/// paths, flags, short queries.
pub const KEEP_ARGUMENT_CHARS: usize = 120;

/// Replace every string longer than [`KEEP_ARGUMENT_CHARS`] in `args` with a
/// placeholder that says how much was removed and, given the call's tag
/// and `seq`, the handle that recalls it. Arguments with no such string
/// come back as they were, text included.
pub fn strip_arguments(args: &JsonText, call: Option<(Tag, u64)>) -> JsonText {
    // A string is never longer in characters than the text holding it:
    // short arguments need no parsing.
    if args.text().len() <= KEEP_ARGUMENT_CHARS {
        return args.clone();
    }
    let value = args.value();
    let mut pointer = String::new();
    let stripped = strip_value(&value, call, &mut pointer);
    if stripped == value {
        args.clone()
    } else {
        JsonText::from(stripped)
    }
}

/// `args` with its long strings replaced; `pointer` is the JSON pointer
/// (RFC 6901) of `args` in the whole arguments, grown and shrunk in place.
fn strip_value(args: &Value, call: Option<(Tag, u64)>, pointer: &mut String) -> Value {
    match args {
        Value::String(s) => {
            let n = s.chars().count();
            if n > KEEP_ARGUMENT_CHARS {
                Value::String(match call {
                    Some((tag, seq)) => format!(
                        "[{n} characters removed by compaction; {}]",
                        recall_hint(&Handle::argument(tag, seq, pointer.clone()))
                    ),
                    None => format!("[{n} characters removed by compaction]"),
                })
            } else {
                args.clone()
            }
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(k, v)| {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&k.to_string());
                    let out = strip_value(v, call, pointer);
                    pointer.truncate(len);
                    out
                })
                .collect(),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    let out = strip_value(v, call, pointer);
                    pointer.truncate(len);
                    (k.clone(), out)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Diagnostics a stripped result keeps at most (see
/// [`stripped_result_line`]); the rest are counted ("and N more"). Enough
/// for a failing build's distinct errors, most severe first, in about a
/// tenth of what such output usually is. Saved-output lines are not
/// counted against it: they are always kept.
pub const KEEP_DIAGNOSTICS: usize = 16;

/// The one line that replaces a stripped tool result: the tool, its
/// outcome, the size removed, and what it reported that an agent needs to
/// carry on:
/// - every line naming where its full output was saved (Claude Code's
///   `Output too large (29.4KB). Full output saved to: PATH`, up to
///   [`MAX_SAVED`](crate::diagnostics::MAX_SAVED) of them), whatever the
///   budget: it is the model's way back to the output;
/// - its distinct diagnostics with their location (see
///   [`crate::diagnostics`]: compiler errors, panics, exceptions, failing
///   tests and log lines at level ERROR/FATAL/CRITICAL, then exit
///   statuses, missing files and refusals, then compiler and log
///   warnings), most severe first, up to [`KEEP_DIAGNOSTICS`];
/// - how many distinct diagnostics were not shown ("and N more"): past the
///   budget, or past what the recognizer keeps of one result. None is
///   dropped without being counted; the handle brings them all back.
///
/// The outcome is what the output says: `failed` for a result flagged an
/// error; for one flagged a success whose output holds a failing test, a
/// panic or an error, what it printed (`[cargo_test: 1 test failed; …`,
/// see [`printed_outcome`]); else `succeeded`.
///
/// This reads all of `content`; a view item has the same line without that
/// ([`Item::stripped_line`](crate::projection::Item::stripped_line)).
pub fn stripped_result_line(tool: &str, content: &str, is_error: bool) -> String {
    render_stripped(
        tool,
        is_error,
        content.chars().count(),
        &result_findings(content, is_error),
        KEEP_DIAGNOSTICS,
        None,
    )
}

/// The line of [`stripped_result_line`] from the result's size in
/// characters and its diagnostics, showing at most `budget` of them (and
/// every saved-output line): one place says what it holds, whether the
/// diagnostics were just found or kept from before. `handle`, when given,
/// is said right after the size: what brings the output back.
pub(super) fn render_stripped(
    tool: &str,
    is_error: bool,
    chars: usize,
    found: &Findings,
    budget: usize,
    handle: Option<&Handle>,
) -> String {
    let mut line = match (is_error, printed_outcome(found)) {
        (true, _) => format!("[{tool} failed"),
        (false, Some(said)) => format!("[{tool}: {said}"),
        (false, None) => format!("[{tool} succeeded"),
    };
    line.push_str(&format!(
        "; its output ({chars} characters) was removed by compaction"
    ));
    if let Some(h) = handle {
        // Written in place: a view renders this line for every stripped
        // result each time it is counted.
        let _ = write!(line, " (recall {h})");
    }
    // Where the full output is, first and whatever the budget.
    let saved = found
        .iter()
        .filter(|d| d.kind == DiagnosticKind::SavedOutput);
    let mut shown_saved = 0;
    for d in saved {
        line.push_str("; ");
        line.push_str(&d.text);
        shown_saved += 1;
    }
    let shown: Vec<&Diagnostic> = first_of(found, usize::MAX)
        .filter(|d| d.kind != DiagnosticKind::SavedOutput)
        .take(budget)
        .collect();
    // The same message at several places (one unresolved import in four
    // files) is said once with all its locations: each location is a
    // distinct diagnostic, the message need not be repeated.
    let mut groups: Vec<(&Diagnostic, Vec<&str>)> = Vec::new();
    for d in &shown {
        let merge = d
            .location
            .as_deref()
            .filter(|loc| !d.line.contains(loc))
            .and_then(|loc| {
                groups
                    .iter_mut()
                    .find(|(g, locs)| g.line == d.line && !locs.is_empty())
                    .map(|(_, locs)| (loc, locs))
            });
        match merge {
            Some((loc, locs)) => locs.push(loc),
            None => {
                let locs = match d.location.as_deref() {
                    Some(loc) if d.text.ends_with(&format!("({loc})")) => vec![loc],
                    _ => Vec::new(),
                };
                groups.push((d, locs));
            }
        }
    }
    for (k, (d, locs)) in groups.iter().enumerate() {
        if k == 0 {
            // After a saved-output line's own full stop, no other.
            line.push_str(if line.ends_with('.') { " " } else { ". " });
            line.push_str("Diagnostics in it: ");
        } else {
            line.push_str("; ");
        }
        if locs.len() > 1 {
            line.push_str(&format!("{} ({})", d.line, locs.join(", ")));
        } else {
            line.push_str(&d.text);
        }
    }
    let more = found.len() + found.unkept - shown.len() - shown_saved;
    if more > 0 {
        line.push_str(&format!("; and {more} more"));
    }
    line.push(']');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Compaction, Source, ToolPolicy};
    use crate::materialize::item_record;
    use crate::projection::fixtures::{compaction, log_of, turn};
    use crate::projection::{Item, project};
    use crate::record::Body;
    use serde_json::json;

    #[test]
    fn strip_keeps_short_values_and_says_what_was_removed() {
        let long = "y".repeat(300);
        let mut bodies = turn(0, &long, true);
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Strip);
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        let call_item = view
            .items
            .iter()
            .find(|i| matches!(i, Item::StrippedCall { .. }))
            .unwrap();
        let call = item_record(call_item).unwrap();
        let Body::ToolCall { arguments, .. } = &call.body else {
            panic!()
        };
        let arguments = arguments.value();
        assert_eq!(arguments["path"], "src/a.rs");
        assert_eq!(arguments["flags"], json!(["-v"]));
        // The placeholder names the value it replaced: the call's handle
        // and the argument's JSON pointer.
        assert_eq!(
            arguments["new"],
            format!(
                "[300 characters removed by compaction; recall {}/new]",
                call_item.handle().unwrap()
            )
        );
        let result = view
            .items
            .iter()
            .find(|i| matches!(i, Item::StrippedResult { .. }))
            .and_then(item_record)
            .unwrap();
        let Body::ToolResult {
            content, is_error, ..
        } = &result.body
        else {
            panic!()
        };
        assert!(*is_error, "is_error is kept");
        // A failure in no known shape keeps its first line, cut.
        assert!(
            content.starts_with(
                "[edit failed; its output (500 characters) was removed by compaction (recall "
            ) && content.contains("). Diagnostics in it: xxx")
                && content.chars().count() < 360,
            "{content}"
        );
    }

    #[test]
    fn a_stripped_result_keeps_every_diagnostic_most_severe_first() {
        let out = "warning: unused import: `a`\n --> src/a.rs:1:5\nerror[E0425]: cannot find value `x`\n --> src/b.rs:3:9\nerror: could not compile `b`\nerror: aborting due to 2 previous errors\n";
        assert_eq!(
            stripped_result_line("cargo_check", out, true),
            format!(
                "[cargo_check failed; its output ({} characters) was removed by compaction. Diagnostics in it: error[E0425]: cannot find value `x` (src/b.rs:3:9); error: could not compile `b`; error: aborting due to 2 previous errors; warning: unused import: `a` (src/a.rs:1:5)]",
                out.chars().count()
            )
        );
        // The same message at several places is said once, with each
        // place; past the budget the rest are counted.
        let many = "error[E0432]: unresolved import `crate::R`\n --> src/a.rs:3:5\nerror[E0432]: unresolved import `crate::R`\n --> src/b.rs:6:5\nerror[E0282]: type annotations needed\n --> src/c.rs:1:1\nwarning: unused `self` argument\n --> src/c.rs:2:2\n";
        let found = result_findings(many, true);
        assert_eq!(
            render_stripped("cargo_check", true, 9, &found, 2, None),
            "[cargo_check failed; its output (9 characters) was removed by compaction. Diagnostics in it: error[E0432]: unresolved import `crate::R` (src/a.rs:3:5, src/b.rs:6:5); and 2 more]"
        );
        // A failure in no known shape keeps its first line; a quiet
        // success keeps what it kept before.
        assert_eq!(
            stripped_result_line("deploy", "\nthe server said no\nmore", true),
            "[deploy failed; its output (24 characters) was removed by compaction. Diagnostics in it: the server said no]"
        );
        assert_eq!(
            stripped_result_line("read_file", "fn error() {}", false),
            "[read_file succeeded; its output (13 characters) was removed by compaction]"
        );
    }

    #[test]
    fn the_outcome_is_what_the_output_says() {
        // Flagged a success, but a test failed or the build did not.
        let run = "running 2 tests\ntest a::b ... FAILED\ntest a::c ... FAILED\n";
        assert!(
            stripped_result_line("cargo_test", run, false)
                .starts_with("[cargo_test: 2 tests failed; its output")
        );
        assert!(
            stripped_result_line("cargo_test", "Ran 3/3 tests, of which 1 failed.", false)
                .starts_with("[cargo_test: 1 test failed;")
        );
        assert!(
            stripped_result_line(
                "run",
                "thread 'main' panicked at src/m.rs:1:1:\nboom",
                false
            )
            .starts_with("[run: panicked;")
        );
        assert!(
            stripped_result_line("check", "error[E0425]: cannot find value `x` here", false)
                .starts_with("[check: 1 error;")
        );
        // Warnings alone, or an exception quoted in a document read: the
        // run did what it was asked.
        assert!(
            stripped_result_line("check", "warning: unused import: `a` here", false)
                .starts_with("[check succeeded;")
        );
        // A generic wrapper is passed over for the cause it wraps.
        let wrapped = r#"{"message":"An error occurred while running the 'read' tool.","trace":["no such repository here"]}"#;
        assert!(
            stripped_result_line("read", wrapped, true)
                .ends_with("Diagnostics in it: no such repository here]")
        );
    }

    /// The stripped line a view shows for the tool result of a one-turn
    /// log whose output is `content`, after a strip compaction of it.
    fn folded(content: &str) -> String {
        let mut bodies = turn(0, "short", false);
        for b in &mut bodies {
            if let Body::ToolResult { content: c, .. } = b {
                *c = content.to_owned();
            }
        }
        let mut c = Compaction::new(0, 0, Source::User);
        c.tool_calls = Some(ToolPolicy::Strip);
        bodies.push(compaction(c));
        let log = log_of(bodies);
        let view = project(&log);
        let item = view
            .items
            .iter()
            .find(|i| matches!(i, Item::StrippedResult { .. }))
            .unwrap();
        item.stripped_line().unwrap()
    }

    #[test]
    fn a_stripped_log_keeps_its_error_line_and_where_the_output_was_saved() {
        // The shell step of issue 44: ~29 KB of log lines, one ERROR.
        let mut lines: Vec<String> = (0..300)
            .map(|k| {
                format!(
                    "2026-12-06T10:00:{:02}Z INFO worker: processed batch {k} in 12 ms",
                    k % 60
                )
            })
            .collect();
        lines.insert(
            151,
            "2026-12-06T10:00:31Z ERROR worker: batch 151 failed: connection reset by peer".into(),
        );
        let log = lines.join("\n");
        let line = folded(&log);
        assert!(
            line.starts_with("[edit succeeded; its output (")
                && line.ends_with(
                    "). Diagnostics in it: 2026-12-06T10:00:31Z ERROR worker: batch 151 failed: connection reset by peer]"
                ),
            "{line}"
        );
        // Claude Code's preview of an output it saved: the path is kept,
        // first, with the errors of the preview.
        let preview = "<persisted-output>\nOutput too large (48.2KB). Full output saved to: /home/dev/.claude/projects/-home-dev-shop/6b1f/tool-results/toolu_01HkX9.txt\n\nPreview (first 2KB):\n2026-12-06T10:00:00Z INFO starting\n[ERROR] job invoices-daily failed\n...\n</persisted-output>";
        let line = folded(preview);
        assert!(
            line.contains("was removed by compaction (recall ")
                && line.ends_with(
                    "; Output too large (48.2KB). Full output saved to: /home/dev/.claude/projects/-home-dev-shop/6b1f/tool-results/toolu_01HkX9.txt. Diagnostics in it: [ERROR] job invoices-daily failed]"
                ),
            "{line}"
        );
    }

    #[test]
    fn the_saved_output_path_is_kept_past_the_budget_and_the_rest_counted() {
        let mut out: String = (0..130)
            .map(|k| format!("[ERROR] shard {k} failed\n"))
            .collect();
        out.push_str("see /tmp/ci/run-7.log for the full output\n");
        let found = result_findings(&out, false);
        assert_eq!(found.unkept, 30);
        // A budget of 2: the path, two errors, and 128 more counted (the
        // 98 kept past the budget and the 30 past the recognizer's bound).
        assert_eq!(
            render_stripped("sh", false, 99, &found, 2, None),
            "[sh succeeded; its output (99 characters) was removed by compaction; see /tmp/ci/run-7.log for the full output. Diagnostics in it: [ERROR] shard 0 failed; [ERROR] shard 1 failed; and 128 more]"
        );
        // A budget of none still keeps the way back.
        assert_eq!(
            render_stripped("sh", false, 99, &found, 0, None),
            "[sh succeeded; its output (99 characters) was removed by compaction; see /tmp/ci/run-7.log for the full output; and 130 more]"
        );
        // The same error line repeated is one diagnostic: kept, not counted.
        let repeated = "[ERROR] disk full\n".repeat(50);
        assert_eq!(
            stripped_result_line("sh", &repeated, false),
            "[sh succeeded; its output (900 characters) was removed by compaction. Diagnostics in it: [ERROR] disk full]"
        );
    }
}
