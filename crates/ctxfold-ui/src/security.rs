//! Who may see the pages and who may change a conversation through them.
//!
//! - Listening: as for the proxy, loopback only unless a token is
//!   configured (the shells check that before binding).
//! - The token (`[proxy] token`, the proxy's own): when set, every request
//!   carries it, in the proxy's header `x-ctxfold-token` or in a cookie the
//!   server sets after a visit to any page with `?token=…` (the address
//!   `ctxfold ui` prints).
//! - Without a token, the pages answer only requests whose `Host` is a
//!   loopback name: a page elsewhere that rebinds its own name to 127.0.0.1
//!   gets nothing.
//! - The proxy's API ([`Guard::api_allowed`]): the token in its header
//!   when one is set; else a loopback `Host` and nothing a browser marks
//!   as sent from another site.
//! - Forms (undo, restore) are refused unless the browser says the request
//!   is same-origin (`Sec-Fetch-Site`, else `Origin` against `Host`) and
//!   the form carries the token derived from the browser's session cookie
//!   and a secret of this process.

use axum::http::{HeaderMap, header};
use sha2::{Digest, Sha256};

/// The cookie that carries the token's proof.
pub const AUTH_COOKIE: &str = "ctxfold_ui_auth";
/// The cookie that names the browser's session (for form tokens).
pub const SESSION_COOKIE: &str = "ctxfold_ui_session";
/// The header the proxy's clients send the token in.
pub const TOKEN_HEADER: &str = "x-ctxfold-token";

/// Where a request says it comes from: its `Host`, and what a browser
/// adds (`Sec-Fetch-Site`, `Origin`; clients that are not browsers send
/// neither).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Site<'a> {
    /// `Host`.
    pub host: Option<&'a str>,
    /// `Sec-Fetch-Site`.
    pub fetch_site: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
}

impl<'a> Site<'a> {
    /// What a request's `headers` say.
    pub fn of(headers: &'a HeaderMap) -> Site<'a> {
        let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Site {
            host: h(header::HOST.as_str()),
            fetch_site: h("sec-fetch-site"),
            origin: h(header::ORIGIN.as_str()),
        }
    }
}

/// The checks, with what they need.
#[derive(Clone)]
pub struct Guard {
    token: Option<String>,
    secret: [u8; 32],
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token nor the secret.
        f.debug_struct("Guard")
            .field("token", &self.token.as_ref().map(|_| "set"))
            .finish_non_exhaustive()
    }
}

/// Hex of SHA-256 over `parts`, each length-prefixed.
fn digest(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Compare in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh random value, hex.
///
/// # Panics
///
/// When the operating system's random number generator fails.
// Deliberate: without randomness there is no safe session or form token.
#[allow(clippy::expect_used)]
pub fn random_hex() -> String {
    let mut b = [0u8; 16];
    // The OS's generator; without it there is no safe session, so fail loud.
    getrandom::fill(&mut b).expect("the system's random number generator failed");
    b.iter().map(|b| format!("{b:02x}")).collect()
}

impl Guard {
    /// The checks for `token` (none: loopback only), with a fresh secret.
    ///
    /// # Panics
    ///
    /// When the operating system's random number generator fails.
    // Deliberate, as in `random_hex`: no secret, no safe session.
    #[allow(clippy::expect_used)]
    pub fn new(token: Option<String>) -> Guard {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the system's random number generator failed");
        Guard { token, secret }
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// What the auth cookie holds for the configured token: tied to this
    /// process's secret too, so a cookie dies with the server that set it.
    pub fn auth_cookie_value(&self) -> Option<String> {
        self.token
            .as_ref()
            .map(|t| digest(&[b"ctxfold-ui-auth", &self.secret, t.as_bytes()]))
    }

    /// Whether `given` is the configured token.
    pub fn is_token(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|t| same(t.as_bytes(), given.as_bytes()))
    }

    /// Whether a request with these header and cookie values may see the
    /// pages: with a token, it must carry it (header or cookie); without,
    /// its `Host` must be a loopback name.
    pub fn allows(&self, host: Option<&str>, header: Option<&str>, cookie: Option<&str>) -> bool {
        match &self.token {
            Some(_) => {
                header.is_some_and(|h| self.is_token(h))
                    || match (cookie, self.auth_cookie_value()) {
                        (Some(c), Some(v)) => same(c.as_bytes(), v.as_bytes()),
                        _ => false,
                    }
            }
            None => host.is_some_and(is_loopback_host),
        }
    }

    /// Whether an API request (the proxy's `/v1/…` and `/metrics`) with
    /// these headers may be served: the pages' rule ([`Guard::allows`]),
    /// with the token in its header only (the cookie is the pages': a
    /// browser sends it to every port of the host). Without a token, also
    /// nothing a browser marks as sent by another site ([`same_origin`]):
    /// agents and SDKs send neither header, a page on another site cannot
    /// help sending them, and must not write conversations. With one, the
    /// token is the guard: a page cannot send the header without asking
    /// first, which the proxy never grants.
    pub fn api_allowed(
        &self,
        site: Site<'_>,
        token_header: Option<&str>,
    ) -> Result<(), &'static str> {
        if !self.allows(site.host, token_header, None) {
            return Err(if self.has_token() {
                "send the proxy's token in x-ctxfold-token"
            } else {
                "without a token the proxy answers only to a loopback Host (127.0.0.1, localhost)"
            });
        }
        if self.has_token() {
            return Ok(());
        }
        same_origin(site)
    }

    /// The form token of session `session`.
    pub fn csrf(&self, session: &str) -> String {
        digest(&[b"ctxfold-ui-csrf", &self.secret, session.as_bytes()])
    }

    /// Whether a form post may change anything: same-origin by the
    /// browser's word, and carrying the form token of its session.
    pub fn form_allowed(
        &self,
        site: Site<'_>,
        session: Option<&str>,
        form_token: Option<&str>,
    ) -> Result<(), &'static str> {
        same_origin(site)?;
        match (session, form_token) {
            (Some(s), Some(t)) if same(self.csrf(s).as_bytes(), t.as_bytes()) => Ok(()),
            _ => {
                Err("the form is stale or was not made by this page: reload the page and try again")
            }
        }
    }
}

