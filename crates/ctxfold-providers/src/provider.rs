//! [`Provider`]: one configured provider, able to call a model and to say
//! how large a model's context window is.
//!
//! # Keys and headers
//!
//! The key is [`ProviderConfig::api_key`], else the variable
//! [`ProviderConfig::api_key_env`] (unset or empty: [`ProviderError::MissingKey`]),
//! else none. OpenAI-kind providers send it as `Authorization: Bearer KEY`,
//! Anthropic-kind ones as `x-api-key` with `anthropic-version`
//! ([`crate::anthropic::VERSION`]). Config's headers are sent last and win.
//!
//! # Keys in what comes back
//!
//! Every error [`Provider::chat`] and [`Provider::context_window`] return
//! has the key (and credential headers) replaced by
//! [`REDACTED`](crate::redact::REDACTED), whatever the upstream echoed; so
//! do the summaries of [`ModelSummarizer`](crate::ModelSummarizer). A
//! caller that prints or stores other upstream text passes it through
//! [`Provider::redact`].
//!
//! # Streams
//!
//! With a callback the request asks for a stream; the callback sees text and
//! reasoning as they arrive and the result is the response a non-streamed
//! call gives. A server that ignores `stream` and answers with one JSON body
//! is read as such (its text passed to the callback in one piece); an error
//! object in a 200 body is classified like an HTTP error.
//!
//! # Context windows
//!
//! [`Provider::context_window`] asks the server where
//! [`ProviderConfig::context_window_from`] says it can, then the built-in
//! table ([`ctxfold_tokens::context_window`]). A server that cannot answer that question (an
//! error status, no such field, no API key to ask with) falls through to the
//! table; one that cannot be reached at all (or times out) is an error.
//! `None` means unknown.

use std::io::{BufRead, BufReader, Read};

use ctxfold_wire::RequestBody;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::anthropic;
use crate::client::{Call, Http};
use crate::error::{self, ErrorContext, ProviderError};
use crate::model::{ProviderConfig, ProviderKind, WindowSource};
use crate::openai;
use crate::part::Part;
use crate::redact::{Secrets, is_credential_header};
use crate::request::ChatRequest;
use crate::response::{ChatResponse, StreamEvent};
use crate::stream::Stream;
use crate::wire;

/// A configured provider.
#[derive(Debug, Clone)]
pub struct Provider {
    name: String,
    config: ProviderConfig,
    http: Http,
}

