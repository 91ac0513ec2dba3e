//! The HTTP edge: an axum [`Router`] that `ctxfold ui` serves at `/` and
//! the proxy nests under `/ui`. Store calls and rendering run on tokio's
//! blocking pool; the only async work is waiting (for the pool, and between
//! the checks of the live-update stream).

// A handler's early answer is a `Response` (axum's own error type): large,
// made once per request.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use ctxfold_core::Log;
use ctxfold_store::{ConversationMeta, Store, StoreError};
use maud::Markup;

use crate::conversation::{self, Options};
use crate::html::{CSS, Ctx, JS, error_page};
use crate::security::{self, AUTH_COOKIE, Guard, SESSION_COOKIE, Site, TOKEN_HEADER};

/// How often an open page's stream asks the store whether the log grew
/// (one `next_seq`: a file's size or one indexed row).
pub const POLL: Duration = Duration::from_millis(500);

/// What every handler shares.
#[derive(Debug)]
pub struct Ui {
    store: Arc<dyn Store>,
    guard: Guard,
    base: String,
    window: Option<u32>,
    /// Set when the server shuts down: live-update streams end (a graceful
    /// shutdown waits for every open response, and theirs never end).
    closing: tokio::sync::watch::Sender<bool>,
    /// The list's figures of each conversation, until its log grows.
    figures: crate::data::FigureCache,
}

impl Ui {
    /// Pages over `store`, mounted at `base` (`""`, or `"/ui"` under the
    /// proxy), requiring `token` when one is given, measuring views against
    /// `window` when one is configured for every model.
    pub fn new(
        store: Arc<dyn Store>,
        token: Option<String>,
        base: &str,
        window: Option<u32>,
    ) -> Ui {
        Ui {
            store,
            guard: Guard::new(token),
            base: base.trim_end_matches('/').to_owned(),
            window,
            closing: tokio::sync::watch::Sender::new(false),
            figures: Default::default(),
        }
    }

    /// The same pages with cost priced with `prices` (config's
    /// `[prices]`; the built-in table otherwise).
    pub fn with_prices(mut self, prices: ctxfold_core::cost::PriceTable) -> Ui {
        self.figures.prices = prices;
        self
    }

    /// The checks these pages make, for a server that serves more than
    /// them (the proxy's API): one token, one loopback rule, one notion of
    /// a request from another site.
    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// End the live-update streams of open pages: call it when the server
    /// starts shutting down, so a graceful shutdown does not wait for them.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }
}

/// The routes, over `ui`.
pub fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/c/{id}", get(conversation))
        .route("/c/{id}/events", get(events))
        .route("/c/{id}/reset", get(confirm).post(reset))
        .route("/c/{id}/curve.svg", get(curve))
        .route("/assets/ui.css", get(|| async { asset("text/css", CSS) }))
        .route(
            "/assets/ui.js",
            get(|| async { asset("text/javascript", JS) }),
        )
        .fallback(not_found)
        .with_state(ui)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A browser that passed the checks, and its session: a handler that
/// takes one answers only past [`Ui::gate`].
struct Visitor {
    session: String,
    /// Whether the session cookie must be set on the answer.
    new_session: bool,
}

/// The conversation id an address names, and the browser that asks for
/// it, past the checks.
struct Visit {
    id: String,
    visitor: Visitor,
}

/// The conversation id an address names, asked for by a browser that
/// passed the checks; else the checks' answer, or the page that there is
/// no such conversation when the id cannot be one.
struct Named(String);

impl FromRequestParts<Arc<Ui>> for Visitor {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, ui: &Arc<Ui>) -> Result<Visitor, Response> {
        ui.gate(&parts.headers, &parts.uri)
    }
}

impl FromRequestParts<Arc<Ui>> for Visit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, ui: &Arc<Ui>) -> Result<Visit, Response> {
        let Path(id) = Path::<String>::from_request_parts(parts, ui)
            .await
            .map_err(IntoResponse::into_response)?;
        let visitor = Visitor::from_request_parts(parts, ui).await?;
        Ok(Visit { id, visitor })
    }
}

