//! The HTTP edge: axum on tokio, reqwest to the upstream. Everything that
//! touches the store or compacts runs on the blocking pool through
//! [`Book`]; the answer's bytes go to the client as they arrive, and a copy
//! is gathered by a task and recorded (on the blocking pool) once the
//! stream has ended, so recording never holds the stream up and a long
//! stream holds no thread.

use std::io::Read;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::book::{AnswerSlot, Book, History, Naming, Prepared};
use crate::config::{OnError, ProxyConfig};
use crate::ending::Ending;
use crate::metrics::{Metrics, endpoint, outcome};
use crate::reconcile::CUT_SHORT;
use crate::shape::Shape;

/// The header a client names its conversation with.
pub const CONVERSATION_HEADER: &str = "x-ctxfold-conversation";
/// The largest error answer read whole to see whether it says "over the
/// context window" (real ones are a few hundred bytes).
const MAX_ERROR_BYTES: u64 = 1 << 20;

/// The header a client sends the proxy's token in.
pub const TOKEN_HEADER: &str = "x-ctxfold-token";

/// What every request handler shares.
pub struct Proxy {
    /// The conversations.
    pub book: Arc<Book>,
    /// `[proxy]`.
    pub config: ProxyConfig,
    /// The counters.
    pub metrics: Metrics,
    /// The browser pages, served under `/ui` (with the proxy's token).
    pub ui: Arc<ctxfold_ui::Ui>,
    client: reqwest::Client,
}

impl Proxy {
    /// A proxy over `book` with `config`.
    pub fn new(book: Book, config: ProxyConfig) -> Result<Proxy, String> {
        // ring, as the rest of ctxfold's TLS uses; installing twice is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .read_timeout(config.timeout)
            // Upstreams come from config; a redirect must not send a
            // client's key elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the HTTP client could not be set up: {e}"))?;
        let ui = Arc::new(ctxfold_ui::Ui::new(
            Arc::clone(book.store()),
            config.token.clone(),
            "/ui",
            config.window,
        ));
        Ok(Proxy {
            ui,
            book: Arc::new(book),
            config,
            metrics: Metrics::default(),
            client,
        })
    }
}

/// The routes, over `proxy`; the browser pages under `/ui`.
pub fn router(proxy: Arc<Proxy>) -> Router {
    let body_timeout = proxy.config.body_timeout;
    let ui = ctxfold_ui::router(Arc::clone(&proxy.ui));
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        // Other methods on these paths (OpenAI's stored completions are
        // `GET /v1/chat/completions`) pass through like any other path.
        .route(
            "/v1/chat/completions",
            post(chat_completions).fallback(passthrough),
        )
        .route("/v1/messages", post(messages).fallback(passthrough))
        .route(
            "/v1/messages/count_tokens",
            post(count_tokens).fallback(passthrough),
        )
        .route("/v1/responses", post(responses).fallback(passthrough))
        .fallback(passthrough)
        .with_state(proxy)
        .nest("/ui", ui)
        // The pages' home is `/ui`; `/ui/` (as people type it) goes there.
        .route("/ui/", get(ui_home))
        // A body that falls silent is cut off, whatever its path (those the
        // proxy reads whole have a deadline too: `intake`).
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
            body_timeout,
        ))
}

async fn ui_home(uri: Uri) -> Response {
    let to = match uri.query() {
        Some(q) => format!("/ui?{q}"),
        None => "/ui".to_owned(),
    };
    axum::response::Redirect::to(&to).into_response()
}

/// Serve `proxy` on `listener` until `shutdown` completes (see
/// [`crate::listener`]: the connection cap, the head and idle timeouts).
pub async fn serve(
    listener: tokio::net::TcpListener,
    proxy: Arc<Proxy>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let pages = Arc::clone(&proxy.ui);
    let limits = crate::listener::Limits {
        header_timeout: proxy.config.header_timeout,
        idle_timeout: proxy.config.idle_timeout,
        max_connections: proxy.config.max_connections,
    };
    crate::listener::serve(listener, router(proxy), limits, async move {
        shutdown.await;
        // Open pages' live streams would hold the shutdown up.
        pages.close();
    })
    .await
}

