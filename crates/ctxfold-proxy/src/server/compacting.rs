//! The endpoints the proxy compacts (chat completions, messages,
//! responses): the request prepared on the blocking pool, sent as the
//! client sent it when that fails (or refused, `on_error = "reject"`),
//! and compacted once more and retried when the upstream says it is over
//! the context window.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::emulating;
use super::forward::forward;
use super::respond::respond;
use super::{CONVERSATION_HEADER, Proxy, error};
use crate::agent::Agent;
use crate::book::{History, Naming, PrepareError, Prepared};
use crate::config::OnError;

use crate::metrics::endpoint;
use crate::protocol::{self, Call, Serves, Shape, upstream_url};

/// The largest error answer read whole to see whether it says "over the
/// context window" (real ones are a few hundred bytes).
const MAX_ERROR_BYTES: u64 = 1 << 20;

/// The type of a compaction block or item, as bytes.
const COMPACTION: &[u8] = ctxfold_wire::context_management::COMPACTION.as_bytes();

pub(super) async fn compacting(
    p: Arc<Proxy>,
    shape: Shape,
    call: Call,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let name = call.label;
    let base = upstream_url(&p.config, shape).to_owned();
    let key = conversation_key(&headers);
    let agent = agent_of(&headers);
    if crate::agent::is_side_request(agent, &body) {
        // No turn of the conversation (opencode's title of its session):
        // as sent, recorded nowhere.
        return match forward(&p, name, Method::POST, &base, &uri, &headers, body).await {
            Ok(resp) => respond(&p, name, resp, Some(shape), None, HeaderMap::new()),
            Err(r) => r,
        };
    }
    // `/v1/responses/compact`: the endpoint compacts.
    let compacts = call.serves == Serves::Compact;
    let prepared = prepare(&p, shape, &body, key, agent, compacts, call.model).await;
    let (send, slot, extra, emulated) = match prepared {
        Ok(prep) => {
            p.metrics.compactions.inc_by(prep.compactions as u64);
            p.metrics.tokens_before.inc_by(prep.tokens_before as u64);
            p.metrics.tokens_after.inc_by(prep.tokens_after as u64);
            let extra = ctxfold_headers(&prep);
            let served = match (&prep.emulated, &prep.answer) {
                (Some(_), _) => Some("emulated"),
                (None, Some(slot)) if slot.managed => Some("provider"),
                _ => None,
            };
            if let Some(by) = served {
                p.metrics
                    .context_management
                    .get_or_create(&crate::metrics::outcome(name, by))
                    .inc();
            }
            let send = prep.body.map(Bytes::from).unwrap_or_else(|| body.clone());
            if let Some(e) = &prep.emulated
                && e.alone
                && let Some(resp) = emulating::alone(shape, compacts, e, &body)
            {
                // Compacted, nothing to sample: the upstream is not asked.
                return respond(&p, name, resp, Some(shape), prep.answer, extra);
            }
            (send, prep.answer, extra, prep.emulated)
        }
        // What the request asks of the emulated context management
        // cannot be done as asked: the client is told why, in the
        // provider's shape; nothing goes upstream.
        Err(Failed::Unservable(e)) => {
            p.metrics.rejected.get_or_create(&endpoint(name)).inc();
            tracing::info!("{name}: refused: {e}");
            return unservable(shape, &format!("ctxfold proxy: {e}"));
        }
        // The request uses what the upstream lacks and ctxfold could not
        // provide: sent on, it would fail there or silently do nothing.
        Err(Failed::Other(e))
            if protocol::emulated(p.config.emulate, shape)
                && (compacts || uses_context_management(shape, &body)) =>
        {
            p.metrics.rejected.get_or_create(&endpoint(name)).inc();
            tracing::warn!(
                "{name}: {e}; the request uses the providers' context management, which ctxfold emulates for this upstream: refused"
            );
            return error(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "ctxfold proxy could not provide the context management this request asks for (the upstream has none): {e}"
                ),
            );
        }
        Err(Failed::Other(e)) => {
            // Name the agent's shape, so a failure says whose requests
            // the proxy cannot read (the body, never the headers' keys).
            let user_agent = headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok());
            tracing::warn!(
                "{name}: {e} (a request {})",
                crate::agent::describe(agent, user_agent, &body)
            );
            match p.config.on_error {
                OnError::Pass => {
                    p.metrics.fail_open.get_or_create(&endpoint(name)).inc();
                    (body.clone(), None, HeaderMap::new(), None)
                }
                OnError::Reject => {
                    p.metrics.rejected.get_or_create(&endpoint(name)).inc();
                    return error(
                        StatusCode::BAD_GATEWAY,
                        &format!("ctxfold proxy could not prepare the request: {e}"),
                    );
                }
            }
        }
    };
    // What the upstream lacks must not reach it: the parameters, and
    // compaction blocks wherever a client put them (in a tool result, in
    // the system prompt), also in a request that asks nothing else of it
    // or that goes as the client sent it.
    let strip = emulated.is_some()
        || (protocol::emulated(p.config.emulate, shape) && mentions_compaction(&send));
    let send = if strip {
        protocol::strip_for_upstream(shape, &send).map_or(send, Bytes::from)
    } else {
        send
    };
    let resp = match forward(&p, name, Method::POST, &base, &uri, &headers, send).await {
        Ok(resp) => resp,
        Err(r) => return r,
    };
    let resp = match &emulated {
        Some(e) => match emulating::augmented(shape, e, resp).await {
            Ok(r) => r,
            Err(e) => return error(StatusCode::BAD_GATEWAY, &format!("ctxfold proxy: {e}")),
        },
        None => resp,
    };
    let status = resp.status().as_u16();
    // Only an error answer of a known, small size is read to be judged:
    // an upstream sending megabytes with a 400 is passed on as it streams.
    // (A chunked error, as some servers send, is small too in practice.)
    let small = resp.content_length().is_none_or(|n| n <= MAX_ERROR_BYTES);
    let slot = match slot {
        Some(slot)
            if matches!(status, 400 | 413) && small && !p.config.observe && !slot.managed =>
        {
            slot
        }
        slot => return respond(&p, name, resp, Some(shape), slot, extra),
    };
    // Maybe "over the context window": one compaction and one retry when
    // the conversation can shrink; else the answer goes back as it came.
    let (parts, error_body) = match read_error(resp).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if ctxfold_providers::wire::is_context_overflow(status, &error_body) {
        let book = p.book.clone();
        let original = body.clone();
        let error = error_body.clone();
        let retry = tokio::task::spawn_blocking(move || {
            let value: Value = serde_json::from_slice(&original).map_err(|e| e.to_string())?;
            book.overflowed(&value, &slot, &error)
                .map_err(|e| e.to_string())
        })
        .await;
        match retry {
            Ok(Ok(Some(prep))) => {
                tracing::info!(
                    "{name}: the upstream said the request is over the context window; compacted, retrying once"
                );
                p.metrics.overflow_retries.inc();
                p.metrics.compactions.inc_by(prep.compactions as u64);
                let extra = ctxfold_headers(&prep);
                let mut send = Bytes::from(prep.body.unwrap_or_default());
                if (emulated.is_some()
                    || (protocol::emulated(p.config.emulate, shape) && mentions_compaction(&send)))
                    && let Some(stripped) = protocol::strip_for_upstream(shape, &send)
                {
                    send = Bytes::from(stripped);
                }
                return match forward(&p, name, Method::POST, &base, &uri, &headers, send).await {
                    Ok(resp) => respond(&p, name, resp, Some(shape), prep.answer, extra),
                    Err(r) => r,
                };
            }
            Ok(Ok(None)) => tracing::info!(
                "{name}: the upstream said the request is over the context window, and nothing more can be folded; its answer goes to the client"
            ),
            Ok(Err(e)) => tracing::warn!("{name}: compacting after an overflow failed: {e}"),
            Err(e) => tracing::warn!("{name}: compacting after an overflow failed: {e}"),
        }
    }
    let resp = reqwest::Response::from(axum::http::Response::from_parts(parts, error_body));
    respond(&p, name, resp, Some(shape), None, extra)
}

