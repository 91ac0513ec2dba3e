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
    let path = match upstream_path(uri, p.config.token.as_deref()) {
        Ok(path) => path,
        Err(why) => return Err(error(StatusCode::BAD_REQUEST, &why)),
    };
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

/// The path and query the upstream gets: the client's, unless a segment
/// is `.` or `..` (however encoded), which the upstream's URL would
/// resolve outside `/v1/` (`/v1/../metrics` is its `/metrics`): refused.
/// A `token` parameter holding the proxy's own token (a client given the
/// pages' `?token=` address) is taken out: that secret stays here.
fn upstream_path(uri: &Uri, token: Option<&str>) -> Result<String, String> {
    let path = uri.path();
    let dotted = path.split('/').any(|seg| {
        let seg = percent_encoding::percent_decode_str(seg).decode_utf8_lossy();
        seg == "." || seg == ".."
    });
    if dotted {
        return Err(format!(
            "ctxfold proxy: the path {path} has a `.` or `..` segment, which would leave the API's path upstream; send the path without it"
        ));
    }
    let Some(query) = uri.query() else {
        return Ok(path.to_owned());
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let ours = form_urlencoded::parse(pair.as_bytes())
                .next()
                .is_some_and(|(k, v)| k == "token" && token.is_some_and(|t| v == t));
            !ours
        })
        .collect();
    Ok(if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_are_refused_however_encoded_and_the_token_stays_here() {
        let up = |u: &str| upstream_path(&u.parse::<Uri>().unwrap(), Some("t0k-en"));
        for bad in [
            "/v1/../metrics",
            "/v1/%2e%2e/metrics",
            "/v1/.%2E/x",
            "/v1/./models",
            "/v1/models/..",
        ] {
            assert!(up(bad).is_err(), "{bad}");
        }
        assert_eq!(up("/v1/models..x/a").unwrap(), "/v1/models..x/a");
        assert_eq!(up("/v1/models?token=t0k-en").unwrap(), "/v1/models");
        assert_eq!(
            up("/v1/files?limit=2&token=t0k%2Den&after=f").unwrap(),
            "/v1/files?limit=2&after=f"
        );
        // Someone else's `token` parameter is not ours to take.
        assert_eq!(up("/v1/x?token=other").unwrap(), "/v1/x?token=other");
    }
}
