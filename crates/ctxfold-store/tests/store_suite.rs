//! One behaviour suite for every store behind [`Store`]: each test runs
//! against the workspace (a fresh folder, `NAME::workspace`) and against
//! PostgreSQL (a fresh database each, `NAME::postgres`: ignored unless
//! asked for, `scripts/test` runs it on its server). What only
//! one store can show (a torn line in a file, a batch failing inside the
//! database) is checked for that store in the same test.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_testkit::pg;
use ctxfold_testkit::records;

use records::{meta_at as meta, user};

use std::path::Path;
use std::sync::{Arc, Barrier};

use ctxfold_core::{Body, Object, Record};
use ctxfold_formats::{Format, Transcript};
use ctxfold_store::{AppendAt, ImportSource, PgStore, Store, StoreError, Workspace, create_new};
use serde_json::json;

/// One store under test, and what keeps it alive.
struct Under {
    store: Arc<dyn Store>,
    /// A second handle on the same store (another pool, or another
    /// `Workspace` value): what another process would hold.
    other: Arc<dyn Store>,
    kind: Kind,
    _keep: Keep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Workspace,
    Postgres,
}

#[allow(dead_code)]
enum Keep {
    Dir(tempfile::TempDir),
    Db(pg::TestDb),
}

impl Under {
    fn root(&self) -> &Path {
        match &self._keep {
            Keep::Dir(d) => d.path(),
            Keep::Db(_) => panic!("a PostgreSQL store has no folder"),
        }
    }

    fn db(&self) -> &pg::TestDb {
        match &self._keep {
            Keep::Db(db) => db,
            Keep::Dir(_) => panic!("a workspace has no database"),
        }
    }
}

/// A workspace in a fresh folder.
fn workspace() -> Under {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::init(dir.path()).unwrap().0;
    Under {
        store: Arc::new(ws.clone()),
        other: Arc::new(Workspace::at(ws.root())),
        kind: Kind::Workspace,
        _keep: Keep::Dir(dir),
    }
}

/// A PostgreSQL store on a fresh database, when a server is configured.
fn postgres(test: &str) -> Option<Under> {
    let db = pg::TestDb::new(test)?;
    Some(Under {
        store: Arc::new(PgStore::connect(&db.url).unwrap()),
        other: Arc::new(PgStore::connect(&db.url).unwrap()),
        kind: Kind::Postgres,
        _keep: Keep::Db(db),
    })
}

/// Test `$name(under)` on each store: `$name::workspace` always, and
/// `$name::postgres` with a server (ignored by a plain `cargo test`, so it
/// is reported as skipped there; `scripts/test` runs it with its server).
macro_rules! on_every_store {
    ($name:ident) => {
        mod $name {
            #[test]
            fn workspace() {
                super::$name(super::workspace());
            }

            #[test]
            #[ignore = "needs PostgreSQL: CTXFOLD_TEST_PG_URL (scripts/test starts a server)"]
            fn postgres() {
                if let Some(under) = super::postgres(stringify!($name)) {
                    super::$name(under);
                }
            }
        }
    };
}

fn texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| match &r.body {
            Body::User { content, .. } => content.clone(),
            other => other.type_name().to_owned(),
        })
        .collect()
}

use ctxfold_testkit::corpus::conversations as corpus_conversations;

/// Every file of a folder, by name, with its bytes.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

on_every_store!(the_corpus_goes_in_and_comes_out_byte_for_byte);
fn the_corpus_goes_in_and_comes_out_byte_for_byte(under: Under) {
    let conversations = corpus_conversations();
    let out = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for path in &conversations {
        let t = ctxfold_formats::import(path, Some(Format::Jp)).unwrap();
        let source = ImportSource {
            format: "jp".into(),
            path: path.display().to_string(),
        };
        let n = t.records.len() as u64;
        let m = create_new(&*under.store, t.title, Some(source), t.extras, t.records).unwrap();
        assert_eq!(under.store.next_seq(&m.id).unwrap(), n, "{:?}", under.kind);
        ids.push(m.id);
    }
    assert_eq!(under.store.list().unwrap().conversations.len(), ids.len());
    for (path, id) in conversations.iter().zip(&ids) {
        // Through the other handle: nothing is served from memory.
        let loaded = under.other.load(id).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let m = under.other.read_meta(id).unwrap();
        let t = Transcript {
            records: loaded.records,
            title: m.title,
            extras: m.extras,
            warnings: Vec::new(),
        };
        let dest = out.path().join(id);
        ctxfold_formats::export(&t, Format::Jp, &dest).unwrap();
        assert!(
            files_of(path) == files_of(&dest),
            "{:?}: {} does not come back byte for byte",
            under.kind,
            path.display()
        );
    }
}

