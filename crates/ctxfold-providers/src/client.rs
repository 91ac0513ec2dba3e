//! HTTP: one blocking agent per provider, with timeouts and retries.
//!
//! - Timeouts: [`ProviderConfig::connect_timeout`] for the connection;
//!   [`ProviderConfig::timeout`] for the response to begin and for each read
//!   of its body (a stream may run long, but never stall that long).
//! - Retries: a 429 (unless the account is out of quota) or a 5xx other than
//!   501/505 is tried again, up to [`ProviderConfig::max_retries`] times,
//!   after `retry-after-ms` / `retry-after` (seconds) when the server sends
//!   one, else after the base delay doubled on each retry; never longer than
//!   [`ProviderConfig::retry_max_delay`]. Network failures and timeouts are
//!   not retried (a timeout would multiply the wait), and neither is a
//!   stream that broke after it began (its text was already shown).

use std::io::{self, Read};
use std::thread::sleep;
use std::time::Duration;

use serde_json::Value;
use ureq::Agent;
use ureq::http::{HeaderMap, Response};

use crate::error::{self, ErrorContext, ProviderError};
use crate::model::ProviderConfig;

/// Largest response body read whole (a non-streamed answer or an error).
const BODY_LIMIT: u64 = 64 * 1024 * 1024;

/// One provider's HTTP agent and retry policy.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    agent: Agent,
    timeout: Duration,
    connect_timeout: Duration,
    max_retries: u32,
    base_delay: Duration,
    max_delay: Duration,
}

/// One request to make.
pub(crate) struct Call<'a> {
    /// The full URL.
    pub url: &'a str,
    /// Headers to send.
    pub headers: &'a [(String, String)],
    /// A JSON body to POST, serialized; `None` makes a GET.
    pub body: Option<&'a [u8]>,
    /// For classifying errors.
    pub ctx: ErrorContext<'a>,
}

impl Http {
    pub(crate) fn new(c: &ProviderConfig) -> Http {
        let config = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(c.connect_timeout))
            .timeout_resolve(Some(c.connect_timeout))
            .timeout_send_request(Some(c.timeout))
            .timeout_send_body(Some(c.timeout))
            .timeout_recv_response(Some(c.timeout))
            .timeout_per_read(Some(c.timeout))
            .user_agent(concat!("ctxfold/", env!("CARGO_PKG_VERSION")))
            .build();
        Http {
            agent: config.new_agent(),
            timeout: c.timeout,
            connect_timeout: c.connect_timeout,
            max_retries: c.max_retries,
            base_delay: c.retry_base_delay,
            max_delay: c.retry_max_delay,
        }
    }

    /// Make the call, retrying as the module docs say. Returns a 2xx
    /// response whose body is not read yet.
    pub(crate) fn send(&self, call: &Call<'_>) -> Result<Response<ureq::Body>, ProviderError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = match call.body {
                Some(bytes) => {
                    let mut req = self.agent.post(call.url);
                    for (k, v) in call.headers {
                        req = req.header(k, v);
                    }
                    req.content_type("application/json").send(bytes)
                }
                None => {
                    let mut req = self.agent.get(call.url);
                    for (k, v) in call.headers {
                        req = req.header(k, v);
                    }
                    req.call()
                }
            };
            let mut resp = result.map_err(|e| self.transport(e, call.url))?;
            let status = resp.status().as_u16();
            if resp.status().is_success() {
                return Ok(resp);
            }
            let wait = retry_after(resp.headers());
            let body = resp
                .body_mut()
                .with_config()
                .limit(BODY_LIMIT)
                .lossy_utf8(true)
                .read_to_string()
                .unwrap_or_default();
            if error::retryable(status, &body) && attempt <= self.max_retries {
                sleep(self.delay(attempt, wait));
                continue;
            }
            return Err(error::from_status(status, &body, &call.ctx, attempt));
        }
    }

    /// The delay before retry number `attempt` (1-based).
    fn delay(&self, attempt: u32, server: Option<Duration>) -> Duration {
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16));
        server.unwrap_or(backoff).min(self.max_delay)
    }

    /// Read a whole 2xx body as JSON.
    pub(crate) fn read_json(
        &self,
        resp: Response<ureq::Body>,
        url: &str,
    ) -> Result<Value, ProviderError> {
        let mut text = String::new();
        resp.into_body()
            .into_with_config()
            .limit(BODY_LIMIT)
            .reader()
            .read_to_string(&mut text)
            .map_err(|e| self.read_error(e, url))?;
        serde_json::from_str(&text).map_err(|e| ProviderError::Malformed {
            detail: format!(
                "the response from {url} is not JSON ({e}): {}",
                error::quote(&text)
            ),
        })
    }

    /// A failure before any response.
    fn transport(&self, e: ureq::Error, url: &str) -> ProviderError {
        let url = url.to_owned();
        match e {
            ureq::Error::Timeout(t) => ProviderError::Timeout {
                url,
                after: match t {
                    ureq::Timeout::Connect | ureq::Timeout::Resolve => self.connect_timeout,
                    _ => self.timeout,
                },
            },
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::TimedOut => ProviderError::Timeout {
                url,
                after: self.timeout,
            },
            ureq::Error::Io(source) => ProviderError::Unreachable { url, source },
            ureq::Error::HostNotFound => ProviderError::Unreachable {
                url,
                source: io::Error::new(io::ErrorKind::NotFound, "host not found"),
            },
            ureq::Error::Protocol(p) => ProviderError::Malformed {
                detail: format!("{url}: HTTP protocol error: {p}"),
            },
            other => ProviderError::Unreachable {
                url,
                source: io::Error::other(other.to_string()),
            },
        }
    }

    /// A failure while reading a response body.
    pub(crate) fn read_error(&self, e: io::Error, url: &str) -> ProviderError {
        let url = url.to_owned();
        let timed_out = matches!(
            e.kind(),
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
        ) || e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)));
        if timed_out {
            return ProviderError::Timeout {
                url,
                after: self.timeout,
            };
        }
        if e.kind() == io::ErrorKind::InvalidData {
            return ProviderError::Malformed {
                detail: format!("{url}: {e}"),
            };
        }
        ProviderError::Unreachable {
            url,
            source: io::Error::new(
                e.kind(),
                format!("the connection broke while reading the response: {e}"),
            ),
        }
    }
}

/// The delay a server asks for: `retry-after-ms`, or `retry-after` in
/// seconds (an HTTP date is not read).
fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        h.get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ProviderConfig, ProviderKind};

    #[test]
    fn backoff_doubles_and_is_capped_and_the_server_wins() {
        let mut c = ProviderConfig::new(ProviderKind::OpenAi, "http://127.0.0.1:1");
        c.retry_base_delay = Duration::from_millis(100);
        c.retry_max_delay = Duration::from_millis(350);
        let h = Http::new(&c);
        assert_eq!(h.delay(1, None), Duration::from_millis(100));
        assert_eq!(h.delay(2, None), Duration::from_millis(200));
        assert_eq!(h.delay(3, None), Duration::from_millis(350));
        assert_eq!(
            h.delay(1, Some(Duration::from_millis(5))),
            Duration::from_millis(5)
        );
        assert_eq!(
            h.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(350)
        );
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
