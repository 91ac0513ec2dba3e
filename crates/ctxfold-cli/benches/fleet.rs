//! A fleet of proxies on one PostgreSQL database (issue 48): how many
//! agent steps, appends and loads a second one database carries from 1, 2
//! and 4 real `ctxfold proxy` processes, and where it stops. Figures and
//! the sharding plan: `docs/PERFORMANCE.md`.
//!
//! ```text
//! CTXFOLD_PG_DURABLE=1 scripts/postgres start /tmp/ctxfold-fleet-pg
//! CTXFOLD_BENCH_PG_URL=$(scripts/postgres url /tmp/ctxfold-fleet-pg) \
//!     cargo bench -p ctxfold --bench fleet
//! scripts/postgres stop /tmp/ctxfold-fleet-pg
//! ```
//!
//! `CTXFOLD_BENCH_PG_URL` (else `CTXFOLD_TEST_PG_URL`) names a server whose
//! role may create databases; without either the benchmarks say so and do
//! nothing. The run creates a database of its own, `ctxfold_fleet_<pid>`,
//! and drops it at the end. With `CTXFOLD_BENCH_BIN=PATH` it runs that
//! binary instead of the one built with the benchmark.
//!
//! The proxies are the release binary (`ctxfold proxy --store URL`), each
//! its own process with its own connection pool, in front of a fake model
//! on 127.0.0.1 (in this process: it reads a request and answers one tool
//! call, OpenAI chat completions, not streamed). A client is an agent's
//! tool loop: it sends its whole history, gets a tool call, adds the
//! tool's result (4,000 bytes of varied text) and sends again. Each such
//! request is one step: the proxy appends the new messages (one
//! conditional append), forwards, and appends the answer (another).
//!
//! - `steps::<P>(clients)`: `clients` agents at once, each a new
//!   conversation of 10 requests, spread over `P` proxies by conversation
//!   (each conversation always on the same proxy): steps per second; the
//!   knee where more clients stop adding throughput.
//! - `long_sticky::<P>` / `long_spread::<P>`: 48 conversations of about
//!   250 events (half a megabyte of log each), one request each per sample, 16
//!   clients; sticky: a conversation always on the same proxy (its log
//!   kept in the proxy's memory); spread: each request to another proxy
//!   than the last (a round-robin balancer), which must read the whole
//!   log again because another proxy appended to it.
//! - `resume::<P>`: the same 48 conversations, one request each, to `P`
//!   proxies just started (after a restart or a deploy): each request
//!   finds the conversation by its key in the database and loads it
//!   whole: loads per second.
//! - `key_lookup(n)`: the proxy's lookup of a key it has not seen (the
//!   first request of a new conversation, of another proxy's, any after a
//!   restart) among `n` conversations' metadata, each in a database of its
//!   own.
//! - `store_steps(writers)`: the database alone, no proxy: `writers`
//!   threads with a store each, each doing a proxy's database work of one
//!   step (peek, conditional append of the tool result, peek, conditional
//!   append of the answer) on its own conversation.
//!
//! After divan's table it prints each series' figures: steps per second
//! by its own clock, latency p50 / p99, events and transactions per step,
//! WAL flushes, and where the CPU went (proxies, PostgreSQL, this process
//! with the clients and the fake model, anything else on the machine)
//! against the machine's cores.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::{AppendAt, ConversationMeta, PgStore, Store};
use divan::Bencher;
use divan::counter::ItemsCount;
use postgres::NoTls;
use serde_json::{Value, json};

fn main() {
    if admin_url().is_none() {
        eprintln!(
            "fleet benchmarks skipped: set CTXFOLD_BENCH_PG_URL (or CTXFOLD_TEST_PG_URL); see the top of benches/fleet.rs"
        );
        return;
    }
    divan::main();
    report();
    lock(&PROXIES).clear();
    if let Some(home) = HOME.get() {
        let _ = std::fs::remove_dir_all(home.path());
    }
    drop_lookup_dbs();
    if let Some(db) = DB.get() {
        db.drop_now();
    }
}

/// Requests a conversation makes in one sample of `steps`.
const STEPS: usize = 10;
/// Bytes of a tool's result.
const TOOL_BYTES: usize = 4_000;
/// Bytes of the system prompt (an agent's instructions and tools).
const SYSTEM_BYTES: usize = 8_000;
/// The long conversations of `long_*` and `resume`: how many, how many
/// tool steps each starts with, and how many clients drive them.
const LONG: usize = 48;
const LONG_STEPS: usize = 120;
const LONG_CLIENTS: usize = 16;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------- database

