//! The one scripted upstream of the tests: a small HTTP/1.1 server on
//! 127.0.0.1 that plays a model API, checks what it is sent and keeps
//! every request for the test to compare. What it answers is its script,
//! chosen when it starts:
//!
//! - [`Upstream::start`] (and [`Upstream::start_deterministic`]): the
//!   proxy tests' model ([`model`]), on OpenAI chat completions, Anthropic
//!   messages, OpenAI Responses and Google's Gemini API, streamed or not
//!   as asked: a deterministic agent (a user message saying `steps=N` gets
//!   N tool calls, one per request, then a text answer), models whose
//!   names ask for an odd answer (`chatty…`, `stall…`, `unframed…`,
//!   `cut…`, `slow…`), and the checks of every request ([`checks`]: tool
//!   calls and results pair up, the body fits the window, the temperature
//!   arrives intact), a request that fails them answered 400;
//! - [`Upstream::agents`]: the real agents' model ([`agent`]): Claude Code
//!   and Codex driven through a loop of shell steps by the task their user
//!   names, each request counted, checked for pairing and refused with the
//!   provider's own error when over the window;
//! - [`Upstream::canned`]: canned replies in order, the last one repeating
//!   ([`canned`]), for the providers' and the command line's tests of one
//!   exchange; it stops when dropped.
//!
//! [`tool_loop`] is the proxy tests' client of the model: the agent that
//! answers its tool calls. [`http`] is the server they share: the listener, reading a request,
//! writing an answer step by step (pauses included).

pub mod agent;
mod anthropic;
pub mod canned;
pub mod checks;
mod gemini;
pub mod http;
pub mod model;
mod openai;
mod responses;
pub mod tool_loop;

use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxfold_providers::{Provider, ProviderConfig, ProviderKind};
use serde_json::Value;

pub use http::read;

/// Which API a request spoke (what [`Upstream::agents`] tells apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1/responses`.
    Responses,
    /// Anything else.
    #[default]
    Other,
}

/// A request the upstream received, and what its script did with it.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Its number, from 1, in order of arrival.
    pub n: usize,
    /// `POST`, `GET`, …
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body's bytes.
    pub body: Vec<u8>,
    /// The API it spoke ([`Upstream::agents`] only).
    pub api: Api,
    /// Its size as counted here ([`Upstream::agents`], model requests).
    pub tokens: Option<usize>,
    /// Refused as over the window ([`Upstream::agents`]).
    pub rejected: bool,
    /// Tool pairing problems, empty when every call has its result
    /// ([`Upstream::agents`]).
    pub pairing: Vec<String>,
    /// What it was answered ([`Upstream::agents`]): `tool K/N`, `final`,
    /// `summary`, `count`, …
    pub answer: String,
}

impl Seen {
    /// The body as JSON: Null for an empty body (a `GET`); a body that is
    /// not JSON fails the test.
    pub fn json(&self) -> Value {
        if self.body.is_empty() {
            return Value::Null;
        }
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "request body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as JSON, Null when it is not (what the scripts read).
    pub fn json_or_null(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// A header's value (its name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// A model request (messages or responses, not `count_tokens`), as
    /// [`Upstream::agents`] tells.
    pub fn is_model(&self) -> bool {
        self.api != Api::Other
    }
}

/// What the upstream answers with.
pub(crate) enum Script {
    /// The proxy tests' model ([`model`]).
    Model {
        /// Over this many tokens a request is refused.
        window: usize,
        /// Name tool calls by the step they are (`call_step_K`), so the
        /// same request always gets the same answer; else by the
        /// request's number (`call_N`).
        same_answer: bool,
    },
    /// The real agents' model ([`agent`]); no limit when None.
    Agents { window: Option<usize> },
    /// Canned replies in order, the last one repeating.
    Canned(Vec<canned::Reply>),
}

/// What the server and every handle to it share.
pub(crate) struct Shared {
    pub(crate) script: Script,
    pub(crate) seen: Mutex<Vec<Seen>>,
    pub(crate) problems: Mutex<Vec<String>>,
    pub(crate) stop: AtomicBool,
}

impl Shared {
    /// Keep `seen` as the next request: its number.
    pub(crate) fn record(&self, mut seen: Seen) -> usize {
        let mut all = self.seen.lock().unwrap();
        seen.n = all.len() + 1;
        all.push(seen);
        all.len()
    }

    /// Note a problem found in request `n`.
    pub(crate) fn problem(&self, n: usize, problem: &str) {
        self.problems
            .lock()
            .unwrap()
            .push(format!("request {n}: {problem}"));
    }
}

/// A running scripted upstream: its base URL and what it saw.
#[derive(Clone)]
pub struct Upstream {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    shared: Arc<Shared>,
    /// Stops the server when the last handle is dropped (canned only:
    /// the scripted ones serve for the test process's life, as a proxy
    /// may still be talking to them).
    _stopper: Option<Arc<Stopper>>,
}

impl Upstream {
    /// The proxy tests' model, refusing requests over `window` tokens
    /// (about four bytes of body a token).
    pub fn start(window: usize) -> Upstream {
        Self::with(
            Script::Model {
                window,
                same_answer: false,
            },
            false,
        )
    }

    /// [`Upstream::start`], answering the same request the same way every
    /// time (as a retried request would be, were the model deterministic).
    pub fn start_deterministic(window: usize) -> Upstream {
        Self::with(
            Script::Model {
                window,
                same_answer: true,
            },
            false,
        )
    }

    /// The real agents' model, refusing requests over `window` tokens
    /// (None: no limit). The listener lives in the network namespace of
    /// the calling thread.
    pub fn agents(window: Option<usize>) -> Upstream {
        Self::with(Script::Agents { window }, false)
    }

    /// Canned `replies` in order (the last one repeats), one connection
    /// at a time; it stops when dropped.
    pub fn canned(replies: Vec<canned::Reply>) -> Upstream {
        assert!(!replies.is_empty());
        Self::with(Script::Canned(replies), true)
    }

    fn with(script: Script, stops: bool) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script,
            seen: Mutex::default(),
            problems: Mutex::default(),
            stop: AtomicBool::new(false),
        });
        let server = shared.clone();
        let handle = std::thread::spawn(move || http::serve(listener, &server));
        let stopper = stops.then(|| {
            Arc::new(Stopper {
                shared: shared.clone(),
                addr,
                handle: Mutex::new(Some(handle)),
            })
        });
        Upstream {
            base: format!("http://{addr}"),
            shared,
            _stopper: stopper,
        }
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// How many requests so far.
    pub fn len(&self) -> usize {
        self.shared.seen.lock().unwrap().len()
    }

    /// No request yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Problems found in requests so far (the model's checks).
    pub fn problems(&self) -> Vec<String> {
        self.shared.problems.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A provider of `kind` pointed at this server, with fast retries.
    pub fn provider(&self, kind: ProviderKind) -> Provider {
        let base = match kind {
            ProviderKind::OpenAi => format!("{}/v1", self.base),
            ProviderKind::Anthropic => self.base.clone(),
        };
        let mut c = ProviderConfig::new(kind, base);
        c.api_key = Some("test-key".into());
        c.retry_base_delay = Duration::from_millis(5);
        c.timeout = Duration::from_secs(10);
        Provider::new("fake", c)
    }
}

/// Stops a canned server: its accept loop ends at the next connection,
/// which it makes itself.
struct Stopper {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    handle: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Stopper {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.handle.lock().unwrap().take() {
            let _ = h.join();
        }
    }
}
