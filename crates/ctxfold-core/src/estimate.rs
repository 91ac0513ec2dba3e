//! Size estimates in tokens: a fast heuristic (SPEC §7).
//!
//! Characters / 4, rounded up, plus 4 tokens of overhead per block (a
//! message, a tool call, a tool result). Good enough to compare sizes and
//! to trigger compaction; exact counts for OpenAI encodings come with the
//! provider layer.

use crate::projection::{
    Item, PREAMBLE, View, strip_arguments, stripped_result_line, summary_preamble,
};
use crate::record::{Body, Record};

/// Overhead of one block, in tokens.
pub const BLOCK_OVERHEAD: usize = 4;

/// Tokens of `text` by the heuristic.
pub fn text_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

fn json_tokens(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => text_tokens(s),
        other => text_tokens(&other.to_string()),
    }
}

/// Tokens of one raw record as the model would see it (0 for records the
/// model does not see).
pub fn record_tokens(r: &Record) -> usize {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content } => text_tokens(content) + BLOCK_OVERHEAD,
        Body::ToolCall {
            name, arguments, ..
        } => text_tokens(name) + json_tokens(arguments) + BLOCK_OVERHEAD,
        Body::ToolResult { content, .. } => text_tokens(content) + BLOCK_OVERHEAD,
        Body::Structured { data } => json_tokens(data) + BLOCK_OVERHEAD,
        _ => 0,
    }
}

/// Tokens of one view item.
pub fn item_tokens(item: &Item<'_>) -> usize {
    match item {
        Item::Event { record, .. } => record_tokens(record),
        Item::StrippedCall { record, .. } => match &record.body {
            Body::ToolCall {
                name, arguments, ..
            } => text_tokens(name) + json_tokens(&strip_arguments(arguments)) + BLOCK_OVERHEAD,
            _ => record_tokens(record),
        },
        Item::StrippedResult { record, tool, .. } => match &record.body {
            Body::ToolResult {
                content, is_error, ..
            } => text_tokens(&stripped_result_line(tool, content, *is_error)) + BLOCK_OVERHEAD,
            _ => record_tokens(record),
        },
        Item::Summary { turns, text, .. } => {
            text_tokens(&summary_preamble(*turns)) + text_tokens(text) + 2 * BLOCK_OVERHEAD
        }
        Item::Preamble => text_tokens(PREAMBLE) + BLOCK_OVERHEAD,
    }
}

/// Tokens of every model-visible record of `records`, uncompacted.
pub fn raw_tokens(records: &[Record]) -> usize {
    records.iter().map(record_tokens).sum()
}

/// Tokens of a view.
pub fn view_tokens(view: &View<'_>) -> usize {
    view.items.iter().map(item_tokens).sum()
}