impl Provider {
    /// The provider `name` configured by `config`.
    pub fn new(name: impl Into<String>, config: ProviderConfig) -> Self {
        let http = Http::new(&config);
        Provider {
            name: name.into(),
            config,
            http,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its configuration.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    fn base(&self) -> &str {
        self.config.base_url.trim_end_matches('/')
    }

    /// The server root: the base URL without a trailing `/v1`.
    fn root(&self) -> &str {
        let b = self.base();
        b.strip_suffix("/v1").unwrap_or(b)
    }

    /// Where chat requests go.
    pub fn chat_url(&self) -> String {
        match self.config.kind {
            ProviderKind::OpenAi => format!("{}/chat/completions", self.base()),
            ProviderKind::Anthropic => format!("{}/v1/messages", self.root()),
        }
    }

    fn key(&self) -> Result<Option<String>, ProviderError> {
        if let Some(k) = &self.config.api_key {
            return Ok(Some(k.clone()));
        }
        let Some(var) = &self.config.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(k) if !k.trim().is_empty() => Ok(Some(k.trim().to_owned())),
            _ => Err(ProviderError::MissingKey {
                provider: self.name.clone(),
                var: var.clone(),
            }),
        }
    }

    /// What this provider sends that must not come back out: the key
    /// (whether or not its variable is set now) and the values of
    /// configured credential headers, whole and without their scheme
    /// (`Bearer`, `bearer`, `Basic`, `Token`, …: whatever comes before the
    /// first space), since an upstream may quote the credential alone.
    fn secrets(&self) -> Secrets {
        let key = self.config.api_key.clone().or_else(|| {
            let var = self.config.api_key_env.as_ref()?;
            std::env::var(var).ok()
        });
        let headers = self
            .config
            .headers
            .iter()
            .filter(|(k, _)| is_credential_header(k))
            .flat_map(|(_, v)| {
                let bare = v
                    .trim()
                    .split_once(char::is_whitespace)
                    .map(|(_, credential)| credential.trim().to_owned());
                [Some(v.clone()), bare]
            })
            .flatten();
        Secrets::new(key.into_iter().chain(headers))
    }

    /// `text` with this provider's key (and credential headers) replaced
    /// by [`REDACTED`](crate::redact::REDACTED): for upstream text a caller
    /// prints or stores.
    pub fn redact(&self, text: &str) -> String {
        self.secrets().text(text)
    }

    fn headers(&self) -> Result<Vec<(String, String)>, ProviderError> {
        let key = self.key()?;
        let mut h: Vec<(String, String)> = Vec::new();
        match self.config.kind {
            ProviderKind::OpenAi => {
                if let Some(k) = key {
                    h.push(("authorization".into(), format!("Bearer {k}")));
                }
            }
            ProviderKind::Anthropic => {
                if let Some(k) = key {
                    h.push(("x-api-key".into(), k));
                }
                h.push((anthropic::VERSION_HEADER.into(), anthropic::VERSION.into()));
            }
        }
        for (k, v) in &self.config.headers {
            h.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            h.push((k.clone(), v.clone()));
        }
        Ok(h)
    }

    fn ctx<'a>(&'a self, model: &'a str) -> ErrorContext<'a> {
        ErrorContext {
            model,
            key_var: if self.config.api_key.is_some() {
                None
            } else {
                self.config.api_key_env.as_deref()
            },
        }
    }

    /// Call the model. With `stream`, the answer is streamed and `stream`
    /// sees its text and reasoning as they come (see the module docs). An
    /// error never holds the key (see the module docs).
    pub fn chat(
        &self,
        req: &ChatRequest,
        stream: Option<&mut dyn FnMut(StreamEvent)>,
    ) -> Result<ChatResponse, ProviderError> {
        self.chat_unredacted(req, stream)
            .map_err(|e| self.secrets().error(e))
    }

    /// The bytes of `body`, the configured output limit set where the
    /// request sets none.
    fn payload<M: Serialize>(&self, mut body: RequestBody<M>, req: &ChatRequest) -> Vec<u8> {
        if req.max_tokens.is_none()
            && let Some(n) = self.config.max_tokens
            && !req.extra.contains_key("max_tokens")
        {
            body.head_mut().insert("max_tokens".into(), n.into());
        }
        // Typed messages and string keys: nothing here fails to serialize.
        serde_json::to_vec(&body).unwrap_or_default()
    }

    fn chat_unredacted(
        &self,
        req: &ChatRequest,
        stream: Option<&mut dyn FnMut(StreamEvent)>,
    ) -> Result<ChatResponse, ProviderError> {
        let kind = self.config.kind;
        let body = match kind {
            ProviderKind::OpenAi => self.payload(openai::body(req, stream.is_some()), req),
            ProviderKind::Anthropic => self.payload(anthropic::body(req, stream.is_some()), req),
        };
        let url = self.chat_url();
        let headers = self.headers()?;
        let ctx = self.ctx(&req.model);
        let resp = self.http.send(&Call {
            url: &url,
            headers: &headers,
            body: Some(&body),
            ctx,
        })?;
        let label = format!("{}/{}", self.name, req.model);
        let parse = |raw: Value| wire::answer(kind, raw, &label, &ctx);
        let Some(on) = stream else {
            return parse(self.http.read_json(resp, &url)?);
        };
        let io_error = |e: std::io::Error| self.http.read_error(e, &url);
        let mut reader = BufReader::new(resp.into_body().into_reader());
        if starts_with_brace(&mut reader).map_err(io_error)? {
            // Not a stream: one JSON body (an error, or a whole answer).
            let mut text = String::new();
            reader.read_to_string(&mut text).map_err(io_error)?;
            let raw: Value = serde_json::from_str(&text).map_err(|e| ProviderError::Malformed {
                detail: format!(
                    "asked {url} for a stream; the answer is neither a stream nor JSON ({e}): {}",
                    error::quote(&text)
                ),
            })?;
            let response = parse(raw)?;
            for p in &response.parts {
                match p {
                    Part::Text(t) => on(StreamEvent::Text(t.clone())),
                    Part::Reasoning { text, .. } => on(StreamEvent::Reasoning(text.clone())),
                    Part::ToolCall { id, name, .. } => on(StreamEvent::ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                    }),
                    Part::ToolResult { .. } => {}
                }
            }
            return Ok(response);
        }
        let stream = Stream::new(reader, on, &ctx, &io_error, false);
        wire::streamed(kind, stream, &label)
    }

    /// The context window of `model` in tokens: from the server where it
    /// says, else from the built-in table; `None` when unknown (see the
    /// module docs).
    pub fn context_window(&self, model: &str) -> Result<Option<u32>, ProviderError> {
        let asked = self
            .window_from_server(model)
            .map_err(|e| self.secrets().error(e));
        if let Some(n) = asked? {
            return Ok(Some(n));
        }
        Ok(ctxfold_tokens::context_window(model).or(self.config.context_window))
    }

