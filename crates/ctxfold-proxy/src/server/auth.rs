//! Who may use the API: the proxy's token, or a loopback `Host` and no
//! other site's page, decided by the pages' own guard.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use ctxfold_ui::security::Site;

use super::{Proxy, TOKEN_HEADER, error};

/// Who may use the API (everything but `/healthz`): the token when one
/// is configured, else a loopback `Host` and no other site's page; the
/// pages' own guard decides (`ctxfold_ui::security`).
#[allow(clippy::result_large_err)]
pub(super) fn authorized(p: &Proxy, headers: &HeaderMap) -> Result<(), Response> {
    let token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    p.ui.guard()
        .api_allowed(Site::of(headers), token)
        .map_err(|why| {
            let status = if p.config.token.is_some() {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::FORBIDDEN
            };
            error(status, &format!("ctxfold proxy: {why}"))
        })
}

/// A request to an endpoint that reads its body: allowed
/// ([`authorized`]), and its body read within the proxy's limits
/// (`crate::intake`), or the answer that says why not.
#[allow(clippy::result_large_err)]
pub(super) async fn admitted(
    p: &Proxy,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Response> {
    authorized(p, headers)?;
    crate::intake::read(&p.config, headers, body)
        .await
        .map_err(|refused| error(refused.status, &refused.message))
}
