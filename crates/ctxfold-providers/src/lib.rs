//! Model providers for ctxfold: OpenAI-compatible chat completions (OpenAI,
//! Ollama, llama.cpp server, vLLM, OpenRouter, …) and Anthropic messages,
//! as thin adapters over a blocking HTTP client (SPEC §10).
//!
//! Typed SDKs drop fields they do not know; here every response is kept as
//! raw JSON ([`ChatResponse::raw`]) beside the parts ctxfold understands.
//!
//! The pieces, one concept a file:
//!
//! | module | what |
//! | --- | --- |
//! | [`model`] | `provider/model` names, provider config and the built-in providers |
//! | [`registry`] | [`Providers`]: the known providers by name, and the [`Provider`] a `provider/model` name resolves to |
//! | [`part`] | [`Part`], a piece of a message, the same in a request and an answer |
//! | [`request`] | the neutral [`ChatRequest`], and [`request_from_view`]: a projected view as a request |
//! | [`openai`], [`anthropic`] | the neutral request as each wire format, and their responses and streams |
//! | [`response`] | [`ChatResponse`], usage, stream events, and the records a response becomes |
//! | `stream` (private), [`wire`] | a streamed answer as it is read; answers read by the reader of their API |
//! | [`provider`] | [`Provider`]: one call to a model, and its context window |
//! | [`error`] | [`ProviderError`]: what went wrong, classified (context overflow included) |
//! | [`redact`] | keys kept out of errors and summaries, whatever the upstream echoes |
//! | `client` (private), [`sse`] | HTTP with timeouts and retries; server-sent events |
//!
//! Everything is blocking: there is no async runtime in the API.
//!
//! ```no_run
//! use ctxfold_core::{Log, projection::project};
//! use ctxfold_providers::{ChatRequest, Providers, StreamEvent, request_from_view};
//!
//! # fn run(log: &Log) -> Result<(), ctxfold_providers::ProviderError> {
//! let providers = Providers::builtin();
//! let (provider, model) = providers.resolve("anthropic/claude-sonnet-4-5")?;
//! let view = project(log);
//! let request = request_from_view(log, &view, &ChatRequest::new(model));
//! let mut print = |e: StreamEvent| if let StreamEvent::Text(t) = e { print!("{t}") };
//! let response = provider.chat(&request, Some(&mut print))?;
//! let records = response.to_records("2026-01-01T00:00:00Z"); // to append to the log
//! # let _ = records; Ok(()) }
//! ```

pub mod anthropic;
mod client;
pub mod error;
pub mod model;
pub mod openai;
pub mod part;
pub mod provider;
pub mod redact;
pub mod registry;
pub mod request;
pub mod response;
pub mod sse;
mod stream;
pub mod summarizer;
pub mod wire;

pub use error::ProviderError;
pub use model::{ModelName, ProviderConfig, ProviderKind, ProviderSettings, WindowSource};
pub use part::Part;
pub use provider::Provider;
pub use registry::Providers;
pub use request::{ChatRequest, Message, Role, ToolSpec, push_body, request_from_view};
pub use response::{ChatResponse, StopReason, StreamEvent, Usage};
pub use summarizer::ModelSummarizer;