fn admin_url() -> Option<String> {
    ["CTXFOLD_BENCH_PG_URL", "CTXFOLD_TEST_PG_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
}

/// The benchmark's own database.
struct BenchDb {
    admin: String,
    name: String,
    url: String,
}

static DB: OnceLock<BenchDb> = OnceLock::new();

fn db() -> &'static BenchDb {
    DB.get_or_init(|| {
        let admin = admin_url().expect("checked in main");
        let name = format!("ctxfold_fleet_{}", std::process::id());
        let mut c = postgres::Client::connect(&admin, NoTls).expect("the benchmark server");
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        let url = with_database(&admin, &name);
        // The schema, before any proxy races to make it.
        drop(PgStore::connect(&url).unwrap());
        BenchDb { admin, name, url }
    })
}

impl BenchDb {
    fn drop_now(&self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let rest = base.find("://").expect("a URL") + 3;
    let end = base[rest..].find('/').map_or(base.len(), |i| rest + i);
    format!("{}/{db}{query}", &base[..end])
}

/// A client on the benchmark's database for the counters.
static STATS: LazyLock<Mutex<postgres::Client>> =
    LazyLock::new(|| Mutex::new(postgres::Client::connect(&db().url, NoTls).unwrap()));

// ------------------------------------------------------------- fake model

/// The fake model: `http://127.0.0.1:PORT`, started once.
static UPSTREAM: LazyLock<String> = LazyLock::new(|| {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || model_connection(conn));
        }
    });
    base
});

static CALLS: AtomicU64 = AtomicU64::new(0);