on_every_store!(appends_are_gapless_and_read_back_as_written);
fn appends_are_gapless_and_read_back_as_written(under: Under) {
    let s = &under.store;
    s.create(&meta("c", "2026-01-01T00:00:00Z"), vec![user("first")])
        .unwrap();
    assert_eq!(s.next_seq("c").unwrap(), 1);
    let mut want = vec!["first".to_owned()];
    let mut next = 1;
    for batch in 1..=20u64 {
        let records: Vec<Record> = (0..batch).map(|i| user(&format!("{batch}.{i}"))).collect();
        want.extend(texts(&records));
        // Whatever seq a record carries, the store gives the next one.
        let range = s.append("c", records).unwrap();
        assert_eq!(range, next..next + batch, "{:?}", under.kind);
        next += batch;
    }
    assert_eq!(s.append("c", Vec::new()).unwrap(), next..next);
    assert_eq!(s.next_seq("c").unwrap(), next);
    let loaded = under.other.load("c").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(texts(&loaded.records), want);
    let seqs: Vec<u64> = loaded.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (0..next).collect::<Vec<_>>());

    // Records are written back unchanged: fields and types this version
    // does not know, key order, escapes.
    let odd = [
        r#"{"seq":0,"ts":"t","type":"user","content":"héllo \"q\" \\ \n\t\u0001 😀 end"}"#,
        r#"{"seq":0,"ts":"t","type":"tool_call","id":"c1","name":"read","arguments":{"z":1,"a":{"y":2,"b":3}},"future_field":[1,2.50,-0],"metadata":{"sig":"x","n":1e3}}"#,
        r#"{"seq":0,"ts":"t","type":"from_the_future","payload":{"b":1,"a":[true,null]},"x":"y"}"#,
    ];
    let records: Vec<Record> = odd
        .iter()
        .map(|l| Record::from_json_line(l).unwrap().0)
        .collect();
    let range = s.append("c", records.clone()).unwrap();
    let loaded = s.load("c").unwrap();
    let back = &loaded.records[range.start as usize..];
    for (mut r, b) in records.into_iter().zip(back) {
        r.seq = b.seq;
        assert_eq!(b.to_json_line(), r.to_json_line(), "{:?}", under.kind);
    }
}

