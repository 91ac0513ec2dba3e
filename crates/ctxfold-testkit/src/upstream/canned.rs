//! Canned replies: [`super::Upstream::canned`] answers the n-th connection with
//! the n-th [`Reply`] (the last one repeats), one connection at a time.

use std::time::Duration;

use serde_json::Value;

use super::Seen;
use super::http::Answer;

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

/// `reply` to `req`: after its delay, its head and body, the connection
/// closed.
pub(crate) fn answer(reply: &Reply, req: &Seen) -> Answer {
    let mut body = reply.body.clone();
    if reply.echo {
        for h in ["authorization", "x-api-key"] {
            let v = req.header(h).unwrap_or_default();
            body = body.replace(&format!("{{{h}}}"), v);
        }
    }
    let mut head = format!("HTTP/1.1 {} Canned\r\nconnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !reply.streamed {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    head.push_str(&body);
    Answer::new().pause(reply.delay).send(head).shut_down()
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
