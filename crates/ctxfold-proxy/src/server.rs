//! The HTTP edge: axum on tokio, reqwest to the upstream. Everything that
//! touches the store or compacts runs on the blocking pool through
//! [`Book`]; the answer's bytes go to the client as they arrive, and a copy
//! is gathered by a task and recorded (on the blocking pool) once the
//! stream has ended, so recording never holds the stream up and a long
//! stream holds no thread.
//!
//! The jobs, one module each under `server/`:
//! - `routes`: the paths and their handlers.
//! - `compacting`: the endpoints the proxy compacts: prepare, fail open
//!   (or reject), and one retry after the upstream said "over the
//!   context window".
//! - `emulating`: the answers of the context management ctxfold emulates
//!   for an upstream without it.
//! - `forward`: sending a request on to the upstream, and which headers go.
//! - `respond`: the answer streamed to the client, watched for its
//!   protocol's end, a copy going to the recorder.
//! - `record`: reading that copy and recording it.
//! - `auth`: who may use the API.

mod auth;
mod compacting;
mod emulating;
mod forward;
mod record;
mod respond;
mod routes;

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::book::Book;
use crate::config::ProxyConfig;
use crate::metrics::Metrics;

pub use routes::router;

/// The header a client names its conversation with.
pub const CONVERSATION_HEADER: &str = "x-ctxfold-conversation";

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
        let ui = Arc::new(
            ctxfold_ui::Ui::new(
                Arc::clone(book.store()),
                config.token.clone(),
                "/ui",
                config.window,
            )
            .with_prices(config.prices.clone()),
        );
        Ok(Proxy {
            ui,
            book: Arc::new(book),
            config,
            metrics: Metrics::default(),
            client,
        })
    }
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

/// An error in the shape both APIs use.
fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        ctxfold_wire::value(&ctxfold_wire::error::ErrorBody::new(
            "ctxfold_proxy_error",
            message,
        ))
        .to_string(),
    )
        .into_response()
}
