//! Model names (`provider/model`) and provider configuration.
//!
//! A model is named `provider/model`, split at the first `/`: in
//! `openrouter/anthropic/claude-sonnet-4` the provider is `openrouter` and
//! the model `anthropic/claude-sonnet-4`.
//!
//! Built-in providers (each can be overridden field by field, and new names
//! added, by [`ProviderSettings`] in config):
//!
//! | name | kind | base URL | API key variable | context window from |
//! | --- | --- | --- | --- | --- |
//! | `openai` | openai | `https://api.openai.com/v1` | `OPENAI_API_KEY` | table |
//! | `anthropic` | anthropic | `https://api.anthropic.com` | `ANTHROPIC_API_KEY` | table |
//! | `ollama` | openai | `http://127.0.0.1:11434/v1` | none | `POST /api/show` |
//! | `llamacpp`, `local` | openai | `http://127.0.0.1:8080/v1` | none | `GET /props` |
//! | `vllm` | openai | `http://127.0.0.1:8000/v1` | none | `GET /v1/models` |
//! | `openrouter` | openai | `https://openrouter.ai/api/v1` | `OPENROUTER_API_KEY` | `GET /v1/models` |
//!
//! The base URL of an OpenAI-kind provider includes `/v1` (requests go to
//! `{base_url}/chat/completions`); that of an Anthropic-kind provider is the
//! server root (requests go to `{base_url}/v1/messages`; a base URL that
//! already ends in `/v1` is accepted). llama.cpp's server also speaks
//! Anthropic messages: `kind = "anthropic"`, `base_url =
//! "http://127.0.0.1:8080"`.
//!
//! Config, as TOML (every key optional for a built-in name; `kind` and
//! `base_url` required for a new one):
//!
//! ```toml
//! [providers.work]
//! kind = "openai"                 # or "anthropic"
//! base_url = "https://llm.example.com/v1"
//! api_key_env = "WORK_LLM_KEY"    # the variable that holds the key
//! timeout_secs = 300              # waiting for an answer, and between streamed bytes
//! connect_timeout_secs = 10
//! max_retries = 2                 # on 429 and 5xx
//! retry_base_delay_ms = 500       # doubled on each retry, or the server's retry-after
//! retry_max_delay_secs = 30
//! max_tokens = 4096               # default output limit (Anthropic requires one)
//! context_window_from = "models-list"  # "llamacpp-props", "ollama-show", "models-list", "none"
//! context_window = 32768          # when neither the server nor the built-in table knows
//! headers = { "X-Title" = "ctxfold" }
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI chat completions (`/v1/chat/completions`) and the servers that
    /// copy it.
    #[serde(alias = "openai-compatible", alias = "openai_compatible")]
    OpenAi,
    /// Anthropic messages (`/v1/messages`).
    Anthropic,
}

/// Where a provider says how large a model's context window is, before the
/// built-in table is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowSource {
    /// Nowhere: the built-in table only.
    #[default]
    None,
    /// llama.cpp server: `GET /props`, `default_generation_settings.n_ctx`.
    LlamacppProps,
    /// Ollama: `POST /api/show`, `num_ctx` from its parameters, else the
    /// model's `*.context_length`.
    OllamaShow,
    /// `GET {base_url}/models`, the entry whose `id` is the model:
    /// `max_model_len` (vLLM), `context_length` (OpenRouter) or
    /// `context_window`.
    ModelsList,
}

/// A provider's configuration, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// The protocol.
    pub kind: ProviderKind,
    /// Where the server is (see the module docs for what it includes).
    pub base_url: String,
    /// The environment variable holding the API key; `None` sends no key.
    pub api_key_env: Option<String>,
    /// A key given directly, for programs that hold one; wins over
    /// `api_key_env`. Config files should name a variable instead.
    pub api_key: Option<String>,
    /// How long to wait for the response to begin, and for each read of a
    /// streamed body.
    pub timeout: Duration,
    /// How long to wait for the connection.
    pub connect_timeout: Duration,
    /// Retries after a 429 or a 5xx (so `max_retries + 1` requests at most).
    pub max_retries: u32,
    /// First retry delay, doubled on each retry (a server's `retry-after`
    /// wins).
    pub retry_base_delay: Duration,
    /// Longest delay between two tries, `retry-after` included.
    pub retry_max_delay: Duration,
    /// Headers added to every request (they win over the defaults, e.g.
    /// `anthropic-version` or `anthropic-beta`).
    pub headers: BTreeMap<String, String>,
    /// Output limit sent when the request sets none (Anthropic requires one:
    /// [`crate::anthropic::DEFAULT_MAX_TOKENS`] when this is `None` too).
    pub max_tokens: Option<u32>,
    /// Where the context window is asked for.
    pub context_window_from: WindowSource,
    /// The window to assume when neither the server nor the built-in table
    /// knows the model's (SPEC §7: provider, then table, then config).
    pub context_window: Option<u32>,
}