impl FromRequestParts<Arc<Ui>> for Named {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, ui: &Arc<Ui>) -> Result<Named, Response> {
        let Visit { id, .. } = Visit::from_request_parts(parts, ui).await?;
        if !plausible_id(&id) {
            return Err(no_such(ui, &id));
        }
        Ok(Named(id))
    }
}

fn header_str(headers: &HeaderMap, name: impl axum::http::header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn cookie_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| security::cookie(h, name))
}

impl Ui {
    fn ctx(&self, session: &str) -> Ctx {
        Ctx {
            base: self.base.clone(),
            csrf: self.guard.csrf(session),
        }
    }

    /// The token and loopback checks; `?token=` sets the cookie and sends
    /// the browser to the same address without it.
    fn gate(&self, headers: &HeaderMap, uri: &Uri) -> Result<Visitor, Response> {
        if let Some(t) = query(uri).get("token") {
            if !self.guard.is_token(t) {
                return Err(self.fail(
                    StatusCode::UNAUTHORIZED,
                    "Not allowed",
                    "That token is not this server's token.",
                ));
            }
            // Every spelling of the key goes (`tok%65n=` too), else the
            // redirect would come back here.
            let rest: Vec<String> = uri
                .query()
                .unwrap_or("")
                .split('&')
                .filter(|kv| {
                    let key = kv.split('=').next().unwrap_or("");
                    !kv.is_empty()
                        && percent_encoding::percent_decode_str(key).decode_utf8_lossy() != "token"
                })
                .map(str::to_owned)
                .collect();
            // One leading slash: `//host` would send the browser elsewhere.
            let path = format!("/{}", uri.path().trim_start_matches('/'));
            let mut to = format!("{}{path}", self.base);
            if !rest.is_empty() {
                to = format!("{to}?{}", rest.join("&"));
            }
            let mut r = Redirect::to(&to).into_response();
            if let Some(v) = self.guard.auth_cookie_value() {
                set_cookie(&mut r, AUTH_COOKIE, &v);
            }
            return Err(r);
        }
        let allowed = self.guard.allows(
            header_str(headers, header::HOST),
            header_str(headers, TOKEN_HEADER),
            cookie_of(headers, AUTH_COOKIE),
        );
        if !allowed {
            return Err(if self.guard.has_token() {
                self.fail(
                    StatusCode::UNAUTHORIZED,
                    "Token needed",
                    "This server needs its token: open the address it printed (…?token=…), or send the token in x-ctxfold-token.",
                )
            } else {
                self.fail(
                    StatusCode::FORBIDDEN,
                    "Not allowed",
                    "Without a token these pages answer only to a loopback address (127.0.0.1, localhost).",
                )
            });
        }
        Ok(match cookie_of(headers, SESSION_COOKIE) {
            Some(s)
                if !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                Visitor {
                    session: s.to_owned(),
                    new_session: false,
                }
            }
            _ => Visitor {
                session: security::random_hex(),
                new_session: true,
            },
        })
    }

    fn fail(&self, status: StatusCode, heading: &str, message: &str) -> Response {
        let ctx = Ctx {
            base: self.base.clone(),
            csrf: String::new(),
        };
        (status, html(error_page(&ctx, heading, message))).into_response()
    }
}

/// `a=1&b=2` as pairs, percent-decoded; `None` when it does not decode.
fn serde_urlencoded_pairs(q: &str) -> Option<HashMap<String, String>> {
    Query::<HashMap<String, String>>::try_from_uri(&format!("/?{q}").parse().ok()?)
        .ok()
        .map(|Query(m)| m)
}

fn set_cookie(r: &mut Response, name: &str, value: &str) {
    // HttpOnly: no script reads it; SameSite=Strict: no other site's page
    // sends it along.
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict"
    )) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
}

