//! Reading the body of a request the proxy interprets (the compacted
//! paths and the token count): declared JSON, within `max_body_bytes`,
//! sent whole within `body_timeout_secs`. What is refused gets its own
//! status and a message naming the key that set the bound.
//!
//! A body over the limit is refused as soon as that is known: from its
//! `Content-Length` before a byte of it is read, else when the limit is
//! crossed. Its sender must still be able to read the 413: a client that
//! writes its whole body before reading (ureq, the Python SDKs) gets a
//! broken pipe when the server closes with the body unread, so the rest
//! is read into the void first, up to [`DRAIN_LIMIT`] and within the same
//! deadline. A client that asked to wait (`Expect: 100-continue`, as curl
//! does for large bodies) gets its answer at once and sends nothing.

use axum::body::{Body, BodyDataStream, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use futures_util::StreamExt;
use tokio::time::Instant;

use crate::config::ProxyConfig;

/// The most of an oversized body read (and dropped) so that its sender
/// can read the 413; a larger one is answered at once, and its sender may
/// see the connection close before it can read the answer.
pub const DRAIN_LIMIT: u64 = 256 << 20;

/// Why a body was refused: a status and what to tell the client.
#[derive(Debug)]
pub struct Refused {
    /// 400, 408, 413 or 415.
    pub status: StatusCode,
    /// The message.
    pub message: String,
}

/// Whether `headers` declare a JSON body (`application/json`, or any
/// `application/…+json`, with or without parameters such as `charset`).
pub fn declares_json(headers: &HeaderMap) -> bool {
    let Some(v) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = v
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The whole body of a request the proxy reads, or why not.
pub async fn read(config: &ProxyConfig, headers: &HeaderMap, body: Body) -> Result<Bytes, Refused> {
    if !declares_json(headers) {
        // A browser sends text/plain or a form without asking first; an
        // API client declares JSON.
        return Err(Refused {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message:
                "ctxfold proxy: the body must be declared JSON (Content-Type: application/json)"
                    .into(),
        });
    }
    let limit = config.max_body_bytes;
    let too_large = || Refused {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        message: format!(
            "ctxfold proxy: the request body is larger than {limit} bytes ([proxy] max_body_bytes)"
        ),
    };
    let deadline = Instant::now() + config.body_timeout;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let waits = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let mut stream = body.into_data_stream();
    if let Some(n) = declared.filter(|&n| n > limit as u64) {
        // hyper sends `100 Continue` only once the body is read: a client
        // that waits for it reads the 413 instead.
        if !waits && n <= DRAIN_LIMIT {
            drain(&mut stream, deadline).await;
        }
        return Err(too_large());
    }
    let reading = async {
        let mut bytes = Vec::with_capacity(declared.map_or(0, |n| n as usize));
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Refused {
                status: StatusCode::BAD_REQUEST,
                message: format!("ctxfold proxy: the request body could not be read: {e}"),
            })?;
            if bytes.len() + chunk.len() > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(bytes))
    };
    match tokio::time::timeout_at(deadline, reading).await {
        Ok(Err(r)) if r.status == StatusCode::PAYLOAD_TOO_LARGE => {
            drain(&mut stream, deadline).await;
            Err(r)
        }
        Ok(r) => r,
        Err(_) => Err(Refused {
            status: StatusCode::REQUEST_TIMEOUT,
            message: format!(
                "ctxfold proxy: the request body did not arrive within {} s ([proxy] body_timeout_secs)",
                config.body_timeout.as_secs()
            ),
        }),
    }
}

/// Read what is left of a body into the void, up to [`DRAIN_LIMIT`] and
/// until `deadline`.
async fn drain(stream: &mut BodyDataStream, deadline: Instant) {
    let all = async {
        let mut read = 0u64;
        while let Some(Ok(chunk)) = stream.next().await {
            read += chunk.len() as u64;
            if read > DRAIN_LIMIT {
                break;
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, all).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_what_declares_it() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            declares_json(&h)
        };
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
            "application/vnd.api+json",
        ] {
            assert!(with(ok), "{ok}");
        }
        for no in [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/json+plain",
            "",
        ] {
            assert!(!with(no), "{no}");
        }
        assert!(!declares_json(&HeaderMap::new()));
    }
}
