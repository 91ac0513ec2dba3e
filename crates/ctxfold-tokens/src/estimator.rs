//! The [`TokenEstimator`] trait and its two implementations.
//!
//! What a record or a view item counts (its blocks and their overhead) and
//! the heuristic itself live in [`ctxfold_core::estimate`], the one place
//! the compaction report uses too; an estimator here only says how a text
//! is counted.

use ctxfold_core::estimate::{self, CountText};
use ctxfold_core::projection::Item;
use ctxfold_core::record::Record;
use serde_json::Value;

pub use ctxfold_core::estimate::BLOCK_OVERHEAD;

/// Overhead of one message, for its role, in tokens.
pub const MESSAGE_OVERHEAD: usize = 4;

/// Characters per token of [`Heuristic::default`]: the core's
/// [`CHARS_PER_TOKEN`](ctxfold_core::estimate::CHARS_PER_TOKEN). Over the
/// JP corpus the plain 4 is within 2% of the exact `o200k_base` count (the
/// test `heuristic_is_within_15_percent_over_the_corpus` prints the
/// figure), so it is kept as seed 002 had it.
pub const CHARS_PER_TOKEN: f64 = estimate::CHARS_PER_TOKEN as f64;

/// Counts tokens: of a text, and from it of everything a request holds.
///
/// Implementors give [`count_text`](TokenEstimator::count_text); the other
/// methods are built on it and count what the model is sent, the same way
/// for every estimator (by [`ctxfold_core::estimate`]).
pub trait TokenEstimator: Send + Sync {
    /// A short name, e.g. `o200k_base` or `heuristic`. Counts made by
    /// estimators of different names are never mixed in a cache.
    fn name(&self) -> &str;

    /// Tokens of `text`.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens added per block (a message's text, a tool call, a tool
    /// result): [`BLOCK_OVERHEAD`].
    fn block_overhead(&self) -> usize {
        BLOCK_OVERHEAD
    }

    /// Tokens added per message for its role: [`MESSAGE_OVERHEAD`]. Not
    /// part of [`record_tokens`](TokenEstimator::record_tokens) or
    /// [`item_tokens`](TokenEstimator::item_tokens): see
    /// [`message_count`](crate::message_count).
    fn message_overhead(&self) -> usize {
        MESSAGE_OVERHEAD
    }

    /// Tokens of one raw record as the model sees it (see
    /// [`ctxfold_core::estimate::record_tokens_by`]); 0 for records the
    /// model never sees (turn starts, compactions, config deltas, …).
    fn record_tokens(&self, record: &Record) -> usize {
        estimate::record_tokens_by(&By(self), record)
    }

    /// Tokens of one view item, as rendered (see
    /// [`ctxfold_core::estimate::item_tokens_by`]).
    fn item_tokens(&self, item: &Item<'_>) -> usize {
        estimate::item_tokens_by(&By(self), item)
    }

    /// Tokens of the tool definitions sent with a request: the JSON text of
    /// `tools` (whatever shape the provider takes, usually an array of
    /// objects with name, description and parameter schema). `null` and an
    /// empty array count 0. Seed 002 left these out and under-counted.
    fn schema_tokens(&self, tools: &Value) -> usize {
        match tools {
            Value::Null => 0,
            Value::Array(a) if a.is_empty() => 0,
            other => self.count_text(&other.to_string()),
        }
    }

    /// Tokens of a system prompt sent outside the log (from config): its
    /// text, one block and one message.
    fn system_prompt_tokens(&self, prompt: &str) -> usize {
        self.count_text(prompt) + self.block_overhead() + self.message_overhead()
    }
}

/// An estimator as the core's [`CountText`], so that the core says what a
/// record or an item counts.
struct By<'a, E: ?Sized>(&'a E);

impl<E: TokenEstimator + ?Sized> CountText for By<'_, E> {
    fn count_text(&self, text: &str) -> usize {
        self.0.count_text(text)
    }

    fn block_overhead(&self) -> usize {
        self.0.block_overhead()
    }
}

