//! A long log loaded through its snapshot (`events.snapshot`): the same
//! records and warnings as reading every line, after appends, bad lines
//! and a torn tail; a snapshot that no longer matches the log, or is
//! corrupt, is not used; a read-only or full folder loads without one.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::Write;
use std::path::Path;

use ctxfold_core::compaction::{ResetTargets, Source};
use ctxfold_core::diagnostics::ResultScan;
use ctxfold_core::{Body, Compaction, CompactionReset, Record};
use ctxfold_store::{EventLog, Loaded};

const SNAPSHOT: &str = ctxfold_store::event_log::SNAPSHOT_FILE;

/// Loads from this size keep a snapshot here: logs of a few MiB test what
/// the default (`SNAPSHOT_FROM`, 32 MiB) does at a size a debug build
/// reads quickly.
const FROM: u64 = 1 << 20;

fn event_log(dir: &Path) -> Log {
    Log(EventLog::new(dir))
}

/// The log, loaded as the store loads it but keeping snapshots from
/// [`FROM`].
struct Log(EventLog);

impl Log {
    fn load(&self) -> Result<Loaded, ctxfold_store::StoreError> {
        self.0.load_keeping_snapshots_from(FROM)
    }
    fn path(&self) -> std::path::PathBuf {
        self.0.path()
    }
    fn append(&self, records: impl IntoIterator<Item = Record>) {
        self.0.append(records).unwrap();
    }
}