/// A page as an answer: not cached, not framed by another site (the forms
/// must not be clicked through someone else's page), no outside resources.
fn html(markup: Markup) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        markup.into_string(),
    )
        .into_response()
}

fn finish(visitor: &Visitor, mut r: Response) -> Response {
    if visitor.new_session {
        set_cookie(&mut r, SESSION_COOKIE, &visitor.session);
    }
    r
}

/// Whether `id` can be a conversation id: what the stores accept (a
/// folder's name: no `/`, `\\`, NUL or leading `.`), so nothing else
/// reaches the store.
fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 255 && !id.starts_with('.') && !id.contains(['/', '\\', '\0'])
}

/// Conversation `id`'s metadata and log, or the page that says why not.
fn open(ui: &Ui, id: &str) -> Result<(ConversationMeta, Log), Response> {
    let meta = ui
        .store
        .read_meta(id)
        .map_err(|e| store_error(ui, &e, id))?;
    let loaded = ui.store.load(id).map_err(|e| store_error(ui, &e, id))?;
    Ok((meta, loaded.into_log()))
}

/// A page made on the blocking pool by `f`, or the page that says why
/// not.
async fn page(f: impl FnOnce() -> Result<Response, Response> + Send + 'static) -> Response {
    let r = blocking(f).await;
    r.and_then(|r| r).unwrap_or_else(|r| r)
}

/// The address's query, as pairs (none when it cannot be read).
fn query(uri: &Uri) -> HashMap<String, String> {
    uri.query()
        .and_then(serde_urlencoded_pairs)
        .unwrap_or_default()
}

/// Run `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!("a page's work failed: {e}");
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "ctxfold ui: the page could not be made\n",
        )
            .into_response()
    })
}

fn store_error(ui: &Ui, e: &StoreError, id: &str) -> Response {
    match e {
        StoreError::NotFound { .. }
        | StoreError::NoConversation { .. }
        | StoreError::Gone { .. } => no_such(ui, id),
        other => ui.fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The store failed",
            &other.to_string(),
        ),
    }
}

fn no_such(ui: &Ui, id: &str) -> Response {
    ui.fail(
        StatusCode::NOT_FOUND,
        "No such conversation",
        &format!("There is no conversation {id} in this store."),
    )
}

async fn list(State(ui): State<Arc<Ui>>, visitor: Visitor, uri: Uri) -> Response {
    let q = query(&uri).remove("q").unwrap_or_default();
    let ctx = ui.ctx(&visitor.session);
    let u = Arc::clone(&ui);
    let r = blocking(
        move || match crate::data::rows(&*u.store, u.window, &u.figures) {
            Ok((rows, broken)) => html(crate::list::render(&ctx, &rows, &broken, &q)),
            Err(e) => u.fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The store failed",
                &e.to_string(),
            ),
        },
    )
    .await;
    finish(&visitor, r.unwrap_or_else(|r| r))
}

/// A number in the query, or a 400 page naming it.
fn number(ui: &Ui, q: &HashMap<String, String>, key: &str) -> Result<Option<u32>, Response> {
    match q.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            ui.fail(
                StatusCode::BAD_REQUEST,
                "Bad address",
                &format!("`{key}` must be a whole number, not `{v}`."),
            )
        }),
    }
}

async fn conversation(State(ui): State<Arc<Ui>>, visit: Visit, uri: Uri) -> Response {
    let q = query(&uri);
    let parsed = (|| -> Result<Options, Response> {
        let selected = number(&ui, &q, "c")?.map(|n| n as usize);
        let turns = match (number(&ui, &q, "from")?, number(&ui, &q, "to")?) {
            (Some(a), Some(b)) => Some((a, b)),
            (Some(a), None) => Some((a, a.saturating_add(conversation::DEFAULT_TURNS - 1))),
            (None, Some(b)) => Some((b.saturating_sub(conversation::DEFAULT_TURNS - 1).max(1), b)),
            (None, None) => None,
        };
        Ok(Options {
            selected,
            turns,
            window: ui.window,
            prices: ui.figures.prices.clone(),
        })
    })();
    let opts = match parsed {
        Ok(o) => o,
        Err(r) => return finish(&visit.visitor, r),
    };
    conversation_page(&ui, visit, move |_, ctx, meta, log| {
        Ok(html(conversation::render(ctx, meta, log, &opts)))
    })
    .await
}

