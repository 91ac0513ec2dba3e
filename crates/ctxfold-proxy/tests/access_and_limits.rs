//! Who may use the proxy and how much of it a client may hold (issue 25,
//! points 2 to 4), in-process over real sockets on 127.0.0.1: without a
//! token, what a web page can send is refused; with one, everything but
//! `/healthz` needs it; slow clients are cut off by the head, body and
//! idle timeouts, never a slow answer; the connection cap holds; an
//! oversized body gets a readable 413 however it is sent. The README's
//! proxy section lists the same cases ("Who may use it"). That SIGTERM is
//! not held up by open connections is the binary's, in ctxfold-cli's
//! tests/proxy_guard.rs.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{InProcess, config};
use ctxfold_testkit::upstream::Upstream;
use serde_json::{Value, json};

const TOKEN: &str = "0123456789abcdef-guard";

/// Start the proxy on `listen` (port 0) with `[proxy]` config `extra` over
/// the fake upstream `up`.
fn proxy_on(up: &Upstream, extra: &str, listen: &str) -> InProcess {
    let config = config(up, extra);
    InProcess::start_on(&config, listen)
}

fn proxy(up: &Upstream, extra: &str) -> InProcess {
    proxy_on(up, extra, "127.0.0.1:0")
}

/// An answer read off the wire.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Send exactly `head` (CRLF lines, without the blank line; a
/// `Connection: close` is added) and `body`, and read the answer to its
/// end: the request as a browser or a script on any page could make it.
fn raw(addr: &str, head: &str, body: &[u8]) -> Answer {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut req = format!("{head}\r\nConnection: close\r\n");
    if !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    c.write_all(body).unwrap();
    let mut all = Vec::new();
    c.read_to_end(&mut all).unwrap();
    let text = String::from_utf8_lossy(&all).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer: {text:?}"));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

fn chat_body(text: &str) -> String {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}).to_string()
}

