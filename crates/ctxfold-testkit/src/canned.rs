//! A fake upstream: a tiny HTTP/1.1 server on 127.0.0.1 that records each
//! request and answers with canned replies in order (the last one repeats).
//! It serves a bounded number of connections and stops when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use ctxfold_providers::{Provider, ProviderConfig, ProviderKind};
use serde_json::Value;

/// Connections served at most, so a runaway client cannot keep it busy.
const MAX_CONNECTIONS: usize = 64;

/// One canned answer.
#[derive(Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Close-delimited body without content-length (as a stream is sent).
    pub streamed: bool,
    /// Echo the request's credentials, as a careless gateway does: in the
    /// body, `{authorization}` and `{x-api-key}` become those headers'
    /// values.
    pub echo: bool,
}

impl Reply {
    pub fn json(status: u16, v: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: v.to_string(),
            delay: Duration::ZERO,
            streamed: false,
            echo: false,
        }
    }

    pub fn text(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
            delay: Duration::ZERO,
            streamed: false,
            echo: false,
        }
    }

    pub fn sse(body: &str) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: body.into(),
            delay: Duration::ZERO,
            streamed: true,
            echo: false,
        }
    }

    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.into(), v.into()));
        self
    }

    /// The same, echoing the request's credentials (see [`Reply::echo`]).
    pub fn echoing(mut self) -> Reply {
        self.echo = true;
        self
    }

    pub fn delayed(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// A request the server saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct FakeServer {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
    handle: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        assert!(!replies.is_empty());
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                if stop2.load(Ordering::SeqCst) || n >= MAX_CONNECTIONS {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let reply = &replies[n.min(replies.len() - 1)];
                if let Some(req) = read_request(&conn) {
                    let reply = if reply.echo {
                        let mut r = reply.clone();
                        for h in ["authorization", "x-api-key"] {
                            let v = req.header(h).unwrap_or_default();
                            r.body = r.body.replace(&format!("{{{h}}}"), v);
                        }
                        r
                    } else {
                        reply.clone()
                    };
                    seen2.lock().unwrap().push(req);
                    answer(conn, &reply);
                }
            }
        });
        FakeServer {
            url: format!("http://{addr}"),
            seen,
            stop,
            addr,
            handle: Some(handle),
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// A provider of `kind` pointed at this server, with fast retries.
    pub fn provider(&self, kind: ProviderKind) -> Provider {
        let base = match kind {
            ProviderKind::OpenAi => format!("{}/v1", self.url),
            ProviderKind::Anthropic => self.url.clone(),
        };
        let mut c = ProviderConfig::new(kind, base);
        c.api_key = Some("test-key".into());
        c.retry_base_delay = Duration::from_millis(5);
        c.timeout = Duration::from_secs(10);
        Provider::new("fake", c)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn read_request(conn: &TcpStream) -> Option<Seen> {
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut it = line.split_whitespace();
    let method = it.next()?.to_owned();
    let path = it.next()?.to_owned();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
        if k.eq_ignore_ascii_case("content-length") {
            length = v.parse().ok()?;
        }
        headers.push((k, v));
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body).ok()?;
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}

fn answer(mut conn: TcpStream, reply: &Reply) {
    std::thread::sleep(reply.delay);
    let mut head = format!("HTTP/1.1 {} Canned\r\nconnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !reply.streamed {
        head.push_str(&format!("content-length: {}\r\n", reply.body.len()));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(reply.body.as_bytes());
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

/// An SSE body from (event name, data) pairs.
pub fn sse(events: &[(Option<&str>, Value)]) -> String {
    let mut s = String::new();
    for (name, data) in events {
        if let Some(n) = name {
            s.push_str(&format!("event: {n}\n"));
        }
        s.push_str(&format!("data: {data}\n\n"));
    }
    s
}