/// The page of the conversation `visit` names, made by `render` from its
/// metadata and log on the blocking pool; the page that there is none when
/// the id cannot be one.
async fn conversation_page(
    ui: &Arc<Ui>,
    Visit { id, visitor }: Visit,
    render: impl FnOnce(&Ui, &Ctx, &ConversationMeta, &Log) -> Result<Response, Response>
    + Send
    + 'static,
) -> Response {
    if !plausible_id(&id) {
        return finish(&visitor, no_such(ui, &id));
    }
    let ctx = ui.ctx(&visitor.session);
    let u = Arc::clone(ui);
    let r = page(move || {
        let (meta, log) = open(&u, &id)?;
        render(&u, &ctx, &meta, &log)
    })
    .await;
    finish(&visitor, r)
}

async fn confirm(State(ui): State<Arc<Ui>>, visit: Visit, uri: Uri) -> Response {
    let q = query(&uri);
    let (n, restore) = match (number(&ui, &q, "n"), number(&ui, &q, "restore")) {
        (Ok(Some(n)), Ok(r)) => (n as usize, r.unwrap_or(0) == 1),
        (Err(r), _) | (_, Err(r)) => return finish(&visit.visitor, r),
        (Ok(None), _) => {
            return finish(
                &visit.visitor,
                ui.fail(
                    StatusCode::BAD_REQUEST,
                    "Bad address",
                    "Name the compaction: `?n=NUMBER`.",
                ),
            );
        }
    };
    let shown = visit.id.clone();
    conversation_page(
        &ui,
        visit,
        move |u, ctx, meta, log| match conversation::confirm(ctx, meta, log, n, restore) {
            Some(page) => Ok(html(page)),
            None => Err(u.fail(
                StatusCode::NOT_FOUND,
                "No such compaction",
                &format!("Conversation {shown} has no compaction {n}."),
            )),
        },
    )
    .await
}

async fn reset(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<String>,
    visitor: Visitor,
    headers: HeaderMap,
    form: Result<Form<HashMap<String, String>>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return ui.fail(
            StatusCode::BAD_REQUEST,
            "Bad form",
            "The form could not be read.",
        );
    };
    // Cross-site checks first: nothing another site sends gets further.
    let checked = ui.guard.form_allowed(
        Site::of(&headers),
        (!visitor.new_session).then_some(visitor.session.as_str()),
        form.get("csrf").map(String::as_str),
    );
    if let Err(why) = checked {
        return ui.fail(StatusCode::FORBIDDEN, "Refused", why);
    }
    let n = match form.get("n").map(|v| v.trim().parse::<usize>()) {
        Some(Ok(n)) if n > 0 => n,
        _ => {
            return ui.fail(
                StatusCode::BAD_REQUEST,
                "Bad form",
                "`n` must name a compaction by its number.",
            );
        }
    };
    let restore = match form.get("restore").map(String::as_str) {
        None | Some("0") => false,
        Some("1") => true,
        Some(_) => {
            return ui.fail(
                StatusCode::BAD_REQUEST,
                "Bad form",
                "`restore` must be 0 or 1.",
            );
        }
    };
    if !plausible_id(&id) {
        return no_such(&ui, &id);
    }
    let u = Arc::clone(&ui);
    page(move || {
        u.store
            .read_meta(&id)
            .map_err(|e| store_error(&u, &e, &id))?;
        // The very code `conversation compact --reset N` runs.
        match ctxfold_compactor::reset::reset(&*u.store, &id, restore, Some(n), false) {
            Ok(done) => {
                tracing::info!(
                    "{} compaction {n} of {id} from the browser ({} named)",
                    if restore { "restored" } else { "revoked" },
                    done.reset.count
                );
                Ok(Redirect::to(&format!(
                    "{}{}?c={n}#compaction",
                    u.base,
                    crate::html::conversation_path(&id)
                ))
                .into_response())
            }
            Err(ctxfold_compactor::reset::ResetError::NoSuchCompaction { number, count }) => Err(u
                .fail(
                    StatusCode::NOT_FOUND,
                    "No such compaction",
                    &format!("Conversation {id} has no compaction {number}; it has {count}."),
                )),
            Err(e @ ctxfold_compactor::reset::ResetError::Busy(_)) => {
                Err(u.fail(StatusCode::CONFLICT, "Busy", &e.to_string()))
            }
            Err(ctxfold_compactor::reset::ResetError::Store(e)) => Err(store_error(&u, &e, &id)),
        }
    })
    .await
}

