//! The network: each configured upstream reachable (any HTTP answer will
//! do: no key is sent, so a 401 or a 404 still proves the way there), and
//! a ctxfold proxy at `[proxy] listen`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ctxfold_config::{Loaded, Source};

use super::{Check, TIMEOUT};
use crate::settings::Settings;

/// The upstreams' lines and the proxy's, checked side by side. Without
/// settings (the config's line says why) there is nothing to check.
pub fn checks(settings: Option<&Settings>, loaded: Option<&Loaded>) -> Vec<Check> {
    let Some(s) = settings else {
        return vec![Check::note(
            "network",
            "upstreams and proxy not checked: the config could not be read",
            Some("see the config line".to_owned()),
        )];
    };
    let mut upstreams = vec![
        Upstream {
            name: "openai".to_owned(),
            url: s.proxy.openai.clone(),
            key: "[proxy] openai".to_owned(),
            origin: origin(loaded, "proxy.openai"),
        },
        Upstream {
            name: "anthropic".to_owned(),
            url: s.proxy.anthropic.clone(),
            key: "[proxy] anthropic".to_owned(),
            origin: origin(loaded, "proxy.anthropic"),
        },
    ];
    // Providers config names a base URL for (`query`, model summaries):
    // the built-in ones nobody configured are not probed.
    for name in s.providers.names() {
        let key = format!("providers.{name}.base_url");
        if let (Some(at), Some(p)) = (origin(loaded, &key), s.providers.get(&name)) {
            upstreams.push(Upstream {
                name: format!("provider {name}"),
                url: p.base_url.clone(),
                key: format!("[providers.{name}] base_url"),
                origin: Some(at),
            });
        }
    }
    let agent = agent();
    std::thread::scope(|scope| {
        let probes: Vec<_> = upstreams
            .iter()
            .map(|u| scope.spawn(|| upstream(&agent, u)))
            .collect();
        let proxy = proxy(&agent, s, loaded);
        let mut lines: Vec<Check> = probes
            .into_iter()
            .zip(&upstreams)
            .map(|(p, u)| {
                p.join().unwrap_or_else(|_| {
                    Check::fail(
                        format!("upstream {}", u.name),
                        "the check stopped",
                        "run ctxfold doctor again",
                    )
                })
            })
            .collect();
        lines.push(proxy);
        lines
    })
}

/// An upstream to probe.
struct Upstream {
    /// `openai`, `provider local`, …
    name: String,
    /// Its base URL.
    url: String,
    /// The setting that names it.
    key: String,
    /// Where that was set, when not by the defaults.
    origin: Option<String>,
}

/// The file (and line) or variable that set `key`; `None` for a default.
fn origin(loaded: Option<&Loaded>, key: &str) -> Option<String> {
    let l = loaded?;
    match l.origin(key)? {
        Source::Builtin => None,
        _ => l.where_set(key),
    }
}

/// One HTTP client for every probe: an error status is an answer, each
/// request within [`TIMEOUT`].
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT))
        .user_agent(concat!("ctxfold-doctor/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// What a probe got: the status and the start of the body, and how long
/// it took; or why there was no answer.
type Answer = Result<(u16, String, Duration), ureq::Error>;

/// `GET url` with `headers`.
fn get(agent: &ureq::Agent, url: &str, headers: &[(&str, &str)]) -> Answer {
    let start = Instant::now();
    let mut request = agent.get(url);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let mut response = request.call()?;
    let status = response.status().as_u16();
    // The head is the answer; a body that cannot be read is left out.
    let body = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()
        .unwrap_or_default();
    Ok((status, body, start.elapsed()))
}

/// Why there was no answer, in a few words.
fn why(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused".to_owned()
        }
        ureq::Error::Io(io) if dns(io) => format!("host not found ({io})"),
        ureq::Error::Io(io) => io.to_string(),
        ureq::Error::Timeout(_) => format!("no answer within {} s", TIMEOUT.as_secs()),
        ureq::Error::HostNotFound => "host not found (DNS)".to_owned(),
        ureq::Error::BadUri(u) => format!("not a URL ({u})"),
        other => other.to_string(),
    }
}

/// Whether `io` is the resolver's: the system's lookup failed (ureq
/// passes getaddrinfo's error on as it is).
fn dns(io: &std::io::Error) -> bool {
    io.to_string().contains("lookup address")
}