/// Answer every request on `conn` with a tool call (ids unique in the
/// run), keeping the connection open.
fn model_connection(conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut r = BufReader::with_capacity(1 << 16, conn);
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let (mut length, mut chunked) = (0, false);
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "content-length" {
                    length = v.parse().unwrap_or(0);
                } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let mut received = length;
        if chunked {
            received = 0;
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let n = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                body.resize(n + 2, 0);
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                received += n;
                if n == 0 {
                    break;
                }
            }
        } else {
            body.resize(length, 0);
            if r.read_exact(&mut body).is_err() {
                return;
            }
        }
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        let answer = json!({
            "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {
                "role": "assistant", "content": null, "refusal": null,
                "tool_calls": [{"id": format!("call_{n}"), "type": "function",
                    "function": {"name": "read_file",
                        "arguments": json!({"path": format!("src/m{}.rs", n % 97)}).to_string()}}]
            }, "logprobs": null, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": received / 4, "completion_tokens": 20,
                "total_tokens": received / 4 + 20}
        })
        .to_string();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            answer.len()
        );
        if out
            .write_all(head.as_bytes())
            .and_then(|()| out.write_all(answer.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

// ---------------------------------------------------------------- proxies

/// A `ctxfold proxy` process, killed when dropped.
struct Proxy {
    child: Child,
    base: String,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The proxies' home: config and workspace, removed at the end (a
/// static is never dropped: `main` removes it).
static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();

fn home() -> &'static std::path::Path {
    HOME.get_or_init(|| {
        let home = tempfile::Builder::new()
            .prefix("ctxfold-fleet")
            .tempdir()
            .unwrap();
        // No firing: the benchmark measures appends, not compaction.
        let config = format!("[proxy]\nopenai = \"{}\"\nwindow = 1000000\n", *UPSTREAM);
        std::fs::write(home.path().join("fleet.toml"), config).unwrap();
        home
    })
    .path()
}

fn binary() -> std::ffi::OsString {
    std::env::var_os("CTXFOLD_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_ctxfold").into())
}

/// `n` proxies on the benchmark's database, started at once.
fn start_proxies(n: usize) -> Vec<Proxy> {
    let home = home();
    let mut children: Vec<Child> = (0..n)
        .map(|_| {
            Command::new(binary())
                .current_dir(home)
                .env("HOME", home)
                .env("XDG_DATA_HOME", home.join("xdg-data"))
                .env("XDG_CONFIG_HOME", home.join("xdg-config"))
                .env("RUST_LOG", "warn")
                .arg("-c")
                .arg(home.join("fleet.toml"))
                .args(["proxy", "--listen", "127.0.0.1:0", "--store", &db().url])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .iter_mut()
        .map(|child| {
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            let (_, bound) = line
                .trim()
                .split_once(" listening on http://")
                .unwrap_or_else(|| panic!("the proxy did not start: {line:?}"));
            bound.trim_end_matches('/').to_owned()
        })
        .collect::<Vec<_>>()
        .into_iter()
        .zip(children)
        .map(|(addr, child)| Proxy {
            child,
            base: format!("http://{addr}"),
        })
        .collect()
}

/// The proxies of `steps` and `long_*`, by how many, kept for the run.
static PROXIES: Mutex<BTreeMap<usize, Arc<Vec<Proxy>>>> = Mutex::new(BTreeMap::new());

fn fleet(n: usize) -> Arc<Vec<Proxy>> {
    lock(&PROXIES)
        .entry(n)
        .or_insert_with(|| Arc::new(start_proxies(n)))
        .clone()
}

// ---------------------------------------------------------------- clients

/// Text of `n` bytes, varied so it does not compress to nothing (the
/// database compresses long values).
fn text(seed: u64, n: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "parser",
        "returns",
        "an",
        "error",
        "when",
        "config",
        "file",
        "is",
        "missing",
        "we",
        "should",
        "check",
        "line",
        "42",
        "of",
        "src/main.rs",
        "before",
        "retrying",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut i = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while s.len() < n {
        i ^= i << 13;
        i ^= i >> 7;
        i ^= i << 17;
        s.push_str(WORDS[(i % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s.truncate(n);
    s
}

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}])
}

/// An agent's conversation as its client holds it.
struct Conv {
    messages: Vec<Value>,
    seed: u64,
}

static SEEDS: AtomicU64 = AtomicU64::new(1);

impl Conv {
    /// A new conversation (its head differs from every other's, so each
    /// is a conversation of its own), with `steps` tool steps already
    /// behind it.
    fn new(steps: usize) -> Conv {
        let seed = SEEDS.fetch_add(1, Ordering::Relaxed);
        let mut messages = vec![
            json!({"role": "system", "content": format!("Agent {seed}. {}", text(seed, SYSTEM_BYTES))}),
            json!({"role": "user", "content": format!("Task {seed}: find why the parser fails; read the modules.")}),
        ];
        for k in 0..steps {
            let id = format!("call_h{seed}_{k}");
            messages.push(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
                "type": "function", "function": {"name": "read_file",
                    "arguments": json!({"path": format!("src/m{k}.rs")}).to_string()}}]}),
            );
            messages.push(json!({"role": "tool", "tool_call_id": id,
                "content": text(seed * 1_000_003 + k as u64, TOOL_BYTES)}));
        }
        Conv { messages, seed }
    }

    /// One request through `base`; its latency, and what the proxy said it
    /// did with the history (`new`, `continued`, `forked`, …).
    fn step(&mut self, agent: &ureq::Agent, base: &str) -> (Duration, String) {
        let body = json!({"model": "gpt-4o-mini", "messages": self.messages, "tools": tools()})
            .to_string();
        let clock = Instant::now();
        let mut resp = agent
            .post(&format!("{base}/v1/chat/completions"))
            .header("content-type", "application/json")
            .send(body.as_bytes())
            .unwrap();
        let answer: Value = serde_json::from_slice(
            &resp
                .body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_vec()
                .unwrap(),
        )
        .unwrap();
        let took = clock.elapsed();
        assert_eq!(resp.status(), 200, "{answer}");
        let history = resp
            .headers()
            .get("x-ctxfold-history")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("the proxy failed open: {answer}"));
        let history = history.to_owned();
        let msg = answer["choices"][0]["message"].clone();
        let id = msg["tool_calls"][0]["id"].as_str().unwrap().to_owned();
        self.messages.push(msg);
        let k = self.messages.len() as u64;
        self.messages
            .push(json!({"role": "tool", "tool_call_id": id,
            "content": text(self.seed * 1_000_003 + k, TOOL_BYTES)}));
        (took, history)
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// Run `jobs` on `clients` threads at once, each job a conversation and
/// the proxies it goes to request by request; the latencies, what the
/// proxies did with the histories, and the time it all took.
fn drive(clients: usize, jobs: Vec<(Arc<Mutex<Conv>>, Vec<String>)>) -> Run {
    let jobs = Arc::new(Mutex::new(jobs.into_iter().collect::<Vec<_>>()));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (jobs, barrier) = (jobs.clone(), barrier.clone());
            std::thread::spawn(move || {
                let agent = agent();
                let (mut lat, mut histories) = (Vec::new(), BTreeMap::new());
                barrier.wait();
                loop {
                    let Some((conv, bases)) = lock(&jobs).pop() else {
                        break;
                    };
                    let mut conv = lock(&conv);
                    for base in bases {
                        let (took, history) = conv.step(&agent, &base);
                        lat.push(took);
                        *histories.entry(history).or_insert(0) += 1;
                    }
                }
                (lat, histories)
            })
        })
        .collect();
    barrier.wait();
    let clock = Instant::now();
    let mut run = Run::default();
    for h in handles {
        let (l, c) = h.join().unwrap();
        run.latencies.extend(l);
        for (k, n) in c {
            *run.histories.entry(k).or_insert(0) += n;
        }
    }
    run.wall = clock.elapsed();
    run
}

