//! Several processes on one PostgreSQL conversation: real processes (this
//! test binary started again in writer mode), a real server, real kills.
//!
//! - four processes × 1,000 batches on one conversation: every batch once,
//!   whole, in its writer's order; `seq` gapless and unique;
//! - SIGKILL of a process appending under the compaction lock: every batch
//!   it had written is whole, nothing half-written; another process then
//!   takes the lock and appends;
//! - a server restart while a process appends (a server of this test's own,
//!   from `scripts/postgres`): every acknowledged batch is there, whole;
//!   the failures meanwhile are clear errors without the password; the
//!   process goes on once the server is back.
//!
//! The first two need `CTXFOLD_TEST_PG_URL`; the third starts its own
//! server with `scripts/postgres`. Without that variable a plain `cargo
//! test` reports all three as ignored; under `scripts/test` and in CI they
//! run (`ctxfold_testkit::needs`). The harness is this file's `main`
//! (`harness = false`, libtest-mimic: libtest's arguments and summary), so
//! the same binary can be the writer.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_testkit::{needs, pg};
use libtest_mimic::{Arguments, Trial};

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::{ConversationMeta, PgStore, Store};

const ID: &str = "shared";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--writer") {
        writer(&args[2..]);
        return;
    }
    // libtest's arguments, filters and summary line (which CI tallies).
    // Without a server a plain `cargo test` reports these as ignored, not
    // passed; under scripts/test and in CI they run, and fail without one
    // (`ctxfold_testkit::needs`).
    let no_server = std::env::var(pg::ENV).map_or(true, |u| u.is_empty()) && !needs::required();
    let trial = |name: &'static str, test: fn()| {
        Trial::test(name, move || {
            test();
            Ok(())
        })
        .with_ignored_flag(no_server)
    };
    let trials = vec![
        trial(
            "four_processes_append_every_batch_once_in_order",
            four_processes,
        ),
        trial("sigkill_leaves_whole_batches_and_frees_the_lock", sigkill),
        trial(
            "a_server_restart_loses_no_acknowledged_batch",
            server_restart,
        ),
    ];
    let mut arguments = Arguments::from_args();
    // One at a time unless asked otherwise: each starts processes (and
    // one a server) of its own, timed against the others' load.
    arguments.test_threads.get_or_insert(1);
    libtest_mimic::run(&arguments, trials).exit();
}