/// Point 2: without a token, what a page the user opens can send (a name
/// rebound to 127.0.0.1, a cross-site form or `fetch` without preflight)
/// is refused on the API as on the pages, and writes nothing; the clients
/// agents use (JSON, a loopback `Host`, no `Origin`) go on as before.
#[test]
fn without_a_token_what_a_web_page_can_send_is_refused() {
    let up = Upstream::start(1_000_000);
    let p = proxy(&up, "");
    let a = p.addr();
    let port = a.rsplit_once(':').unwrap().1;
    let evil = format!("Host: evil.example:{port}");
    let body = chat_body("hello steps=0");

    // A rebound name reads nothing.
    for path in ["/metrics", "/v1/models", "/ui"] {
        let r = raw(a, &format!("GET {path} HTTP/1.1\r\n{evil}"), b"");
        assert_eq!(r.status, 403, "{path}: {r:?}");
        assert!(!r.body.contains("ctxfold_proxy_requests_total"), "{r:?}");
        assert!(!r.body.contains("fake-1"), "{r:?}");
    }
    // What a browser sends without asking first: refused, recorded nowhere.
    let r = raw(
        a,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {a}\r\nContent-Type: text/plain\r\nOrigin: http://evil.example\r\nSec-Fetch-Site: cross-site"
        ),
        body.as_bytes(),
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(r.json()["type"], "error", "{r:?}");
    // Each mark alone is enough.
    let refused: [(&str, &str, u16); 6] = [
        ("Content-Type: text/plain", "", 415),
        ("Content-Type: application/x-www-form-urlencoded", "", 415),
        ("", "", 415),
        (
            "Content-Type: application/json",
            "Origin: http://evil.example",
            403,
        ),
        (
            "Content-Type: application/json",
            "Sec-Fetch-Site: cross-site",
            403,
        ),
        (
            "Content-Type: application/json",
            "Sec-Fetch-Site: same-site",
            403,
        ),
    ];
    for (ctype, mark, status) in refused {
        let mut head = format!("POST /v1/chat/completions HTTP/1.1\r\nHost: {a}");
        for h in [ctype, mark].into_iter().filter(|h| !h.is_empty()) {
            head.push_str("\r\n");
            head.push_str(h);
        }
        let r = raw(a, &head, body.as_bytes());
        assert_eq!(r.status, status, "{ctype} {mark}: {r:?}");
        if status == 415 {
            assert!(r.body.contains("application/json"), "{r:?}");
        }
    }
    // The other paths the proxy reads are guarded alike.
    for path in ["/v1/messages", "/v1/responses", "/v1/messages/count_tokens"] {
        let r = raw(
            a,
            &format!("POST {path} HTTP/1.1\r\nHost: {a}\r\nContent-Type: text/plain"),
            body.as_bytes(),
        );
        assert_eq!(r.status, 415, "{path}: {r:?}");
    }
    assert!(up.requests().is_empty(), "{:?}", up.requests());
    assert_eq!(p.conversations(), 0);

    // Real clients: JSON (with a charset too), 127.0.0.1 or localhost, no
    // Origin; a same-origin page's request too.
    let ok = [
        format!("Host: {a}\r\nContent-Type: application/json"),
        format!("Host: localhost:{port}\r\nContent-Type: application/json; charset=utf-8"),
        format!(
            "Host: {a}\r\nContent-Type: application/json\r\nOrigin: http://{a}\r\nSec-Fetch-Site: same-origin"
        ),
    ];
    for (k, headers) in ok.iter().enumerate() {
        let r = raw(
            a,
            &format!("POST /v1/chat/completions HTTP/1.1\r\n{headers}"),
            chat_body(&format!("conversation {k} steps=0")).as_bytes(),
        );
        assert_eq!(r.status, 200, "{headers}: {r:?}");
    }
    assert_eq!(up.requests().len(), 3);
    let r = raw(a, &format!("GET /v1/models HTTP/1.1\r\nHost: {a}"), b"");
    assert_eq!((r.status, r.body.contains("fake-1")), (200, true), "{r:?}");
    let r = raw(
        a,
        &format!("GET /metrics HTTP/1.1\r\nHost: localhost:{port}"),
        b"",
    );
    assert_eq!(r.status, 200, "{r:?}");
    // A health check names any host and reads two letters.
    let r = raw(a, &format!("GET /healthz HTTP/1.1\r\n{evil}"), b"");
    assert_eq!((r.status, r.body.as_str()), (200, "ok\n"), "{r:?}");
    // A file upload is not JSON and goes through as before.
    let r = raw(
        a,
        &format!(
            "POST /v1/files HTTP/1.1\r\nHost: {a}\r\nContent-Type: multipart/form-data; boundary=x"
        ),
        b"--x--\r\n",
    );
    assert_eq!(r.status, 404, "the fake's own answer: {r:?}");
    assert_eq!(up.requests().last().unwrap().path, "/v1/files");
}