on_every_store!(ids_prefixes_and_metadata);
fn ids_prefixes_and_metadata(under: Under) {
    let s = &under.store;
    let k = under.kind;
    let a = meta("20260101-000000-aaaa", "2026-01-01T00:00:00Z");
    let b = meta("20260101-000000-aabb", "2026-01-01T00:00:01Z");
    let c = meta("20250101-000000-cccc", "2025-01-01T00:00:00Z");
    for m in [&a, &b, &c] {
        s.create(m, Vec::new()).unwrap();
    }
    // Oldest first.
    let listed: Vec<String> = s
        .list()
        .unwrap()
        .conversations
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(listed, [c.id.clone(), a.id.clone(), b.id.clone()], "{k:?}");

    assert_eq!(s.find(&a.id).unwrap(), a, "{k:?}: an exact id");
    assert_eq!(s.find("20260101-000000-aab").unwrap(), b, "{k:?}: a prefix");
    assert_eq!(s.find("2025").unwrap(), c, "{k:?}");
    let e = s.find("20260101").unwrap_err();
    assert!(matches!(e, StoreError::Ambiguous { .. }), "{k:?}: {e}");
    assert!(e.to_string().contains(&a.id) && e.to_string().contains(&b.id));
    let e = s.find("nope").unwrap_err();
    assert!(
        e.to_string().contains("no conversation `nope`"),
        "{k:?}: {e}"
    );
    assert!(matches!(s.find("").unwrap_err(), StoreError::EmptyId));

    // Exact ids only where an exact id is asked for.
    assert_eq!(s.read_meta(&a.id).unwrap(), a);
    assert!(s.read_meta("20260101-000000-aa").is_err());
    assert!(s.load("20260101-000000-aa").is_err());

    let mut a2 = a.clone();
    a2.title = Some("renamed".into());
    a2.extras.insert("proxy_key".into(), json!("k-1"));
    s.write_meta(&a2).unwrap();
    assert_eq!(under.other.read_meta(&a.id).unwrap(), a2, "{k:?}");
    assert_eq!(
        s.find_by_extra("proxy_key", &json!("k-1")).unwrap(),
        [a2.clone()]
    );
    assert!(
        s.find_by_extra("proxy_key", &json!("k-2"))
            .unwrap()
            .is_empty()
    );
    // Nested, by JSON Pointer; and a whole object.
    let mut b2 = b.clone();
    let proxy = json!({"key": "header:abc", "shape": "openai", "n": 3});
    b2.extras.insert("proxy".into(), proxy.clone());
    s.write_meta(&b2).unwrap();
    assert_eq!(
        s.find_by_extra("/proxy/key", &json!("header:abc")).unwrap(),
        [b2.clone()],
        "{k:?}"
    );
    assert_eq!(
        s.find_by_extra("/proxy/n", &json!(3)).unwrap(),
        [b2.clone()]
    );
    assert!(
        s.find_by_extra("/proxy/key", &json!("header:ab"))
            .unwrap()
            .is_empty()
    );
    assert!(
        s.find_by_extra("key", &json!("header:abc"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(s.find_by_extra("proxy", &proxy).unwrap(), [b2.clone()]);
    s.write_meta(&b).unwrap();

    let e = s.create(&b, vec![user("x")]).unwrap_err();
    assert!(
        matches!(e, StoreError::ConversationExists { .. }),
        "{k:?}: {e}"
    );
    assert!(s.load(&b.id).unwrap().records.is_empty(), "nothing written");
    for bad in ["../escape", ".hidden", "a/b"] {
        let e = s.create(&meta(bad, "2026-01-01T00:00:00Z"), Vec::new());
        assert!(
            matches!(e, Err(StoreError::InvalidId { .. })),
            "{k:?} {bad}: {e:?}"
        );
    }
    let e = s.write_meta(&meta("missing", "2026-01-01T00:00:00Z"));
    assert!(e.is_err(), "{k:?}: no such conversation");

    // A fresh id each time.
    let m1 = create_new(&**s, None, None, Object::new(), vec![user("1")]).unwrap();
    let m2 = create_new(&**s, None, None, Object::new(), vec![user("2")]).unwrap();
    assert_ne!(m1.id, m2.id);
    assert_eq!(texts(&s.load(&m2.id).unwrap().records), ["2"]);
}

on_every_store!(locks_refuse_a_second_taker_until_dropped);
fn locks_refuse_a_second_taker_until_dropped(under: Under) {
    let k = under.kind;
    let (s, o) = (&under.store, &under.other);
    s.create(&meta("c", "2026-01-01T00:00:00Z"), Vec::new())
        .unwrap();
    s.create(&meta("d", "2026-01-01T00:00:00Z"), Vec::new())
        .unwrap();

    let held = s.try_compaction_lock("c").unwrap().expect("free at first");
    assert!(o.try_compaction_lock("c").unwrap().is_none(), "{k:?}");
    // Locks are per conversation and per kind.
    let other_conv = o.try_compaction_lock("d").unwrap();
    assert!(other_conv.is_some(), "{k:?}");
    let turn = o
        .try_turn_lock("c")
        .unwrap()
        .expect("the turn lock is apart");
    assert!(s.try_turn_lock("c").unwrap().is_none(), "{k:?}");
    // Appends go on while a compaction is planned.
    assert_eq!(o.append("c", vec![user("during")]).unwrap(), 0..1);
    drop(held);
    let again = o.try_compaction_lock("c").unwrap();
    assert!(again.is_some(), "{k:?}: a dropped holder frees it");
    drop(turn);
    assert!(s.try_turn_lock("c").unwrap().is_some(), "{k:?}");

    // Held from another thread, as a proxy's workers do.
    drop(again);
    let store = Arc::clone(s);
    let lock = std::thread::spawn(move || store.try_compaction_lock("c").unwrap())
        .join()
        .unwrap();
    assert!(lock.is_some());
    assert!(o.try_compaction_lock("c").unwrap().is_none(), "{k:?}");
    drop(lock);
    assert!(o.try_compaction_lock("c").unwrap().is_some(), "{k:?}");

    assert!(s.try_compaction_lock("missing").is_err(), "{k:?}");
}

on_every_store!(active_and_trash);
fn active_and_trash(under: Under) {
    let k = under.kind;
    let s = &under.store;
    let a = meta("a", "2026-01-01T00:00:00Z");
    let b = meta("b", "2026-01-01T00:00:01Z");
    s.create(&a, vec![user("in a")]).unwrap();
    s.create(&b, Vec::new()).unwrap();
    assert_eq!(s.active().unwrap(), None, "{k:?}");
    let used = s.set_active("a").unwrap();
    assert_eq!(used.id, "a");
    assert_ne!(used.last_used_at, a.last_used_at, "{k:?}: last used noted");
    assert_eq!(under.other.active().unwrap().as_deref(), Some("a"));
    assert_eq!(s.read_meta("a").unwrap(), used);
    s.set_active("b").unwrap();
    assert_eq!(s.active().unwrap().as_deref(), Some("b"));
    assert!(s.set_active("missing").is_err());
    assert_eq!(
        s.active().unwrap().as_deref(),
        Some("b"),
        "{k:?}: unchanged"
    );

    // The trash: out of the listing, no longer active, no reads or
    // writes; nothing deleted.
    s.trash("b").unwrap();
    assert_eq!(s.active().unwrap(), None, "{k:?}");
    let ids: Vec<String> = s
        .list()
        .unwrap()
        .conversations
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["a"], "{k:?}");
    assert!(s.find("b").is_err());
    assert!(s.load("b").is_err());
    assert!(s.append("b", vec![user("late")]).is_err(), "{k:?}");
    assert!(s.trash("b").is_err(), "{k:?}: already gone");
    s.trash("a").unwrap();
    assert!(s.list().unwrap().conversations.is_empty());
    match under.kind {
        Kind::Workspace => {
            let kept = under.root().join(".ctxfold/trash/a/events.jsonl");
            assert!(std::fs::read_to_string(kept).unwrap().contains("in a"));
        }
        Kind::Postgres => {
            let n: i64 = under
                .db()
                .client()
                .query_one(
                    "SELECT count(*) FROM ctxfold_events WHERE conversation_id = 'a'",
                    &[],
                )
                .unwrap()
                .get(0);
            assert_eq!(n, 1);
        }
    }
}

on_every_store!(conditional_appends_write_only_at_the_expected_seq);
fn conditional_appends_write_only_at_the_expected_seq(under: Under) {
    let k = under.kind;
    let s = &under.store;
    s.create(&meta("c", "2026-01-01T00:00:00Z"), vec![user("0")])
        .unwrap();
    assert_eq!(
        s.append_at("c", 1, vec![user("1"), user("2")]).unwrap(),
        AppendAt::Appended(1..3),
        "{k:?}"
    );
    assert_eq!(
        s.append_at("c", 1, vec![user("stale")]).unwrap(),
        AppendAt::Moved { next: 3 },
        "{k:?}"
    );
    assert_eq!(
        s.append_at("c", 7, vec![user("ahead")]).unwrap(),
        AppendAt::Moved { next: 3 }
    );
    assert_eq!(texts(&s.load("c").unwrap().records), ["0", "1", "2"]);

    // Racing writers that all saw seq 3: exactly one gets in each round.
    let writers = 4;
    for round in 0..5u64 {
        let expected = 3 + round;
        let barrier = Arc::new(Barrier::new(writers));
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let store: Arc<dyn Store> = if w % 2 == 0 {
                    Arc::clone(&under.store)
                } else {
                    Arc::clone(&under.other)
                };
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    store
                        .append_at("c", expected, vec![user(&format!("r{round}w{w}"))])
                        .unwrap()
                })
            })
            .collect();
        let results: Vec<AppendAt> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won = results
            .iter()
            .filter(|r| matches!(r, AppendAt::Appended(_)))
            .count();
        assert_eq!(won, 1, "{k:?} round {round}: {results:?}");
        assert!(results.iter().all(|r| match r {
            AppendAt::Appended(range) => *range == (expected..expected + 1),
            AppendAt::Moved { next } => *next == expected + 1,
        }));
    }
    let loaded = s.load("c").unwrap();
    assert_eq!(loaded.records.len(), 8, "{k:?}");
    assert!(s.append_at("missing", 0, vec![user("x")]).is_err());
}

