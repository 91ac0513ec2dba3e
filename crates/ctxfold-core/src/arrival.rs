//! Which records to excerpt as they arrive (SPEC §8): the tool results
//! and pasted messages over the threshold that the next request carries
//! for the first time. The excerpt's text is [`crate::excerpt`]'s; this is
//! the policy over the log that picks what gets one.

use crate::compaction::ToolOverride;
use crate::excerpt::is_over;
use crate::log::Log;
use crate::planner::ToolHints;
use crate::projection::covered_indices;
use crate::record::Body;

/// A user message is excerpted on arrival only when it is this many times
/// over the threshold of a tool result (a quarter of the window with the
/// default `excerpt_share`): a pasted log, not a long typed request, which
/// the model needs whole.
pub const USER_FACTOR: usize = 5;

/// The records of `log` to excerpt as they arrive, each with the
/// threshold it is over: the tool results over `over_chars` characters
/// and the user messages over [`USER_FACTOR`] times that, after the
/// model's latest record (what the next request carries for the first
/// time), that no compaction covers yet (an excerpt made before, or one
/// the user undid, is never made again), whose tool `hints` do not say
/// `keep`, and that no recall tool returned (what the model asked to have
/// back whole: see [`is_recall_tool`]). Record indices, in log order.
pub fn arrivals(log: &Log, over_chars: usize, hints: &ToolHints) -> Vec<(usize, usize)> {
    let records = log.records();
    let mut out = Vec::new();
    let mut start = records.len();
    for (i, r) in records.iter().enumerate().rev() {
        match &r.body {
            Body::Assistant { .. }
            | Body::Reasoning { .. }
            | Body::ToolCall { .. }
            | Body::Structured { .. } => break,
            _ => start = i,
        }
    }
    let user_over = over_chars.saturating_mul(USER_FACTOR);
    for (i, r) in records.iter().enumerate().skip(start) {
        let over = match &r.body {
            Body::ToolResult { content, id, .. }
                if is_over(content, over_chars) && !kept_whole(log, i, id, hints) =>
            {
                Some(over_chars)
            }
            Body::User { content, .. } if is_over(content, user_over) => Some(user_over),
            _ => None,
        };
        if let Some(over) = over
            && !covered(log, i)
        {
            out.push((i, over));
        }
    }
    out
}

/// Whether the tool whose call `id` produced result `i` is hinted `keep`,
/// or is a recall tool.
fn kept_whole(log: &Log, i: usize, id: &str, hints: &ToolHints) -> bool {
    let name = log.records()[..i].iter().rev().find_map(|r| match &r.body {
        Body::ToolCall { id: c, name, .. } if c == id => Some(name.as_str()),
        _ => None,
    });
    if name.is_some_and(is_recall_tool) {
        return true;
    }
    let hint = name
        .and_then(|n| hints.per_tool.get(n))
        .or(hints.default.as_ref());
    hint == Some(&ToolOverride::Keep)
}

/// Whether `name` is ctxfold's `recall` or `search` tool, as the host
/// offers it or as an MCP client names it after the server (`ctxfold`, as
/// the README configures it: `mcp__ctxfold__recall`, `ctxfold.recall`):
/// its result is what the model asked to have back,
/// bounded by the page it asked for, and an excerpt of it would take it
/// away again.
pub fn is_recall_tool(name: &str) -> bool {
    let base = name.rsplit(['_', '.', '/', ':']).next().unwrap_or(name);
    matches!(base, "recall" | "search") && (name == base || name.contains("ctxfold"))
}

/// Whether a compaction appended after record `i` covers it.
fn covered(log: &Log, i: usize) -> bool {
    log.records()[i + 1..].iter().any(|r| match &r.body {
        Body::Compaction(c) => covered_indices(log, c).is_some_and(|(lo, hi)| lo <= i && i <= hi),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Compaction, Source};
    use crate::record::Record;

    fn rec(seq: u64, body: Body) -> Record {
        Record::new(seq, "2026-12-06T10:00:00Z", body)
    }

    #[test]
    fn arrivals_are_what_came_after_the_model_spoke_and_nothing_covers() {
        let big = "line\n".repeat(5_000);
        let call = |seq, id: &str, name: &str| {
            rec(
                seq,
                Body::ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: crate::JsonText::from_value(&serde_json::json!({})),
                },
            )
        };
        let result = |seq, id: &str| {
            rec(
                seq,
                Body::ToolResult {
                    id: id.into(),
                    content: big.clone(),
                    is_error: false,
                },
            )
        };
        let user = |seq, text: &str| {
            rec(
                seq,
                Body::User {
                    content: text.into(),
                    author: None,
                },
            )
        };
        let mut records = vec![
            user(0, "go"),
            call(1, "a", "Bash"),
            result(2, "a"),
            call(3, "b", "Bash"),
            call(4, "c", "Read"),
            result(5, "b"),
            result(6, "c"),
        ];
        let log = Log::from_records(records.clone());
        let none = ToolHints::default();
        assert_eq!(
            arrivals(&log, 1_000, &none),
            vec![(5, 1_000), (6, 1_000)],
            "not the older result"
        );
        assert!(arrivals(&log, 100_000, &none).is_empty(), "none is over");
        let mut hints = ToolHints::default();
        hints.per_tool.insert("Read".into(), ToolOverride::Keep);
        for name in ["recall", "mcp__ctxfold__recall", "ctxfold.search"] {
            assert!(is_recall_tool(name), "{name}");
        }
        for name in ["Bash", "research", "fs_search", "mcp__github__search"] {
            assert!(!is_recall_tool(name), "{name}");
        }
        assert_eq!(
            arrivals(&log, 1_000, &hints),
            vec![(5, 1_000)],
            "Read is kept"
        );
        // Once excerpted (or undone), never again.
        let mut c = Compaction::new(1, 1, Source::Auto);
        c.from_seq = Some(5);
        c.to_seq = Some(5);
        c.excerpt_chars = Some(1_000);
        records.push(rec(7, Body::Compaction(Box::new(c))));
        let log = Log::from_records(records.clone());
        assert_eq!(arrivals(&log, 1_000, &none), vec![(6, 1_000)]);
        // A pasted message at a new turn, only when five times over.
        records.push(call(8, "d", "Bash"));
        records.push(result(9, "d"));
        records.push(rec(
            10,
            Body::Assistant {
                content: "done".into(),
            },
        ));
        records.push(user(11, &big));
        let log = Log::from_records(records);
        assert_eq!(arrivals(&log, 1_000, &none), vec![(11, 5_000)]);
        assert!(
            arrivals(&log, 6_000, &none).is_empty(),
            "a long request stays whole"
        );
    }
}
