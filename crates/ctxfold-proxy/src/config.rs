//! `[proxy]`: where the proxy listens, where it forwards, and how it fails.
//!
//! ```toml
//! [proxy]
//! listen = "127.0.0.1:7440"          # the default
//! openai = "https://api.openai.com"  # upstream of /v1/chat/completions, /v1/responses
//! anthropic = "https://api.anthropic.com"  # upstream of /v1/messages
//! gemini = "https://generativelanguage.googleapis.com"  # upstream of /v1beta/models/…:generateContent
//! on_error = "pass"                  # or "reject"
//! max_body_bytes = 33554432          # larger requests get 413
//! connect_timeout_secs = 10
//! timeout_secs = 600                 # the longest silence of an upstream answer
//! header_timeout_secs = 30          # to send a request's head, from its first byte
//! body_timeout_secs = 60             # to send a body the proxy reads; elsewhere, the longest silence in one
//! idle_timeout_secs = 120            # a connection waiting for its (next) request
//! max_connections = 512              # client connections open at once; more wait to be accepted
//! token = "…"                        # required to listen beyond loopback
//! window = 200000                    # every model's window (default: the model's own, from the table)
//! cache_conversations = 128          # loaded logs kept, and as many readers
//! cache_bytes = 268435456            # their text in all (half each)
//! cache_index = 65536                # conversation keys and Responses answer ids kept
//!
//! [proxy.upstreams.openai]           # or .anthropic
//! context_management = "emulate"     # the upstream lacks the providers' context management: ctxfold provides it ("pass", the default: forward it)
//! ```
//!
//! Upstreams come from here only: nothing in a request can name another
//! host, so the proxy is never an open proxy.

use std::net::SocketAddr;

use ctxfold_config::SectionProblem;

/// The default listening address: loopback, a fixed port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7440";
/// OpenAI's public API.
pub const OPENAI: &str = "https://api.openai.com";
/// Anthropic's public API.
pub const ANTHROPIC: &str = "https://api.anthropic.com";
/// Google's Gemini API.
pub const GEMINI: &str = "https://generativelanguage.googleapis.com";
/// Largest request body accepted by default: 32 MiB (a 200k-token
/// conversation is under 1 MB; images make it larger).
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// What the proxy does when it cannot parse, store or compact a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    /// Send the original request upstream unchanged (counted and logged).
    Pass,
    /// Answer 502 with what went wrong.
    Reject,
}

/// Which upstreams lack the providers' own context management, which
/// ctxfold then provides (`[proxy.upstreams.NAME] context_management =
/// "emulate"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Emulate {
    /// The OpenAI-shaped upstream (Responses' compaction).
    pub openai: bool,
    /// The Anthropic-shaped upstream (context editing and compaction).
    pub anthropic: bool,
}

impl Emulate {
    /// Whether `upstream` is said to lack the providers' context
    /// management (see `protocol::emulated`: only a protocol that has it
    /// emulates it).
    pub fn of(self, upstream: Upstream) -> bool {
        match upstream {
            Upstream::Anthropic => self.anthropic,
            Upstream::OpenAi => self.openai,
            Upstream::Gemini => false,
        }
    }
}

/// The upstreams `[proxy]` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// `[proxy] openai`.
    OpenAi,
    /// `[proxy] anthropic`.
    Anthropic,
    /// `[proxy] gemini`.
    Gemini,
}

