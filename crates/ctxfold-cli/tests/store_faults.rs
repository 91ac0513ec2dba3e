//! Store faults through the real binary (issue 7): a conversation removed
//! under a writer, a full disk, a read-only workspace, an interrupted
//! import, a broken `meta.json`, a `seq` at its maximum, an empty id, and
//! the two readers of a ctxfold log agreeing.
//!
//! Full disks and read-only workspaces are real: a tiny tmpfs and a
//! read-only bind mount (see `ctxfold_testkit::faults`).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;
use ctxfold_testkit::faults;

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::{Scratch, command_in, corpus, stderr};
use faults::{ReadOnly, SmallDisk, Tmpfs};
use serde_json::{Value, json};

const SMALL: &str = "17738348630-workspace-sanitization-strategy"; // 9 turns

fn run_in(dir: &Path, args: &[&str]) -> Output {
    command_in(dir).args(args).output().unwrap()
}

fn ok_in(dir: &Path, args: &[&str]) -> Output {
    let out = run_in(dir, args);
    assert!(
        out.status.success(),
        "ctxfold {args:?} failed: {}",
        stderr(&out)
    );
    out
}

fn conversation_dir(root: &Path, id: &str) -> PathBuf {
    root.join(".ctxfold/conversations").join(id)
}

/// A small ctxfold log with `n` user messages.
fn log_file(dir: &Path, n: usize) -> PathBuf {
    let f = dir.join(format!("log{n}.jsonl"));
    let mut text = String::new();
    for i in 0..n {
        text.push_str(
            &json!({"seq": i, "ts": "t", "type": "user", "content": format!("message {i}")})
                .to_string(),
        );
        text.push('\n');
    }
    std::fs::write(&f, text).unwrap();
    f
}