on_every_store!(torn_or_failed_writes_leave_whole_batches);
fn torn_or_failed_writes_leave_whole_batches(under: Under) {
    let s = &under.store;
    s.create(
        &meta("c", "2026-01-01T00:00:00Z"),
        vec![user("a"), user("b")],
    )
    .unwrap();
    match under.kind {
        Kind::Workspace => {
            // A crash part way through a line: the torn tail is set
            // aside, the rest loads, the next append follows on.
            let dir = under.root().join(".ctxfold/conversations/c");
            let log = dir.join("events.jsonl");
            let mut bytes = std::fs::read(&log).unwrap();
            bytes.extend_from_slice(br#"{"seq":2,"ts":"t","type":"user","cont"#);
            std::fs::write(&log, &bytes).unwrap();
            let loaded = s.load("c").unwrap();
            assert_eq!(texts(&loaded.records), ["a", "b"]);
            assert!(loaded.torn.is_some(), "{:?}", loaded.warnings);
            assert!(!loaded.warnings.is_empty());
            assert_eq!(s.append("c", vec![user("c")]).unwrap(), 2..3);
            let text = std::fs::read_to_string(&log).unwrap();
            assert!(text.ends_with('\n') && !text.contains("\"cont\n"));
            assert_eq!(text.lines().count(), 3);

            // A meta.json that is not ctxfold's does not stop the log.
            std::fs::write(dir.join("meta.json"), "{ not json").unwrap();
            assert_eq!(s.append("c", vec![user("d")]).unwrap(), 3..4);
            assert_eq!(texts(&s.load("c").unwrap().records), ["a", "b", "c", "d"]);
            assert!(s.try_compaction_lock("c").unwrap().is_some());
            let listing = s.list().unwrap();
            assert_eq!(listing.broken.len(), 1);
            assert!(s.read_meta("c").is_err());
        }
        Kind::Postgres => {
            // A failure inside the database part way through a batch:
            // none of it is kept, and the seqs do not move.
            under
                .db()
                .client()
                .batch_execute(
                    "CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
                     BEGIN
                         IF NEW.line LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned record (test)'; END IF;
                         RETURN NEW;
                     END $$;
                     CREATE TRIGGER poison BEFORE INSERT ON ctxfold_events
                         FOR EACH ROW EXECUTE FUNCTION test_poison();",
                )
                .unwrap();
            let e = s
                .append("c", vec![user("c"), user("poison"), user("d")])
                .unwrap_err();
            assert!(format!("{e}").contains("append to conversation `c`"), "{e}");
            assert!(matches!(
                s.append_at("c", 2, vec![user("x"), user("poison")]),
                Err(StoreError::Database { .. })
            ));
            let e = create_new(&**s, None, None, Object::new(), vec![user("poison")]);
            assert!(e.is_err());
            assert_eq!(s.list().unwrap().conversations.len(), 1, "no half creation");
            assert_eq!(s.next_seq("c").unwrap(), 2);
            assert_eq!(s.append("c", vec![user("c")]).unwrap(), 2..3);
            assert_eq!(texts(&s.load("c").unwrap().records), ["a", "b", "c"]);

            // Metadata that is not ctxfold's does not stop the log.
            under
                .db()
                .client()
                .batch_execute(
                    "UPDATE ctxfold_conversations SET meta = '{ not json' WHERE id = 'c'",
                )
                .unwrap();
            assert_eq!(s.append("c", vec![user("d")]).unwrap(), 3..4);
            assert_eq!(texts(&s.load("c").unwrap().records), ["a", "b", "c", "d"]);
            assert_eq!(s.list().unwrap().broken.len(), 1);
            assert!(s.read_meta("c").is_err());
        }
    }
}