    fn window_from_server(&self, model: &str) -> Result<Option<u32>, ProviderError> {
        let request = json!({ "model": model }).to_string().into_bytes();
        let (url, body) = match self.config.context_window_from {
            WindowSource::None => return Ok(None),
            WindowSource::LlamacppProps => (format!("{}/props", self.root()), None),
            WindowSource::OllamaShow => (format!("{}/api/show", self.root()), Some(&request[..])),
            WindowSource::ModelsList => (format!("{}/models", self.base()), None),
        };
        // Without a key the server cannot be asked; the table still can.
        let Ok(headers) = self.headers() else {
            return Ok(None);
        };
        let sent = self.http.send(&Call {
            url: &url,
            headers: &headers,
            body,
            ctx: self.ctx(model),
        });
        let resp = match sent {
            Ok(r) => r,
            Err(e @ (ProviderError::Unreachable { .. } | ProviderError::Timeout { .. })) => {
                return Err(e);
            }
            Err(_) => return Ok(None),
        };
        let v = match self.http.read_json(resp, &url) {
            Ok(v) => v,
            Err(ProviderError::Malformed { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(match self.config.context_window_from {
            WindowSource::None => None,
            WindowSource::LlamacppProps => Props::deserialize(&v).ok().and_then(|p| {
                p.default_generation_settings
                    .and_then(|g| as_u32(g.n_ctx))
                    .or_else(|| as_u32(p.n_ctx))
            }),
            WindowSource::OllamaShow => Show::deserialize(&v).ok().and_then(|show| {
                ollama_num_ctx(show.parameters.as_deref()).or_else(|| {
                    show.model_info?
                        .into_iter()
                        .find(|(k, _)| k.ends_with(".context_length"))
                        .and_then(|(_, n)| as_u32(Some(n)))
                })
            }),
            WindowSource::ModelsList => Models::deserialize(&v).ok().and_then(|list| {
                let m = list.data.into_iter().find(|m| m.id == model)?;
                [m.max_model_len, m.context_length, m.context_window]
                    .into_iter()
                    .find_map(as_u32)
            }),
        })
    }
}

/// A count a server reports, if it is one and above 0.
fn as_u32(v: Option<Value>) -> Option<u32> {
    v.as_ref()
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0)
}

/// llama.cpp's `/props`: the window is `n_ctx` of the default generation
/// settings (older servers: at the top).
#[derive(Deserialize)]
struct Props {
    default_generation_settings: Option<GenerationSettings>,
    n_ctx: Option<Value>,
}

/// `default_generation_settings` of llama.cpp's `/props`.
#[derive(Deserialize)]
struct GenerationSettings {
    n_ctx: Option<Value>,
}

/// Ollama's `/api/show`: the window in `parameters` (`num_ctx`), else the
/// model's own (`model_info`'s `<architecture>.context_length`).
#[derive(Deserialize)]
struct Show {
    parameters: Option<String>,
    model_info: Option<serde_json::Map<String, Value>>,
}

/// An OpenAI-style `/models` list.
#[derive(Deserialize)]
struct Models {
    data: Vec<ModelEntry>,
}

/// A model of a `/models` list, with the window as the servers that give
/// one name it (vLLM, OpenRouter, others).
#[derive(Deserialize)]
struct ModelEntry {
    id: String,
    max_model_len: Option<Value>,
    context_length: Option<Value>,
    context_window: Option<Value>,
}

/// `num_ctx` from Ollama's `parameters` text (the window the server will
/// really use: Ollama cuts the prompt to it silently).
fn ollama_num_ctx(parameters: Option<&str>) -> Option<u32> {
    parameters?.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next()? == "num_ctx").then(|| w.next()?.parse().ok())?
    })
}

/// Whether the body begins (after white space) with `{`: a JSON body rather
/// than a stream. White space before it is consumed.
fn starts_with_brace(r: &mut impl BufRead) -> std::io::Result<bool> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => return Ok(buf[i] == b'{'),
            None => {
                let n = buf.len();
                r.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_urls_of_each_kind() {
        let p = Provider::new(
            "x",
            ProviderConfig::new(ProviderKind::OpenAi, "http://h:1/v1/"),
        );
        assert_eq!(p.chat_url(), "http://h:1/v1/chat/completions");
        let a = Provider::new(
            "y",
            ProviderConfig::new(ProviderKind::Anthropic, "http://h:1"),
        );
        assert_eq!(a.chat_url(), "http://h:1/v1/messages");
        let a = Provider::new(
            "y",
            ProviderConfig::new(ProviderKind::Anthropic, "http://h:1/v1"),
        );
        assert_eq!(a.chat_url(), "http://h:1/v1/messages");
    }

    #[test]
    fn ollama_parameters() {
        let v = "stop \"<|eot|>\"\nnum_ctx                        8192\n";
        assert_eq!(ollama_num_ctx(Some(v)), Some(8192));
        assert_eq!(ollama_num_ctx(Some("temperature 0.7")), None);
    }

    #[test]
    fn config_headers_win_and_a_missing_key_is_named() {
        let mut c = ProviderConfig::new(ProviderKind::Anthropic, "http://h:1");
        c.api_key = Some("k".into());
        c.headers
            .insert("Anthropic-Version".into(), "2099-01-01".into());
        let h = Provider::new("a", c).headers().unwrap();
        assert!(h.contains(&("x-api-key".into(), "k".into())));
        assert!(h.contains(&("Anthropic-Version".into(), "2099-01-01".into())));
        assert_eq!(
            h.iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("anthropic-version"))
                .count(),
            1
        );

        let c = ProviderConfig::new(ProviderKind::OpenAi, "http://h:1")
            .with_key_env("CTXFOLD_TEST_UNSET_VARIABLE_7F3A");
        let e = Provider::new("openai", c).headers().unwrap_err();
        assert_eq!(
            e.to_string(),
            "no API key for provider `openai`: set the environment variable CTXFOLD_TEST_UNSET_VARIABLE_7F3A"
        );
    }
}
