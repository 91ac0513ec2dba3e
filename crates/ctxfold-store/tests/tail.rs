//! Appending after unusual tails: a blank last line, a complete line that
//! is not a record, a record whose newline was lost, a torn record, and a
//! very large last record.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::Write;

use ctxfold_core::{Body, Record};
use ctxfold_store::EventLog;

fn user(text: &str) -> Record {
    Record::new(
        0,
        "t",
        Body::User {
            content: text.into(),
            author: None,
        },
    )
}

fn setup() -> (tempfile::TempDir, EventLog) {
    let dir = tempfile::tempdir().unwrap();
    let log = EventLog::new(dir.path());
    log.append([user("a"), user("b")]).unwrap();
    (dir, log)
}

fn raw_append(log: &EventLog, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .unwrap();
    f.write_all(bytes).unwrap();
}

fn seqs(log: &EventLog) -> Vec<u64> {
    log.load().unwrap().records.iter().map(|r| r.seq).collect()
}

#[test]
fn a_blank_last_line_does_not_block_appends() {
    let (_d, log) = setup();
    raw_append(&log, b"\n\n");
    assert_eq!(log.append([user("c")]).unwrap(), 2..3);
    assert_eq!(seqs(&log), [0, 1, 2]);
}

#[test]
fn a_complete_line_that_is_not_a_record_is_stepped_over_and_kept() {
    let (_d, log) = setup();
    raw_append(&log, b"{not a record}\n");
    assert_eq!(log.append([user("c")]).unwrap(), 2..3);
    let loaded = log.load().unwrap();
    assert_eq!(loaded.records.len(), 3);
    assert!(
        loaded.warnings.iter().any(|w| w.contains(":3: skipped")),
        "{:?}",
        loaded.warnings
    );
    assert!(
        std::fs::read_to_string(log.path())
            .unwrap()
            .contains("{not a record}")
    );
}

#[test]
fn a_record_that_lost_its_newline_is_finished() {
    let (_d, log) = setup();
    let text = std::fs::read_to_string(log.path()).unwrap();
    std::fs::write(log.path(), text.trim_end()).unwrap();
    assert_eq!(log.append([user("c")]).unwrap(), 2..3);
    assert_eq!(seqs(&log), [0, 1, 2]);
}

#[test]
fn a_torn_record_is_set_aside_before_appending() {
    let (d, log) = setup();
    raw_append(&log, b"{\"seq\":2,\"ts\":\"t\",\"type\":\"us");
    assert_eq!(log.append([user("c")]).unwrap(), 2..3);
    assert_eq!(seqs(&log), [0, 1, 2]);
    let torn = std::fs::read_to_string(d.path().join("events.jsonl.torn")).unwrap();
    assert_eq!(torn, "{\"seq\":2,\"ts\":\"t\",\"type\":\"us\n");
}

#[test]
fn appending_after_a_large_record_reads_it_once() {
    // 8 MB: the old tail reader re-copied the tail for every 64 KB chunk.
    let (_d, log) = setup();
    log.append([Record::new(
        0,
        "t",
        Body::ToolResult {
            id: "x".into(),
            content: "z".repeat(8 << 20),
            is_error: false,
        },
    )])
    .unwrap();
    assert_eq!(log.append([user("c")]).unwrap(), 3..4);
    assert_eq!(seqs(&log), [0, 1, 2, 3]);
}

#[test]
fn a_torn_record_that_happens_to_end_in_a_brace_is_still_torn() {
    let (d, log) = setup();
    raw_append(
        &log,
        b"{\"seq\":2,\"ts\":\"t\",\"type\":\"user\",\"content\":\"fn main() {}",
    );
    assert_eq!(log.append([user("c")]).unwrap(), 2..3);
    assert_eq!(seqs(&log), [0, 1, 2]);
    assert!(log.load().unwrap().warnings.is_empty());
    assert!(d.path().join("events.jsonl.torn").is_file());
}

#[test]
fn a_corrupt_line_that_starts_like_a_record_gives_no_seq() {
    // `{"seq":N,` and then not JSON: loading skips it, so appending must
    // not take N for the last seq (a jump, or a false overflow).
    for corrupt in [
        &b"{\"seq\":7,\"x}\n"[..],
        b"{\"seq\":18446744073709551614,\"x}\n",
    ] {
        let (_d, log) = setup();
        raw_append(&log, corrupt);
        assert_eq!(log.append([user("c")]).unwrap(), 2..3);
        assert_eq!(seqs(&log), [0, 1, 2]);
    }
}

/// The peek the proxy and open pages ask before each request or every
/// half second: complete lines only, no lock taken, nothing repaired, so
/// it also works where the log cannot be written.
#[test]
fn a_peek_counts_complete_lines_and_repairs_nothing() {
    let (d, log) = setup();
    assert_eq!(log.peek_next_seq().unwrap(), 2);
    // A batch being written, or torn: its unfinished line is not counted.
    raw_append(&log, br#"{"seq":2,"ts":"t","type":"user","content":"c"}"#);
    let before = std::fs::read(log.path()).unwrap();
    assert_eq!(log.peek_next_seq().unwrap(), 2);
    assert_eq!(
        std::fs::read(log.path()).unwrap(),
        before,
        "nothing repaired"
    );
    raw_append(&log, b"\n\n{torn");
    assert_eq!(log.peek_next_seq().unwrap(), 3);
    // A writer repairs the tail and appends after what it found.
    assert_eq!(log.append([user("d")]).unwrap(), 3..4);
    assert_eq!(log.peek_next_seq().unwrap(), log.next_seq().unwrap());

    // While a writer holds the log's lock, the peek does not wait for it.
    let lock = std::fs::File::open(d.path().join("lock")).unwrap();
    lock.lock().unwrap();
    let peek = {
        let log = EventLog::new(d.path());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(log.peek_next_seq().unwrap()));
        rx.recv_timeout(std::time::Duration::from_secs(10))
    };
    drop(lock);
    assert_eq!(peek, Ok(4), "the peek waited for the writer's lock");
    assert_eq!(
        EventLog::new(d.path().join("none"))
            .peek_next_seq()
            .unwrap(),
        0
    );
}