/// An upstream's line.
fn upstream(agent: &ureq::Agent, u: &Upstream) -> Check {
    let check = format!("upstream {} {}", u.name, u.url);
    match get(agent, &u.url, &[]) {
        Ok((status, _, took)) => Check::ok(
            check,
            format!("reachable (HTTP {status} in {} ms)", took.as_millis()),
        ),
        Err(e) => {
            let set = match &u.origin {
                Some(at) => format!("{} (set at {at})", u.key),
                None => format!("{} (the default)", u.key),
            };
            let fix = match &e {
                ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                    format!("start the server there, or point {set} at one that is up")
                }
                ureq::Error::Io(io) if dns(io) => {
                    format!("check the host name in {set}, and that this machine resolves names")
                }
                ureq::Error::HostNotFound => {
                    format!("check the host name in {set}, and that this machine resolves names")
                }
                ureq::Error::BadUri(_) => format!("give {set} a URL such as https://host[:port]"),
                _ => format!(
                    "check {set} and the network on the way (a firewall; HTTPS_PROXY if one is needed)"
                ),
            };
            Check::fail(check, why(&e), fix)
        }
    }
}

/// The proxy's line: a ctxfold proxy answering `/healthz` at `[proxy]
/// listen`, with what it has served. Nothing listening there is a failure
/// when `listen` was configured (an agent is pointed at it), a note when it
/// is the default (`ctxfold run` starts a proxy of its own).
fn proxy(agent: &ureq::Agent, s: &Settings, loaded: Option<&Loaded>) -> Check {
    let listen = s.proxy.listen;
    let check = format!("proxy {listen}");
    if let Err(e) = s.proxy.check_listen() {
        return Check::fail(
            check,
            e,
            "set [proxy] token, or [proxy] listen on 127.0.0.1",
        );
    }
    let base = format!("http://{}", reachable_at(listen));
    let configured = origin(loaded, "proxy.listen");
    match get(agent, &format!("{base}/healthz"), &[]) {
        Ok((200, body, _)) if body.trim() == "ok" => {
            Check::ok(check, format!("a ctxfold proxy answers{}", served(agent, &base, s)))
        }
        Ok((status, _, _)) => Check::fail(
            check,
            format!("something else answers there (HTTP {status} to /healthz), not a ctxfold proxy"),
            "stop what listens there, or set [proxy] listen to a free address",
        ),
        Err(e) => match configured {
            Some(at) => Check::fail(
                check,
                format!("no ctxfold proxy ({}); [proxy] listen is set at {at}", why(&e)),
                "start it: ctxfold proxy (or remove [proxy] listen if agents are not pointed there)",
            ),
            None => Check::note(
                check,
                format!("no proxy running at the default address ({})", why(&e)),
                Some(
                    "ctxfold run AGENT starts one for its session; ctxfold proxy starts a lasting one"
                        .to_owned(),
                ),
            ),
        },
    }
}

/// Where a proxy listening on `listen` is reached from here: on loopback
/// when it listens on every address.
fn reachable_at(listen: SocketAddr) -> SocketAddr {
    let mut at = listen;
    if at.ip().is_unspecified() {
        at.set_ip(match at {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    at
}

/// `; 12 requests answered, 3 compactions recorded` from the proxy's
/// `/metrics` (with the client token when one is configured), or nothing
/// when they cannot be read.
fn served(agent: &ureq::Agent, base: &str, s: &Settings) -> String {
    let token: Vec<(&str, &str)> = match &s.proxy.token {
        Some(t) => vec![("x-ctxfold-token", t.as_str())],
        None => Vec::new(),
    };
    match get(agent, &format!("{base}/metrics"), &token) {
        Ok((200, text, _)) => {
            let requests = crate::metrics_text::total(&text, "ctxfold_proxy_requests_total");
            let compactions = crate::metrics_text::total(&text, "ctxfold_proxy_compactions_total");
            let (r, c) = (plural(requests), plural(compactions));
            format!("; {requests} request{r} answered, {compactions} compaction{c} recorded")
        }
        Ok((status, _, _)) => format!("; its /metrics answered HTTP {status}"),
        Err(_) => String::new(),
    }
}

/// `s` unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_address_is_reached_on_loopback() {
        let a: SocketAddr = "0.0.0.0:7440".parse().unwrap();
        assert_eq!(reachable_at(a).to_string(), "127.0.0.1:7440");
        let b: SocketAddr = "10.1.2.3:80".parse().unwrap();
        assert_eq!(reachable_at(b), b);
    }
}
