//! The routes: the paths each protocol serves (its model calls, a
//! compaction endpoint, a token count), `/metrics`, the browser pages
//! under `/ui`, and every other path passed through. Other methods on a
//! protocol's paths (OpenAI's stored completions are `GET
//! /v1/chat/completions`) pass through like any other path.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use serde_json::Value;

use super::auth::{Admitted, authorized};
use super::compacting::{agent_of, compacting, conversation_key};
use super::forward::forward;
use super::respond::respond;
use super::{Proxy, error};
use crate::book::Naming;
use crate::metrics::endpoint;
use crate::protocol::{Call, Route, Serves, Shape, claiming, upstream_url};

/// The routes, over `proxy`; the browser pages under `/ui`.
pub fn router(proxy: Arc<Proxy>) -> Router {
    let body_timeout = proxy.config.body_timeout;
    let ui = ctxfold_ui::router(Arc::clone(&proxy.ui));
    let mut api = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics));
    for protocol in crate::protocol::ALL {
        for route in protocol.routes() {
            api = api.route(route.path, protocol_route(protocol, route));
        }
    }
    api.fallback(passthrough)
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

/// A protocol's POST endpoint; any other method, and a path of it the
/// protocol does not interpret (Gemini's `countTokens`), passes through.
fn protocol_route(shape: Shape, route: &'static Route) -> MethodRouter<Arc<Proxy>> {
    post(
        move |State(p): State<Arc<Proxy>>, req: Request| async move {
            let Some(call) = shape.call(route, req.uri().path()) else {
                let (parts, body) = req.into_parts();
                return passthrough(State(p), parts.method, parts.uri, parts.headers, body).await;
            };
            let uri = req.uri().clone();
            let headers = req.headers().clone();
            let body = match Admitted::from_request(req, &p).await {
                Ok(Admitted(body)) => body,
                Err(r) => return r,
            };
            match call.serves {
                Serves::Turn | Serves::Compact => {
                    compacting(p, shape, call, uri, headers, body).await
                }
                Serves::CountTokens => count_tokens(p, shape, call, uri, headers, body).await,
            }
        },
    )
    .fallback(passthrough)
}

/// A token count (Anthropic's), for the body the upstream would get: the
/// conversation's view with the request's new messages at its end.
/// Nothing is recorded; a body ctxfold cannot read is counted as sent.
async fn count_tokens(
    p: Arc<Proxy>,
    shape: Shape,
    call: Call,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let name = call.label;
    let key = conversation_key(&headers);
    let agent = agent_of(&headers);
    let send = match serde_json::from_slice::<Value>(&body) {
        Ok(value) if !p.config.observe => {
            let book = p.book.clone();
            let preview = tokio::task::spawn_blocking(move || {
                let naming = Naming {
                    header: key.as_deref(),
                    agent,
                    compacts: false,
                    model: call.model.as_deref(),
                };
                book.preview(shape, &value, &naming)
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
    let base = upstream_url(&p.config, shape).to_owned();
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
    if !uri.path().starts_with("/v1/") && !uri.path().starts_with("/v1beta/") {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "ctxfold proxy: no such path {}; the APIs are under /v1/ and /v1beta/ (and /healthz, /metrics)",
                uri.path()
            ),
        );
    }
    let base = upstream_url(&p.config, claiming(uri.path(), &headers));
    let name = "passthrough";
    let body = reqwest::Body::wrap_stream(body.into_data_stream());
    match forward(&p, name, method, base, &uri, &headers, body).await {
        Ok(resp) => respond(&p, name, resp, None, None, HeaderMap::new()),
        Err(r) => r,
    }
}