/// Whether `body` holds the word of a compaction block or item anywhere
/// (cheap: read before the body is parsed to strip them).
fn mentions_compaction(body: &[u8]) -> bool {
    body.windows(COMPACTION.len()).any(|w| w == COMPACTION)
}

/// Whether a request body asks for the providers' context management or
/// holds what it returned (read only when preparing it failed).
fn uses_context_management(shape: Shape, body: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let history = (v.as_object())
        .and_then(|o| o.get(shape.history_key()))
        .and_then(Value::as_array);
    protocol::asks(shape, &v, &[]).any()
        || history.is_some_and(|h| h.iter().any(crate::context_management::holds_compaction))
}

/// An error answer read whole (its length is known and at most
/// [`MAX_ERROR_BYTES`]), to be judged and then passed on as it came.
async fn read_error(
    resp: reqwest::Response,
) -> Result<(axum::http::response::Parts, Bytes), Response> {
    let (mut parts, ()) = axum::http::Response::new(()).into_parts();
    parts.status = resp.status();
    parts.headers = resp.headers().clone();
    match resp.bytes().await {
        Ok(b) => Ok((parts, b)),
        Err(e) => Err(error(
            StatusCode::BAD_GATEWAY,
            &format!("ctxfold proxy: the upstream's error answer broke off: {e}"),
        )),
    }
}

