//! Store faults with real files: a conversation folder that vanished under
//! a writer, a full disk (a tiny tmpfs), a read-only workspace (a read-only
//! bind mount), staging leftovers, broken metadata, empty ids and a `seq`
//! at its maximum.

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

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::{EventLog, StoreError, Workspace};
use ctxfold_testkit::faults::{ReadOnly, Tmpfs};

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

fn workspace(dir: &Path) -> Workspace {
    Workspace::init(dir).unwrap().0
}

fn create(ws: &Workspace, n: usize) -> ctxfold_store::Conversation {
    let records = (0..n).map(|i| user(&format!("m{i}"))).collect();
    ws.create(None, None, Object::new(), records).unwrap()
}

#[test]
fn writers_never_create_a_conversation_folder() {
    let d = tempfile::tempdir().unwrap();
    let ws = workspace(d.path());
    let c = create(&ws, 2);
    let moved = d.path().join("elsewhere");
    std::fs::rename(&c.dir, &moved).unwrap();

    let err = c.log().append([user("late")]).unwrap_err();
    assert!(matches!(err, StoreError::Vanished { .. }), "{err}");
    assert!(matches!(
        c.log().try_compaction_lock(),
        Err(StoreError::Vanished { .. })
    ));
    assert!(matches!(c.log().load(), Err(StoreError::Vanished { .. })));
    assert!(!c.dir.exists(), "re-created");
    assert_eq!(EventLog::new(&moved).load().unwrap().records.len(), 2);
}

#[test]
fn a_writer_waiting_while_the_folder_is_removed_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let ws = workspace(d.path());
    let c = create(&ws, 2);
    // Hold the log's lock as an append in progress would.
    let held = std::fs::File::open(c.dir.join("lock")).unwrap();
    held.lock().unwrap();
    let log = c.log();
    let writer = std::thread::spawn(move || log.append([user("late")]));
    // Whether the writer already waits on the lock or has not opened it
    // yet, it must find the folder gone.
    let trash = d.path().join("trash");
    std::fs::rename(&c.dir, &trash).unwrap();
    drop(held);
    let err = writer.join().unwrap().unwrap_err();
    assert!(matches!(err, StoreError::Vanished { .. }), "{err}");
    assert!(!c.dir.exists());
    assert_eq!(EventLog::new(&trash).load().unwrap().records.len(), 2);
}

#[test]
fn an_append_that_fills_the_disk_is_cut_back() {
    let d = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&d.path().join("disk"), 256 * 1024) else {
        eprintln!("mounting is not permitted here: no full disk to test with");
        return;
    };
    let log = EventLog::new(d.path().join("disk"));
    log.append([user("a"), user("b")]).unwrap();
    let before = std::fs::read(log.path()).unwrap();
    disk.fill();
    let big = Record::new(
        0,
        "t",
        Body::User {
            content: "z".repeat(1 << 20),
            author: None,
        },
    );
    let err = log.append([user("c"), big]).unwrap_err();
    assert!(err.to_string().contains("events.jsonl"), "{err}");
    assert_eq!(std::fs::read(log.path()).unwrap(), before);
}

#[test]
fn a_torn_tail_that_cannot_be_set_aside_is_left_out_with_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("c");
    std::fs::create_dir(&dir).unwrap();
    let log = EventLog::new(&dir);
    log.append([user("a")]).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(log.path())
        .unwrap()
        .write_all(b"{\"seq\":1,\"ty")
        .unwrap();
    let before = std::fs::read(log.path()).unwrap();
    {
        let _ro = ReadOnly::new(&dir);
        let loaded = log.load().unwrap();
        assert_eq!(loaded.records.len(), 1);
        assert!(loaded.torn.is_none());
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        assert!(
            loaded.warnings[0].contains(":2: incomplete last line (12 bytes at offset")
                && loaded.warnings[0].contains("could not be moved"),
            "{:?}",
            loaded.warnings
        );
        assert_eq!(std::fs::read(log.path()).unwrap(), before, "untouched");
    }
    // Writable again: the next writer sets it aside.
    assert_eq!(log.append([user("b")]).unwrap(), 1..2);
    assert_eq!(
        std::fs::read(dir.join("events.jsonl.torn")).unwrap(),
        b"{\"seq\":1,\"ty\n"
    );
}

