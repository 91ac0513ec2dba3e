//! What a model summarizer sends: the raw events of a range as plain text,
//! the instructions, and how an over-long range is cut down (SPEC §6).
//!
//! A range that does not fit the summarizing model's window still gets a
//! summary: first the bulk of tool results is cut (each long result keeps its
//! head and tail), then, if that is not enough, the range is summarized in
//! chunks that each fit, and the chunk summaries are combined in one last
//! call. The compaction record says which happened (`method`).

use std::fmt::Write as _;

use crate::log::Log;
use crate::record::Body;
use crate::text::cut_head_tail;
pub use crate::text::fit;

/// The instructions a model summarizer gets unless a rule or the command
/// line gives others.
pub const DEFAULT_INSTRUCTIONS: &str = "\
You are summarizing part of a conversation between a user and an AI coding \
assistant, so that the assistant can continue the work without the original \
messages. Write a self-contained summary in plain text with these sections, \
writing \"(none)\" under a section with nothing to say:
1. User intent: what the user asked for and why, in their own words where short.
2. Key technical facts: concepts, constraints and findings the work relies on.
3. Files and code: files read or changed, and the important code or commands.
4. Errors and fixes: what failed, why, and how it was fixed.
5. Decisions: what was decided and the reasons.
6. Pending work: what is still to do.
7. Current state: where the work stands at the end of the excerpt.
8. Next step: what the assistant should do next.
Be specific (names, paths, numbers); do not invent anything that is not in \
the excerpt. Answer with the summary only.";

/// Instructions for combining the summaries of consecutive chunks.
pub const COMBINE_INSTRUCTIONS: &str = "\
The texts below summarize consecutive parts of one conversation, in order. \
Combine them into one self-contained summary with the same sections, \
keeping every specific fact (names, paths, numbers, decisions) and the \
latest state. Answer with the summary only.";

/// How blocks are cut before summarizing. By default only tool results
/// (RESEARCH: results over 8192 characters keep their first 4096 and last
/// 1024); as a last resort every block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prune {
    /// Blocks longer than this many characters are cut.
    pub over: usize,
    /// Characters kept from the start.
    pub head: usize,
    /// Characters kept from the end.
    pub tail: usize,
    /// Cut every block (messages, reasoning, tool arguments), not only tool
    /// results.
    pub all_blocks: bool,
}

impl Default for Prune {
    fn default() -> Self {
        Prune {
            over: 8192,
            head: 4096,
            tail: 1024,
            all_blocks: false,
        }
    }
}

impl Prune {
    /// Cut every block longer than `cap` characters to about `cap`.
    pub fn every_block(cap: usize) -> Prune {
        let cap = cap.max(64);
        Prune {
            over: cap,
            head: cap * 3 / 4,
            tail: cap / 4,
            all_blocks: true,
        }
    }
}

/// The range as text within `budget` characters: tool results cut first,
/// then every block, then the text itself. Also says whether anything was
/// cut.
pub fn render_within(log: &Log, range: (usize, usize), budget: usize) -> (String, bool) {
    let full = render_range(log, range, None);
    if full.chars().count() <= budget {
        return (full, false);
    }
    let pruned = render_range(log, range, Some(Prune::default()));
    if pruned.chars().count() <= budget {
        return (pruned, true);
    }
    let blocks = log.records()[range.0..=range.1]
        .iter()
        .filter(|r| r.body.is_model_visible())
        .count()
        .max(1);
    let every = render_range(log, range, Some(Prune::every_block(budget / blocks)));
    (fit(&every, budget), true)
}

fn cut_block(text: &str, prune: Option<Prune>) -> std::borrow::Cow<'_, str> {
    match prune {
        Some(p) if p.all_blocks => cut(text, prune),
        _ => text.into(),
    }
}

fn cut(text: &str, prune: Option<Prune>) -> std::borrow::Cow<'_, str> {
    let Some(p) = prune else {
        return text.into();
    };
    cut_head_tail(text, p.over, p.head, p.tail)
}

/// The records `lo..=hi` of `log` as a plain-text transcript, one block per
/// model-visible event, with turn headers (1-based). Tool results are cut as
/// `prune` says.
pub fn render_range(log: &Log, (lo, hi): (usize, usize), prune: Option<Prune>) -> String {
    let mut out = String::new();
    let mut turn = None;
    let mut names = std::collections::HashMap::new();
    for (i, r) in log.records()[lo..=hi].iter().enumerate() {
        let idx = lo + i;
        if !r.body.is_model_visible() {
            continue;
        }
        let t = log.turn_of(idx);
        if turn != Some(t) {
            turn = Some(t);
            let _ = writeln!(out, "=== Turn {} ===", t + 1);
        }
        match &r.body {
            Body::User { content, .. } => {
                let _ = writeln!(out, "USER: {}", cut_block(content, prune));
            }
            Body::Assistant { content } => {
                let _ = writeln!(out, "ASSISTANT: {}", cut_block(content, prune));
            }
            Body::Reasoning { content } => {
                let _ = writeln!(out, "ASSISTANT (thinking): {}", cut_block(content, prune));
            }
            Body::ToolCall {
                id,
                name,
                arguments,
            } => {
                names.insert(id.as_str(), name.as_str());
                let args = arguments.to_string();
                let _ = writeln!(out, "TOOL CALL {name}: {}", cut_block(&args, prune));
            }
            Body::ToolResult {
                id,
                content,
                is_error,
            } => {
                let name = names.get(id.as_str()).copied().unwrap_or("tool");
                let status = if *is_error { "ERROR" } else { "RESULT" };
                let _ = writeln!(out, "TOOL {status} {name}: {}", cut(content, prune));
            }
            Body::Structured { data } => {
                let _ = writeln!(out, "ASSISTANT (structured): {data}");
            }
            _ => {}
        }
    }
    out
}