fn import_in(dir: &Path, file: &Path) -> String {
    let out = ok_in(
        dir,
        &["c", "import", file.to_str().unwrap(), "--format", "json"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

// Item 2 -----------------------------------------------------------------

#[test]
fn rm_during_an_append_fails_the_append_and_writes_nothing() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 2));
    let before = std::fs::read(s.events_file(&id)).unwrap();

    let mut child = s
        .command()
        .args(["c", "append", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than a pipe holds: once this is written the child is reading
    // its input, so it has already found the conversation.
    let line = json!({"type": "user", "content": "x".repeat(200)}).to_string() + "\n";
    stdin.write_all(line.repeat(1000).as_bytes()).unwrap();

    let rm = s.json(&["c", "rm", &id]);
    let trashed = PathBuf::from(rm["moved_to"].as_str().unwrap());
    drop(stdin);
    let out = child.wait_with_output().unwrap();

    assert!(!out.status.success(), "the append reported success");
    let err = stderr(&out);
    assert!(err.contains("is gone") && err.contains(&id), "{err}");
    assert!(
        !conversation_dir(s.path(), &id).exists(),
        "the writer re-created the conversation folder"
    );
    assert_eq!(
        std::fs::read(trashed.join("events.jsonl")).unwrap(),
        before,
        "nothing written to the trashed log"
    );
    // Moving it back works, and it is whole.
    std::fs::rename(&trashed, conversation_dir(s.path(), &id)).unwrap();
    assert_eq!(s.json(&["c", "show", &id])["counts"]["records"], 2);
}

/// A fake OpenAI-kind model server for one summary: it calls `meanwhile`
/// once the request is in (the compaction is then planned and waiting),
/// then answers.
fn serve_one_summary(listener: TcpListener, meanwhile: impl FnOnce()) {
    let (stream, _) = listener.accept().unwrap();
    let (_, body) = common::read_request(&stream).expect("a summary request");
    let streamed = String::from_utf8_lossy(&body).contains("\"stream\":true");
    meanwhile();
    let mut stream = stream;
    let reply = if streamed {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        let body = chunk(json!({"content": "Short."}), Value::Null)
            + &chunk(json!({}), json!("stop"))
            + "data: [DONE]\n\n";
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}"
        )
    } else {
        let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Short."}, "finish_reason": "stop"}]}).to_string();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let _ = stream.write_all(reply.as_bytes());
}

#[test]
fn rm_during_a_compaction_fails_the_compaction_and_writes_nothing() {
    let s = Scratch::new();
    let id = s.import(&corpus().join(SMALL));
    let before = std::fs::read(s.events_file(&id)).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cfg = s.path().join("fake.toml");
    std::fs::write(
        &cfg,
        format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\ncontext_window_from = \"none\"\ncontext_window = 32768\n"
        ),
    )
    .unwrap();
    let child = s
        .command()
        .args(["-c", cfg.to_str().unwrap(), "c", "compact", &id])
        .args(["-s", "-m", "fake/m", "--from", "2", "--to", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut trashed = None;
    serve_one_summary(listener, || {
        // The compaction has loaded and planned; its append comes next.
        let rm = s.json(&["c", "rm", &id]);
        trashed = Some(PathBuf::from(rm["moved_to"].as_str().unwrap()));
    });
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "the compaction reported success");
    let err = stderr(&out);
    assert!(err.contains("is gone"), "{err}");
    assert!(!conversation_dir(s.path(), &id).exists());
    // What was there before the rm is all there: the log as it was and the
    // attempt's `compaction_started` (written before the summary was asked
    // for), an inert orphan; nothing after the rm.
    let after = std::fs::read(trashed.unwrap().join("events.jsonl")).unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    let tail = String::from_utf8(after[before.len()..].to_vec()).unwrap();
    assert_eq!(tail.lines().count(), 1, "{tail}");
    assert!(tail.contains("\"type\":\"compaction_started\""), "{tail}");
}

// Item 3 -----------------------------------------------------------------

/// A workspace on a tiny tmpfs, or `None` where mounting is not permitted.
fn workspace_on_tmpfs(t: &Path, bytes: u64) -> Option<(PathBuf, Tmpfs)> {
    let root = t.join("disk");
    let disk = Tmpfs::mount(&root, bytes)?;
    ok_in(&root, &["init"]);
    Some((root, disk))
}

const TORN: &[u8] = b"{\"seq\":2,\"ts\":\"t\",\"type\":\"user\",\"content\":\"half";

#[test]
fn a_torn_tail_on_a_full_disk_is_read_around_and_set_aside_by_the_next_writer() {
    let t = tempfile::tempdir().unwrap();
    let Some((root, disk)) = workspace_on_tmpfs(t.path(), 512 * 1024) else {
        // No mounts here: a read-only workspace is the other case where the
        // tail cannot be set aside.
        return torn_tail_in_a_read_only_workspace(t.path());
    };
    let id = import_in(&root, &log_file(t.path(), 2));
    let events = conversation_dir(&root, &id).join("events.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap()
        .write_all(TORN)
        .unwrap();
    let filler = disk.fill();

    for args in [
        vec!["c", "show", &id],
        vec!["c", "print", &id],
        vec!["c", "export", &id],
        vec!["c", "print", &id, "--compacted"],
    ] {
        let out = ok_in(&root, &args);
        let err = stderr(&out);
        assert!(
            err.contains("incomplete last line") && err.contains("could not be moved"),
            "{args:?}: {err}"
        );
    }
    let v: Value =
        serde_json::from_slice(&ok_in(&root, &["c", "print", &id, "--format", "json"]).stdout)
            .unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert!(std::fs::read(&events).unwrap().ends_with(TORN), "kept");

    // Space again: the next writer sets the tail aside and appends.
    std::fs::remove_file(filler).unwrap();
    let out = command_in(&root)
        .args(["c", "append", &id])
        .stdin(Stdio::piped())
        .output_with_input(b"{\"type\":\"user\",\"content\":\"after\"}\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let torn = std::fs::read(events.with_extension("jsonl.torn")).unwrap();
    assert_eq!(&torn[..torn.len() - 1], TORN);
    let out = ok_in(&root, &["c", "print", &id, "--format", "json"]);
    assert_eq!(stderr(&out), "", "nothing left to report");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 3);
    assert_eq!(v[2]["content"], "after");
    assert_eq!(v[2]["seq"], 2);
}

fn torn_tail_in_a_read_only_workspace(t: &Path) {
    let root = t.join("ws");
    std::fs::create_dir(&root).unwrap();
    ok_in(&root, &["init"]);
    let id = import_in(&root, &log_file(t, 2));
    let events = conversation_dir(&root, &id).join("events.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap()
        .write_all(TORN)
        .unwrap();
    let ro = ReadOnly::new(&root);
    let out = ok_in(&root, &["c", "show", &id]);
    assert!(
        stderr(&out).contains("could not be moved"),
        "{}",
        stderr(&out)
    );
    drop(ro);
}

#[test]
fn an_append_that_fills_the_disk_is_cut_back_and_reads_still_work() {
    let t = tempfile::tempdir().unwrap();
    let Some((root, disk)) = workspace_on_tmpfs(t.path(), 512 * 1024) else {
        eprintln!("mounting is not permitted here: the full-disk case is covered read-only");
        return torn_tail_in_a_read_only_workspace(t.path());
    };
    let id = import_in(&root, &log_file(t.path(), 2));
    let events = conversation_dir(&root, &id).join("events.jsonl");
    let before = std::fs::read(&events).unwrap();
    // Leave 64 KB free, then append 1 MB.
    let filler = disk.fill();
    let len = std::fs::metadata(&filler).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&filler)
        .unwrap()
        .set_len(len - 64 * 1024)
        .unwrap();
    let big =
        json!({"type": "tool_result", "id": "x", "content": "z".repeat(1 << 20), "is_error": false})
            .to_string() + "\n";
    let out = command_in(&root)
        .args(["c", "append", &id])
        .stdin(Stdio::piped())
        .output_with_input(big.as_bytes());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("events.jsonl"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&events).unwrap(), before, "no partial line");
    let out = ok_in(&root, &["c", "show", &id, "--format", "json"]);
    assert_eq!(stderr(&out), "");
}

/// `output()` with bytes on standard input.
trait WithInput {
    fn output_with_input(&mut self, input: &[u8]) -> Output;
}

impl WithInput for std::process::Command {
    fn output_with_input(&mut self, input: &[u8]) -> Output {
        let mut child = self
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    }
}

// Item 4 -----------------------------------------------------------------

#[test]
fn a_read_only_workspace_can_be_read_and_dry_run() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    ok_in(&root, &["init"]);
    let a = import_in(&root, &corpus().join(SMALL));
    let b = import_in(&root, &log_file(t.path(), 3));
    // A conversation never appended to since an older version: no lock file.
    std::fs::remove_file(conversation_dir(&root, &b).join("lock")).unwrap();
    let before_a = std::fs::read(conversation_dir(&root, &a).join("events.jsonl")).unwrap();

    let _ro = ReadOnly::new(&root);
    let out = ok_in(&root, &["c", "ls"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&a));
    for id in [&a, &b] {
        for args in [
            vec!["c", "show", id],
            vec!["c", "print", id],
            vec!["c", "print", id, "--compacted"],
            vec!["c", "export", id],
            vec!["stats", id],
            vec!["c", "compact", id, "--dry-run"],
        ] {
            let out = ok_in(&root, &args);
            assert_eq!(stderr(&out), "", "{args:?}: no noise");
        }
    }
    // Writing is refused with the reason, naming the file.
    let out = run_in(&root, &["c", "compact", &a]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Read-only file system") || err.contains("ermission"),
        "{err}"
    );
    assert!(err.contains(&a), "{err}");
    assert_eq!(
        std::fs::read(conversation_dir(&root, &a).join("events.jsonl")).unwrap(),
        before_a
    );
}

