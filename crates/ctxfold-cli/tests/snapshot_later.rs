//! A long log's snapshot is written after the command that reads it, in
//! the background (issue 48): `c show` and `stats` answer from the lines
//! without paying for it, the snapshot appears once they are done, and
//! what they print is the same whether they read the lines or the
//! snapshot.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Scratch;

/// A conversation of about 38 MB (past the 32 MiB that keeps a snapshot).
fn long_conversation(s: &Scratch) -> String {
    let ws = ctxfold_store::Workspace::find(s.path()).unwrap();
    let log = ctxfold_testkit::session::generate_overlapping(110_000, 10);
    ctxfold_store::create_new(
        &ws,
        Some("long".into()),
        None,
        Default::default(),
        log.records().to_vec(),
    )
    .unwrap()
    .id
}

/// Wait for `path` to exist (the writer is another process, started as
/// the command ended): whether it does, within two minutes.
fn appears(path: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn the_snapshot_of_a_long_log_is_written_after_the_command_that_reads_it() {
    let s = Scratch::new();
    let id = long_conversation(&s);
    let events = s.events_file(&id);
    assert!(
        std::fs::metadata(&events).unwrap().len() > 32 << 20,
        "the log must be long enough to keep a snapshot"
    );
    let snapshot = events.with_file_name("events.snapshot");
    for args in [vec!["c", "show", id.as_str()], vec!["stats", id.as_str()]] {
        let _ = std::fs::remove_file(&snapshot);
        let from_lines = s.ok(&args);
        // The command did not write it: it ends before the writer it
        // started has read 38 MB of JSON.
        assert!(
            !snapshot.exists(),
            "{args:?} wrote the snapshot before it ended"
        );
        assert!(appears(&snapshot), "{args:?}: no snapshot written after it");
        let from_snapshot = s.ok(&args);
        assert_eq!(from_snapshot, from_lines, "{args:?} printed otherwise");
    }
}

#[test]
fn the_writer_passes_over_what_it_cannot_read_in_silence() {
    let s = Scratch::new();
    let out = s
        .command()
        .args(["__ctxfold-write-snapshots", "no-such-folder", "/"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}