/// `[proxy]`, resolved.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Base URL of the OpenAI-shaped upstream (no trailing `/v1`).
    pub openai: String,
    /// Base URL of the Anthropic-shaped upstream.
    pub anthropic: String,
    /// Base URL of the Gemini API upstream.
    pub gemini: String,
    /// Failure handling.
    pub on_error: OnError,
    /// Request body limit in bytes.
    pub max_body_bytes: usize,
    /// Connecting to an upstream.
    pub connect_timeout: std::time::Duration,
    /// The longest silence of an upstream answer (between two reads).
    pub timeout: std::time::Duration,
    /// The longest a client may take to send a request's head, from its
    /// first byte.
    pub header_timeout: std::time::Duration,
    /// The longest a client may take to send a body the proxy reads
    /// whole; on other paths, the longest silence within a body.
    pub body_timeout: std::time::Duration,
    /// The longest a connection may wait for its first or next request.
    pub idle_timeout: std::time::Duration,
    /// Client connections open at once; more wait in the listen queue.
    pub max_connections: usize,
    /// The client token (`x-ctxfold-token`), required beyond loopback.
    pub token: Option<String>,
    /// The window of every request's model; `None`: the model's own, from
    /// the table (a model not in it is not compacted automatically).
    pub window: Option<u32>,
    /// Record and report, never change a request.
    pub observe: bool,
    /// What is kept in memory of the conversations served.
    pub cache: crate::cache::Limits,
    /// The upstreams whose context management ctxfold emulates.
    pub emulate: Emulate,
    /// The price table `/metrics` and the pages count cost with (config's
    /// `[prices]`, not `[proxy]`).
    pub prices: ctxfold_core::cost::PriceTable,
}

impl ProxyConfig {
    /// The URL of `upstream`.
    pub fn upstream(&self, upstream: Upstream) -> &str {
        match upstream {
            Upstream::OpenAi => &self.openai,
            Upstream::Anthropic => &self.anthropic,
            Upstream::Gemini => &self.gemini,
        }
    }

    /// The same with `prices` (config's `[prices]`).
    pub fn with_prices(self, prices: ctxfold_core::cost::PriceTable) -> Self {
        ProxyConfig { prices, ..self }
    }
}

impl Default for ProxyConfig {
    // `DEFAULT_LISTEN` is a literal address (the tests build the default).
    #[allow(clippy::expect_used)]
    fn default() -> Self {
        ProxyConfig {
            listen: DEFAULT_LISTEN.parse().expect("a valid address"),
            openai: OPENAI.into(),
            anthropic: ANTHROPIC.into(),
            gemini: GEMINI.into(),
            on_error: OnError::Pass,
            max_body_bytes: MAX_BODY_BYTES,
            connect_timeout: std::time::Duration::from_secs(10),
            timeout: std::time::Duration::from_secs(600),
            header_timeout: std::time::Duration::from_secs(30),
            body_timeout: std::time::Duration::from_secs(60),
            // Longer than the clients' own pools keep a connection idle
            // (reqwest, which Codex uses: 90 s), so the client closes it
            // first and never sends on a connection being closed.
            idle_timeout: std::time::Duration::from_secs(120),
            max_connections: 512,
            token: None,
            window: None,
            observe: false,
            cache: crate::cache::Limits::default(),
            emulate: Emulate::default(),
            prices: Default::default(),
        }
    }
}

/// The keys of `[proxy]`.
const KEYS: &[&str] = &[
    "listen",
    "openai",
    "anthropic",
    "gemini",
    "on_error",
    "max_body_bytes",
    "connect_timeout_secs",
    "timeout_secs",
    "header_timeout_secs",
    "body_timeout_secs",
    "idle_timeout_secs",
    "max_connections",
    "token",
    "window",
    "cache_conversations",
    "cache_bytes",
    "cache_index",
    "upstreams",
];

fn url(key: &str, v: &toml::Value) -> Result<String, SectionProblem> {
    let expected = "an http:// or https:// base URL, such as https://api.openai.com";
    let s = v
        .as_str()
        .ok_or_else(|| SectionProblem::invalid(key, expected))?;
    if !(s.starts_with("http://") || s.starts_with("https://")) || s.contains('?') {
        return Err(SectionProblem::invalid(key, expected));
    }
    Ok(s.trim_end_matches('/').to_owned())
}

fn positive(key: &str, v: &toml::Value, what: &str) -> Result<u64, SectionProblem> {
    v.as_integer()
        .filter(|&n| n > 0)
        .map(|n| n as u64)
        .ok_or_else(|| SectionProblem::invalid(key, what))
}

