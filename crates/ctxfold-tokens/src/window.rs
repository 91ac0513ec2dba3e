//! Context windows of common models (SPEC §7: after the provider's own
//! metadata, before config).

use crate::estimator::model_name;

/// Model-name prefixes and their context windows, in tokens. The longest
/// matching prefix wins, so `gpt-4o` beats `gpt-4` and `o1-mini` beats `o1`.
const WINDOWS: &[(&str, u32)] = &[
    // OpenAI
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
    ("gpt-oss", 131_072),
    // Anthropic (every current Claude model has 200k)
    ("claude-", 200_000),
    ("claude-3-", 200_000),
    ("claude-3-5", 200_000),
    ("claude-3-7", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-opus-4", 200_000),
    ("claude-haiku-4", 200_000),
    // Others
    ("deepseek-chat", 128_000),
    ("deepseek-reasoner", 128_000),
    ("mistral-large", 131_072),
    // Google
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.5", 1_048_576),
    // Open models, as Ollama and Hugging Face name them
    ("llama3.1", 131_072),
    ("llama-3.1", 131_072),
    ("llama3.2", 131_072),
    ("llama-3.2", 131_072),
    ("llama3.3", 131_072),
    ("llama-3.3", 131_072),
    ("qwen2.5", 32_768),
    ("smollm2", 8_192),
];

/// The context window of `model`, in tokens, from a built-in table of
/// common models; `None` when the model is not in it (callers report that
/// and skip automatic compaction: not an error).
///
/// Matching ignores a `provider/` prefix and case, and is by prefix
/// (`gpt-4o-mini-2024-07-18` is a `gpt-4o`, `llama3.1:8b` a `llama3.1`);
/// the longest matching prefix wins. A prefix must end at a boundary: the
/// name ends there or goes on with a character that is not a letter or a
/// digit (so `o3` does not match `o30`), unless the entry ends with `-`.
pub fn context_window(model: &str) -> Option<u32> {
    let name = model_name(model);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| {
            name.strip_prefix(prefix).is_some_and(|rest| {
                prefix.ends_with('-')
                    || rest
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_ascii_alphanumeric())
            })
        })
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_at_a_boundary_wins() {
        assert_eq!(context_window("gpt-4o"), Some(128_000));
        assert_eq!(context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(context_window("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(context_window("gpt-4-0613"), Some(8_192));
        assert_eq!(context_window("o3"), Some(200_000));
        assert_eq!(context_window("o1-mini-2024-09-12"), Some(128_000));
        assert_eq!(context_window("claude-3-5-sonnet-20241022"), Some(200_000));
        assert_eq!(context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(context_window("claude-opus-4-1"), Some(200_000));
        assert_eq!(context_window("openai/GPT-4o"), Some(128_000));
        assert_eq!(context_window("llama3.1:8b"), Some(131_072));
        assert_eq!(context_window("o1x"), None, "no boundary after `o1`");
        assert_eq!(context_window("SmolLM2-135M-Instruct"), Some(8_192));
        assert_eq!(context_window("my-own-model"), None);
    }
}