/// With a token, everything but `/healthz` needs it, in its header, on
/// any `Host` (here on a listener beyond loopback); and a request with the
/// token still goes only to the configured upstream.
#[test]
fn with_a_token_everything_but_healthz_needs_it() {
    let up = Upstream::start(1_000_000);
    let p = proxy_on(&up, &format!("token = \"{TOKEN}\""), "0.0.0.0:0");
    let a = p.addr();
    let tok = format!("x-ctxfold-token: {TOKEN}");
    let json = "Content-Type: application/json";
    let body = chat_body("hi steps=0");
    for (method, path) in [
        ("GET", "/metrics"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/messages"),
        ("POST", "/v1/files"),
    ] {
        for host in [a, "192.0.2.7:7440", "localhost"] {
            let r = raw(
                a,
                &format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n{json}"),
                body.as_bytes(),
            );
            assert_eq!(r.status, 401, "{method} {path} {host}: {r:?}");
            assert!(r.body.contains("x-ctxfold-token"), "{r:?}");
        }
        let wrong = raw(
            a,
            &format!(
                "{method} {path} HTTP/1.1\r\nHost: {a}\r\n{json}\r\nx-ctxfold-token: {TOKEN}x"
            ),
            body.as_bytes(),
        );
        assert_eq!(wrong.status, 401, "{method} {path}: {wrong:?}");
    }
    // The pages' cookie is not the API's token.
    let r = raw(
        a,
        &format!("GET /metrics HTTP/1.1\r\nHost: {a}\r\nCookie: ctxfold_ui_auth=anything"),
        b"",
    );
    assert_eq!(r.status, 401, "{r:?}");
    assert!(up.requests().is_empty(), "{:?}", up.requests());
    let r = raw(a, &format!("GET /healthz HTTP/1.1\r\nHost: {a}"), b"");
    assert_eq!(r.status, 200, "{r:?}");
    // With the token, any Host: the name the machine is reached by.
    let r = raw(
        a,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: 192.0.2.7:7440\r\n{json}\r\n{tok}\r\nx-forwarded-host: evil.example"
        ),
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(
        seen[0].header("x-ctxfold-token"),
        None,
        "the token stays here"
    );
    let r = raw(
        a,
        &format!("GET /metrics HTTP/1.1\r\nHost: proxy.internal\r\n{tok}"),
        b"",
    );
    assert_eq!(r.status, 200, "{r:?}");
    // A browser's preflight carries no token: it gets no permission to
    // send one. The token itself is the guard, from any site.
    let r = raw(
        a,
        &format!(
            "OPTIONS /v1/messages HTTP/1.1\r\nHost: {a}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: x-ctxfold-token"
        ),
        b"",
    );
    assert_eq!(r.status, 401, "{r:?}");
    assert!(
        !r.head.to_ascii_lowercase().contains("access-control-allow"),
        "{r:?}"
    );
    let r = raw(
        a,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {a}\r\n{json}\r\n{tok}\r\nOrigin: http://elsewhere.example\r\nSec-Fetch-Site: cross-site"
        ),
        body.as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(up.requests().len(), 2);
    // A body that is not JSON is refused with the token too.
    let r = raw(
        a,
        &format!("POST /v1/messages HTTP/1.1\r\nHost: {a}\r\nContent-Type: text/plain\r\n{tok}"),
        body.as_bytes(),
    );
    assert_eq!(r.status, 415, "{r:?}");
    // A path that would resolve outside the API upstream (`/v1/../metrics`
    // is the upstream's `/metrics`) is refused, however it is encoded.
    let before = up.requests().len();
    for path in ["/v1/../metrics", "/v1/%2e%2e/metrics", "/v1/./models"] {
        let r = raw(
            a,
            &format!("GET {path} HTTP/1.1\r\nHost: {a}\r\n{tok}"),
            b"",
        );
        assert_eq!(r.status, 400, "{path}: {r:?}");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("segment"),
            "{r:?}"
        );
    }
    assert_eq!(up.requests().len(), before, "{:?}", up.requests());
    // The token in a client's URL (the pages' `?token=` address used as a
    // base URL) never goes upstream; the rest of the query does.
    for (path, sent) in [
        ("/v1/models?token={TOKEN}", "/v1/models"),
        ("/v1/files?limit=2&token={TOKEN}", "/v1/files?limit=2"),
        ("/v1/chat/completions?token={TOKEN}", "/v1/chat/completions"),
    ] {
        let path = path.replace("{TOKEN}", TOKEN);
        let method = if sent.contains("chat") { "POST" } else { "GET" };
        let r = raw(
            a,
            &format!("{method} {path} HTTP/1.1\r\nHost: {a}\r\n{json}\r\n{tok}"),
            if method == "POST" {
                body.as_bytes()
            } else {
                b""
            },
        );
        assert!(r.status < 500, "{path}: {r:?}");
        let seen = up.requests();
        let last = seen.last().unwrap();
        assert_eq!(last.path, sent, "{path}");
        assert!(!format!("{last:?}").contains(TOKEN), "{last:?}");
    }
}