/// The token curve of a conversation, as an SVG picture. Its address
/// carries the log's `seq` it was asked for, so the browser may keep it.
async fn curve(State(ui): State<Arc<Ui>>, Named(id): Named, uri: Uri) -> Response {
    let versioned = uri.query().is_some_and(|q| q.contains("seq="));
    let u = Arc::clone(&ui);
    page(move || {
        let (meta, log) = open(&u, &id)?;
        let points = crate::curve::points(&log, crate::curve::budget(log.len()));
        let window = crate::data::window(&meta, u.window);
        let svg = crate::curve::svg(&points, log.turn_count(), window);
        Ok((
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (
                    header::CACHE_CONTROL,
                    if versioned {
                        "private, max-age=86400"
                    } else {
                        "no-store"
                    },
                ),
            ],
            svg,
        )
            .into_response())
    })
    .await
}

/// Server-sent events for an open conversation page: `changed` with the
/// log's next `seq` whenever it differs from the one the page has.
async fn events(State(ui): State<Arc<Ui>>, Named(id): Named, uri: Uri) -> Response {
    let q = query(&uri);
    let seen: u64 = q.get("seq").and_then(|s| s.parse().ok()).unwrap_or(0);
    let closing = ui.closing.subscribe();
    let state = (ui, id, seen, closing);
    let stream =
        futures_util::stream::unfold(state, |(ui, id, mut seen, mut closing)| async move {
            loop {
                if *closing.borrow_and_update() {
                    return None;
                }
                tokio::select! {
                    _ = tokio::time::sleep(POLL) => {}
                    _ = closing.changed() => return None,
                }
                let store = Arc::clone(&ui.store);
                let key = id.clone();
                let next =
                    match tokio::task::spawn_blocking(move || store.peek_next_seq(&key)).await {
                        Ok(Ok(n)) => n,
                        // Gone or failing: end the stream; the page keeps what it has.
                        _ => return None,
                    };
                if next != seen {
                    seen = next;
                    let ev = Event::default().event("changed").data(next.to_string());
                    return Some((Ok::<_, Infallible>(ev), (ui, id, seen, closing)));
                }
            }
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

async fn not_found(State(ui): State<Arc<Ui>>, _: Visitor, uri: Uri) -> Response {
    ui.fail(
        StatusCode::NOT_FOUND,
        "Not found",
        &format!("There is no page at {}.", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use super::plausible_id;

    /// What the workspace accepts as a folder's name, and nothing else.
    #[test]
    fn ids_the_store_accepts_are_plausible() {
        for id in ["20261202-014012-4574", "proxy-3f2a", "notes v2.x?#%é"] {
            assert!(plausible_id(id), "{id}");
        }
        for id in ["", ".hidden", "a/b", "a\\b", "a\0b", "..", &"x".repeat(256)] {
            assert!(!plausible_id(id), "{id}");
        }
    }
}
