//! What of the proxy's guards needs the real binary: SIGTERM stops it at
//! once with slow and idle connections open. The others (tokens, the
//! head, body and idle timeouts, the connection cap, the 413) run
//! in-process in ctxfold-proxy's tests/access_and_limits.rs.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::Scratch;
use common::proxy::{Options, Proxy};
use ctxfold_testkit::upstream::Upstream;

/// Start the proxy on `listen` (port 0) with `[proxy]` config `extra` over
/// the fake upstream `up`.
fn proxy_on(s: &Scratch, up: &Upstream, extra: &str, listen: &str) -> Proxy {
    let config = format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\n{extra}\n",
        b = up.base
    );
    let options = Options {
        listen,
        level: "debug",
        ..Options::default()
    };
    Proxy::start_with(s, &config, options)
}

fn proxy(s: &Scratch, up: &Upstream, extra: &str) -> Proxy {
    proxy_on(s, up, extra, "127.0.0.1:0")
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

/// SIGTERM stops the proxy at once with slow and idle connections open:
/// they hold no request, so the shutdown does not wait for them.
#[test]
fn open_slow_connections_do_not_hold_up_shutdown() {
    let up = Upstream::start(1_000_000);
    let s = Scratch::new();
    let mut p = proxy(&s, &up, "");
    let a = p.addr().to_owned();
    let idle = TcpStream::connect(&a).unwrap();
    let slow = TcpStream::connect(&a).unwrap();
    trickle(&slow, "GET /metrics HTTP/1.1\r\nX-Padding: ");
    std::thread::sleep(Duration::from_millis(1500));
    let term = std::process::Command::new("kill")
        .args(["-TERM", &p.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // Well under the shutdown's 10 s grace for requests in flight.
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        if let Some(status) = p.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "the proxy did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop((idle, slow));
}