async fn metrics(State(p): State<Arc<Proxy>>, headers: HeaderMap) -> Response {
    if let Err(r) = authorized(&p, &headers) {
        return r;
    }
    // A few short locks: no store work.
    p.metrics.set_held(&p.book.held());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        p.metrics.render(),
    )
        .into_response()
}

async fn chat_completions(
    State(p): State<Arc<Proxy>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    compacting(p, Shape::Chat, "chat_completions", uri, headers, body).await
}

async fn messages(
    State(p): State<Arc<Proxy>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    compacting(p, Shape::Messages, "messages", uri, headers, body).await
}

async fn responses(
    State(p): State<Arc<Proxy>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    compacting(p, Shape::Responses, "responses", uri, headers, body).await
}

/// Anthropic's token count, for the body the upstream would get: the
/// conversation's view with the request's new messages at its end.
/// Nothing is recorded; a body ctxfold cannot read is counted as sent.
async fn count_tokens(
    State(p): State<Arc<Proxy>>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(r) = authorized(&p, &headers) {
        return r;
    }
    let body = match crate::intake::read(&p.config, &headers, body).await {
        Ok(b) => b,
        Err(refused) => return error(refused.status, &refused.message),
    };
    let name = "count_tokens";
    let key = headers
        .get(CONVERSATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let agent = agent_of(&headers);
    let send = match serde_json::from_slice::<Value>(&body) {
        Ok(value) if !p.config.observe => {
            let book = p.book.clone();
            let preview = tokio::task::spawn_blocking(move || {
                let naming = Naming {
                    header: key.as_deref(),
                    agent,
                };
                book.preview(Shape::Messages, &value, &naming)
            })
            .await;
            match preview {
                Ok(Ok(Some(b))) => Bytes::from(b),
                Ok(Ok(None)) => body,
                Ok(Err(e)) => {
                    tracing::warn!("{name}: {e}");
                    p.metrics.fail_open.get_or_create(&endpoint(name)).inc();
                    body
                }
                Err(e) => {
                    tracing::warn!("{name}: {e}");
                    p.metrics.fail_open.get_or_create(&endpoint(name)).inc();
                    body
                }
            }
        }
        _ => body,
    };
    let base = p.config.anthropic.clone();
    match forward(&p, name, Method::POST, &base, &uri, &headers, send).await {
        Ok(resp) => respond(&p, name, resp, None, None, HeaderMap::new()),
        Err(r) => r,
    }
}

/// Every other path: under `/v1/`, forwarded unchanged to the upstream the
/// path (or the client's headers) belong to; anything else is not ours.
/// The body streams through as it comes, whatever its size (file uploads
/// are larger than any conversation): `max_body_bytes` bounds only what
/// the proxy reads.
async fn passthrough(
    State(p): State<Arc<Proxy>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(r) = authorized(&p, &headers) {
        return r;
    }
    if !uri.path().starts_with("/v1/") {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "ctxfold proxy: no such path {}; the API is under /v1/ (and /healthz, /metrics)",
                uri.path()
            ),
        );
    }
    let anthropic = uri.path().starts_with("/v1/messages")
        || headers.contains_key("anthropic-version")
        || headers.contains_key("x-api-key");
    let base = if anthropic {
        &p.config.anthropic
    } else {
        &p.config.openai
    };
    let name = "passthrough";
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    match forward(&p, name, method, base, &uri, &headers, body).await {
        Ok(resp) => respond(&p, name, resp, None, None, HeaderMap::new()),
        Err(r) => r,
    }
}

