//! The routes: the paths the proxy compacts, `count_tokens`, `/metrics`,
//! the browser pages under `/ui`, and every other path passed through.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
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
use crate::shape::Shape;

/// The paths the proxy compacts, with what it reads there and the name
/// its metrics give them. Other methods on these paths (OpenAI's stored
/// completions are `GET /v1/chat/completions`) pass through like any
/// other path.
const COMPACTING: [(&str, Shape, &str); 4] = [
    ("/v1/chat/completions", Shape::Chat, "chat_completions"),
    ("/v1/messages", Shape::Messages, "messages"),
    ("/v1/responses", Shape::Responses, "responses"),
    // The provider's own compaction (issue 29): forwarded as sent, its
    // compaction item recorded.
    (
        "/v1/responses/compact",
        Shape::Responses,
        "responses_compact",
    ),
];

/// The routes, over `proxy`; the browser pages under `/ui`.
pub fn router(proxy: Arc<Proxy>) -> Router {
    let body_timeout = proxy.config.body_timeout;
    let ui = ctxfold_ui::router(Arc::clone(&proxy.ui));
    let mut api = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route(
            "/v1/messages/count_tokens",
            post(count_tokens).fallback(passthrough),
        );
    for (path, shape, name) in COMPACTING {
        api = api.route(path, compacting_route(shape, name));
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

/// A POST endpoint whose requests ctxfold compacts (`name`: its metrics
/// label); any other method passes through.
fn compacting_route(shape: Shape, name: &'static str) -> MethodRouter<Arc<Proxy>> {
    post(
        move |State(p): State<Arc<Proxy>>, uri: Uri, headers: HeaderMap, Admitted(body)| {
            compacting(p, shape, name, uri, headers, body)
        },
    )
    .fallback(passthrough)
}

/// Anthropic's token count, for the body the upstream would get: the
/// conversation's view with the request's new messages at its end.
/// Nothing is recorded; a body ctxfold cannot read is counted as sent.
async fn count_tokens(
    State(p): State<Arc<Proxy>>,
    uri: Uri,
    headers: HeaderMap,
    Admitted(body): Admitted,
) -> Response {
    let name = "count_tokens";
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