/// One line of every kind a log holds, `i` making each different; about
/// 1.4 KB a turn.
fn turn(i: usize, out: &mut String) {
    let mut big = "cargo test output line\n".repeat(30 + i % 7);
    if i.is_multiple_of(3) {
        big.push_str(&format!(
            "error[E0432]: unresolved import `crate::M{i}`\n --> src/m{i}.rs:3:5\nthread 'tests::t{i}' panicked at src/m{i}.rs:9:5:\nassertion `left == right` failed\n  left: {i}\n right: 1\n"
        ));
    }
    let ts = format!(
        "2026-12-05T10:{:02}:{:02}.{:03}Z",
        i / 60 % 60,
        i % 60,
        i % 1000
    );
    let lines = [
        format!(r#"{{"seq":0,"ts":"{ts}","type":"turn_start"}}"#),
        format!(
            r#"{{"seq":0,"ts":"{ts}","type":"user","content":"fix test {i} — naïve ✓ \"quoted\"","author":"ci"}}"#
        ),
        format!(
            r#"{{"seq":0,"ts":"{ts}","type":"reasoning","content":"think {i}","metadata":{{"signature":"sig{i}","n":[1,2.5,null]}}}}"#
        ),
        format!(
            r#"{{"seq":0,"ts":"{ts}","type":"tool_call","id":"c{i}","name":"run","arguments":{{"path":"src/m{i}.rs","args":["-q"],"deep":{{"x":{i}}}}}}}"#
        ),
        format!(
            r#"{{"seq":0,"ts":"{ts}","type":"tool_result","id":"c{i}","content":{},"is_error":{}}}"#,
            serde_json::to_string(&big).unwrap(),
            i.is_multiple_of(5)
        ),
        format!(
            r#"{{"seq":0,"ts":"not a timestamp {i}","type":"assistant","content":"done {i}","future_field":{{"a":1}}}}"#
        ),
        format!(
            r#"{{"seq":0,"ts":"{ts}","type":"structured","data":{{"answer":{i},"list":[true,false]}}}}"#
        ),
        format!(r#"{{"seq":0,"ts":"{ts}","type":"config_delta","model":"m{i}"}}"#),
    ];
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    if i.is_multiple_of(997) {
        out.push_str("{\"seq\":0,\"ts\":\"t\",\"type\":\"system\",\"content\":\"be brief\"}\n");
        out.push_str("not a record at all\n\n");
        out.push_str(&format!(
            "{{\"seq\":0,\"ts\":\"{ts}\",\"type\":\"compaction\",\"from_turn\":0,\"to_turn\":{},\"source\":\"user\",\"summary\":{{\"text\":\"s\",\"provenance\":{{\"summarizer\":\"digest\"}}}}}}\n",
            i / 2
        ));
    }
}

/// A log of at least `bytes` bytes (over the size from which loads write
/// a snapshot).
fn write_log(path: &Path, from: usize, bytes: usize) -> usize {
    let mut s = String::new();
    let mut i = from;
    while s.len() < bytes {
        turn(i, &mut s);
        i += 1;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(s.as_bytes()).unwrap();
    i
}

/// What a load gives without a snapshot: every line read.
fn full_read(log: &Log, dir: &Path) -> Loaded {
    let saved = dir.join("saved.snapshot");
    let had = std::fs::rename(dir.join(SNAPSHOT), &saved).is_ok();
    let loaded = log.load().unwrap();
    let _ = std::fs::remove_file(dir.join(SNAPSHOT));
    if had {
        std::fs::rename(&saved, dir.join(SNAPSHOT)).unwrap();
    }
    loaded
}

fn assert_same(a: &Loaded, b: &Loaded, what: &str) {
    assert_eq!(a.records.len(), b.records.len(), "{what}: record count");
    for (x, y) in a.records.iter().zip(&b.records) {
        assert_eq!(x, y, "{what}: record {}", x.seq);
        assert_eq!(x.to_json_line(), y.to_json_line(), "{what}");
    }
    assert_eq!(a.warnings, b.warnings, "{what}: warnings");
    assert_eq!(a.torn, b.torn, "{what}: torn tail");
}

/// Bytes of the log whose records came from its snapshot.
fn from_snapshot(loaded: &Loaded) -> u64 {
    loaded.snapshot.as_ref().map_or(0, |s| s.bytes)
}

fn snapshot_covers(dir: &Path) -> bool {
    dir.join(SNAPSHOT).is_file()
}

/// Files in `dir` besides the log, its lock and snapshot: no temporary
/// file left behind.
fn others(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !["events.jsonl", "lock", SNAPSHOT, "events.jsonl.torn"].contains(&n.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_long_log_loads_the_same_through_its_snapshot_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    let next = write_log(&log.path(), 0, 3 << 20);

    // The first load reads every line and writes the snapshot.
    let first = log.load().unwrap();
    assert!(
        snapshot_covers(dir.path()),
        "no snapshot after a 3 MiB load"
    );
    assert!(!first.warnings.is_empty(), "the bad lines are reported");
    // Every line was a record but the bad ones, each in order.
    assert!(first.records.len() > 5_000);
    assert!(first.snapshot.is_none());
    let again = log.load().unwrap();
    assert_eq!(
        from_snapshot(&again),
        std::fs::metadata(log.path()).unwrap().len()
    );
    assert_same(&again, &first, "through the snapshot");
    // The tool results' scans come with it (this test binary made them),
    // each what the recognizer finds in the record.
    let scans = &again.snapshot.as_ref().unwrap().result_scans;
    let results = again
        .records
        .iter()
        .filter(|r| matches!(r.body, Body::ToolResult { .. }))
        .count();
    assert_eq!(scans.len(), results);
    let mut diagnostics = 0;
    for (i, scan) in scans {
        let Body::ToolResult {
            content, is_error, ..
        } = &again.records[*i].body
        else {
            panic!("scan of record {i}, not a tool result");
        };
        assert_eq!(scan, &ResultScan::new(content, *is_error), "record {i}");
        diagnostics += scan.diagnostics.len();
    }
    assert!(diagnostics > 1000, "the test's results hold diagnostics");
    assert_eq!(others(dir.path()), Vec::<String>::new());

    // Records appended by the store, and lines written by hand, after it.
    let appended: Vec<Record> = first.records[..50].to_vec();
    log.append(appended);
    write_log(&log.path(), next, (FROM + 1000) as usize);
    let grown = log.load().unwrap();
    assert_eq!(
        from_snapshot(&grown),
        from_snapshot(&again),
        "the snapshot, then the lines after it"
    );
    assert_same(&grown, &full_read(&log, dir.path()), "after appends");
    assert!(grown.records.len() > first.records.len() + 50);

    // A torn tail after what the snapshot covers: set aside as before.
    {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap();
        f.write_all(b"{\"seq\":1,\"ts\":\"t\",\"type\":\"us")
            .unwrap();
    }
    let torn = log.load().unwrap();
    assert!(torn.torn.is_some(), "the torn tail is found");
    assert_eq!(torn.records, grown.records, "records with a torn tail");
    assert_eq!(
        torn.warnings.len(),
        grown.warnings.len() + 1,
        "{:?}",
        torn.warnings.last()
    );
    assert_same(
        &log.load().unwrap(),
        &grown,
        "once the torn tail is set aside",
    );
    assert!(dir.path().join("events.jsonl.torn").is_file());
}

#[test]
fn a_snapshot_that_does_not_match_the_log_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    write_log(&log.path(), 0, 2 << 20);
    log.load().unwrap();
    let snapshot = std::fs::read(dir.path().join(SNAPSHOT)).unwrap();

    // The log changed inside what the snapshot covers, its length kept.
    let mut bytes = std::fs::read(log.path()).unwrap();
    let at = memchr_find(&bytes, b"fix test 123 ").unwrap();
    bytes[at..at + 3].copy_from_slice(b"FIX");
    std::fs::write(log.path(), &bytes).unwrap();
    let loaded = log.load().unwrap();
    assert_eq!(from_snapshot(&loaded), 0, "a changed log is read whole");
    assert!(
        loaded
            .records
            .iter()
            .any(|r| r.to_json_line().contains("FIX test 123 ")),
        "the changed line is read, not the snapshot's"
    );
    assert_same(&loaded, &full_read(&log, dir.path()), "changed log");

    // Snapshots cut short, with a byte changed, or of another length.
    let snap = dir.path().join(SNAPSHOT);
    let reference = full_read(&log, dir.path());
    let mut flipped = snapshot.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x5a;
    for (what, bad) in [
        ("cut short", snapshot[..snapshot.len() / 3].to_vec()),
        ("a byte changed", flipped),
        ("header only", snapshot[..40.min(snapshot.len())].to_vec()),
        ("empty", Vec::new()),
        ("not a snapshot", b"{\"hello\": 1}\n".repeat(1000)),
    ] {
        std::fs::write(&snap, &bad).unwrap();
        let loaded = log.load().unwrap();
        assert_eq!(from_snapshot(&loaded), 0, "{what}: not used");
        assert_same(&loaded, &reference, what);
    }

    // Another conversation's snapshot.
    let other = tempfile::tempdir().unwrap();
    let other_log = event_log(other.path());
    write_log(&other_log.path(), 50_000, 2 << 20);
    other_log.load().unwrap();
    std::fs::copy(other.path().join(SNAPSHOT), &snap).unwrap();
    let loaded = log.load().unwrap();
    assert_eq!(
        from_snapshot(&loaded),
        0,
        "another log's snapshot: not used"
    );
    assert_same(&loaded, &reference, "another log's snapshot");
    // The load that found it stale wrote this log's own again.
    assert!(from_snapshot(&log.load().unwrap()) > 0);
}

/// `snapshot` with its header's first fields (bytes and lines covered,
/// their CRC-32, records) changed by `change`, its frame's CRC made right
/// again: what someone crafting one would write.
fn crafted(snapshot: &[u8], change: impl Fn(&mut (u64, u64, u32, u64))) -> Vec<u8> {
    let (magic, rest) = snapshot.split_at(12);
    let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
    let (frame, after) = rest[8..].split_at(len);
    let (mut first, tail) = postcard::take_from_bytes::<(u64, u64, u32, u64)>(frame).unwrap();
    change(&mut first);
    let mut header = postcard::to_allocvec(&first).unwrap();
    header.extend_from_slice(tail);
    let mut out = magic.to_vec();
    out.extend_from_slice(&u32::try_from(header.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&header).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(after);
    out
}

/// A snapshot crafted to cover none of the log (the CRC-32 of no bytes
/// is 0), or to end inside a line, is not used: its records would come
/// before every line of the log read again, each record twice. A named
/// pipe in its place does not block the load.
#[test]
fn a_crafted_snapshot_or_a_pipe_in_its_place_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    write_log(&log.path(), 0, 2 << 20);
    log.load().unwrap();
    let snap = dir.path().join(SNAPSHOT);
    let snapshot = std::fs::read(&snap).unwrap();
    let reference = full_read(&log, dir.path());
    // The helper reads the header as the store writes it.
    let same = crafted(&snapshot, |_| {});
    assert_eq!(
        same, snapshot,
        "the header's first fields are read back as written"
    );
    let bytes = std::fs::read(log.path()).unwrap();
    let mid_line = memchr_find(&bytes, b"fix test 7 ").unwrap() as u64;
    for (what, bad) in [
        (
            "covers nothing",
            crafted(&snapshot, |h| {
                h.0 = 0;
                h.2 = crc32fast::hash(b"");
            }),
        ),
        (
            "covers nothing, no lines",
            crafted(&snapshot, |h| {
                *h = (0, 0, crc32fast::hash(b""), h.3);
            }),
        ),
        (
            "ends inside a line",
            crafted(&snapshot, |h| {
                h.0 = mid_line;
                h.2 = crc32fast::hash(&bytes[..mid_line as usize]);
            }),
        ),
        (
            "more records than lines",
            crafted(&snapshot, |h| h.3 = h.1 + 1),
        ),
    ] {
        std::fs::write(&snap, &bad).unwrap();
        let loaded = log.load().unwrap();
        assert_eq!(from_snapshot(&loaded), 0, "{what}: not used");
        assert_same(&loaded, &reference, what);
    }

    std::fs::remove_file(&snap).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&snap)
        .status()
        .unwrap();
    assert!(made.success());
    let path = dir.path().to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(event_log(&path).load().map(|l| l.records.len()));
    });
    let loaded = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("a load with a named pipe as its snapshot returns");
    assert_eq!(loaded.unwrap(), reference.records.len());
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn a_read_only_folder_loads_without_writing_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    write_log(&log.path(), 0, 2 << 20);
    // The lock file is made by the first writer, as a workspace has it.
    log.append([]);
    let reference = full_read(&log, dir.path());
    let _ro = ctxfold_testkit::faults::ReadOnly::new(dir.path());
    let loaded = log.load().unwrap();
    assert_same(&loaded, &reference, "read-only");
    assert!(!snapshot_covers(dir.path()));
    assert_eq!(others(dir.path()), Vec::<String>::new());
}