/// Writer mode: `--writer URL WRITER BATCHES MODE`. Appends batches of
/// 1 to 3 records (`wW bB rR`) to [`ID`] and prints `ack B START END` once
/// each is committed. MODE `plain`; `lock` (hold the compaction lock from
/// the start, print `locked`); `retry` (print `err B MESSAGE` for a failed
/// append, wait a little and go on with the next batch).
fn writer(args: &[String]) {
    let [url, w, batches, mode] = args else {
        panic!("writer mode takes URL WRITER BATCHES MODE, got {args:?}");
    };
    let w: usize = w.parse().unwrap();
    let batches: usize = batches.parse().unwrap();
    let store = connect_retrying(url);
    let _lock = if mode == "lock" {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(l) = store.try_compaction_lock(ID).unwrap() {
                break Some(l);
            }
            assert!(
                Instant::now() < deadline,
                "the compaction lock stayed taken"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if mode == "lock" {
        writeln!(out, "locked").unwrap();
        out.flush().unwrap();
    }
    for b in 0..batches {
        match store.append(ID, batch(w, b)) {
            Ok(range) => writeln!(out, "ack {b} {} {}", range.start, range.end).unwrap(),
            Err(e) if mode == "retry" => {
                writeln!(out, "err {b} {}", chain(&e).replace('\n', " ")).unwrap();
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("writer {w} batch {b}: {}", chain(&e)),
        }
        out.flush().unwrap();
    }
}

fn connect_retrying(url: &str) -> PgStore {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match PgStore::connect(url) {
            Ok(s) => return s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("cannot connect: {}", chain(&e)),
        }
    }
}

fn batch(w: usize, b: usize) -> Vec<Record> {
    (0..1 + b % 3)
        .map(|r| {
            Record::new(
                0,
                "2026-01-02T03:04:05Z",
                Body::User {
                    content: format!("w{w} b{b} r{r}"),
                    author: None,
                },
            )
        })
        .collect()
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}

fn spawn_writer(url: &str, w: usize, batches: usize, mode: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--writer", url, &w.to_string(), &batches.to_string(), mode])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn create(url: &str) -> PgStore {
    let store = PgStore::connect(url).unwrap();
    let meta = ConversationMeta {
        id: ID.into(),
        title: None,
        created_at: "2026-01-02T03:04:05Z".into(),
        last_used_at: "2026-01-02T03:04:05Z".into(),
        imported_from: None,
        extras: Object::new(),
    };
    Store::create(&store, &meta, Vec::new()).unwrap();
    store
}

/// Check the log: `seq` gapless, every batch present whole and contiguous,
/// each writer's batches in its order. Returns, per writer, the batches
/// present and where.
fn check_log(store: &PgStore) -> BTreeMap<usize, BTreeMap<usize, std::ops::Range<u64>>> {
    let loaded = Store::load(store, ID).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let mut found: BTreeMap<usize, BTreeMap<usize, std::ops::Range<u64>>> = BTreeMap::new();
    let mut i = 0;
    let records = &loaded.records;
    while i < records.len() {
        assert_eq!(records[i].seq, i as u64, "seq gapless and unique");
        let Body::User { content, .. } = &records[i].body else {
            panic!("record {i} is not one of ours");
        };
        let (w, b, r) = parse(content);
        assert_eq!(
            r, 0,
            "record {i} ({content}) starts no batch: a batch was cut"
        );
        let n = 1 + b % 3;
        for k in 0..n {
            let rec = records
                .get(i + k)
                .unwrap_or_else(|| panic!("batch w{w} b{b} cut short at the end"));
            let Body::User { content, .. } = &rec.body else {
                panic!("record {} is not one of ours", i + k);
            };
            assert_eq!(
                parse(content),
                (w, b, k),
                "batch w{w} b{b} is not whole and in one place"
            );
        }
        let batches = found.entry(w).or_default();
        if let Some((&last, _)) = batches.last_key_value() {
            assert!(last < b, "writer {w}: batch {b} after batch {last}");
        }
        let range = i as u64..(i + n) as u64;
        assert!(batches.insert(b, range).is_none(), "w{w} b{b} twice");
        i += n;
    }
    found
}

fn parse(content: &str) -> (usize, usize, usize) {
    let mut parts = content.split(' ').map(|p| p[1..].parse::<usize>().unwrap());
    (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    )
}

/// The `ack` lines of a writer's output, as batch → seqs.
fn acks(lines: &[String]) -> BTreeMap<usize, std::ops::Range<u64>> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix("ack "))
        .map(|l| {
            let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (v[0] as usize, v[1]..v[2])
        })
        .collect()
}

fn four_processes() {
    let Some(db) = pg::TestDb::new("four_processes_append_every_batch_once_in_order") else {
        return;
    };
    let store = create(&db.url);
    const WRITERS: usize = 4;
    const BATCHES: usize = 1000;
    let children: Vec<Child> = (0..WRITERS)
        .map(|w| spawn_writer(&db.url, w, BATCHES, "plain"))
        .collect();
    let outputs: Vec<Vec<String>> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a writer failed");
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .collect();
    let found = check_log(&store);
    let total: usize = (0..BATCHES).map(|b| 1 + b % 3).sum::<usize>() * WRITERS;
    assert_eq!(Store::next_seq(&store, ID).unwrap(), total as u64);
    for (w, lines) in outputs.iter().enumerate() {
        let acked = acks(lines);
        assert_eq!(acked.len(), BATCHES, "writer {w}: every batch acknowledged");
        assert_eq!(found[&w], acked, "writer {w}: each batch where it was told");
    }
}