/// Default [`ProviderConfig::timeout`]: generous, since a non-streamed
/// answer arrives only when the model is done.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Default [`ProviderConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ProviderConfig::max_retries`].
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// Default [`ProviderConfig::retry_base_delay`].
pub const DEFAULT_RETRY_BASE_DELAY: Duration = Duration::from_millis(500);
/// Default [`ProviderConfig::retry_max_delay`].
pub const DEFAULT_RETRY_MAX_DELAY: Duration = Duration::from_secs(30);

impl ProviderConfig {
    /// A provider of `kind` at `base_url`, with no key and the defaults.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>) -> Self {
        ProviderConfig {
            kind,
            base_url: base_url.into(),
            api_key_env: None,
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            retry_base_delay: DEFAULT_RETRY_BASE_DELAY,
            retry_max_delay: DEFAULT_RETRY_MAX_DELAY,
            headers: BTreeMap::new(),
            max_tokens: None,
            context_window_from: WindowSource::None,
            context_window: None,
        }
    }

    /// The same, with its key taken from `var`.
    pub fn with_key_env(mut self, var: &str) -> Self {
        self.api_key_env = Some(var.to_owned());
        self
    }

    /// The same, with its context window asked from `source`.
    pub fn with_window_from(mut self, source: WindowSource) -> Self {
        self.context_window_from = source;
        self
    }
}

/// The names of the built-in providers.
pub const BUILTIN: [&str; 7] = [
    "anthropic",
    "llamacpp",
    "local",
    "ollama",
    "openai",
    "openrouter",
    "vllm",
];

/// The configuration of a built-in provider.
pub fn builtin(name: &str) -> Option<ProviderConfig> {
    use ProviderKind::{Anthropic, OpenAi};
    Some(match name {
        "openai" => {
            ProviderConfig::new(OpenAi, "https://api.openai.com/v1").with_key_env("OPENAI_API_KEY")
        }
        "anthropic" => ProviderConfig::new(Anthropic, "https://api.anthropic.com")
            .with_key_env("ANTHROPIC_API_KEY"),
        "ollama" => ProviderConfig::new(OpenAi, "http://127.0.0.1:11434/v1")
            .with_window_from(WindowSource::OllamaShow),
        "llamacpp" | "local" => ProviderConfig::new(OpenAi, "http://127.0.0.1:8080/v1")
            .with_window_from(WindowSource::LlamacppProps),
        "vllm" => ProviderConfig::new(OpenAi, "http://127.0.0.1:8000/v1")
            .with_window_from(WindowSource::ModelsList),
        "openrouter" => ProviderConfig::new(OpenAi, "https://openrouter.ai/api/v1")
            .with_key_env("OPENROUTER_API_KEY")
            .with_window_from(WindowSource::ModelsList),
        _ => return None,
    })
}

/// A provider's entry in config: every field optional, laid over the
/// built-in provider of the same name (or required, for `kind` and
/// `base_url`, when there is none). See the module docs for the keys.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    /// See [`ProviderConfig::kind`].
    pub kind: Option<ProviderKind>,
    /// See [`ProviderConfig::base_url`].
    pub base_url: Option<String>,
    /// See [`ProviderConfig::api_key_env`]. An empty string removes a
    /// built-in variable (a local server that needs no key).
    pub api_key_env: Option<String>,
    /// See [`ProviderConfig::timeout`], in seconds.
    pub timeout_secs: Option<f64>,
    /// See [`ProviderConfig::connect_timeout`], in seconds.
    pub connect_timeout_secs: Option<f64>,
    /// See [`ProviderConfig::max_retries`].
    pub max_retries: Option<u32>,
    /// See [`ProviderConfig::retry_base_delay`], in milliseconds.
    pub retry_base_delay_ms: Option<u64>,
    /// See [`ProviderConfig::retry_max_delay`], in seconds.
    pub retry_max_delay_secs: Option<f64>,
    /// See [`ProviderConfig::headers`]; merged over the built-in ones.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// See [`ProviderConfig::max_tokens`].
    pub max_tokens: Option<u32>,
    /// See [`ProviderConfig::context_window_from`].
    pub context_window_from: Option<WindowSource>,
    /// See [`ProviderConfig::context_window`].
    pub context_window: Option<u32>,
}

fn duration(provider: &str, key: &str, secs: f64) -> Result<Duration, ProviderError> {
    Duration::try_from_secs_f64(secs).map_err(|_| ProviderError::Config {
        provider: provider.to_owned(),
        message: format!("`{key}` must be a non-negative number of seconds, not {secs}"),
    })
}