/// What a sample did.
#[derive(Default)]
struct Run {
    latencies: Vec<Duration>,
    histories: BTreeMap<String, usize>,
    wall: Duration,
}

// --------------------------------------------------------------- counters

/// Cumulative counters: CPU time by whom, the machine's, the database's.
#[derive(Clone, Copy, Default)]
struct Snapshot {
    /// CPU seconds of the proxies, of PostgreSQL (live processes and the
    /// children the postmaster reaped), of this process.
    proxies: f64,
    postgres: f64,
    bench: f64,
    /// The machine's busy and iowait CPU seconds, all cores.
    busy: f64,
    iowait: f64,
    /// Events in the database; transactions that wrote (the next
    /// transaction id); WAL written (its position, in bytes); WAL
    /// flushes (`pg_stat_wal`, which backends report up to a few seconds
    /// late: close over a series, not a sample).
    events: i64,
    writes: i64,
    wal_bytes: i64,
    wal_syncs: i64,
}

fn ticks() -> f64 {
    100.0 // USER_HZ on Linux
}

/// utime + stime (and, with `children`, cutime + cstime) of `pid`, in
/// seconds, with its name.
fn proc_cpu(pid: &str, children: bool) -> Option<(String, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat[open + 1..close].to_owned();
    let f: Vec<&str> = stat[close + 2..].split(' ').collect();
    // After the name: state is field 3, utime 14, stime 15, cutime 16,
    // cstime 17 (1-based, man 5 proc).
    let n = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let mut t = n(14) + n(15);
    if children {
        t += n(16) + n(17);
    }
    Some((name, t / ticks()))
}

/// CPU seconds of a server process (one thread each) to the nanosecond
/// (`schedstat`: the clock ticks of `stat` would lose up to 10 ms for
/// each of the many backends at each reading, and a sample's new backends
/// would be counted short); the postmaster's with the children it reaped
/// (ticks, one number).
fn server_cpu(pid: &str, postmaster: bool) -> f64 {
    let own = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .map_or_else(|| proc_cpu(pid, false).map_or(0.0, |x| x.1), |ns| ns / 1e9);
    let reaped = if postmaster {
        proc_cpu(pid, true).map_or(0.0, |x| x.1) - proc_cpu(pid, false).map_or(0.0, |x| x.1)
    } else {
        0.0
    };
    own + reaped
}

/// The parent of process `pid`.
fn parent(pid: &str) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(1)?.parse().ok()
}

/// The benchmark server's postmaster: the parent of a backend (the server
/// runs on this machine).
static POSTMASTER: LazyLock<u32> = LazyLock::new(|| {
    let backend: i32 = lock(&STATS)
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    parent(&backend.to_string()).unwrap_or(0)
});