/// Whether a browser says the request comes from this server's own pages
/// (`Sec-Fetch-Site`), or, from older browsers, an `Origin` that, when
/// sent, is this `Host`. Clients that are not browsers send neither.
pub fn same_origin(site: Site<'_>) -> Result<(), &'static str> {
    match site.fetch_site {
        Some("same-origin") | Some("none") => Ok(()),
        Some(_) => Err("a request a browser sent from another site is refused"),
        None => match site.origin {
            None => Ok(()),
            Some(o) => {
                let o = o.strip_prefix("http://").or(o.strip_prefix("https://"));
                if o.is_some() && o == site.host {
                    Ok(())
                } else {
                    Err("a request from another origin is refused")
                }
            }
        },
    }
}

/// Whether `host` (a `Host` header: name and optional port) names this
/// machine's loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|kv| {
        let (k, v) = kv.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_without_a_token_is_for_loopback_and_not_for_other_sites() {
        let site = |host, fetch_site, origin| Site {
            host,
            fetch_site,
            origin,
        };
        let g = Guard::new(None);
        let local = Some("127.0.0.1:7440");
        assert!(g.api_allowed(site(local, None, None), None).is_ok());
        assert!(
            g.api_allowed(site(Some("localhost:7440"), Some("none"), None), None)
                .is_ok()
        );
        assert!(
            g.api_allowed(site(Some("evil.example:7440"), None, None), None)
                .is_err()
        );
        assert!(g.api_allowed(site(None, None, None), None).is_err());
        assert!(
            g.api_allowed(site(local, Some("cross-site"), None), None)
                .is_err()
        );
        assert!(
            g.api_allowed(site(local, Some("same-site"), None), None)
                .is_err()
        );
        assert!(
            g.api_allowed(site(local, None, Some("http://evil.example")), None)
                .is_err()
        );
        assert!(
            g.api_allowed(site(local, None, Some("http://127.0.0.1:7440")), None)
                .is_ok()
        );
        let t = Guard::new(Some("0123456789abcdef".into()));
        assert!(
            t.api_allowed(
                site(Some("evil.example"), None, None),
                Some("0123456789abcdef")
            )
            .is_ok()
        );
        assert!(t.api_allowed(site(local, None, None), None).is_err());
        assert!(
            t.api_allowed(site(local, None, None), Some("0123456789abcdeX"))
                .is_err()
        );
    }

    #[test]
    fn loopback_hosts() {
        for h in [
            "127.0.0.1:7441",
            "localhost",
            "LOCALHOST:80",
            "[::1]:9",
            "127.1.2.3",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:7441",
            "10.0.0.1:80",
            "[::2]:1",
            "",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn token_by_header_or_cookie_else_nothing() {
        let g = Guard::new(Some("0123456789abcdef".into()));
        let c = g.auth_cookie_value().unwrap();
        assert!(g.allows(Some("x"), Some("0123456789abcdef"), None));
        assert!(g.allows(Some("x"), None, Some(&c)));
        assert!(!g.allows(Some("127.0.0.1"), None, None));
        assert!(!g.allows(Some("127.0.0.1"), Some("0123456789abcdeX"), Some("nope")));
        let open = Guard::new(None);
        assert!(open.allows(Some("127.0.0.1:1"), None, None));
        assert!(!open.allows(Some("rebound.example"), None, None));
    }

    #[test]
    fn forms_need_same_origin_and_their_session_token() {
        let g = Guard::new(None);
        let t = g.csrf("s1");
        let ok = |fetch_site, origin, session, token| {
            let host = Some("127.0.0.1:5");
            g.form_allowed(
                Site {
                    host,
                    fetch_site,
                    origin,
                },
                session,
                token,
            )
        };
        assert!(ok(Some("same-origin"), None, Some("s1"), Some(&t)).is_ok());
        assert!(ok(None, Some("http://127.0.0.1:5"), Some("s1"), Some(&t)).is_ok());
        assert!(ok(Some("cross-site"), None, Some("s1"), Some(&t)).is_err());
        assert!(ok(Some("same-site"), None, Some("s1"), Some(&t)).is_err());
        assert!(ok(None, Some("http://evil.example"), Some("s1"), Some(&t)).is_err());
        assert!(ok(Some("same-origin"), None, Some("s2"), Some(&t)).is_err());
        assert!(ok(Some("same-origin"), None, Some("s1"), None).is_err());
        assert_eq!(
            cookie("a=1; ctxfold_ui_session=xyz", SESSION_COOKIE),
            Some("xyz")
        );
    }
}
