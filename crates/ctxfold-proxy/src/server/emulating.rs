//! The answers of the providers' context management that ctxfold emulated
//! (issue 29): made here when the upstream is not asked (a compaction
//! asked alone), or the upstream's answer with the compaction and the
//! applied edits put in. Either goes to the client, and to the recorder,
//! as an upstream's answer would.

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use ctxfold_wire::emulated;
use serde_json::Value;

use crate::book::Emulated;
use crate::protocol::Shape;

/// An answer the proxy made, as if the upstream had sent it.
fn made(content_type: &'static str, body: Vec<u8>) -> reqwest::Response {
    let mut r = axum::http::Response::new(Bytes::from(body));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    reqwest::Response::from(r)
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The answer to a request (`body`, as the client sent it) whose
/// compaction is answered alone, in its protocol's shape (`compacts`: sent
/// to the compaction endpoint); streamed when the request asked. `None`:
/// a protocol without context management, which has nothing to answer.
pub(super) fn alone(
    shape: Shape,
    compacts: bool,
    e: &Emulated,
    body: &[u8],
) -> Option<reqwest::Response> {
    let cm = shape.context_management()?;
    let raw: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let compaction = e.compaction.clone().unwrap_or(Value::Null);
    let (answer, stream) = cm.alone(&raw, compacts, &compaction, now());
    Some(match stream {
        Some(events) => made("text/event-stream", events.into_bytes()),
        None => made("application/json", answer.to_string().into_bytes()),
    })
}

/// The upstream's answer `resp` with what the emulation did put in (the
/// compaction first, Anthropic's applied edits), read whole first: only
/// the answer of a request on which an emulated edit applied is held
/// back until it is complete. Any other answer (nothing to say, an error)
/// goes as it came.
pub(super) async fn augmented(
    shape: Shape,
    e: &Emulated,
    resp: reqwest::Response,
) -> Result<reqwest::Response, String> {
    if (e.compaction.is_none() && e.applied_edits.is_empty()) || !resp.status().is_success() {
        return Ok(resp);
    }
    let streamed = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let bytes = resp
        .bytes()
        .await
        .map_err(|err| format!("the upstream's answer broke off: {err}"))?;
    let body = if streamed {
        let text = String::from_utf8_lossy(&bytes);
        match shape.context_management() {
            Some(cm) => cm.stream_with(&text, e.compaction.as_ref(), &e.applied_edits),
            None => text.into_owned(),
        }
        .into_bytes()
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut v) => {
                emulated::with_compaction(&mut v, e.compaction.as_ref(), &e.applied_edits);
                v.to_string().into_bytes()
            }
            Err(_) => bytes.to_vec(),
        }
    };
    Ok(made(
        if streamed {
            "text/event-stream"
        } else {
            "application/json"
        },
        body,
    ))
}