fn snapshot(proxies: &[&Proxy]) -> Snapshot {
    let mut s = Snapshot::default();
    for p in proxies {
        s.proxies += proc_cpu(&p.child.id().to_string(), false).map_or(0.0, |x| x.1);
    }
    s.bench = proc_cpu("self", false).map_or(0.0, |x| x.1);
    // The benchmark's server only (the postmaster and its children; the
    // children it reaped count in its own figure), not others' servers.
    let pm = *POSTMASTER;
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let pid = e.file_name();
            let pid = pid.to_string_lossy();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let is_pm = pid.parse::<u32>().ok() == Some(pm);
            if is_pm || parent(&pid) == Some(pm) {
                s.postgres += server_cpu(&pid, is_pm);
            }
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/stat") {
        let f: Vec<f64> = stat
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap_or(0.0))
            .collect();
        let total: f64 = f.iter().take(8).sum();
        let idle = f.get(3).copied().unwrap_or(0.0);
        let iowait = f.get(4).copied().unwrap_or(0.0);
        s.busy = (total - idle - iowait) / ticks();
        s.iowait = iowait / ticks();
    }
    let mut c = lock(&STATS);
    // Counters other sessions flushed so far (a backend reports its own
    // at most once a second: a sample's figures are close, a series'
    // sums closer).
    let _ = c.batch_execute("SELECT pg_stat_clear_snapshot()");
    s.events = c
        .query_one(
            "SELECT coalesce(sum(next_seq), 0)::bigint FROM ctxfold_conversations",
            &[],
        )
        .map_or(0, |r| r.get(0));
    let exact = c.query_one(
        "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
                (pg_current_wal_lsn() - '0/0')::bigint",
        &[],
    );
    (s.writes, s.wal_bytes) = exact.map_or((0, 0), |r| (r.get(0), r.get(1)));
    s.wal_syncs = c
        .query_one("SELECT wal_sync FROM pg_stat_wal", &[])
        .map_or(0, |r| r.get(0));
    s
}

/// One series' sums over its samples.
#[derive(Default)]
struct Series {
    requests: usize,
    histories: BTreeMap<String, usize>,
    wall: f64,
    latencies: Vec<Duration>,
    proxies: f64,
    postgres: f64,
    bench: f64,
    busy: f64,
    iowait: f64,
    events: i64,
    writes: i64,
    wal_bytes: i64,
    wal_syncs: i64,
}

static SERIES: Mutex<BTreeMap<String, Series>> = Mutex::new(BTreeMap::new());

fn record(name: String, before: Snapshot, after: Snapshot, run: Run) {
    let mut all = lock(&SERIES);
    let s = all.entry(name).or_default();
    s.requests += run.latencies.len();
    for (k, n) in run.histories {
        *s.histories.entry(k).or_insert(0) += n;
    }
    s.wall += run.wall.as_secs_f64();
    s.latencies.extend(run.latencies);
    s.proxies += after.proxies - before.proxies;
    s.postgres += after.postgres - before.postgres;
    s.bench += after.bench - before.bench;
    s.busy += after.busy - before.busy;
    s.iowait += after.iowait - before.iowait;
    s.events += after.events - before.events;
    s.writes += after.writes - before.writes;
    s.wal_syncs += after.wal_syncs - before.wal_syncs;
    s.wal_bytes += after.wal_bytes - before.wal_bytes;
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

fn report() {
    let mut c = lock(&STATS);
    if let Ok(r) = c.query_one(
        "SELECT count(*), pg_total_relation_size('ctxfold_events'),
                (SELECT count(*) FROM ctxfold_conversations) FROM ctxfold_events",
        &[],
    ) {
        let (events, bytes, convs): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
        println!(
            "\ndatabase at the end: {convs} conversations, {events} events, ctxfold_events {:.0} MB with its indexes and TOAST ({:.0} bytes an event)",
            bytes as f64 / 1e6,
            bytes as f64 / events.max(1) as f64
        );
    }
    drop(c);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "\nfleet series ({} cores): steps (requests) and their rate by this run's clock, latency percentiles, per step the events and write transactions and WAL written, WAL flushes a second (approximate), CPU milliseconds a step of the proxies and of PostgreSQL, CPU as cores busy on average (proxies, PostgreSQL, this process with the clients and the fake model, anything else on the machine), iowait:",
        cores
    );
    println!(
        "  {:<24} {:>7} {:>9} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "series",
        "steps",
        "steps/s",
        "p50 ms",
        "p99 ms",
        "ev/st",
        "wtx/st",
        "WAL KB",
        "syncs/s",
        "proxy ms",
        "pg ms",
        "proxy",
        "pg",
        "bench",
        "other",
        "busy",
        "iowait"
    );
    for (name, s) in lock(&SERIES).iter_mut() {
        s.latencies.sort_unstable();
        let w = s.wall.max(1e-9);
        let n = s.requests.max(1) as f64;
        let known = s.proxies + s.postgres + s.bench;
        println!(
            "  {:<24} {:>7} {:>9.1} {:>8.1} {:>8.1} {:>7.2} {:>7.2} {:>7.1} {:>7.0} {:>8.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2}",
            name,
            s.requests,
            s.requests as f64 / w,
            percentile(&s.latencies, 0.50),
            percentile(&s.latencies, 0.99),
            s.events as f64 / n,
            s.writes as f64 / n,
            s.wal_bytes as f64 / n / 1024.0,
            s.wal_syncs as f64 / w,
            s.proxies * 1e3 / n,
            s.postgres * 1e3 / n,
            s.proxies / w,
            s.postgres / w,
            s.bench / w,
            (s.busy - known).max(0.0) / w,
            s.busy / w,
            s.iowait / w,
        );
        if !s.histories.is_empty() {
            let h: Vec<String> = s
                .histories
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            println!("  {:<24} (histories: {})", "", h.join(", "));
        }
    }
}