#[test]
fn a_full_disk_loads_without_a_snapshot_and_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let mount = root.path().join("disk");
    std::fs::create_dir(&mount).unwrap();
    // Room for the log, not for its snapshot beside it.
    let Some(_disk) = ctxfold_testkit::faults::Tmpfs::mount(&mount, 3 << 20) else {
        eprintln!("skipped: no tmpfs can be mounted here");
        return;
    };
    let log = event_log(&mount);
    write_log(&log.path(), 0, 2 << 20);
    log.append([]);
    let loaded = log.load().unwrap();
    assert!(!snapshot_covers(&mount), "no room for a snapshot");
    assert_eq!(
        others(&mount),
        Vec::<String>::new(),
        "no temporary file left"
    );
    assert!(loaded.records.len() > 5_000);
    assert_same(&log.load().unwrap(), &loaded, "a second load");
}

#[test]
fn a_snapshot_left_half_written_by_a_killed_process_is_removed_by_the_next_writer() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    write_log(&log.path(), 0, 2 << 20);
    // What a process killed while writing leaves, long untouched; and one
    // another process is writing right now.
    let abandoned = dir.path().join(".events.snapshot.AbAnDn");
    let live = dir.path().join(".events.snapshot.LiVe01");
    for f in [&abandoned, &live] {
        std::fs::write(f, b"ctxfold-sn\x00\x02 half written").unwrap();
    }
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::options()
        .write(true)
        .open(&abandoned)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    log.load().unwrap();
    assert!(
        !abandoned.exists(),
        "the abandoned temporary file is removed"
    );
    assert!(live.exists(), "a file being written now is left alone");
    assert!(from_snapshot(&log.load().unwrap()) > 0);
}