fn sigkill() {
    let Some(db) = pg::TestDb::new("sigkill_leaves_whole_batches_and_frees_the_lock") else {
        return;
    };
    let store = create(&db.url);
    let mut child = spawn_writer(&db.url, 0, 1_000_000, "lock");
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut line = String::new();
    // Killed in the thick of it: after 300 acknowledged batches.
    while acks(&lines).len() < 300 {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the writer stopped"
        );
        lines.push(line.trim_end().to_owned());
    }
    assert_eq!(lines[0], "locked");
    assert!(
        Store::try_compaction_lock(&store, ID).unwrap().is_none(),
        "held by the writer"
    );
    // SIGKILL: no destructor, no goodbye to the server.
    child.kill().unwrap();
    child.wait().unwrap();
    // What it printed before the kill, to the end.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
    lines.extend(rest.lines().map(str::to_owned));
    let acked = acks(&lines);

    let found = check_log(&store);
    let present = found.get(&0).cloned().unwrap_or_default();
    for (b, range) in &acked {
        assert_eq!(
            present.get(b),
            Some(range),
            "acknowledged batch {b} is there"
        );
    }
    // At most the batch in flight was committed without its ack.
    assert!(present.len() <= acked.len() + 1);
    assert_eq!(
        present.keys().copied().collect::<Vec<_>>(),
        (0..present.len()).collect::<Vec<_>>()
    );

    // Another process takes the lock (the server dropped the dead one's)
    // and appends after the last whole batch.
    let next = Store::next_seq(&store, ID).unwrap();
    let out = spawn_writer(&db.url, 1, 5, "lock")
        .wait_with_output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines[0], "locked");
    let second = acks(&lines);
    assert_eq!(second.len(), 5);
    assert_eq!(second[&0].start, next, "follows on, no gap");
    let found = check_log(&store);
    assert_eq!(found[&1], second);
}

/// A server of this test's own, stopped and removed on drop.
struct OwnServer {
    dir: PathBuf,
    url: String,
}

impl OwnServer {
    fn start() -> Option<OwnServer> {
        let dir = PathBuf::from(format!("/tmp/ctxfold-pgp-{}", std::process::id()));
        let out = Command::new(script())
            .args(["start"])
            .arg(&dir)
            .output()
            .unwrap();
        if !out.status.success() {
            needs::missing(
                "the server restart test",
                &format!(
                    "scripts/postgres start failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
            return None;
        }
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Some(OwnServer { dir, url })
    }

    fn restart(&self) {
        let out = Command::new(script())
            .arg("restart")
            .arg(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).output();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/postgres")
}

fn server_restart() {
    let Some(server) = OwnServer::start() else {
        return;
    };
    let store = create(&server.url);
    let password = "ctxfold-test";
    assert!(server.url.contains(password), "the script's URL changed");
    // Appends until killed; each batch gets one line, `ack` or `err`.
    let mut child = spawn_writer(&server.url, 0, 1_000_000, "retry");
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let mut read_acks = |lines: &mut Vec<String>, from: usize, n: usize| {
        let mut line = String::new();
        while acks(&lines[from..]).len() < n {
            line.clear();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "the writer stopped"
            );
            lines.push(line.trim_end().to_owned());
        }
    };
    read_acks(&mut lines, 0, 50);
    server.restart();
    // The writer carries on once the server is back: 50 more batches
    // acknowledged after the restart.
    let at_restart = lines.len();
    read_acks(&mut lines, at_restart, 50);
    child.kill().unwrap();
    child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(reader.get_mut(), &mut rest).unwrap();
    lines.extend(rest.lines().map(str::to_owned));

    // One line a batch, in order.
    let numbers: Vec<usize> = lines
        .iter()
        .map(|l| {
            let (kind, rest) = l.split_once(' ').unwrap();
            assert!(kind == "ack" || kind == "err", "unexpected line {l}");
            rest.split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(numbers, (0..lines.len()).collect::<Vec<_>>());
    let acked = acks(&lines);
    let errors: Vec<&String> = lines.iter().filter(|l| l.starts_with("err ")).collect();
    for e in &errors {
        assert!(!e.contains(password), "an error shows the password: {e}");
        assert!(
            e.contains("PostgreSQL") || e.contains("postgres://ctxfold:***@"),
            "an error that does not say where: {e}"
        );
    }
    // Every acknowledged batch is there, whole; a failed one (a commit
    // whose answer was lost) and the one in flight at the kill are there
    // whole or not at all.
    let store = {
        drop(store);
        connect_retrying(&server.url)
    };
    let found = check_log(&store);
    let present = found.get(&0).cloned().unwrap_or_default();
    for (b, range) in &acked {
        assert_eq!(
            present.get(b),
            Some(range),
            "acknowledged batch {b} is there"
        );
    }
    assert!(present.len() <= lines.len() + 1);
    println!(
        "  {} batches acknowledged ({} after the restart), {} failed while the server restarted",
        acked.len(),
        acks(&lines[at_restart..]).len(),
        errors.len()
    );
    for e in errors.iter().take(3) {
        println!("  {e}");
    }
}