async fn compacting(
    p: Arc<Proxy>,
    shape: Shape,
    name: &'static str,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(r) = authorized(&p, &headers) {
        return r;
    }
    let body = match crate::intake::read(&p.config, &headers, body).await {
        Ok(b) => b,
        Err(refused) => return error(refused.status, &refused.message),
    };
    let base = match shape {
        Shape::Chat | Shape::Responses => p.config.openai.clone(),
        Shape::Messages => p.config.anthropic.clone(),
    };
    let key = headers
        .get(CONVERSATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let agent = agent_of(&headers);
    let prepared = prepare(&p, shape, &body, key, agent).await;
    let (send, slot, extra) = match prepared {
        Ok(prep) => {
            p.metrics.compactions.inc_by(prep.compactions as u64);
            p.metrics.tokens_before.inc_by(prep.tokens_before as u64);
            p.metrics.tokens_after.inc_by(prep.tokens_after as u64);
            let extra = ctxfold_headers(&prep);
            let send = prep.body.map(Bytes::from).unwrap_or_else(|| body.clone());
            (send, prep.answer, extra)
        }
        Err(e) => {
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
                    (body.clone(), None, HeaderMap::new())
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
    let resp = match forward(&p, name, Method::POST, &base, &uri, &headers, send).await {
        Ok(resp) => resp,
        Err(r) => return r,
    };
    let status = resp.status().as_u16();
    // Only an error answer of a known, small size is read to be judged:
    // an upstream sending megabytes with a 400 is passed on as it streams.
    // (A chunked error, as some servers send, is small too in practice.)
    let small = resp.content_length().is_none_or(|n| n <= MAX_ERROR_BYTES);
    let slot = match slot {
        Some(slot) if matches!(status, 400 | 413) && small && !p.config.observe => slot,
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
                let send = Bytes::from(prep.body.unwrap_or_default());
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

/// An error answer read whole (its length is known and at most
/// [`MAX_ERROR_BYTES`]), to be judged and then passed on as it came.
async fn read_error(
    resp: reqwest::Response,
) -> Result<(axum::http::response::Parts, Bytes), Response> {
    let mut builder = axum::http::Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        builder = builder.header(k, v);
    }
    let parts = builder
        .body(())
        .expect("a status and headers from a response")
        .into_parts()
        .0;
    match resp.bytes().await {
        Ok(b) => Ok((parts, b)),
        Err(e) => Err(error(
            StatusCode::BAD_GATEWAY,
            &format!("ctxfold proxy: the upstream's error answer broke off: {e}"),
        )),
    }
}

/// The agent a request's headers name.
fn agent_of(headers: &HeaderMap) -> Option<Agent> {
    let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok());
    Agent::from_headers(get("user-agent"), get("originator"))
}

/// Parse and prepare on the blocking pool.
async fn prepare(
    p: &Arc<Proxy>,
    shape: Shape,
    body: &Bytes,
    key: Option<String>,
    agent: Option<Agent>,
) -> Result<Prepared, String> {
    let book = p.book.clone();
    let body = body.clone();
    tokio::task::spawn_blocking(move || {
        let naming = Naming {
            header: key.as_deref(),
            agent,
        };
        book.prepare_bytes(shape, &body, &naming)
    })
    .await
    .map_err(|e| format!("preparing the request failed: {e}"))?
    .map_err(|e| e.to_string())
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

/// Send the request on; an unreachable upstream is a 502 naming it.
async fn forward(
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
fn forwarded(k: &HeaderName, all: &HeaderMap) -> bool {
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

/// The upstream's answer, streamed to the client as it comes; a copy goes
/// to the recorder when the answer continues a conversation. An answer of
/// a known `shape` is watched for its protocol's end whether or not it is
/// recorded (a retry of an answered request, a request that failed open):
/// the client never sees a cut answer end as if whole.
fn respond(
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

/// A piece of an answer on its way to the recorder.
enum Chunk {
    Data(Bytes),
    /// The upstream broke off.
    Broken,
    /// The upstream's body ended before the answer's protocol end.
    Unfinished,
    /// The whole answer went to the client.
    End,
}

/// Reads the copy of an answer as the client received it; ends (EOF) when
/// the answer is whole, fails when it was cut short.
struct Copy {
    rx: std::vec::IntoIter<Chunk>,
    cur: Bytes,
    whole: bool,
    /// The answer's `Content-Length`, when it has one.
    length: Option<u64>,
    got: u64,
}

impl Read for Copy {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            if self.whole {
                return Ok(0);
            }
            match self.rx.next() {
                Some(Chunk::Data(b)) => {
                    self.got += b.len() as u64;
                    // With a length, the server stops reading the body at
                    // its last byte: that is the end.
                    self.whole |= self.length == Some(self.got);
                    self.cur = b;
                }
                Some(Chunk::End) => {
                    self.whole = true;
                    return Ok(0);
                }
                // Broken, unfinished, or the client hung up before the end.
                Some(Chunk::Broken | Chunk::Unfinished) | None => {
                    return Err(std::io::Error::other(
                        "the answer was cut short before it reached the client whole",
                    ));
                }
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}

/// Read the copy of an answer and record it where `slot` says.
fn record(
    p: &Proxy,
    name: &str,
    slot: AnswerSlot,
    chunks: Vec<Chunk>,
    streamed: bool,
    length: Option<u64>,
) {
    let mut copy = Copy {
        rx: chunks.into_iter(),
        cur: Bytes::new(),
        whole: false,
        length,
        got: 0,
    };
    let ts = ctxfold_store::now();
    let mut text = Vec::new();
    let mut whole = copy.read_to_end(&mut text).is_ok() && copy.whole;
    let cut = |mut records: Vec<ctxfold_core::Record>| {
        for r in &mut records {
            r.metadata
                .get_or_insert_default()
                .insert(CUT_SHORT.into(), true.into());
        }
        records
    };
    let records = if streamed {
        // A stream that reached its own end is whole, even when the
        // client hung up before the last bytes were passed on.
        match slot.shape.streamed_answer(&text[..], &slot.model, &ts) {
            Ok(records) => {
                whole = true;
                Ok(records)
            }
            Err(e) if whole => Err(e),
            // What completed of it is recorded, marked: the client saw it.
            Err(_) => slot.shape.cut_answer(&text[..], &slot.model, &ts).map(cut),
        }
    } else {
        // A body that parses whole is whole, as above.
        match serde_json::from_slice(&text) {
            Ok(raw) => {
                whole = true;
                slot.shape.answer(raw, &slot.model, &ts)
            }
            Err(e) if whole => Err(format!("not JSON: {e}")),
            // What is readable of it (its text), marked.
            Err(_) => Ok(cut(slot.shape.cut_body(&text, &slot.model, &ts))),
        }
    };
    let status = match records {
        Ok(records) => match p.book.record_answer(&slot, records) {
            Ok(true) if whole => "recorded",
            Ok(true) => "cut_short",
            Ok(false) => "skipped",
            Err(e) => {
                tracing::warn!("{name}: the answer could not be recorded: {e}");
                "failed"
            }
        },
        Err(e) => {
            tracing::info!("{name}: the answer was not recorded: {e}");
            "unreadable"
        }
    };
    p.metrics
        .answers
        .get_or_create(&outcome(name, status))
        .inc();
}

/// Who may use the API (everything but `/healthz`): the token when one
/// is configured, else a loopback `Host` and no other site's page; the
/// pages' own guard decides (`ctxfold_ui::security`).
#[allow(clippy::result_large_err)]
fn authorized(p: &Proxy, headers: &HeaderMap) -> Result<(), Response> {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    p.ui.guard()
        .api_allowed(
            h(header::HOST.as_str()),
            h(TOKEN_HEADER),
            h("sec-fetch-site"),
            h(header::ORIGIN.as_str()),
        )
        .map_err(|why| {
            let status = if p.config.token.is_some() {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::FORBIDDEN
            };
            error(status, &format!("ctxfold proxy: {why}"))
        })
}

/// An error in the shape both APIs use.
fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({"type": "error", "error": {"type": "ctxfold_proxy_error", "message": message}})
            .to_string(),
    )
        .into_response()
}
