//! The upstream's answer streamed to the client as it comes, watched for
//! its protocol's end (a cut answer never ends as if whole), and copied
//! to the recorder when it continues a conversation.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;

use super::forward::forwarded;
use super::record::{Chunk, record};
use super::{Proxy, error};
use crate::book::AnswerSlot;
use crate::ending::Ending;
use crate::metrics::outcome;
use crate::protocol::Shape;

/// The upstream's answer, streamed to the client as it comes; a copy goes
/// to the recorder when the answer continues a conversation. An answer of
/// a known `shape` is watched for its protocol's end whether or not it is
/// recorded (a retry of an answered request, a request that failed open):
/// the client never sees a cut answer end as if whole.
pub(super) fn respond(
    p: &Arc<Proxy>,
    name: &'static str,
    resp: reqwest::Response,
    shape: Option<Shape>,
    slot: Option<AnswerSlot>,
    extra: HeaderMap,
) -> Response {
    let status = resp.status();
    let class = format!("{}xx", status.as_u16() / 100);
    p.metrics
        .requests
        .get_or_create(&outcome(name, &class))
        .inc();
    let mut out = Response::builder().status(status.as_u16());
    let stream_copy = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    for (k, v) in resp.headers() {
        if forwarded(k, resp.headers()) || k == header::CONTENT_LENGTH {
            out = out.header(k, v);
        }
    }
    for (k, v) in &extra {
        out = out.header(k, v);
    }
    let length = resp.content_length();
    // A body with a length, chunks or HTTP/2 frames ends where they say
    // (or breaks off, an error); one delimited by the connection's close
    // ends whenever the upstream hangs up.
    let chunked = resp
        .headers()
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .any(|v| {
            v.to_str()
                .is_ok_and(|v| v.to_ascii_lowercase().contains("chunked"))
        });
    let framed = length.is_some() || chunked || resp.version() >= reqwest::Version::HTTP_2;
    let upstream = resp.bytes_stream();
    let body = match slot.filter(|_| status.is_success()) {
        None => match shape.filter(|_| status.is_success()) {
            // Watched only: the copy has no reader.
            Some(shape) => {
                let (tx, _) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
                let ending = Ending::new(shape, stream_copy, framed);
                Body::from_stream(tee(name, Box::pin(upstream), tx, ending))
            }
            None => Body::from_stream(upstream),
        },
        Some(slot) => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Chunk>();
            let ending = Ending::new(slot.shape, stream_copy, framed);
            let recorder = p.clone();
            // The copy is gathered by a task, not a blocking thread: a long
            // stream holds no thread of the pool that prepares requests.
            // Only reading and recording it, at its end, use one.
            tokio::spawn(async move {
                let mut chunks = Vec::new();
                while let Some(c) = rx.recv().await {
                    let last = !matches!(c, Chunk::Data(_));
                    chunks.push(c);
                    if last {
                        break;
                    }
                }
                tokio::task::spawn_blocking(move || {
                    record(&recorder, name, slot, chunks, stream_copy, length)
                });
            });
            Body::from_stream(tee(name, Box::pin(upstream), tx, ending))
        }
    };
    out.body(body).unwrap_or_else(|e| {
        error(
            StatusCode::BAD_GATEWAY,
            &format!("ctxfold proxy: the upstream's answer could not be passed on: {e}"),
        )
    })
}

/// The upstream's answer as the client gets it, every piece copied to the
/// recorder. An answer that breaks off, or that ends before its
/// protocol's end (an upstream that hung up on a body its close
/// delimits), ends the client's body with an error, so the server cuts
/// the connection (an HTTP/1.1 chunked body loses its last chunk) rather
/// than ending it as if the answer were whole.
fn tee(
    name: &'static str,
    upstream: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    tx: tokio::sync::mpsc::UnboundedSender<Chunk>,
    ending: Ending,
) -> impl futures_util::Stream<Item = std::io::Result<Bytes>> + Send {
    futures_util::stream::unfold(Some((upstream, tx, ending)), move |state| async move {
        let (mut upstream, tx, mut ending) = state?;
        let cut = match upstream.next().await {
            Some(Ok(b)) => {
                ending.feed(&b);
                let _ = tx.send(Chunk::Data(b.clone()));
                return Some((Ok(b), Some((upstream, tx, ending))));
            }
            Some(Err(e)) => {
                tracing::info!("{name}: the upstream's answer broke off: {e}");
                let _ = tx.send(Chunk::Broken);
                std::io::Error::other(e)
            }
            None if ending.ended() => {
                let _ = tx.send(Chunk::End);
                return None;
            }
            None => {
                tracing::info!(
                    "{name}: the upstream's answer ended before its protocol's end (it hung up mid-answer)"
                );
                let _ = tx.send(Chunk::Unfinished);
                std::io::Error::other("the upstream's answer ended before its protocol's end")
            }
        };
        // The error makes the server close the connection: let what
        // arrived before it be written to the client first (without these
        // turns, 5 runs in 25 of the cut-stream test lost the whole
        // answer).
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        Some((Err(cut), None))
    })
}
