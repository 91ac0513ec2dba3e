//! A conversation's records as text, as `conversation print` shows them.

use std::fmt::Write as _;

use ctxfold_core::{Body, Log, Record};

/// A conversation as text: a header per turn (1-based), one block per event.
pub fn transcript_text(log: &Log) -> String {
    let by_seq = ctxfold_core::projection::standings(log)
        .into_iter()
        .map(|(i, s)| (log.records()[i].seq, s.to_string()))
        .collect();
    turns_text(
        log.records()
            .iter()
            .enumerate()
            .map(|(i, r)| (log.turn_of(i), r)),
        &by_seq,
    )
}

/// Records with the (0-based) turn each belongs to, as text. `statuses`
/// says, by `seq`, whether each compaction record is in force. What was
/// kept of an answer cut short is marked, and so is one a later answer
/// replaced (`ctxfold_core::cut_short::replaced`): the conversation went
/// on from the answer after it.
pub fn turns_text<'a>(
    entries: impl Iterator<Item = (u32, &'a Record)>,
    statuses: &std::collections::HashMap<u64, String>,
) -> String {
    let entries: Vec<(u32, &Record)> = entries.collect();
    let records: Vec<&Record> = entries.iter().map(|(_, r)| *r).collect();
    let replaced = ctxfold_core::cut_short::replaced(&records);
    let mut out = String::new();
    let mut current_turn = None;
    for ((turn, rec), replaced) in entries.into_iter().zip(replaced) {
        let visible = rec.body.is_model_visible() || matches!(rec.body, Body::TurnStart);
        if visible && current_turn != Some(turn) {
            current_turn = Some(turn);
            let _ = writeln!(out, "\n━━ turn {} ━━", u64::from(turn) + 1);
        }
        let cut = match (replaced, ctxfold_core::cut_short::is_cut_short(rec)) {
            (true, _) => ", cut short, replaced by the answer after it",
            (false, true) => ", cut short",
            (false, false) => "",
        };
        match &rec.body {
            Body::TurnStart => {}
            Body::User { content, author } => {
                let who = author.as_deref().unwrap_or("user");
                let _ = writeln!(out, "[{who}]\n{}", content.trim_end());
            }
            Body::Assistant { content } => {
                let _ = writeln!(out, "[assistant{cut}]\n{}", content.trim_end());
            }
            Body::Reasoning { content } => {
                let _ = writeln!(out, "[reasoning{cut}]\n{}", content.trim_end());
            }
            Body::ToolCall {
                id,
                name,
                arguments,
            } => {
                let _ = writeln!(out, "[tool call {name} {id}{cut}]\n{arguments}");
            }
            Body::ToolResult {
                id,
                content,
                is_error,
            } => {
                let status = if *is_error { "error" } else { "ok" };
                let _ = writeln!(out, "[tool result {id}: {status}]\n{}", content.trim_end());
            }
            Body::Structured { data } => {
                let _ = writeln!(out, "[structured{cut}]\n{data}");
            }
            Body::System { content } => {
                let _ = writeln!(out, "[system]\n{}", content.trim_end());
            }
            Body::Compaction(c) => {
                // Who asked, what it does, and whether it is in force yet:
                // an assistant's compaction waits for the next turn.
                let status = statuses
                    .get(&rec.seq)
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "[compaction of turns {}-{}, record {}, by {}{status}: {}]",
                    u64::from(c.from_turn) + 1,
                    u64::from(c.to_turn) + 1,
                    rec.seq,
                    source_words(c.source),
                    c.describe().join(", ")
                );
                if let Some(note) = &c.note {
                    let _ = writeln!(out, "note: {note}");
                }
            }
            Body::CompactionReset(_) => {
                let _ = writeln!(out, "[compaction reset, record {}]", rec.seq);
            }
            Body::Other { kind, .. } => {
                let _ = writeln!(out, "[{kind}, record {}]", rec.seq);
            }
        }
    }
    out
}

/// Who made a compaction, as the transcript says it.
fn source_words(s: ctxfold_core::compaction::Source) -> &'static str {
    use ctxfold_core::compaction::Source;
    match s {
        Source::User => "the user",
        Source::Assistant => "the assistant",
        Source::Auto => "automatic compaction",
        Source::Agent => "the agent that wrote the session",
        Source::Provider => "the model provider, on its servers",
        Source::Client => {
            "the client, through ctxfold's emulation of the provider's context management"
        }
    }
}