/// Split `lo..=hi` into consecutive chunks whose rendered text (pruned) is
/// at most `budget_chars` each. Cuts fall before a user message or a new
/// model call, never between a tool call and its result; a single step
/// larger than the budget is a chunk of its own ([`render_within`] then
/// cuts it to fit). Chunks holding nothing the model sees are left out.
pub fn chunks(
    log: &Log,
    (lo, hi): (usize, usize),
    budget_chars: usize,
    prune: Prune,
) -> Vec<(usize, usize)> {
    let records = log.records();
    let size = |i: usize| render_range(log, (i, i), Some(prune)).chars().count();
    let mut out = Vec::new();
    let mut start = lo;
    let mut used = 0;
    let mut last_cut: Option<(usize, usize)> = None; // (index, chars before it)
    for i in lo..=hi {
        let can_cut = i > start
            && matches!(
                records[i].body,
                Body::User { .. } | Body::Assistant { .. } | Body::Reasoning { .. }
            )
            && !matches!(records[i - 1].body, Body::ToolCall { .. });
        if can_cut {
            last_cut = Some((i, used));
        }
        let s = size(i);
        if used + s > budget_chars
            && let Some((cut_at, before)) = last_cut
        {
            out.push((start, cut_at - 1));
            start = cut_at;
            used -= before;
            last_cut = None;
        }
        used += s;
    }
    out.push((start, hi));
    // A chunk of turn starts and bookkeeping alone has nothing to summarize.
    out.retain(|&(a, b)| records[a..=b].iter().any(|r| r.body.is_model_visible()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use serde_json::json;

    fn log() -> Log {
        let mut recs = Vec::new();
        let mut push = |b: Body| {
            let seq = recs.len() as u64;
            recs.push(Record::new(seq, "", b));
        };
        for t in 0..4 {
            push(Body::TurnStart);
            push(Body::User {
                content: format!("question {t}"),
                author: None,
            });
            push(Body::ToolCall {
                id: format!("c{t}"),
                name: "read".into(),
                arguments: json!({"path": format!("f{t}.rs")}).into(),
            });
            push(Body::ToolResult {
                id: format!("c{t}"),
                content: "z".repeat(10_000),
                is_error: t == 2,
            });
            push(Body::Assistant {
                content: format!("answer {t}"),
            });
        }
        Log::from_records(recs)
    }

    #[test]
    fn render_names_turns_tools_and_errors_and_prunes_results() {
        let l = log();
        let full = render_range(&l, (0, 9), None);
        assert!(full.starts_with("=== Turn 1 ===\nUSER: question 0\nTOOL CALL read: {\"path\":\"f0.rs\"}\nTOOL RESULT read: zzz"));
        assert!(full.contains("=== Turn 2 ==="));
        assert!(full.chars().count() > 20_000);
        let pruned = render_range(&l, (10, 14), Some(Prune::default()));
        assert!(pruned.contains("TOOL ERROR read: "));
        assert!(pruned.contains("[… 4880 characters cut …]"));
        assert!(pruned.chars().count() < 5_300);
    }

    #[test]
    fn render_within_always_fits_cutting_least_first() {
        let l = log();
        let (text, cut) = render_within(&l, (0, 4), 100_000);
        assert!(!cut && text.contains("zzzz"));
        // Results alone cut: the default prune is enough.
        let (text, cut) = render_within(&l, (0, 4), 6_000);
        assert!(cut && text.contains("characters cut") && text.chars().count() <= 6_000);
        // A block no prune of results can shrink (a huge user message).
        let huge = Log::from_records(vec![Record::new(
            0,
            "",
            Body::User {
                content: "word ".repeat(20_000),
                author: None,
            },
        )]);
        for budget in [5_000, 1_000, 300] {
            let (text, cut) = render_within(&huge, (0, 0), budget);
            assert!(
                cut && text.chars().count() <= budget,
                "{budget}: {}",
                text.len()
            );
            assert!(text.starts_with("=== Turn 1 ===\nUSER: word"));
        }
    }

    #[test]
    fn chunks_fit_the_budget_and_keep_calls_with_results() {
        let l = log();
        let prune = Prune::default();
        let parts = chunks(&l, (0, l.len() - 1), 6_000, prune);
        assert_eq!(parts.len(), 4, "{parts:?}");
        // Consecutive, covering the whole range.
        assert_eq!(parts[0].0, 0);
        assert_eq!(parts.last().unwrap().1, l.len() - 1);
        for w in parts.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
        for &(a, b) in &parts {
            assert!(render_range(&l, (a, b), Some(prune)).chars().count() <= 6_000);
            // No chunk ends on a call whose result is in the next chunk.
            assert!(!matches!(l.records()[b].body, Body::ToolCall { .. }));
        }
        // A budget that fits everything gives one chunk.
        assert_eq!(chunks(&l, (0, 19), 1_000_000, prune), vec![(0, 19)]);
    }
}