/// The fast estimate: characters / [`CHARS_PER_TOKEN`], rounded up, plus
/// the block overheads. The default one is the core's heuristic
/// ([`ctxfold_core::estimate::text_tokens`]). For models without an offline tokenizer.
#[derive(Debug, Clone)]
pub struct Heuristic {
    chars_per_token: f64,
    name: String,
}

impl Default for Heuristic {
    fn default() -> Self {
        Heuristic::with_chars_per_token(CHARS_PER_TOKEN)
    }
}

impl Heuristic {
    /// A heuristic with another characters-per-token ratio (a positive,
    /// finite number; anything else falls back to [`CHARS_PER_TOKEN`]).
    pub fn with_chars_per_token(chars_per_token: f64) -> Self {
        let chars_per_token = if chars_per_token.is_finite() && chars_per_token > 0.0 {
            chars_per_token
        } else {
            CHARS_PER_TOKEN
        };
        let name = if chars_per_token == CHARS_PER_TOKEN {
            "heuristic".to_owned()
        } else {
            format!("heuristic(chars/{chars_per_token})")
        };
        Heuristic {
            chars_per_token,
            name,
        }
    }

    /// Characters per token.
    pub fn chars_per_token(&self) -> f64 {
        self.chars_per_token
    }
}

impl TokenEstimator for Heuristic {
    fn name(&self) -> &str {
        &self.name
    }

    fn count_text(&self, text: &str) -> usize {
        if self.chars_per_token == CHARS_PER_TOKEN {
            return estimate::text_tokens(text);
        }
        let chars = text.chars().count();
        if chars == 0 {
            return 0;
        }
        (chars as f64 / self.chars_per_token).ceil() as usize
    }
}

/// An OpenAI BPE encoding whose vocabulary is built into the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `o200k_base`: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series, gpt-oss.
    O200kBase,
    /// `cl100k_base`: gpt-4, gpt-3.5-turbo, the text-embedding-3 models.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's name, as OpenAI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }

    /// The encoding an OpenAI-family model uses, or `None` when the model
    /// is not one (or is unknown). A `provider/` prefix is ignored, and
    /// case too.
    pub fn for_model(model: &str) -> Option<Encoding> {
        let m = model_name(model);
        let is = |p: &str| m == p || m.starts_with(&format!("{p}-"));
        const O200K_PREFIXES: [&str; 6] = [
            "gpt-4o",
            "chatgpt-4o",
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "gpt-oss",
        ];
        if O200K_PREFIXES.iter().any(|p| m.starts_with(p))
            || ["o1", "o3", "o4-mini", "codex-mini"].iter().any(|p| is(p))
        {
            Some(Encoding::O200kBase)
        } else if is("gpt-4")
            || m.starts_with("gpt-3.5")
            || m.starts_with("gpt-35")
            || m.starts_with("text-embedding-3")
            || m == "text-embedding-ada-002"
        {
            Some(Encoding::Cl100kBase)
        } else {
            None
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

/// Exact token counts for an OpenAI encoding. The vocabulary is loaded
/// (from the binary, about 0.1 s in a release build) on the first count,
/// once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bpe {
    encoding: Encoding,
}

impl Bpe {
    /// Exact counts in `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        Bpe { encoding }
    }

    /// `o200k_base`.
    pub fn o200k_base() -> Self {
        Bpe::new(Encoding::O200kBase)
    }

    /// `cl100k_base`.
    pub fn cl100k_base() -> Self {
        Bpe::new(Encoding::Cl100kBase)
    }

    /// The encoding counted.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenEstimator for Bpe {
    fn name(&self) -> &str {
        self.encoding.name()
    }

    /// Tokens of `text` encoded as ordinary text: special-token markers
    /// such as `<|endoftext|>` in it count as the text they are, as the
    /// providers treat them in user content.
    fn count_text(&self, text: &str) -> usize {
        self.encoding.tokenizer().count(text)
    }
}

/// The estimator for `model`: the exact BPE for OpenAI-family models (see
/// [`Encoding::for_model`]), the [`Heuristic`] for everything else (Claude,
/// llama, qwen, … have no offline tokenizer; their estimate is corrected by
/// the usage the provider reports, see
/// [`CountCache::estimate_next_request`](crate::CountCache::estimate_next_request)).
pub fn for_model(model: &str) -> Box<dyn TokenEstimator> {
    match Encoding::for_model(model) {
        Some(e) => Box::new(Bpe::new(e)),
        None => Box::new(Heuristic::default()),
    }
}