impl ProviderSettings {
    /// The keys of a `[providers.NAME]` table, each with what it takes (for
    /// error messages; a test keeps the list equal to the fields).
    pub const KEYS: &[(&str, &str)] = &[
        ("kind", "\"openai\" or \"anthropic\""),
        (
            "base_url",
            "a URL that starts with http:// or https:// (a string)",
        ),
        (
            "api_key_env",
            "the name of an environment variable (a string; \"\" for none)",
        ),
        ("timeout_secs", "a number of seconds >= 0"),
        ("connect_timeout_secs", "a number of seconds >= 0"),
        ("max_retries", "a whole number >= 0"),
        ("retry_base_delay_ms", "a whole number of milliseconds >= 0"),
        ("retry_max_delay_secs", "a number of seconds >= 0"),
        (
            "headers",
            "a table of header names to strings ({ \"X-Title\" = \"ctxfold\" })",
        ),
        ("max_tokens", "a whole number of tokens >= 0"),
        (
            "context_window_from",
            "one of \"llamacpp-props\", \"ollama-show\", \"models-list\", \"none\"",
        ),
        ("context_window", "a whole number of tokens >= 0"),
    ];

    /// The key names of [`ProviderSettings::KEYS`].
    pub fn key_names() -> Vec<&'static str> {
        Self::KEYS.iter().map(|(k, _)| *k).collect()
    }

    /// These settings laid over `base` (the built-in provider of that name,
    /// if any) for the provider `name`.
    pub fn resolve(
        &self,
        name: &str,
        base: Option<ProviderConfig>,
    ) -> Result<ProviderConfig, ProviderError> {
        let missing = |key: &str| ProviderError::Config {
            provider: name.to_owned(),
            message: format!(
                "`{key}` is required for a provider that is not built in ({})",
                BUILTIN.join(", ")
            ),
        };
        let mut c = match base {
            Some(c) => c,
            None => ProviderConfig::new(
                self.kind.ok_or_else(|| missing("kind"))?,
                self.base_url.clone().ok_or_else(|| missing("base_url"))?,
            ),
        };
        if let Some(k) = self.kind {
            c.kind = k;
        }
        if let Some(u) = &self.base_url {
            c.base_url = u.clone();
        }
        if !(c.base_url.starts_with("http://") || c.base_url.starts_with("https://")) {
            return Err(ProviderError::Config {
                provider: name.to_owned(),
                message: format!(
                    "`base_url` must start with http:// or https://, not `{}`",
                    c.base_url
                ),
            });
        }
        if let Some(v) = &self.api_key_env {
            c.api_key_env = (!v.is_empty()).then(|| v.clone());
        }
        if let Some(s) = self.timeout_secs {
            c.timeout = duration(name, "timeout_secs", s)?;
        }
        if let Some(s) = self.connect_timeout_secs {
            c.connect_timeout = duration(name, "connect_timeout_secs", s)?;
        }
        if let Some(n) = self.max_retries {
            c.max_retries = n;
        }
        if let Some(ms) = self.retry_base_delay_ms {
            c.retry_base_delay = Duration::from_millis(ms);
        }
        if let Some(s) = self.retry_max_delay_secs {
            c.retry_max_delay = duration(name, "retry_max_delay_secs", s)?;
        }
        c.headers
            .extend(self.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        if self.max_tokens.is_some() {
            c.max_tokens = self.max_tokens;
        }
        if let Some(w) = self.context_window_from {
            c.context_window_from = w;
        }
        if self.context_window.is_some() {
            c.context_window = self.context_window;
        }
        Ok(c)
    }
}

/// A model name split into its provider and the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelName {
    /// The provider's name.
    pub provider: String,
    /// The model, as the provider names it (may hold `/`).
    pub model: String,
}

impl ModelName {
    /// Split `provider/model` at the first `/`; `None` when either side is
    /// empty.
    pub fn parse(name: &str) -> Option<ModelName> {
        let (provider, model) = name.split_once('/')?;
        (!provider.is_empty() && !model.is_empty()).then(|| ModelName {
            provider: provider.to_owned(),
            model: model.to_owned(),
        })
    }
}

impl std::fmt::Display for ModelName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_split_at_the_first_slash() {
        let m = ModelName::parse("openrouter/anthropic/claude-sonnet-4").unwrap();
        assert_eq!(m.provider, "openrouter");
        assert_eq!(m.model, "anthropic/claude-sonnet-4");
        assert_eq!(m.to_string(), "openrouter/anthropic/claude-sonnet-4");
        assert!(ModelName::parse("gpt-4o").is_none());
        assert!(ModelName::parse("/gpt-4o").is_none());
        assert!(ModelName::parse("openai/").is_none());
    }

    #[test]
    fn the_key_list_is_the_field_list() {
        let all = ProviderSettings {
            kind: Some(ProviderKind::OpenAi),
            base_url: Some("http://x".into()),
            api_key_env: Some("K".into()),
            timeout_secs: Some(1.0),
            connect_timeout_secs: Some(1.0),
            max_retries: Some(1),
            retry_base_delay_ms: Some(1),
            retry_max_delay_secs: Some(1.0),
            headers: BTreeMap::from([("a".to_owned(), "b".to_owned())]),
            max_tokens: Some(1),
            context_window_from: Some(WindowSource::None),
            context_window: Some(1),
        };
        let v = serde_json::to_value(&all).unwrap();
        let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut keys = ProviderSettings::key_names();
        fields.sort_unstable();
        keys.sort_unstable();
        assert_eq!(fields, keys);
    }
}
