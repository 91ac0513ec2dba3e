//! What the proxy adds to a request, measured end to end over loopback
//! against a fast fake upstream in the same process (axum, answers at
//! once), with a keep-alive client:
//!
//! - `known_200k`: a known conversation of about 200,000 tokens (a tool
//!   loop the proxy compacted on its first request) gets one new message;
//!   `direct_200k` sends the same body straight to the upstream.
//! - `first_byte_*`: time to the first byte of a streamed answer, through
//!   the proxy and direct.
//! - `small_*`: a one-message request, through the proxy and direct.
//! - `prepare_200k`: the proxy's own work on the known conversation's next
//!   request, without HTTP: split the body, read what is new, append it,
//!   check the trigger, render the view.
//!
//! Before divan's table, a percentile run prints p50 and p99 of the added
//! latency and the requests per second of small requests from 8 clients.
//!
//! `cargo bench -p ctxfold-proxy --bench proxy` (with
//! `CTXFOLD_BENCH_NO_PERCENTILES=1`, divan's table only)

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::routing::post;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_proxy::book::Naming;
use ctxfold_proxy::config::ProxyConfig;
use ctxfold_proxy::server::{Proxy, router};
use ctxfold_proxy::{Book, Compaction};
use serde_json::{Value, json};

const ANSWER: &str = r#"{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// The fake upstream: a whole answer, or a short stream.
fn upstream() -> Router {
    Router::new().route(
        "/v1/chat/completions",
        post(|body: Bytes| async move {
            let streamed = body.windows(14).any(|w| w == b"\"stream\":true}");
            if streamed {
                let chunk = r#"data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}"#;
                let text = format!("{chunk}\n\n{chunk}\n\ndata: [DONE]\n\n");
                axum::response::Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from(text))
                    .unwrap()
            } else {
                axum::response::Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from(ANSWER))
                    .unwrap()
            }
        }),
    )
}

struct Rig {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    upstream: String,
    proxy: String,
    _dir: tempfile::TempDir,
}

/// Automatic compaction as the proxy applies it, offline summaries. The
/// 200k conversation is folded on its first request, and stays under the
/// threshold after.
fn compaction() -> Compaction {
    Compaction {
        policy: AutoPolicy {
            enabled: true,
            ..AutoPolicy::default()
        },
        hints: Default::default(),
        summarizers: Arc::new(|| Box::new(ctxfold_compactor::DigestOnly)),
        window: Some(160_000),
        observe: false,
        emulate: Default::default(),
    }
}

fn rig() -> Rig {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (upstream, proxy) = rt.block_on(async {
        let up = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_addr = up.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(up, upstream()).await });
        let ws = ctxfold_store::Workspace::init(dir.path()).unwrap().0;
        let compaction = compaction();
        let config = ProxyConfig {
            openai: format!("http://{up_addr}"),
            ..ProxyConfig::default()
        };
        let p =
            Arc::new(Proxy::new(Book::open(Arc::new(ws), compaction).unwrap(), config).unwrap());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(l, router(p)).await });
        (format!("http://{up_addr}"), format!("http://{addr}"))
    });
    Rig {
        rt,
        client: reqwest::Client::new(),
        upstream,
        proxy,
        _dir: dir,
    }
}

/// An agent's session of about `tokens` tokens, as a client sends it:
/// turns of 16 tool steps (reading files of about 500 tokens), each
/// closed by an answer.
fn history(tokens: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "system", "content": "You are a coding agent."})];
    let result = "fn check(x: u32) -> bool { x % 7 == 3 } // a line of the file\n".repeat(30);
    let mut k = 0;
    while m.iter().map(|v| v.to_string().len()).sum::<usize>() / 4 < tokens {
        m.push(json!({"role": "user", "content": format!("Fix the failing tests of part {}.", k / 16)}));
        for _ in 0..16 {
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("call_{k}"),
                "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/m{k}.rs\"}}")}}]}));
            m.push(json!({"role": "tool", "tool_call_id": format!("call_{k}"), "content": result}));
            k += 1;
        }
        m.push(json!({"role": "assistant", "content": "Fixed; the tests of this part pass."}));
    }
    m
}

fn body(messages: &[Value], stream: bool) -> Vec<u8> {
    serde_json::to_vec(&json!({"model": "gpt-4o-mini", "messages": messages, "stream": stream}))
        .unwrap()
}

