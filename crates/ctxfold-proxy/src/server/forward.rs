//! Sending a request on to the upstream: its URL, the client's headers
//! that go with it, and a 502 naming an upstream that cannot be reached.

use std::time::Instant;

use axum::http::{HeaderMap, HeaderName, Method, StatusCode, Uri, header};
use axum::response::Response;

use super::{Proxy, error};
use crate::metrics::{endpoint, outcome};

/// Send the request on; an unreachable upstream is a 502 naming it.
pub(super) async fn forward(
    p: &Proxy,
    name: &str,
    method: Method,
    base: &str,
    uri: &Uri,
    headers: &HeaderMap,
    body: impl Into<reqwest::Body>,
) -> Result<reqwest::Response, Response> {
    let path = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
    let url = format!("{base}{path}");
    let body: reqwest::Body = body.into();
    // A streamed body keeps the length the client gave it, so the upstream
    // sees the same framing (a body the proxy holds gets its own length).
    let streamed_length = body
        .as_bytes()
        .is_none()
        .then(|| headers.get(header::CONTENT_LENGTH))
        .flatten();
    let mut req = p.client.request(method, &url).body(body);
    if let Some(len) = streamed_length {
        req = req.header(header::CONTENT_LENGTH, len);
    }
    for (k, v) in headers {
        if forwarded(k, headers) {
            req = req.header(k, v);
        }
    }
    let started = Instant::now();
    match req.send().await {
        Ok(resp) => {
            p.metrics
                .upstream
                .get_or_create(&endpoint(name))
                .observe(started.elapsed().as_secs_f64());
            Ok(resp)
        }
        Err(e) => {
            p.metrics
                .upstream_errors
                .get_or_create(&endpoint(name))
                .inc();
            p.metrics
                .requests
                .get_or_create(&outcome(name, "error"))
                .inc();
            // reqwest's message names the URL, never the headers.
            tracing::warn!("{name}: upstream {base}: {e}");
            Err(error(
                StatusCode::BAD_GATEWAY,
                &format!("ctxfold proxy: the upstream {base} could not be reached: {e}"),
            ))
        }
    }
}

/// Whether a client's header goes upstream: not hop-by-hop (nor named in
/// `Connection`), not the framing the client used, not ctxfold's own.
/// `Accept-Encoding` is dropped so the answer comes uncompressed and its
/// copy can be read.
pub(super) fn forwarded(k: &HeaderName, all: &HeaderMap) -> bool {
    const DROPPED: &[&str] = &[
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    ];
    let name = k.as_str();
    if DROPPED.contains(&name) || name.starts_with("x-ctxfold-") {
        return false;
    }
    !all.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(name)))
    })
}
