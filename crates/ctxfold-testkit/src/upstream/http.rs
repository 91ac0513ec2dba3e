//! The server every script shares: the listener on 127.0.0.1, a request
//! read off a connection (by `content-length` or chunked), and an answer
//! written step by step, pauses included, as the odd models need.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Script, Seen, Shared, agent, canned, model};

/// Connections a canned server serves at most, so a runaway client cannot
/// keep it busy.
const MAX_CANNED_CONNECTIONS: usize = 64;

/// Serve `listener` with `shared`'s script until it is stopped.
pub(crate) fn serve(listener: TcpListener, shared: &Arc<Shared>) {
    if let Script::Canned(replies) = &shared.script {
        // One connection at a time, the n-th answered with the n-th reply.
        for (n, conn) in listener.incoming().enumerate() {
            if shared.stop.load(Ordering::SeqCst) || n >= MAX_CANNED_CONNECTIONS {
                break;
            }
            let Ok(conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let Some(seen) = read(&conn) else { continue };
            let answer = canned::answer(&replies[n.min(replies.len() - 1)], &seen);
            shared.record(seen);
            let mut out = conn;
            answer.write(&mut out);
        }
        return;
    }
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = shared.clone();
        std::thread::spawn(move || connection(stream, &shared));
    }
}

/// The requests of one connection, each answered in turn while the
/// answer keeps it open.
fn connection(stream: TcpStream, shared: &Arc<Shared>) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Some(seen) = read_from(&mut reader) {
        let answer = match &shared.script {
            Script::Model {
                window,
                same_answer,
            } => model::answer(shared, seen, *window, *same_answer),
            Script::Agents { window } => agent::answer(shared, seen, *window),
            Script::Canned(_) => return,
        };
        if !answer.write(&mut out) {
            return;
        }
    }
}

/// One HTTP/1.1 request read from `stream` (its body by `content-length`
/// or chunked); None when the client closed before sending one.
pub fn read(stream: &TcpStream) -> Option<Seen> {
    read_from(&mut BufReader::new(stream.try_clone().ok()?))
}

/// [`read`] from a reader kept across the requests of a connection.
pub(crate) fn read_from(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    let mut length = 0;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.trim_end().split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim().to_owned();
            if k == "content-length" {
                length = v.parse().unwrap_or(0);
            }
            if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
            headers.push((k, v));
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
    }
    Some(Seen {
        method,
        path,
        headers,
        body,
        ..Seen::default()
    })
}

/// What to write back, in order.
enum Step {
    Send(Vec<u8>),
    Pause(Duration),
}

/// An answer: bytes and pauses, then the connection kept open for the
/// next request or closed.
pub(crate) struct Answer {
    steps: Vec<Step>,
    keep_alive: bool,
    shutdown: bool,
}

impl Answer {
    /// An answer that closes the connection after it.
    pub(crate) fn new() -> Answer {
        Answer {
            steps: Vec::new(),
            keep_alive: false,
            shutdown: false,
        }
    }

    /// `bytes` and nothing else.
    pub(crate) fn bytes(bytes: impl Into<Vec<u8>>) -> Answer {
        Answer::new().send(bytes)
    }

    /// Then write `bytes` (flushed).
    pub(crate) fn send(mut self, bytes: impl Into<Vec<u8>>) -> Answer {
        self.steps.push(Step::Send(bytes.into()));
        self
    }

    /// Then wait `d`.
    pub(crate) fn pause(mut self, d: Duration) -> Answer {
        self.steps.push(Step::Pause(d));
        self
    }

    /// Keep the connection open for the next request when `open`.
    pub(crate) fn keep_alive(mut self, open: bool) -> Answer {
        self.keep_alive = open;
        self
    }

    /// Shut the connection down both ways once written.
    pub(crate) fn shut_down(mut self) -> Answer {
        self.shutdown = true;
        self
    }

    /// Write it; whether the connection stays open for another request.
    fn write(self, out: &mut TcpStream) -> bool {
        for step in self.steps {
            match step {
                Step::Pause(d) => std::thread::sleep(d),
                Step::Send(b) => {
                    if out.write_all(&b).and_then(|()| out.flush()).is_err() {
                        return false;
                    }
                }
            }
        }
        if self.shutdown {
            let _ = out.shutdown(std::net::Shutdown::Both);
        }
        self.keep_alive
    }
}