/// `model` without its `provider/` prefix (everything up to the last `/`),
/// trimmed and in lower case: `openai/GPT-4o` → `gpt-4o`,
/// `meta-llama/Llama-3.1-8B-Instruct` → `llama-3.1-8b-instruct`.
pub fn model_name(model: &str) -> String {
    let m = model.trim();
    let m = m.rsplit_once('/').map_or(m, |(_, name)| name);
    m.to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::record::Body;

    #[test]
    fn openai_models_get_their_encoding() {
        for m in [
            "gpt-4o",
            "openai/gpt-4o-mini",
            "gpt-4o-2024-08-06",
            "chatgpt-4o-latest",
            "gpt-4.1-nano",
            "gpt-5",
            "gpt-5-mini",
            "o1",
            "o1-mini",
            "o3",
            "o3-mini",
            "o4-mini",
            "gpt-oss-20b",
        ] {
            assert_eq!(Encoding::for_model(m), Some(Encoding::O200kBase), "{m}");
            assert_eq!(for_model(m).name(), "o200k_base", "{m}");
        }
        for m in [
            "gpt-4",
            "gpt-4-turbo",
            "gpt-4-0613",
            "gpt-3.5-turbo",
            "azure/gpt-35-turbo",
        ] {
            assert_eq!(Encoding::for_model(m), Some(Encoding::Cl100kBase), "{m}");
        }
        for m in [
            "claude-sonnet-4-5",
            "anthropic/claude-3-5-haiku-latest",
            "llama3.1:8b",
            "qwen2.5-coder",
            "SmolLM2-135M-Instruct",
            "o1x",
            "",
        ] {
            assert_eq!(Encoding::for_model(m), None, "{m}");
            assert_eq!(for_model(m).name(), "heuristic", "{m}");
        }
    }

    #[test]
    fn heuristic_is_chars_over_four_rounded_up() {
        let h = Heuristic::default();
        assert_eq!(h.count_text(""), 0);
        assert_eq!(h.count_text("abc"), 1);
        assert_eq!(h.count_text("abcd"), 1);
        assert_eq!(h.count_text("abcde"), 2);
        // Characters, not bytes.
        assert_eq!(h.count_text("ééééé"), 2);
        let r = Record::new(
            0,
            "t",
            Body::User {
                content: "abcde".into(),
                author: None,
            },
        );
        assert_eq!(h.record_tokens(&r), 2 + BLOCK_OVERHEAD);
        assert_eq!(
            Heuristic::with_chars_per_token(f64::NAN).name(),
            "heuristic"
        );
        assert_eq!(Heuristic::with_chars_per_token(2.0).count_text("abcde"), 3);
    }

    #[test]
    fn records_count_what_the_model_sees() {
        let h = Heuristic::default();
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
        assert_eq!(h.record_tokens(&call), 1 + 4 + 4);
        assert_eq!(h.record_tokens(&Record::new(1, "t", Body::TurnStart)), 0);
        let bpe = Bpe::o200k_base();
        assert_eq!(bpe.count_text("hello world"), 2);
        assert_eq!(Bpe::cl100k_base().count_text("hello world"), 2);
    }

    #[test]
    fn schemas_count_their_json_text() {
        let h = Heuristic::default();
        assert_eq!(h.schema_tokens(&Value::Null), 0);
        assert_eq!(h.schema_tokens(&serde_json::json!([])), 0);
        let tools = serde_json::json!([{"name": "read", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]);
        let text = tools.to_string();
        assert_eq!(h.schema_tokens(&tools), text.chars().count().div_ceil(4));
        assert!(Bpe::o200k_base().schema_tokens(&tools) > 10);
    }

    #[test]
    fn model_name_drops_the_provider_and_case() {
        assert_eq!(model_name("openai/GPT-4o"), "gpt-4o");
        assert_eq!(model_name(" ollama/llama3.1:8b "), "llama3.1:8b");
        assert_eq!(model_name("claude-opus-4"), "claude-opus-4");
    }
}