fn seconds(key: &str, v: &toml::Value) -> Result<std::time::Duration, SectionProblem> {
    positive(key, v, "a number of seconds, at least 1").map(std::time::Duration::from_secs)
}

/// `[proxy.upstreams.NAME]` (`key`): whether its context management is
/// emulated.
fn emulates(key: &str, v: &toml::Value) -> Result<bool, SectionProblem> {
    let mut emulate = false;
    for (k, v) in
        SectionProblem::table(v, "a table (context_management = \"pass\" or \"emulate\")")?
    {
        let key = format!("{key}.{k}");
        match k.as_str() {
            "context_management" => {
                emulate = match v.as_str() {
                    Some("pass") => false,
                    Some("emulate") => true,
                    _ => {
                        return Err(SectionProblem::invalid(
                            &key,
                            "\"pass\" (the upstream implements it) or \"emulate\" (ctxfold provides it)",
                        ));
                    }
                }
            }
            _ => return Err(SectionProblem::unknown(&key, &["context_management"])),
        }
    }
    Ok(emulate)
}

/// Check `[proxy]` as one config layer sets it (a `SectionCheck`).
pub fn check(v: &toml::Value) -> Result<(), SectionProblem> {
    ProxyConfig::default().apply(v).map(|_| ())
}

impl ProxyConfig {
    /// These settings with `[proxy]` (`v`) applied over them.
    pub fn apply(mut self, v: &toml::Value) -> Result<Self, SectionProblem> {
        for (k, v) in SectionProblem::table(v, "a table ([proxy])")? {
            match k.as_str() {
                "listen" => {
                    let expected = "an address and port, such as 127.0.0.1:7440";
                    self.listen = v
                        .as_str()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| SectionProblem::invalid(k, expected))?;
                }
                "openai" => self.openai = url(k, v)?,
                "anthropic" => self.anthropic = url(k, v)?,
                "gemini" => self.gemini = url(k, v)?,
                "on_error" => {
                    self.on_error = match v.as_str() {
                        Some("pass") => OnError::Pass,
                        Some("reject") => OnError::Reject,
                        _ => {
                            return Err(SectionProblem::invalid(
                                k,
                                "\"pass\" (send the request on unchanged) or \"reject\" (answer 502)",
                            ));
                        }
                    }
                }
                "max_body_bytes" => {
                    self.max_body_bytes = positive(k, v, "a number of bytes, at least 1")? as usize;
                }
                "connect_timeout_secs" => self.connect_timeout = seconds(k, v)?,
                "timeout_secs" => self.timeout = seconds(k, v)?,
                "header_timeout_secs" => self.header_timeout = seconds(k, v)?,
                "body_timeout_secs" => self.body_timeout = seconds(k, v)?,
                "idle_timeout_secs" => self.idle_timeout = seconds(k, v)?,
                "max_connections" => {
                    self.max_connections =
                        positive(k, v, "a number of connections, at least 1")? as usize;
                }
                "token" => {
                    let s = v.as_str().filter(|s| s.len() >= 16).ok_or_else(|| {
                        SectionProblem::invalid(k, "a string of at least 16 characters")
                    })?;
                    self.token = Some(s.to_owned());
                }
                "window" => {
                    let n = positive(k, v, "a number of tokens, at least 1")?;
                    self.window = Some(u32::try_from(n).map_err(|_| {
                        SectionProblem::invalid(k, "a number of tokens under 2^32")
                    })?);
                }
                "cache_conversations" => {
                    self.cache.conversations =
                        positive(k, v, "a number of conversations, at least 1")? as usize;
                }
                "cache_bytes" => {
                    self.cache.bytes = positive(k, v, "a number of bytes, at least 1")? as usize;
                }
                "cache_index" => {
                    self.cache.index = positive(k, v, "a number of entries, at least 1")? as usize;
                }
                "upstreams" => {
                    for (name, u) in SectionProblem::table(
                        v,
                        "a table of upstreams ([proxy.upstreams.openai], [proxy.upstreams.anthropic])",
                    )? {
                        let key = format!("upstreams.{name}");
                        let emulate = emulates(&key, u)?;
                        match name.as_str() {
                            "openai" => self.emulate.openai = emulate,
                            "anthropic" => self.emulate.anthropic = emulate,
                            _ => {
                                return Err(SectionProblem::unknown(
                                    &key,
                                    &["openai", "anthropic"],
                                ));
                            }
                        }
                    }
                }
                _ => return Err(SectionProblem::unknown(k, KEYS)),
            }
        }
        Ok(self)
    }

    /// Refuse to listen beyond loopback without a client token: anyone who
    /// can reach the port could otherwise spend the keys the agents send.
    pub fn check_listen(&self) -> Result<(), String> {
        if !self.listen.ip().is_loopback() && self.token.is_none() {
            return Err(format!(
                "refusing to listen on {} without a client token: set [proxy] token (clients send it as x-ctxfold-token), or listen on 127.0.0.1",
                self.listen
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str) -> Result<ProxyConfig, SectionProblem> {
        let v: toml::Value = toml::from_str(text).unwrap();
        ProxyConfig::default().apply(&v)
    }

    #[test]
    fn keys_are_read_and_checked() {
        let c = apply(
            "listen = \"0.0.0.0:9000\"\nopenai = \"http://127.0.0.1:1/\"\non_error = \"reject\"\nwindow = 1000\ntoken = \"0123456789abcdef\"",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.openai, "http://127.0.0.1:1");
        assert_eq!(c.on_error, OnError::Reject);
        assert_eq!(c.window, Some(1000));
        assert_eq!(c.cache, crate::cache::Limits::default());
        let c = apply("cache_conversations = 3\ncache_bytes = 1048576\ncache_index = 9").unwrap();
        assert_eq!(
            c.cache,
            crate::cache::Limits {
                conversations: 3,
                bytes: 1 << 20,
                index: 9
            }
        );
        assert!(c.check_listen().is_ok());
        for bad in [
            "listen = \"here\"",
            "openai = \"ftp://x\"",
            "on_error = \"maybe\"",
            "window = 0",
            "token = \"short\"",
            "max_body_bytes = -1",
            "cache_conversations = 0",
            "cache_bytes = \"1G\"",
            "cache_index = -5",
        ] {
            assert!(
                matches!(apply(bad), Err(SectionProblem::Invalid { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            apply("upstream = \"x\""),
            Err(SectionProblem::UnknownKey { .. })
        ));
        let c = apply("[upstreams.anthropic]\ncontext_management = \"emulate\"").unwrap();
        assert_eq!(
            c.emulate,
            Emulate {
                openai: false,
                anthropic: true
            }
        );
        assert!(matches!(
            apply("[upstreams.anthropic]\ncontext_management = \"maybe\""),
            Err(SectionProblem::Invalid { .. })
        ));
        assert!(matches!(
            apply("[upstreams.gemini]\ncontext_management = \"emulate\""),
            Err(SectionProblem::UnknownKey { .. })
        ));
    }

    #[test]
    fn the_connection_bounds_are_read_and_checked() {
        let c = apply(
            "header_timeout_secs = 2\nbody_timeout_secs = 3\nidle_timeout_secs = 4\nmax_connections = 5",
        )
        .unwrap();
        assert_eq!(c.header_timeout.as_secs(), 2);
        assert_eq!(c.body_timeout.as_secs(), 3);
        assert_eq!(c.idle_timeout.as_secs(), 4);
        assert_eq!(c.max_connections, 5);
        for bad in [
            "header_timeout_secs = 0",
            "body_timeout_secs = -1",
            "idle_timeout_secs = \"1\"",
            "max_connections = 0",
        ] {
            assert!(
                matches!(apply(bad), Err(SectionProblem::Invalid { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn beyond_loopback_needs_a_token() {
        let c = apply("listen = \"0.0.0.0:9000\"").unwrap();
        let e = c.check_listen().unwrap_err();
        assert!(e.contains("without a client token"), "{e}");
        assert!(ProxyConfig::default().check_listen().is_ok());
    }
}