#[test]
fn a_seq_at_its_maximum_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let log = EventLog::new(d.path());
    std::fs::write(
        log.path(),
        format!(
            "{{\"seq\":{},\"ts\":\"t\",\"type\":\"user\",\"content\":\"x\"}}\n",
            u64::MAX - 1
        ),
    )
    .unwrap();
    // The last seq a record gets is u64::MAX - 1: one past it must exist.
    let before = std::fs::read(log.path()).unwrap();
    let err = log.append([user("one too many")]).unwrap_err();
    assert!(
        matches!(err, StoreError::SeqOverflow { seq, .. } if seq == u64::MAX - 1),
        "{err}"
    );
    assert_eq!(std::fs::read(log.path()).unwrap(), before);

    // From u64::MAX - 2, one more fits and the batch stops there, whole.
    std::fs::write(
        log.path(),
        format!(
            "{{\"seq\":{},\"ts\":\"t\",\"type\":\"user\",\"content\":\"x\"}}\n",
            u64::MAX - 2
        ),
    )
    .unwrap();
    let before = std::fs::read(log.path()).unwrap();
    assert!(matches!(
        log.append([user("fits"), user("does not")]),
        Err(StoreError::SeqOverflow { .. })
    ));
    assert_eq!(
        std::fs::read(log.path()).unwrap(),
        before,
        "nothing of the batch"
    );
    assert_eq!(log.append([user("fits")]).unwrap(), u64::MAX - 1..u64::MAX);
}

#[test]
fn a_broken_meta_json_is_listed_apart_and_named_by_lookups() {
    let d = tempfile::tempdir().unwrap();
    let ws = workspace(d.path());
    let good = create(&ws, 1);
    let bad = create(&ws, 1);
    std::fs::write(bad.dir.join("meta.json"), "[]").unwrap();
    let metaless = d.path().join(".ctxfold/conversations/20200101-000000-0000");
    std::fs::create_dir(&metaless).unwrap();

    let listing = ws.list().unwrap();
    let ids: Vec<_> = listing.conversations.iter().map(|c| &c.meta.id).collect();
    assert_eq!(ids, [&good.meta.id]);
    let broken: Vec<_> = listing.broken.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(broken, ["20200101-000000-0000", bad.meta.id.as_str()]);

    assert_eq!(ws.get(&good.meta.id).unwrap().meta.id, good.meta.id);
    let err = ws.get(&bad.meta.id).unwrap_err().to_string();
    assert!(err.contains("meta.json"), "{err}");
    assert!(matches!(ws.get("2020"), Err(StoreError::Io { .. })));
    assert!(matches!(ws.get(""), Err(StoreError::EmptyId)));
}

#[test]
fn staging_leftovers_are_cleaned_only_when_their_creator_is_gone() {
    let d = tempfile::tempdir().unwrap();
    let ws = workspace(d.path());
    let staging = d.path().join(".ctxfold/conversations/.staging");
    create(&ws, 1);
    // A creation killed between making its folder and locking its claim.
    std::fs::create_dir(staging.join("a")).unwrap();
    // One killed later: folder and unlocked claim.
    std::fs::create_dir(staging.join("b")).unwrap();
    std::fs::write(staging.join("b/events.jsonl"), "12345").unwrap();
    std::fs::write(staging.join("b.lock"), "").unwrap();
    // One killed after its rename: only the claim is left.
    std::fs::write(staging.join("c.lock"), "").unwrap();
    // One running.
    std::fs::create_dir(staging.join("d")).unwrap();
    let claim = std::fs::File::create(staging.join("d.lock")).unwrap();
    claim.lock().unwrap();

    let notes = ws.clean_staging();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[1].contains("b (5 bytes)"), "{notes:?}");
    let mut left: Vec<_> = std::fs::read_dir(&staging)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["d", "d.lock", "lock"]);
    assert_eq!(ws.list().unwrap().conversations.len(), 1);
    drop(claim);
    assert_eq!(ws.clean_staging().len(), 1);
}

#[test]
fn a_read_only_workspace_loads_with_or_without_a_lock_file() {
    let d = tempfile::tempdir().unwrap();
    let ws = workspace(d.path());
    let a = create(&ws, 2);
    let b = create(&ws, 3);
    std::fs::remove_file(b.dir.join("lock")).unwrap();
    let _ro = ReadOnly::new(d.path());
    for (c, n) in [(&a, 2), (&b, 3)] {
        let loaded = c.log().load().unwrap();
        assert_eq!(loaded.records.len(), n);
        assert!(loaded.warnings.is_empty());
    }
    // Writing is refused, as an I/O error naming the file.
    assert!(matches!(
        a.log().append([user("x")]),
        Err(StoreError::Io { .. })
    ));
}