// Item 5 -----------------------------------------------------------------

#[test]
fn an_import_that_fills_the_disk_leaves_nothing_behind() {
    let t = tempfile::tempdir().unwrap();
    // A tmpfs, or where mounting is not permitted a file-size limit: either
    // way the import's log does not fit.
    let disk = SmallDisk::new(&t.path().join("disk"), 256 * 1024);
    let root = disk.path().to_owned();
    ok_in(&root, &["init"]);
    let big = corpus().join("17728322628-bear-mcp-server-design-review");
    let mut cmd = command_in(&root);
    cmd.args(["c", "import", big.to_str().unwrap()]);
    let out = disk.command(cmd).output().unwrap();
    assert!(!out.status.success(), "a 1.6 MB import fit on 256 KB");
    let err = stderr(&out);
    assert!(faults::out_of_space(&err), "{err}");
    let conversations = root.join(".ctxfold/conversations");
    let left: Vec<String> = walk(&conversations)
        .into_iter()
        .filter(|p| !p.ends_with(".staging/lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    // And the space is back: a small import fits.
    let id = import_in(&root, &log_file(t.path(), 2));
    let out = ok_in(&root, &["c", "ls"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id));
}

/// Every file under `dir`, relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out
}

#[test]
fn what_a_killed_import_left_is_removed_by_the_next_one_and_a_live_one_is_not() {
    let s = Scratch::new();
    let staging = s.path().join(".ctxfold/conversations/.staging");
    std::fs::create_dir_all(&staging).unwrap();
    // A killed import: its folder, its lock file, nobody holding it.
    let dead = staging.join("20260101-000000-dead");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("events.jsonl"), "x".repeat(10_000)).unwrap();
    std::fs::write(staging.join("20260101-000000-dead.lock"), "").unwrap();
    // A running import (this test process holds its lock).
    let live = staging.join("20260101-000000-1ive");
    std::fs::create_dir(&live).unwrap();
    std::fs::write(live.join("events.jsonl"), "y").unwrap();
    let claim = std::fs::File::create(staging.join("20260101-000000-1ive.lock")).unwrap();
    claim.lock().unwrap();

    assert_eq!(s.json(&["c", "ls"]), json!([]), "staging is never listed");
    let out = s
        .command()
        .args(["c", "import", log_file(s.path(), 2).to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("note: removed")
            && err.contains("20260101-000000-dead")
            && err.contains("10000 bytes"),
        "{err}"
    );
    assert!(!err.contains("1ive"), "{err}");
    assert!(!dead.exists());
    assert!(!staging.join("20260101-000000-dead.lock").exists());
    assert!(
        live.join("events.jsonl").is_file(),
        "a live import is left alone"
    );
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 1);
    drop(claim);
}