// -------------------------------------------------------------- benchmarks

/// `clients` agents at once, each a new conversation of [`STEPS`]
/// requests, conversation `i` always on proxy `i % P`.
#[divan::bench(consts = [1, 2, 4], args = [1, 4, 16, 64, 256], sample_count = 4, sample_size = 1)]
fn steps<const P: usize>(bencher: Bencher, clients: usize) {
    let proxies = fleet(P);
    bencher
        .counter(ItemsCount::new(clients * STEPS))
        .with_inputs(|| {
            let jobs: Vec<_> = (0..clients)
                .map(|i| {
                    let base = proxies[i % P].base.clone();
                    (Arc::new(Mutex::new(Conv::new(0))), vec![base; STEPS])
                })
                .collect();
            (jobs, snapshot(&proxies.iter().collect::<Vec<_>>()))
        })
        .bench_local_values(|(jobs, before)| {
            let run = drive(clients, jobs);
            let after = snapshot(&proxies.iter().collect::<Vec<_>>());
            record(format!("steps/{P}p/{clients:02}c"), before, after, run);
        });
}

/// The long conversations, made once through a proxy of their own: each
/// request carries a history of [`LONG_STEPS`] tool steps.
static LONG_CONVS: LazyLock<Vec<Arc<Mutex<Conv>>>> = LazyLock::new(|| {
    let maker = start_proxies(1);
    let convs: Vec<_> = (0..LONG)
        .map(|_| Arc::new(Mutex::new(Conv::new(LONG_STEPS))))
        .collect();
    let jobs = convs
        .iter()
        .map(|c| (c.clone(), vec![maker[0].base.clone()]))
        .collect();
    let _ = drive(4, jobs);
    convs
});

/// One request for each long conversation, conversation `i` on proxy
/// `route(i)`, [`LONG_CLIENTS`] at once.
fn long_round(
    proxies: &[Proxy],
    route: impl Fn(usize) -> usize,
) -> Vec<(Arc<Mutex<Conv>>, Vec<String>)> {
    LONG_CONVS
        .iter()
        .enumerate()
        .map(|(i, c)| (c.clone(), vec![proxies[route(i)].base.clone()]))
        .collect()
}

static ROUND: AtomicUsize = AtomicUsize::new(0);

/// Long conversations, each always on the same proxy: the log stays in
/// that proxy's memory (after one untimed round that loads it).
#[divan::bench(consts = [1, 2, 4], sample_count = 6, sample_size = 1)]
fn long_sticky<const P: usize>(bencher: Bencher) {
    let proxies = fleet(P);
    let _ = drive(LONG_CLIENTS, long_round(&proxies, |i| i % P));
    bencher
        .counter(ItemsCount::new(LONG))
        .with_inputs(|| {
            (
                long_round(&proxies, |i| i % P),
                snapshot(&proxies.iter().collect::<Vec<_>>()),
            )
        })
        .bench_local_values(|(jobs, before)| {
            let run = drive(LONG_CLIENTS, jobs);
            let after = snapshot(&proxies.iter().collect::<Vec<_>>());
            record(format!("long-sticky/{P}p"), before, after, run);
        });
}

