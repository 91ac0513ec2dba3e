//! Size estimates in tokens: the one heuristic (SPEC §7).
//!
//! Characters / [`CHARS_PER_TOKEN`], rounded up, plus [`BLOCK_OVERHEAD`]
//! tokens per block (a message's text, a tool call, a tool result). Good
//! enough to compare sizes and to trigger compaction.
//!
//! This module is the only place that says how a record or a view item
//! turns into text blocks ([`record_tokens_by`], [`item_tokens_by`]) and
//! how the heuristic counts a text ([`text_tokens`]). The compaction report
//! uses it directly; `ctxfold-tokens` builds its estimators (the same
//! heuristic, and exact BPE counts that only change how a text is counted)
//! on it, so the report and `ctxfold stats` cannot disagree.

use serde_json::Value;

use crate::json_text::JsonText;
use crate::projection::{Item, PREAMBLE, View};
use crate::record::{Body, Record};

/// Characters per token of the heuristic. Over the JP corpus the plain 4
/// is within 2% of the exact `o200k_base` count.
pub const CHARS_PER_TOKEN: usize = 4;

/// Overhead of one block, in tokens.
pub const BLOCK_OVERHEAD: usize = 4;

/// How a text is counted: what an estimator supplies to
/// [`record_tokens_by`] and [`item_tokens_by`]. [`Heuristic`] is the
/// heuristic.
pub trait CountText {
    /// Tokens of `text`.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens added per block: [`BLOCK_OVERHEAD`].
    fn block_overhead(&self) -> usize {
        BLOCK_OVERHEAD
    }

    /// Tokens of a JSON value as sent: a string as its text (arguments
    /// passed as one JSON string), anything else as its compact JSON text.
    fn json_tokens(&self, value: &JsonText) -> usize {
        // A string counts as its text; anything else as the JSON.
        if value.is_string() {
            match value.value() {
                Value::String(s) => self.count_text(&s),
                _ => self.count_text(value.text()),
            }
        } else {
            self.count_text(value.text())
        }
    }
}

/// The heuristic: [`text_tokens`] and [`BLOCK_OVERHEAD`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heuristic;

impl CountText for Heuristic {
    fn count_text(&self, text: &str) -> usize {
        text_tokens(text)
    }
}

/// Tokens of `text` by the heuristic: characters / [`CHARS_PER_TOKEN`],
/// rounded up (characters, not bytes).
pub fn text_tokens(text: &str) -> usize {
    chars_tokens(text.chars().count())
}

/// Tokens by the heuristic of a text of `chars` characters (as
/// [`text_tokens`], for a count made already: a tool result's scan).
pub fn chars_tokens(chars: usize) -> usize {
    chars.div_ceil(CHARS_PER_TOKEN)
}

/// Tokens of one raw record as the model sees it, texts counted by `c`:
/// text, reasoning and system prompts their text plus one block overhead;
/// a tool call its name plus its arguments' JSON text plus one overhead; a
/// tool result its content plus one overhead; a structured answer its JSON
/// text plus one overhead. 0 for records the model never sees (turn
/// starts, compactions, unknown records, …).
pub fn record_tokens_by(c: &(impl CountText + ?Sized), r: &Record) -> usize {
    let overhead = c.block_overhead();
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content } => c.count_text(content) + overhead,
        Body::ToolCall {
            name, arguments, ..
        } => c.count_text(name) + c.json_tokens(arguments) + overhead,
        Body::ToolResult { content, .. } => c.count_text(content) + overhead,
        Body::Structured { data } => c.json_tokens(data) + overhead,
        Body::TurnStart | Body::Compaction(_) | Body::CompactionReset(_) | Body::Other { .. } => 0,
    }
}

/// Tokens of one view item as rendered, texts counted by `c`: a stripped
/// call with its placeholders, a stripped result as its one line, a
/// summary as the user message naming its turns plus the assistant
/// message with the text (two blocks), the preamble as one user block.
pub fn item_tokens_by(c: &(impl CountText + ?Sized), item: &Item<'_>) -> usize {
    let overhead = c.block_overhead();
    match item {
        Item::Event { record, .. } => record_tokens_by(c, record),
        Item::StrippedCall { record, .. } => match (&record.body, item.stripped_arguments()) {
            (Body::ToolCall { name, .. }, Some(args)) => stripped_call_tokens_by(c, name, &args),
            _ => record_tokens_by(c, record),
        },
        // The line from what the log found in the result once: counting a
        // view again does not read its stripped results again.
        Item::StrippedResult { record, .. } => match item.stripped_line() {
            Some(line) => c.count_text(&line) + overhead,
            None => record_tokens_by(c, record),
        },
        Item::Clipped { record, .. } => match item.clipped_text() {
            Some(text) => c.count_text(&text) + overhead,
            None => record_tokens_by(c, record),
        },
        Item::Summary { text, .. } => {
            c.count_text(&item.summary_lead().unwrap_or_default())
                + c.count_text(text)
                + 2 * overhead
        }
        Item::Preamble => c.count_text(PREAMBLE) + overhead,
    }
}

/// Tokens of a stripped call named `name` whose arguments stripped are
/// `args` ([`Item::stripped_arguments`]), texts counted by `c`: for a
/// caller that has the arguments stripped already.
pub fn stripped_call_tokens_by(
    c: &(impl CountText + ?Sized),
    name: &str,
    args: &JsonText,
) -> usize {
    c.count_text(name) + c.json_tokens(args) + c.block_overhead()
}

/// Tokens of one raw record by the heuristic (0 for records the model does
/// not see).
pub fn record_tokens(r: &Record) -> usize {
    record_tokens_by(&Heuristic, r)
}

/// Tokens of a stripped result or a clipped text, by the heuristic, from
/// the text it was made into: what [`item_tokens`] counts for it.
pub fn made_item_tokens(text: &str) -> usize {
    Heuristic.count_text(text) + Heuristic.block_overhead()
}

/// Tokens of one view item by the heuristic.
pub fn item_tokens(item: &Item<'_>) -> usize {
    item_tokens_by(&Heuristic, item)
}

/// Tokens of every model-visible record of `records`, uncompacted.
pub fn raw_tokens(records: &[Record]) -> usize {
    records.iter().map(record_tokens).sum()
}

/// Tokens of a view.
pub fn view_tokens(view: &View<'_>) -> usize {
    view.items.iter().map(item_tokens).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristic_is_chars_over_four_rounded_up_plus_one_block() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        assert_eq!(text_tokens("ééééé"), 2);
        let call = Record::new(
            0,
            "t",
            Body::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "a.rs"}).into(),
            },
        );
        // "read" = 1, `{"path":"a.rs"}` = 15 chars = 4, overhead 4.
        assert_eq!(record_tokens(&call), 1 + 4 + BLOCK_OVERHEAD);
        assert_eq!(record_tokens(&Record::new(1, "t", Body::TurnStart)), 0);
    }
}