// Item 6 -----------------------------------------------------------------

#[test]
fn one_broken_meta_json_does_not_hide_the_other_conversations() {
    let s = Scratch::new();
    let good = s.import(&log_file(s.path(), 2));
    let bad = s.import(&log_file(s.path(), 3));
    let meta = conversation_dir(s.path(), &bad).join("meta.json");
    std::fs::write(&meta, "{\"id\": \"oops\"").unwrap();

    let out = s.run(&["c", "ls", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<(&str, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["broken"] == true))
        .collect();
    assert_eq!(ids, [(good.as_str(), false), (bad.as_str(), true)]);
    let err = stderr(&out);
    assert!(err.contains(&bad) && err.contains("meta.json"), "{err}");

    // Lookups by prefix still work for the others…
    assert_eq!(
        s.json(&["c", "show", &good[..good.len() - 1]])["id"],
        good.as_str()
    );
    // …and name the broken file for the broken one.
    let out = s.run(&["c", "show", &bad]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&meta.display().to_string()),
        "{}",
        stderr(&out)
    );
}

// Item 8 -----------------------------------------------------------------

#[test]
fn a_seq_at_its_maximum_is_refused_not_wrapped() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 2));
    let events = s.events_file(&id);
    let text = std::fs::read_to_string(&events)
        .unwrap()
        .replace("{\"seq\":1,", &format!("{{\"seq\":{},", u64::MAX));
    std::fs::write(&events, &text).unwrap();

    let out = s
        .command()
        .args(["c", "append", &id])
        .stdin(Stdio::piped())
        .output_with_input(b"{\"type\":\"user\",\"content\":\"one more\"}\n");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("18446744073709551615")
            && err.contains("no record can follow")
            && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&events).unwrap(),
        text,
        "nothing written"
    );
}

// Item 19 ----------------------------------------------------------------

#[test]
fn an_empty_id_is_refused() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 2));
    for args in [["c", "rm", ""], ["c", "show", ""], ["c", "use", ""]] {
        let out = s.run(&args);
        assert!(!out.status.success(), "{args:?} accepted an empty id");
        assert!(
            stderr(&out).contains("empty conversation id"),
            "{}",
            stderr(&out)
        );
    }
    assert!(conversation_dir(s.path(), &id).is_dir(), "not trashed");
}

// Items 27 and 22 --------------------------------------------------------