/// The conversation a request's `x-ctxfold-conversation` header names
/// (an empty one names none).
pub(super) fn conversation_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONVERSATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The agent a request's headers name.
pub(super) fn agent_of(headers: &HeaderMap) -> Option<Agent> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    Agent::from_headers(get("user-agent"), get("originator"))
}

/// Why a request could not be prepared.
enum Failed {
    /// It asks what ctxfold cannot do as asked
    /// ([`PrepareError::Unservable`]).
    Unservable(String),
    /// Anything else: the store, the body, a compaction failed.
    Other(String),
}

/// A 400 in the protocol's error shape (`invalid_request_error`, which
/// the SDKs raise as a bad request), saying `message`.
fn unservable(shape: Shape, message: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        shape
            .error_body("invalid_request_error", message)
            .to_string(),
    )
        .into_response()
}

/// Parse and prepare on the blocking pool.
async fn prepare(
    p: &Arc<Proxy>,
    shape: Shape,
    body: &Bytes,
    key: Option<String>,
    agent: Option<Agent>,
    compacts: bool,
    model: Option<String>,
) -> Result<Prepared, Failed> {
    let book = p.book.clone();
    let body = body.clone();
    tokio::task::spawn_blocking(move || {
        let naming = Naming {
            header: key.as_deref(),
            agent,
            compacts,
            model: model.as_deref(),
        };
        book.prepare_bytes(shape, &body, &naming)
    })
    .await
    .map_err(|e| Failed::Other(format!("preparing the request failed: {e}")))?
    .map_err(|e| match e {
        PrepareError::Unservable(why) => Failed::Unservable(why),
        e => Failed::Other(e.to_string()),
    })
}

fn ctxfold_headers(prep: &Prepared) -> HeaderMap {
    let mut h = HeaderMap::new();
    let mut put = |k: &'static str, v: String| {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(HeaderName::from_static(k), v);
        }
    };
    put(CONVERSATION_HEADER, prep.conversation.clone());
    put("x-ctxfold-tokens-before", prep.tokens_before.to_string());
    put("x-ctxfold-tokens-after", prep.tokens_after.to_string());
    put(
        "x-ctxfold-history",
        match prep.history {
            History::New => "new",
            History::Continued { .. } => "continued",
            History::Earlier => "earlier",
            History::Forked => "forked",
            History::Chained => "chained",
        }
        .into(),
    );
    h
}