#[test]
fn two_processes_loading_at_once_leave_one_good_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let log = event_log(dir.path());
    write_log(&log.path(), 0, 3 << 20);
    let reference = full_read(&log, dir.path());
    // Both read every line and write a snapshot at the same time.
    let loads: Vec<Loaded> = std::thread::scope(|s| {
        let a = s.spawn(|| event_log(dir.path()).load().unwrap());
        let b = s.spawn(|| event_log(dir.path()).load().unwrap());
        vec![a.join().unwrap(), b.join().unwrap()]
    });
    for l in &loads {
        assert_same(l, &reference, "a load beside another");
    }
    let after = log.load().unwrap();
    assert!(from_snapshot(&after) > 0, "the snapshot that won is used");
    assert_same(&after, &reference, "through the snapshot either wrote");
    assert_eq!(others(dir.path()), Vec::<String>::new());
}

/// Every conversation of the real corpus, as a ctxfold log: the records
/// read through the snapshot are the records read from the lines (real
/// compactions, signatures in metadata, fields ctxfold keeps verbatim).
#[test]
fn the_corpus_reads_the_same_through_a_snapshot() {
    for conv in ctxfold_testkit::corpus::conversations() {
        let mut t = ctxfold_formats::import(&conv, Some(ctxfold_formats::Format::Jp)).unwrap();
        // And the overlay records ctxfold adds (kept as their JSON line).
        let mut c = Compaction::new(0, 1, Source::User);
        c.note = Some("folded — ✓".into());
        let seq = t.records.len() as u64;
        t.records.push(Record::new(
            seq,
            "2026-12-05T10:00:00Z",
            Body::Compaction(Box::new(c)),
        ));
        let reset = CompactionReset {
            targets: ResetTargets::Some(vec![seq]),
            restore: false,
            extra: Default::default(),
        };
        t.records.push(Record::new(
            seq + 1,
            "2026-12-05T10:00:01Z",
            Body::CompactionReset(Box::new(reset)),
        ));
        let dir = tempfile::tempdir().unwrap();
        let text: String = t.records.iter().map(|r| r.to_json_line() + "\n").collect();
        std::fs::write(dir.path().join("events.jsonl"), text).unwrap();
        let log = EventLog::new(dir.path());
        let first = log.load_keeping_snapshots_from(1).unwrap();
        assert!(first.snapshot.is_none());
        let again = log.load_keeping_snapshots_from(1).unwrap();
        assert!(from_snapshot(&again) > 0, "{}: no snapshot", conv.display());
        assert_same(&again, &first, &conv.display().to_string());
        assert_eq!(again.records, t.records, "{}", conv.display());
    }
}
