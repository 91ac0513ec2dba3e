//! [`ProviderError`]: what can go wrong talking to a model, classified so a
//! caller can react (a context overflow triggers a compaction and a retry,
//! SPEC §10; a bad key is the user's to fix; a 429 was already retried).
//!
//! Classification of an HTTP error (status and body), in this order:
//!
//! 1. Context overflow, whatever the status: OpenAI's code
//!    `context_length_exceeded`, llama.cpp's type `exceed_context_size_error`,
//!    HTTP 413, or a message that says so ("maximum context length",
//!    "context window", "context length", "too many tokens", "prompt is too
//!    long" (Anthropic), "exceeds the available context size" and "the
//!    request exceeds" (llama.cpp), "input is too long", "reduce the length").
//! 2. 401 and 403: a bad or missing API key ([`ProviderError::Auth`]).
//! 3. 404, or a message or code that says the model does not exist
//!    ([`ProviderError::UnknownModel`]).
//! 4. 429: rate limited (only after the retries ran out, or at once when the
//!    account has no quota left).
//! 5. 5xx: a server error (after the retries).
//! 6. Any other status: the request was rejected ([`ProviderError::Rejected`]).
//!
//! The message is taken from the JSON error body where there is one
//! (`error.message`, `error` as a string, a top-level `message` or `detail`),
//! else from the body's text, cut to a readable length.

use std::time::Duration;

use ctxfold_wire::error::{Detail, Reported};
use serde::Deserialize;
use serde_json::Value;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider name is neither built in nor configured.
    #[error("unknown provider `{name}`; known providers: {}", .known.join(", "))]
    UnknownProvider {
        /// The name asked for.
        name: String,
        /// The names that are known.
        known: Vec<String>,
    },
    /// A model name without its provider.
    #[error(
        "`{name}` is not a model name: write `provider/model`, e.g. `openai/gpt-4o` (known providers: {})",
        .known.join(", ")
    )]
    BadModelName {
        /// What was given.
        name: String,
        /// The provider names that are known.
        known: Vec<String>,
    },
    /// A provider's configuration cannot be used.
    #[error("provider `{provider}`: {message}")]
    Config {
        /// The provider's name.
        provider: String,
        /// What is wrong.
        message: String,
    },
    /// The API key's environment variable is unset or empty.
    #[error("no API key for provider `{provider}`: set the environment variable {var}")]
    MissingKey {
        /// The provider's name.
        provider: String,
        /// The variable that should hold the key.
        var: String,
    },
    /// The server could not be reached, or the connection broke.
    #[error("cannot reach {url}: {source}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What the network layer said.
        #[source]
        source: std::io::Error,
    },
    /// The server did not answer in time.
    #[error("{url} did not answer within {}", secs(.after))]
    Timeout {
        /// The URL asked.
        url: String,
        /// The timeout that ran out.
        after: Duration,
    },
    /// The server refused the API key (401 or 403).
    #[error("authentication failed (HTTP {status}): bad or missing API key{}: {message}", key_hint(.key_var))]
    Auth {
        /// 401 or 403.
        status: u16,
        /// The variable the key came from, if any.
        key_var: Option<String>,
        /// What the server said.
        message: String,
    },
    /// The server does not know the model.
    #[error("unknown model `{model}`: {message}")]
    UnknownModel {
        /// The model asked for (without the provider).
        model: String,
        /// What the server said.
        message: String,
    },
    /// The request does not fit the model's context window. Recognized so a
    /// caller can compact and retry.
    #[error("the request does not fit the model's context window: {message}")]
    ContextOverflow {
        /// What the server said.
        message: String,
    },
    /// Still rate limited (429) after the retries.
    #[error("rate limited (HTTP 429) after {attempts} attempt(s): {message}")]
    RateLimited {
        /// How many requests were made.
        attempts: u32,
        /// What the server said.
        message: String,
    },
    /// The server failed (5xx), after the retries.
    #[error("server error (HTTP {status}) after {attempts} attempt(s): {message}")]
    Server {
        /// The last status.
        status: u16,
        /// How many requests were made.
        attempts: u32,
        /// What the server said.
        message: String,
    },
    /// The server rejected the request (another 4xx).
    #[error("request rejected (HTTP {status}): {message}")]
    Rejected {
        /// The status.
        status: u16,
        /// What the server said.
        message: String,
    },
    /// The response (or stream) is not what the protocol says.
    #[error("malformed response: {detail}")]
    Malformed {
        /// What was malformed, and where.
        detail: String,
    },
}

impl ProviderError {
    /// Whether this is a context overflow: the caller may compact and retry.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, ProviderError::ContextOverflow { .. })
    }
}