/// What a slow connection got before it was closed, or `None` when it was
/// still open at the deadline.
fn closed_within(mut c: TcpStream, deadline: Instant) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        c.set_read_timeout(Some(left)).unwrap();
        match c.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return None;
            }
            // Reset: closed too.
            Err(_) => return Some(String::from_utf8_lossy(&got).into_owned()),
        }
    }
}

/// Write `text` a byte a second on `c` (a clone of the test's stream)
/// until the server closes it.
fn trickle(c: &TcpStream, text: &str) {
    let mut w = c.try_clone().unwrap();
    let text = text.as_bytes().to_vec();
    std::thread::spawn(move || {
        for b in text.iter().cycle() {
            if w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
}

/// Point 3: a head sent a byte a second, a body declared as 100,000 bytes
/// sent a byte a second, a connection that sends nothing and one kept
/// alive after its answer are all closed after the configured timeouts
/// (2 s here; the deadline is generous). The same with a token, before the
/// token could even be read.
#[test]
fn slow_heads_bodies_and_idle_connections_are_closed() {
    let up = Upstream::start(1_000_000);
    for extra in ["", &format!("token = \"{TOKEN}\"")] {
        let p = proxy(
            &up,
            &format!(
                "header_timeout_secs = 2\nbody_timeout_secs = 2\nidle_timeout_secs = 2\n{extra}"
            ),
        );
        let a = p.addr();
        let connect = || TcpStream::connect(a).unwrap();
        let head1 = connect();
        trickle(
            &head1,
            &format!("POST /v1/chat/completions HTTP/1.1\r\nHost: {a}\r\nX-Padding: "),
        );
        let head2 = connect();
        trickle(&head2, "GET /metrics HTTP/1.1\r\nX-Padding: ");
        let body = connect();
        let mut w = body.try_clone().unwrap();
        write!(
            w,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nx-ctxfold-token: {TOKEN}\r\nContent-Length: 100000\r\n\r\n"
        )
        .unwrap();
        trickle(&body, "{\"model\": \"m\", \"messages\": [");
        let idle = connect();
        let kept = connect();
        let mut w = kept.try_clone().unwrap();
        write!(w, "GET /healthz HTTP/1.1\r\nHost: {a}\r\n\r\n").unwrap();

        let deadline = Instant::now() + Duration::from_secs(30);
        for (what, c) in [("head", head1), ("head", head2), ("idle", idle)] {
            let got = closed_within(c, deadline);
            assert!(
                got.is_some(),
                "{extra:?}: a slow {what} is still open after 30 s"
            );
        }
        let got = closed_within(body, deadline)
            .unwrap_or_else(|| panic!("{extra:?}: a slow body is still open after 30 s"));
        assert!(got.starts_with("HTTP/1.1 408"), "{got}");
        assert!(got.contains("body_timeout_secs"), "{got}");
        let got = closed_within(kept, deadline).unwrap_or_else(|| {
            panic!("{extra:?}: an idle kept-alive connection is still open after 30 s")
        });
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        // And the proxy still serves.
        let r = raw(a, &format!("GET /healthz HTTP/1.1\r\nHost: {a}"), b"");
        assert_eq!(r.status, 200);
    }
    assert!(up.requests().is_empty(), "{:?}", up.requests());
}

/// The timeouts bound what the client sends, never the answer: a streamed
/// answer that pauses longer than all of them (3 s against 1 s) arrives
/// whole, and the connection serves the next request after it.
#[test]
fn a_slow_streamed_answer_outlives_the_timeouts() {
    let up = Upstream::start(1_000_000);
    let p = proxy(
        &up,
        "header_timeout_secs = 1\nbody_timeout_secs = 1\nidle_timeout_secs = 1",
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for k in 0..2 {
        let body = json!({"model": "slow-1", "stream": true,
            "messages": [{"role": "user", "content": format!("slowly {k} steps=0")}]});
        let mut r = agent
            .post(&p.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .send(body.to_string())
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let text = r.body_mut().read_to_string().unwrap();
        assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    }
}

/// Point 4: a body far over `max_body_bytes` gets a 413 its sender can
/// read, naming the limit and its key, whether it declares its length
/// (refused before it is read), is chunked (refused once the limit is
/// crossed) or waits for `100 Continue` (curl); nothing goes upstream.
#[test]
fn an_oversized_body_gets_a_readable_413() {
    let up = Upstream::start(1_000_000);
    let p = proxy(&up, "max_body_bytes = 200000");
    let big = chat_body(&"x".repeat(5_000_000));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let check = |status: u16, text: &str, how: &str| {
        assert_eq!(status, 413, "{how}: {text}");
        let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{how}: {e}: {text}"));
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("200000"), "{how}: {message}");
        assert!(message.contains("max_body_bytes"), "{how}: {message}");
    };
    for path in ["/v1/chat/completions", "/v1/messages"] {
        // With its length.
        let mut r = agent
            .post(&p.url(path))
            .header("content-type", "application/json")
            .send(big.as_bytes())
            .unwrap_or_else(|e| panic!("{path}: the client could not read the answer: {e}"));
        check(
            r.status().as_u16(),
            &r.body_mut().read_to_string().unwrap(),
            path,
        );
        // Chunked.
        let mut r = agent
            .post(&p.url(path))
            .header("content-type", "application/json")
            .send(ureq::SendBody::from_reader(&mut big.as_bytes()))
            .unwrap_or_else(|e| {
                panic!("{path}, chunked: the client could not read the answer: {e}")
            });
        check(
            r.status().as_u16(),
            &r.body_mut().read_to_string().unwrap(),
            &format!("{path}, chunked"),
        );
    }
    // curl asks before sending a large body.
    let file = p.dir.path().join("big.json");
    std::fs::write(&file, &big).unwrap();
    match std::process::Command::new("curl")
        .args([
            "-sS",
            "-w",
            "\n%{http_code}",
            "-H",
            "content-type: application/json",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", file.display()))
        .arg(p.url("/v1/chat/completions"))
        .output()
    {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "curl: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (body, status) = text.rsplit_once('\n').unwrap();
            check(status.parse().unwrap(), body, "curl");
        }
        Err(e) => eprintln!("curl not run ({e}): its part is skipped"),
    }
    // A body within the limit still goes through on the same proxy.
    let r = raw(
        p.addr(),
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json",
            p.addr()
        ),
        chat_body("small steps=0").as_bytes(),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(up.requests().len(), 1, "only the small one went upstream");
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains("x-ctxfold-conversation")
    );
}

/// Past `max_connections`, a connection waits to be accepted until one
/// closes, and is then served.
#[test]
fn connections_past_the_cap_wait_their_turn() {
    let up = Upstream::start(1_000_000);
    let p = proxy(&up, "max_connections = 1\nidle_timeout_secs = 600");
    let a = p.addr();
    let first = TcpStream::connect(a).unwrap();
    // The first is served, and kept open.
    let mut w = first.try_clone().unwrap();
    write!(w, "GET /healthz HTTP/1.1\r\nHost: {a}\r\n\r\n").unwrap();
    let mut r = BufReader::new(first.try_clone().unwrap());
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    // The second gets nothing while the first is open…
    let mut second = TcpStream::connect(a).unwrap();
    write!(
        second,
        "GET /healthz HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    second
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut buf = [0u8; 64];
    let waited = second.read(&mut buf);
    assert!(
        matches!(&waited, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "served past the cap: {waited:?}"
    );
    // …and its answer once the first closes.
    drop(r);
    drop(w);
    drop(first);
    let got = closed_within(second, Instant::now() + Duration::from_secs(30))
        .expect("the waiting connection was never served");
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
}
