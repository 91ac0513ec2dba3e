//! The built-in table of context windows, for models whose provider does not
//! say (SPEC §7: the provider's metadata first, then this table, then
//! config).
//!
//! A model matches the longest entry that is a prefix of its last path
//! segment (so `openrouter/openai/gpt-4o` and `gpt-4o-2024-08-06` find
//! `gpt-4o`), ignoring case, where the prefix ends at a boundary (the name
//! ends there, or goes on with a character that is not a letter or digit,
//! or the entry itself ends with `-`).

/// (model name prefix, context window in tokens).
pub const TABLE: &[(&str, u32)] = &[
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4", 8_192),
    ("gpt-4-32k", 32_768),
    ("gpt-4-turbo", 128_000),
    ("gpt-4o", 128_000),
    ("gpt-4o-mini", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-5", 400_000),
    ("o1", 200_000),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o3", 200_000),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
    ("deepseek-chat", 128_000),
    ("deepseek-reasoner", 128_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2.0-flash", 1_048_576),
    ("gemini-2.5", 1_048_576),
    ("mistral-large", 131_072),
    ("llama-3.1", 131_072),
    ("llama3.1", 131_072),
    ("llama-3.2", 131_072),
    ("llama3.2", 131_072),
    ("llama-3.3", 131_072),
    ("llama3.3", 131_072),
];

/// The window of `model` from [`TABLE`], if it is there.
pub fn builtin_context_window(model: &str) -> Option<u32> {
    let name = model.rsplit('/').next().unwrap_or(model).to_lowercase();
    TABLE
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
        .map(|&(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_at_a_boundary_wins() {
        assert_eq!(builtin_context_window("gpt-4o"), Some(128_000));
        assert_eq!(builtin_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(builtin_context_window("gpt-4.1-nano"), Some(1_047_576));
        assert_eq!(builtin_context_window("gpt-4-0613"), Some(8_192));
        assert_eq!(builtin_context_window("o3"), Some(200_000));
        assert_eq!(builtin_context_window("o1-mini-2024-09-12"), Some(128_000));
        assert_eq!(
            builtin_context_window("claude-3-5-sonnet-20241022"),
            Some(200_000)
        );
        assert_eq!(builtin_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(builtin_context_window("claude-opus-4-1"), Some(200_000));
        assert_eq!(builtin_context_window("openai/GPT-4o"), Some(128_000));
        assert_eq!(builtin_context_window("llama3.1:8b"), Some(131_072));
        assert_eq!(
            builtin_context_window("o1x"),
            None,
            "no boundary after `o1`"
        );
        assert_eq!(builtin_context_window("smollm2"), None);
    }
}
