//! Tokens counted as the upstream counts them: the scale learned from
//! the usage an answer reports (or the size an overflow error names), and
//! estimates scaled by it.

use serde::Deserialize;
use serde_json::Value;

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

/// The prompt tokens an answer's usage reports, as every protocol keeps
/// it on the answer's last record (`input_tokens`, the cached ones
/// included).
pub(super) fn reported_input(usage: &Value) -> Option<u64> {
    /// The one count read.
    #[derive(serde::Deserialize)]
    struct Input {
        input_tokens: Option<u64>,
    }
    Input::deserialize(usage)
        .ok()?
        .input_tokens
        .filter(|&t| t > 0)
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