#[test]
fn compact_reads_a_conversation_folder_as_show_does() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 4));
    let events = s.events_file(&id);
    let mut text = std::fs::read_to_string(&events).unwrap();
    text.insert_str(text.find('\n').unwrap() + 1, "{garbage\n");
    text.push_str("{\"seq\":4,\"ts\":\"t\",\"type\":\"user\",\"cont");
    std::fs::write(&events, &text).unwrap();
    let folder = events.parent().unwrap().to_str().unwrap().to_owned();
    let out_file = s.path().join("out.jsonl");

    let out = s
        .command()
        .args(["compact", &folder, "-r", "-o", out_file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("events.jsonl:2: skipped"), "{err}");
    assert!(
        err.contains("events.jsonl:6: incomplete last line"),
        "{err}"
    );
    let written = std::fs::read_to_string(&out_file).unwrap();
    assert_eq!(written.lines().count(), 4);

    // A file in which no line is a record is not a ctxfold log.
    let other = s.path().join("other.jsonl");
    std::fs::write(&other, "{\"hello\": 1}\n{\"world\": 2}\n").unwrap();
    let out = s
        .command()
        .args([
            "compact",
            other.to_str().unwrap(),
            "--input-format",
            "ctxfold",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("other.jsonl")
            && err.contains("no line is a ctxfold record")
            && err.contains("line 1"),
        "{err}"
    );
}

#[test]
fn a_malformed_compaction_record_is_reported_with_what_was_wrong() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 3));
    let events = s.events_file(&id);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&events)
        .unwrap();
    f.write_all(
        b"{\"seq\":3,\"ts\":\"t\",\"type\":\"compaction\",\"from_turn\":0,\"to_turn\":0,\"source\":\"user\",\"tool_calls\":\"shred\"}\n",
    )
    .unwrap();
    let out = s.run(&["c", "show", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("events.jsonl:4") && err.contains("unknown variant `shred`"),
        "{err}"
    );
}

/// Item 8, for `fork -k`: the compaction a fork adds after a log whose
/// last seq is the largest there is gets no wrapped seq; the fork is
/// refused and no conversation is created.
#[test]
fn a_fork_after_the_largest_seq_is_refused() {
    let s = Scratch::new();
    let f = s.path().join("tools.jsonl");
    let records = [
        json!({"type": "turn_start"}),
        json!({"type": "user", "content": "read it"}),
        json!({"type": "tool_call", "id": "c1", "name": "read", "arguments": {"body": "x".repeat(400)}}),
        json!({"type": "tool_result", "id": "c1", "content": "y".repeat(400), "is_error": false}),
        json!({"type": "assistant", "content": "done"}),
    ];
    let mut text = String::new();
    for (i, r) in records.iter().enumerate() {
        let mut r = r.clone();
        r["seq"] = json!(i);
        r["ts"] = json!("t");
        text.push_str(&r.to_string());
        text.push('\n');
    }
    std::fs::write(&f, text).unwrap();
    let id = s.import(&f);
    let events = s.events_file(&id);
    let edited = std::fs::read_to_string(&events)
        .unwrap()
        .replace("{\"seq\":4,", &format!("{{\"seq\":{},", u64::MAX));
    std::fs::write(&events, &edited).unwrap();
    let before = s.json(&["c", "ls"]).as_array().unwrap().len();
    let out = s.run(&["c", "fork", &id, "-k", "t"]);
    assert!(!out.status.success(), "the fork succeeded");
    let err = stderr(&out);
    assert!(
        err.contains("no record can follow") && !err.contains("panicked"),
        "{err}"
    );
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), before);
}

/// An export never goes into the workspace folder, where it could replace
/// a conversation's own log.
#[test]
fn an_export_into_the_workspace_folder_is_refused() {
    let s = Scratch::new();
    let id = s.import(&log_file(s.path(), 2));
    let events = s.events_file(&id);
    let before = std::fs::read(&events).unwrap();
    for target in [
        events.clone(),
        s.path()
            .join(".ctxfold/conversations")
            .join(&id)
            .join("copy.jsonl"),
    ] {
        let out = s.run(&["c", "export", &id, "-o", target.to_str().unwrap()]);
        assert!(!out.status.success(), "{} was written", target.display());
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read(&events).unwrap(), before);
    s.ok(&["c", "export", &id, "-o", "elsewhere.jsonl"]);
    assert_eq!(
        std::fs::read(s.path().join("elsewhere.jsonl")).unwrap(),
        before
    );
}