fn secs(d: &Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn key_hint(var: &Option<String>) -> String {
    match var {
        Some(v) => format!(" in ${v}"),
        None => String::new(),
    }
}

/// What classification needs to know about the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    /// The model asked for, without the provider.
    pub model: &'a str,
    /// The variable the key came from.
    pub key_var: Option<&'a str>,
}

/// The message, code and type of an error body.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Details {
    pub message: String,
    pub code: Option<String>,
    pub kind: Option<String>,
}

/// Longest piece of a non-JSON body quoted in a message.
const QUOTE_CHARS: usize = 300;

/// `text` cut to [`QUOTE_CHARS`] characters.
pub(crate) fn quote(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= QUOTE_CHARS {
        t.to_owned()
    } else {
        let cut: String = t.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    }
}

fn as_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The details of an error read (see [`Reported`]'s shapes): `None` when
/// it says nothing readable.
pub(crate) fn details_of(r: &Reported) -> Option<Details> {
    match &r.error {
        Some(e @ Value::Object(_)) => {
            let d = Detail::deserialize(e).unwrap_or_default();
            return Some(Details {
                message: as_text(d.message.as_ref()).unwrap_or_else(|| e.to_string()),
                code: as_text(d.code.as_ref()),
                kind: as_text(d.kind.as_ref()),
            });
        }
        Some(Value::String(s)) => {
            return Some(Details {
                message: s.clone(),
                code: as_text(r.code.as_ref()),
                kind: as_text(r.kind.as_ref()),
            });
        }
        _ => {}
    }
    let message = as_text(r.message.as_ref()).or_else(|| match &r.detail {
        Some(Value::String(s)) => Some(s.clone()),
        Some(d @ (Value::Array(_) | Value::Object(_))) => Some(d.to_string()),
        _ => None,
    })?;
    Some(Details {
        message,
        code: as_text(r.code.as_ref()),
        kind: as_text(r.kind.as_ref()),
    })
}

/// The details of an error body: JSON where it is, else its text.
pub(crate) fn details(body: &str) -> Details {
    serde_json::from_str::<Reported>(body)
        .ok()
        .as_ref()
        .and_then(details_of)
        .unwrap_or_else(|| Details {
            message: if body.trim().is_empty() {
                "(empty response body)".into()
            } else {
                quote(body)
            },
            ..Details::default()
        })
}

/// Whether the details say the request is over the context window.
pub(crate) fn is_overflow(d: &Details) -> bool {
    const CODES: [&str; 3] = [
        "context_length_exceeded",
        "exceed_context_size_error",
        "request_too_large",
    ];
    const PHRASES: [&str; 10] = [
        "maximum context length",
        "context window",
        "context length",
        "too many tokens",
        "prompt is too long",
        "exceeds the available context size",
        "the request exceeds",
        "input is too long",
        "reduce the length",
        // Gemini: "The input token count (N) exceeds the maximum number
        // of tokens allowed (M)."
        "exceeds the maximum number of tokens",
    ];
    let code_says = [&d.code, &d.kind]
        .into_iter()
        .flatten()
        .any(|c| CODES.contains(&c.as_str()));
    let m = d.message.to_lowercase();
    code_says || PHRASES.iter().any(|p| m.contains(p))
}

/// Whether the details say the model does not exist.
fn is_unknown_model(d: &Details) -> bool {
    if matches!(d.code.as_deref(), Some("model_not_found")) {
        return true;
    }
    let m = d.message.to_lowercase();
    m.contains("model")
        && [
            "not found",
            "does not exist",
            "not a valid model",
            "no such model",
            "unknown model",
            "not available",
        ]
        .iter()
        .any(|p| m.contains(p))
}

/// Whether a failed request is worth another try: 429 (unless the account
/// is out of quota) and 5xx other than 501 and 505.
pub(crate) fn retryable(status: u16, body: &str) -> bool {
    match status {
        429 => details(body).code.as_deref() != Some("insufficient_quota"),
        501 | 505 => false,
        500..=599 => true,
        _ => false,
    }
}

/// Classify an HTTP error (see the module docs). `attempts` is how many
/// requests were made.
pub(crate) fn from_status(
    status: u16,
    body: &str,
    ctx: &ErrorContext<'_>,
    attempts: u32,
) -> ProviderError {
    from_details(status, details(body), ctx, attempts)
}

/// Classify an error whose details are already read (also used for errors
/// sent inside a stream, with the status their type stands for).
pub(crate) fn from_details(
    status: u16,
    d: Details,
    ctx: &ErrorContext<'_>,
    attempts: u32,
) -> ProviderError {
    let message = d.message.clone();
    if status == 413 || is_overflow(&d) {
        return ProviderError::ContextOverflow { message };
    }
    match status {
        401 | 403 => ProviderError::Auth {
            status,
            key_var: ctx.key_var.map(str::to_owned),
            message,
        },
        // A 404 also comes from a base_url that points to the wrong place.
        404 => ProviderError::UnknownModel {
            model: ctx.model.to_owned(),
            message: format!(
                "{message} (HTTP 404: the server does not know the model, or the provider's base_url is wrong)"
            ),
        },
        _ if is_unknown_model(&d) => ProviderError::UnknownModel {
            model: ctx.model.to_owned(),
            message,
        },
        429 => ProviderError::RateLimited { attempts, message },
        500..=599 => ProviderError::Server {
            status,
            attempts,
            message,
        },
        _ => ProviderError::Rejected { status, message },
    }
}

/// The HTTP status an error type stands for (Anthropic's types; used for
/// errors sent inside a 200 response or a stream).
fn status_of_kind(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// An error a server sent with a 200 status: in a stream, or as the whole
/// body `v`. Its status is its numeric `code`, else what its type stands
/// for, else 500.
pub(crate) fn in_body(v: &Value, ctx: &ErrorContext<'_>) -> ProviderError {
    reported_in(Reported::deserialize(v).ok().as_ref(), v, ctx)
}

/// The error a whole answer `v` is, if it is one (a non-null `error`).
pub(crate) fn in_answer(v: &Value, ctx: &ErrorContext<'_>) -> Option<ProviderError> {
    // Reads the error's keys only: nothing of a large answer is copied.
    let reported = Reported::deserialize(v).ok()?;
    reported
        .error
        .is_some()
        .then(|| reported_in(Some(&reported), v, ctx))
}

/// [`in_body`] with `v` read as `reported`.
fn reported_in(reported: Option<&Reported>, v: &Value, ctx: &ErrorContext<'_>) -> ProviderError {
    let d = reported.and_then(details_of).unwrap_or_else(|| Details {
        message: quote(&v.to_string()),
        ..Details::default()
    });
    let status = d
        .code
        .as_deref()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|s| (400..=599).contains(s))
        .or_else(|| d.kind.as_deref().and_then(status_of_kind))
        .unwrap_or(500);
    from_details(status, d, ctx, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: ErrorContext<'static> = ErrorContext {
        model: "m",
        key_var: Some("KEY"),
    };

    #[test]
    fn overflow_shapes_of_each_server_are_recognized() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}"#;
        let gemini = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        for body in [openai, anthropic, llama, vllm, gemini] {
            assert!(
                from_status(400, body, &CTX, 1).is_context_overflow(),
                "{body}"
            );
        }
        assert!(from_status(413, "too big", &CTX, 1).is_context_overflow());
        assert!(
            !from_status(400, r#"{"error":{"message":"bad tool schema"}}"#, &CTX, 1)
                .is_context_overflow()
        );
    }

    #[test]
    fn auth_names_the_variable() {
        let e = from_status(
            401,
            r#"{"error":{"message":"Incorrect API key provided"}}"#,
            &CTX,
            1,
        );
        assert_eq!(
            e.to_string(),
            "authentication failed (HTTP 401): bad or missing API key in $KEY: Incorrect API key provided"
        );
    }

    #[test]
    fn unknown_model_from_404_or_message() {
        let ollama = r#"{"error":"model \"nope\" not found, try pulling it first"}"#;
        assert!(matches!(
            from_status(404, ollama, &CTX, 1),
            ProviderError::UnknownModel { .. }
        ));
        let openrouter = r#"{"error":{"message":"nope is not a valid model ID","code":400}}"#;
        assert!(matches!(
            from_status(400, openrouter, &CTX, 1),
            ProviderError::UnknownModel { .. }
        ));
    }

    #[test]
    fn retry_policy() {
        assert!(retryable(429, "{}"));
        assert!(!retryable(
            429,
            r#"{"error":{"code":"insufficient_quota","message":"x"}}"#
        ));
        assert!(retryable(503, ""));
        assert!(retryable(529, ""));
        assert!(!retryable(501, ""));
        assert!(!retryable(400, ""));
    }

    #[test]
    fn errors_inside_a_body_take_the_status_of_their_type_or_code() {
        let overloaded = serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(matches!(
            in_body(&overloaded, &CTX),
            ProviderError::Server { status: 529, .. }
        ));
        let limited =
            serde_json::json!({"error": {"type": "rate_limit_error", "message": "slow down"}});
        assert!(matches!(
            in_body(&limited, &CTX),
            ProviderError::RateLimited { .. }
        ));
        let llama = serde_json::json!({"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}});
        assert!(matches!(
            in_body(&llama, &CTX),
            ProviderError::Auth { status: 401, .. }
        ));
    }

    #[test]
    fn non_json_body_is_quoted_and_cut() {
        let body = "x".repeat(1000);
        let d = details(&body);
        assert_eq!(d.message.chars().count(), QUOTE_CHARS + 1);
        assert_eq!(details("  ").message, "(empty response body)");
    }
}