impl Rig {
    /// Send `body` to `base` and read the answer; the time to its first
    /// byte and to its end.
    fn send(&self, base: &str, body: Vec<u8>) -> (Duration, Duration) {
        self.rt.block_on(async {
            let t = Instant::now();
            let mut r = self
                .client
                .post(format!("{base}/v1/chat/completions"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
            let first = r.chunk().await.unwrap();
            let ttfb = t.elapsed();
            assert!(first.is_some());
            while r.chunk().await.unwrap().is_some() {}
            (ttfb, t.elapsed())
        })
    }
}

/// A known 200k-token conversation: the proxy has it (compacted) and each
/// request adds the answer and one new message.
struct Known {
    messages: Vec<Value>,
    n: usize,
}

impl Known {
    fn new(rig: &Rig) -> Known {
        let mut messages = history(200_000);
        messages.push(json!({"role": "user", "content": "message 0"}));
        rig.send(&rig.proxy, body(&messages, false));
        Known { messages, n: 0 }
    }

    fn next(&mut self) -> Vec<u8> {
        self.n += 1;
        self.messages
            .push(json!({"role": "assistant", "content": "ok"}));
        self.messages
            .push(json!({"role": "user", "content": format!("message {}", self.n)}));
        body(&self.messages, false)
    }
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// p50 and p99 of what the proxy adds, and small requests per second.
fn percentiles() {
    let rig = rig();
    let mut k = Known::new(&rig);
    let (mut via, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let b = k.next();
        via.push(rig.send(&rig.proxy, b.clone()).1);
        direct.push(rig.send(&rig.upstream, b).1);
    }
    let (p50, p99) = (percentile(&mut via, 0.5), percentile(&mut via, 0.99));
    let (d50, d99) = (percentile(&mut direct, 0.5), percentile(&mut direct, 0.99));
    eprintln!(
        "known 200k-token conversation, one new message ({} KB body): via proxy p50 {:.2} ms p99 {:.2} ms; direct p50 {:.2} ms p99 {:.2} ms; added p50 {:.2} ms p99 {:.2} ms",
        body(&k.messages, false).len() / 1024,
        ms(p50),
        ms(p99),
        ms(d50),
        ms(d99),
        ms(p50.saturating_sub(d50)),
        ms(p99.saturating_sub(d99)),
    );
    let small = body(&[json!({"role": "user", "content": "hi"})], true);
    let (mut via, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..500 {
        via.push(rig.send(&rig.proxy, small.clone()).0);
        direct.push(rig.send(&rig.upstream, small.clone()).0);
    }
    eprintln!(
        "first byte of a streamed answer: via proxy p50 {:.3} ms, direct p50 {:.3} ms, added {:.3} ms",
        ms(percentile(&mut via, 0.5)),
        ms(percentile(&mut direct, 0.5)),
        ms(percentile(&mut via, 0.5).saturating_sub(percentile(&mut direct, 0.5)))
    );
    for (name, base) in [
        ("via proxy", rig.proxy.clone()),
        ("direct", rig.upstream.clone()),
    ] {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let until = Instant::now() + Duration::from_secs(3);
        rig.rt.block_on(async {
            let tasks: Vec<_> = (0..8)
                .map(|i| {
                    let client = rig.client.clone();
                    let url = format!("{base}/v1/chat/completions");
                    let count = count.clone();
                    tokio::spawn(async move {
                        // Each client its own conversation.
                        let b = body(
                            &[json!({"role": "user", "content": format!("client {i}")})],
                            false,
                        );
                        while Instant::now() < until {
                            let r = client.post(&url).body(b.clone()).send().await.unwrap();
                            r.bytes().await.unwrap();
                            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        });
        eprintln!(
            "small requests, 8 clients, 3 s: {name} {:.0} requests/s",
            count.load(std::sync::atomic::Ordering::Relaxed) as f64 / 3.0
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // CTXFOLD_BENCH_NO_PERCENTILES=1: divan's table only (with a name
    // filter, `-- prepare`, just the benchmarks named).
    if std::env::var_os("CTXFOLD_BENCH_NO_PERCENTILES").is_none() {
        percentiles();
    }
    divan::main();
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn known_200k(bencher: divan::Bencher) {
    let rig = rig();
    let mut k = Known::new(&rig);
    bencher
        .with_inputs(|| k.next())
        .bench_local_values(|b| rig.send(&rig.proxy, b));
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn direct_200k(bencher: divan::Bencher) {
    let rig = rig();
    let mut k = Known::new(&rig);
    bencher
        .with_inputs(|| k.next())
        .bench_local_values(|b| rig.send(&rig.upstream, b));
}

/// `prepare_200k` (`whole` false), or the same request parsed into JSON
/// values and read whole (`whole` true): the proxy's path before it kept
/// readers.
#[divan::bench(args = [false, true], sample_count = 100, sample_size = 1)]
fn prepare_200k(bencher: divan::Bencher, whole: bool) {
    let dir = tempfile::tempdir().unwrap();
    let ws = ctxfold_store::Workspace::init(dir.path()).unwrap().0;
    let book = Book::open(Arc::new(ws), compaction()).unwrap();
    let shape: ctxfold_proxy::protocol::Shape = &ctxfold_proxy::protocol::chat::Chat;
    let mut messages = history(200_000);
    messages.push(json!({"role": "user", "content": "message 0"}));
    book.prepare_bytes(shape, &body(&messages, false), &Naming::default())
        .unwrap();
    let mut n = 0;
    bencher
        .with_inputs(|| {
            n += 1;
            messages.push(json!({"role": "assistant", "content": "ok"}));
            messages.push(json!({"role": "user", "content": format!("message {n}")}));
            body(&messages, false)
        })
        .bench_local_values(|b| {
            let p = if whole {
                let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
                book.prepare(shape, &v, &Naming::default()).unwrap()
            } else {
                book.prepare_bytes(shape, &b, &Naming::default()).unwrap()
            };
            assert!(p.body.is_some(), "the view is compacted");
            p
        });
}

#[divan::bench(args = ["proxy", "direct"], sample_count = 200, sample_size = 1)]
fn first_byte(bencher: divan::Bencher, to: &str) {
    let r = rig();
    let base = if to == "proxy" {
        r.proxy.clone()
    } else {
        r.upstream.clone()
    };
    let small = body(&[json!({"role": "user", "content": "hi"})], true);
    bencher.bench_local(|| r.send(&base, small.clone()).0);
}