/// Long conversations, each request to another proxy than the last: the
/// proxy's copy is behind (another proxy appended), so it reads the log
/// again.
#[divan::bench(consts = [2, 4], sample_count = 6, sample_size = 1)]
fn long_spread<const P: usize>(bencher: Bencher) {
    let proxies = fleet(P);
    bencher
        .counter(ItemsCount::new(LONG))
        .with_inputs(|| {
            let r = ROUND.fetch_add(1, Ordering::Relaxed);
            (
                long_round(&proxies, |i| (i + r) % P),
                snapshot(&proxies.iter().collect::<Vec<_>>()),
            )
        })
        .bench_local_values(|(jobs, before)| {
            let run = drive(LONG_CLIENTS, jobs);
            let after = snapshot(&proxies.iter().collect::<Vec<_>>());
            record(format!("long-spread/{P}p"), before, after, run);
        });
}

/// Long conversations, one request each to `P` proxies just started: a
/// lookup of the key and a whole load per conversation.
#[divan::bench(consts = [1, 2, 4], sample_count = 6, sample_size = 1)]
fn resume<const P: usize>(bencher: Bencher) {
    LazyLock::force(&LONG_CONVS);
    bencher
        .counter(ItemsCount::new(LONG))
        .with_inputs(|| {
            let proxies = start_proxies(P);
            let jobs = long_round(&proxies, |i| i % P);
            let before = snapshot(&proxies.iter().collect::<Vec<_>>());
            (proxies, jobs, before)
        })
        .bench_local_values(|(proxies, jobs, before)| {
            let run = drive(LONG_CLIENTS, jobs);
            let after = snapshot(&proxies.iter().collect::<Vec<_>>());
            record(format!("resume/{P}p"), before, after, run);
            // Stopped after the sample, not in it.
            proxies
        });
}

/// A proxy's database work for one step, without the proxy: a peek and a
/// conditional append of the tool's result, a peek and a conditional
/// append of the answer's tool call.
fn store_step(store: &PgStore, id: &str, seed: u64, k: u64) {
    let ts = "2026-01-02T03:04:05.123456Z";
    let call = format!("call_s{seed}_{k}");
    let result = Record::new(
        0,
        ts,
        Body::ToolResult {
            id: call.clone(),
            content: text(seed * 1_000_003 + k, TOOL_BYTES),
            is_error: false,
        },
    );
    let answer = Record::new(
        0,
        ts,
        Body::ToolCall {
            id: format!("{call}_next"),
            name: "read_file".into(),
            arguments: json!({"path": format!("src/m{k}.rs")}).into(),
        },
    );
    for r in [result, answer] {
        let next = Store::peek_next_seq(store, id).unwrap();
        let done = Store::append_at(store, id, next, vec![r]).unwrap();
        assert!(matches!(done, AppendAt::Appended(_)));
    }
}

/// `writers` threads with a store each (a pool each, as processes would
/// have), each doing [`STEPS`] steps' database work on a conversation of
/// its own.
#[divan::bench(args = [1, 4, 16, 64], sample_count = 4, sample_size = 1)]
fn store_steps(bencher: Bencher, writers: usize) {
    bencher
        .counter(ItemsCount::new(writers * STEPS))
        .with_inputs(|| {
            let setup = PgStore::connect(&db().url).unwrap();
            let ids: Vec<(String, u64)> = (0..writers)
                .map(|_| {
                    let seed = SEEDS.fetch_add(1, Ordering::Relaxed);
                    let id = format!("store-{seed}");
                    let meta = ConversationMeta {
                        id: id.clone(),
                        title: None,
                        created_at: "2026-01-02T03:04:05Z".into(),
                        last_used_at: "2026-01-02T03:04:05Z".into(),
                        imported_from: None,
                        extras: Object::new(),
                    };
                    Store::create(&setup, &meta, Vec::new()).unwrap();
                    (id, seed)
                })
                .collect();
            let stores: Vec<PgStore> = (0..writers)
                .map(|_| {
                    let s = PgStore::connect(&db().url).unwrap();
                    // A connection open before the clock starts.
                    Store::peek_next_seq(&s, &ids[0].0).unwrap();
                    s
                })
                .collect();
            (ids, stores, snapshot(&[]))
        })
        .bench_local_values(|(ids, stores, before)| {
            let barrier = Arc::new(Barrier::new(writers + 1));
            let handles: Vec<_> = ids
                .into_iter()
                .zip(stores)
                .map(|((id, seed), store)| {
                    let barrier = barrier.clone();
                    std::thread::spawn(move || {
                        barrier.wait();
                        let mut lat = Vec::with_capacity(STEPS);
                        for k in 0..STEPS as u64 {
                            let clock = Instant::now();
                            store_step(&store, &id, seed, k);
                            lat.push(clock.elapsed());
                        }
                        lat
                    })
                })
                .collect();
            barrier.wait();
            let clock = Instant::now();
            let mut lat = Vec::new();
            for h in handles {
                lat.extend(h.join().unwrap());
            }
            let wall = clock.elapsed();
            let after = snapshot(&[]);
            let run = Run {
                latencies: lat,
                histories: BTreeMap::new(),
                wall,
            };
            record(format!("store/{writers:02}w"), before, after, run);
        });
}

