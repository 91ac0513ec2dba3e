//! Tokens counted as the upstream counts them: the fixed part every
//! request carries, the scale learned from the usage an answer reports
//! (or the size an overflow error names), and estimates scaled by it.

use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde_json::Value;

/// Tokens of what every request carries besides the records the log holds
/// for it: Responses' `instructions` and the tool definitions, counted on
/// their JSON text as the upstream reads it.
pub(super) fn fixed_tokens(body: &Value) -> usize {
    let est = Heuristic::default();
    // Not `system`: the conversation records Anthropic's system prompt
    // (and chat completions' system messages) as its system record, which
    // the view counts; counting it here too made every request look
    // larger by it, and automatic compaction fire early and fold deep.
    ["instructions", "tools"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(|v| match v {
            Value::String(s) => est.count_text(s),
            other => est.count_text(&other.to_string()),
        })
        .sum()
}

/// Upstream tokens per estimated token, from what the upstream counted
/// for a request ctxfold estimated at `sent`. Never below 1: a usage
/// figure smaller than the estimate (a cached prefix left out, a server
/// that reports nothing useful) must not make ctxfold send more.
pub(super) fn calibrated(counted: u64, sent: usize) -> f64 {
    (counted as f64 / sent as f64).clamp(1.0, 8.0)
}

pub(super) fn scaled(tokens: usize, scale: f64) -> usize {
    (tokens as f64 * scale).ceil() as usize
}

/// The prompt tokens a provider reported in `usage`: Anthropic's input
/// with its cached parts, OpenAI's input or prompt tokens.
pub(super) fn reported_input(usage: &Value) -> Option<u64> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    if let Some(input) = n("input_tokens") {
        let cached = n("cache_read_input_tokens").unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0);
        return Some(input + cached).filter(|&t| t > 0);
    }
    n("prompt_tokens").filter(|&t| t > 0)
}

/// The size an overflow error says the request had: the first number
/// before "tokens" in its message, the largest (`prompt is too long: 45123 tokens >
/// 40000 maximum`, `… resulted in 45123 tokens`).
pub(super) fn counted_tokens(error: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(error);
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The largest: OpenAI names the maximum first ("maximum context
    // length is 128000 tokens. However, your messages resulted in 130000
    // tokens").
    words
        .windows(2)
        .filter(|w| w[1] == "tokens")
        .filter_map(|w| w[0].parse().ok())
        .max()
}
