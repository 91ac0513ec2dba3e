//! [`Providers`]: the providers known by name, the built-in ones with
//! config's `[providers.NAME]` tables laid over them, and the
//! [`Provider`] a `provider/model` name resolves to. Above both the
//! configuration ([`crate::model`]) and the provider it builds, so that
//! configuration never imports the provider.

use std::collections::BTreeMap;

use crate::error::ProviderError;
use crate::model::{BUILTIN, ModelName, ProviderConfig, ProviderSettings, builtin};
use crate::provider::Provider;

/// The known providers: the built-in ones with config laid over them.
#[derive(Debug, Clone, PartialEq)]
pub struct Providers {
    map: BTreeMap<String, ProviderConfig>,
}

impl Default for Providers {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Providers {
    /// The built-in providers only.
    pub fn builtin() -> Self {
        Providers {
            map: BUILTIN
                .iter()
                .filter_map(|n| Some((n.to_string(), builtin(n)?)))
                .collect(),
        }
    }

    /// The built-in providers with `settings` (config's `[providers.NAME]`
    /// tables) laid over them.
    pub fn with_settings(
        settings: &BTreeMap<String, ProviderSettings>,
    ) -> Result<Self, ProviderError> {
        let mut p = Self::builtin();
        for (name, s) in settings {
            let base = p.map.remove(name);
            let c = s.resolve(name, base)?;
            p.map.insert(name.clone(), c);
        }
        Ok(p)
    }

    /// Add or replace a provider.
    pub fn insert(&mut self, name: impl Into<String>, config: ProviderConfig) {
        self.map.insert(name.into(), config);
    }

    /// A provider's configuration.
    pub fn get(&self, name: &str) -> Option<&ProviderConfig> {
        self.map.get(name)
    }

    /// The known names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// The provider called `name`.
    pub fn provider(&self, name: &str) -> Result<Provider, ProviderError> {
        match self.map.get(name) {
            Some(c) => Ok(Provider::new(name, c.clone())),
            None => Err(ProviderError::UnknownProvider {
                name: name.to_owned(),
                known: self.names(),
            }),
        }
    }

    /// The environment variables that hold the providers' keys (what a
    /// tool run for the model must never see).
    pub fn key_variables(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .map
            .values()
            .filter_map(|c| c.api_key_env.clone())
            .filter(|e| !e.is_empty())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// The provider of `provider/model`, and the model's name for it.
    pub fn resolve(&self, name: &str) -> Result<(Provider, String), ProviderError> {
        let Some(m) = ModelName::parse(name) else {
            return Err(ProviderError::BadModelName {
                name: name.to_owned(),
                known: self.names(),
            });
        };
        Ok((self.provider(&m.provider)?, m.model))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ProviderKind, WindowSource};
    use serde::Deserialize;
    use std::time::Duration;

    #[test]
    fn unknown_provider_lists_the_known_ones() {
        let e = Providers::builtin().resolve("nope/x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown provider `nope`; known providers: anthropic, llamacpp, local, ollama, openai, openrouter, vllm"
        );
        let e = Providers::builtin().resolve("gpt-4o").unwrap_err();
        assert!(matches!(e, ProviderError::BadModelName { .. }), "{e}");
    }

    #[test]
    fn settings_override_builtins_field_by_field_and_add_new_names() {
        let toml_like = serde_json::json!({
            "ollama": {"base_url": "http://gpu-box:11434/v1", "timeout_secs": 5},
            "work": {"kind": "anthropic", "base_url": "https://llm.example/", "api_key_env": "WORK_KEY",
                     "headers": {"anthropic-beta": "x"}},
            "openai": {"api_key_env": ""}
        });
        let s: BTreeMap<String, ProviderSettings> = serde_json::from_value(toml_like).unwrap();
        let p = Providers::with_settings(&s).unwrap();
        let ollama = p.get("ollama").unwrap();
        assert_eq!(ollama.base_url, "http://gpu-box:11434/v1");
        assert_eq!(ollama.timeout, Duration::from_secs(5));
        assert_eq!(ollama.kind, ProviderKind::OpenAi, "kept from the built-in");
        assert_eq!(ollama.context_window_from, WindowSource::OllamaShow);
        let work = p.get("work").unwrap();
        assert_eq!(work.kind, ProviderKind::Anthropic);
        assert_eq!(work.api_key_env.as_deref(), Some("WORK_KEY"));
        assert_eq!(work.headers["anthropic-beta"], "x");
        assert_eq!(p.get("openai").unwrap().api_key_env, None);
    }

    #[test]
    fn settings_read_from_toml() {
        #[derive(Deserialize)]
        struct Config {
            providers: BTreeMap<String, ProviderSettings>,
        }
        let c: Config = toml::from_str(
            r#"
            [providers.work]
            kind = "openai"
            base_url = "https://llm.example.com/v1"
            api_key_env = "WORK_LLM_KEY"
            timeout_secs = 120
            retry_base_delay_ms = 50
            context_window_from = "models-list"
            headers = { "X-Title" = "ctxfold" }

            [providers.llamacpp]
            kind = "anthropic"
            base_url = "http://127.0.0.1:8080"
            "#,
        )
        .unwrap();
        let p = Providers::with_settings(&c.providers).unwrap();
        let work = p.get("work").unwrap();
        assert_eq!(work.timeout, Duration::from_secs(120));
        assert_eq!(work.retry_base_delay, Duration::from_millis(50));
        assert_eq!(work.context_window_from, WindowSource::ModelsList);
        assert_eq!(work.headers["X-Title"], "ctxfold");
        let llama = p.get("llamacpp").unwrap();
        assert_eq!(llama.kind, ProviderKind::Anthropic);
        assert_eq!(
            llama.context_window_from,
            WindowSource::LlamacppProps,
            "kept from the built-in"
        );
    }

    #[test]
    fn a_new_provider_needs_kind_and_base_url() {
        let s: BTreeMap<String, ProviderSettings> =
            serde_json::from_value(serde_json::json!({"mine": {"base_url": "http://x"}})).unwrap();
        let e = Providers::with_settings(&s).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("provider `mine`: `kind` is required"),
            "{e}"
        );
        let s: BTreeMap<String, ProviderSettings> = serde_json::from_value(
            serde_json::json!({"mine": {"kind": "openai", "base_url": "localhost:8080"}}),
        )
        .unwrap();
        let e = Providers::with_settings(&s).unwrap_err();
        assert!(e.to_string().contains("must start with http://"), "{e}");
    }
}