/// A database of its own for `key_lookup`, holding `n` conversations'
/// metadata as the proxy writes it (no events), made once per size.
static LOOKUP_DBS: Mutex<BTreeMap<usize, String>> = Mutex::new(BTreeMap::new());

fn lookup_db(n: usize) -> String {
    lock(&LOOKUP_DBS)
        .entry(n)
        .or_insert_with(|| {
            let name = format!("{}_keys_{n}", db().name);
            let mut c = postgres::Client::connect(&db().admin, NoTls).unwrap();
            c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .unwrap();
            c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
            let url = with_database(&db().admin, &name);
            drop(PgStore::connect(&url).unwrap());
            let mut c = postgres::Client::connect(&url, NoTls).unwrap();
            // What the proxy's metadata of a conversation looks like: its
            // key, shape, model, fixed part, and a title from the user's
            // words (`c print`'s meta of a proxy conversation, about 330
            // bytes).
            c.execute(
                "INSERT INTO ctxfold_conversations (id, meta, created_at)
                 SELECT 'proxy-' || left(md5(i::text), 16),
                        '{\"id\":\"proxy-' || left(md5(i::text), 16) || '\",'
                        || '\"title\":\"Task ' || i || ': find why the parser fails when the config file is missing\",'
                        || '\"created_at\":\"2026-01-02T03:04:05.123Z\",\"last_used_at\":\"2026-01-02T03:04:05.123Z\",'
                        || '\"extras\":{\"proxy\":{\"key\":\"head:' || md5(i::text) || '\",\"shape\":\"chat\",'
                        || '\"model\":\"gpt-4o-mini\",\"fixed_tokens\":2100}}}',
                        '2026-01-02T03:04:05.123Z'
                 FROM generate_series(1, $1::int) AS i",
                &[&(n as i32)],
            )
            .unwrap();
            c.batch_execute("VACUUM ANALYZE ctxfold_conversations")
                .unwrap();
            url
        })
        .clone()
}

fn drop_lookup_dbs() {
    let Some(db) = DB.get() else { return };
    let Ok(mut c) = postgres::Client::connect(&db.admin, NoTls) else {
        return;
    };
    for n in lock(&LOOKUP_DBS).keys() {
        let _ = c.batch_execute(&format!(
            "DROP DATABASE IF EXISTS {}_keys_{n} WITH (FORCE)",
            db.name
        ));
    }
}

/// A key looked up in the metadata of `n` conversations, as the proxy does
/// for the first request of a key it has not seen (a new conversation,
/// another proxy's, any after a restart): the metadata text searched for
/// the key, row by row.
#[divan::bench(args = [1_000, 10_000, 100_000], sample_count = 20, sample_size = 1)]
fn key_lookup(bencher: Bencher, n: usize) {
    let store = PgStore::connect(&lookup_db(n)).unwrap();
    let mut i = 0usize;
    bencher
        .with_inputs(|| {
            i += 1;
            // A row's key: the md5 of its number, as the rows were made.
            let hex: String = lock(&STATS)
                .query_one("SELECT md5($1::text)", &[&(i % n + 1).to_string()])
                .unwrap()
                .get(0);
            Value::String(format!("head:{hex}"))
        })
        .bench_local_values(|key| {
            let found = Store::find_by_extra(&store, "/proxy/key", &key).unwrap();
            assert_eq!(found.len(), 1);
        });
}
