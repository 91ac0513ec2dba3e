//! Who may use the API: the proxy's token, or a loopback `Host` and no
//! other site's page, decided by the pages' own guard.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
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

/// The body of a request to an endpoint that reads it, as its handler
/// takes it: the request allowed ([`authorized`]), and its body read
/// within the proxy's limits (`crate::intake`); else the answer that says
/// why not.
pub(super) struct Admitted(pub Bytes);

impl FromRequest<Arc<Proxy>> for Admitted {
    type Rejection = Response;

    async fn from_request(req: Request, p: &Arc<Proxy>) -> Result<Admitted, Response> {
        let (parts, body) = req.into_parts();
        authorized(p, &parts.headers)?;
        crate::intake::read(&p.config, &parts.headers, body)
            .await
            .map(Admitted)
            .map_err(|refused| error(refused.status, &refused.message))
    }
}
