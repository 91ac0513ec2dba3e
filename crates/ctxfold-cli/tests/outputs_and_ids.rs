//! Fixes from the review of the issue-7 hardening, through the real binary:
//! outputs never go into a workspace folder, only our own standard output
//! may close quietly, `append` is bounded, ids renamed on import stay
//! valid in every format, `use`/`rm` and broken conversations, and the
//! default keep taken from config.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Scratch, command_in, stderr};
use serde_json::{Value, json};

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

/// A small OpenAI transcript of `turns` turns.
fn openai(dir: &Path, turns: usize) -> PathBuf {
    let mut messages = Vec::new();
    for i in 0..turns {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    let path = dir.join(format!("chat{turns}.json"));
    write_json(&path, &json!({ "messages": messages }));
    path
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure, got success; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Every file under `dir` with its bytes, to show nothing changed.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

// Finding 1: no output into a workspace folder ---------------------------

#[test]
fn compact_and_export_never_write_into_the_workspace_folder() {
    let s = Scratch::new();
    let id = s.import(&openai(s.path(), 3));
    let other = openai(s.path(), 2);
    let ws = s.path().join(".ctxfold");
    let conv = ws.join("conversations").join(&id);
    let before = snapshot(&ws);
    for target in [
        conv.join("events.jsonl"),
        conv.join("meta.json"),
        ws.join("active"),
        ws.join("new.jsonl"),
    ] {
        let t = target.to_str().unwrap();
        let out = s.run(&[
            "compact",
            other.to_str().unwrap(),
            "-o",
            t,
            "--output-format",
            "ctxfold",
        ]);
        let err = failed(&out);
        assert!(
            err.contains("a ctxfold workspace folder") && err.contains("outputs never go there"),
            "{err}"
        );
        let out = s.run(&["c", "export", &id, "-o", t]);
        let err = failed(&out);
        assert!(err.contains("a ctxfold workspace folder"), "{err}");
        assert!(!err.contains("compact"), "export is no compact: {err}");
    }
    assert_eq!(snapshot(&ws), before, "the workspace changed");
    // Outside it, both still write.
    s.ok(&["compact", other.to_str().unwrap(), "-o", "fine.json"]);
    s.ok(&["c", "export", &id, "-o", "fine.jsonl"]);
}

#[test]
fn the_global_workspace_is_protected_too() {
    let t = tempfile::tempdir().unwrap();
    // No `.ctxfold/` here: the import goes to the global workspace.
    let src = openai(t.path(), 2);
    let out = command_in(t.path())
        .args(["c", "import", src.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let global = t.path().join("xdg-data/ctxfold");
    let events = global.join("conversations").join(&id).join("events.jsonl");
    let before = std::fs::read(&events).unwrap();
    // Run from a project with its own workspace: the global one is still
    // where conversations live.
    let project = t.path().join("project");
    std::fs::create_dir(&project).unwrap();
    assert!(command_in(&project).arg("init").status().unwrap().success());
    let out = command_in(&project)
        .args([
            "compact",
            src.to_str().unwrap(),
            "--output-format",
            "ctxfold",
            "-o",
            events.to_str().unwrap(),
        ])
        .env("XDG_DATA_HOME", t.path().join("xdg-data"))
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(err.contains(global.to_str().unwrap()), "{err}");
    assert_eq!(std::fs::read(&events).unwrap(), before);
}

// Finding 2: only our own standard output closes quietly -----------------

/// A transcript whose output is far larger than a pipe holds.
fn big_openai(dir: &Path) -> PathBuf {
    let long = "a line of an answer that goes on. ".repeat(60);
    let mut messages = Vec::new();
    for i in 0..400 {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        messages.push(json!({"role": "assistant", "content": format!("{i}: {long}")}));
    }
    let path = dir.join("big.json");
    write_json(&path, &json!({ "messages": messages }));
    path
}

/// A FIFO at `path` whose reader takes one byte and goes away.
fn fifo_read_once(path: &Path) -> std::thread::JoinHandle<()> {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo");
    let path = path.to_owned();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut f = std::fs::File::open(path).unwrap();
        let mut one = [0u8; 1];
        f.read_exact(&mut one).unwrap();
    })
}

#[test]
fn an_output_fifo_whose_reader_goes_away_is_an_error() {
    let s = Scratch::new();
    let big = big_openai(s.path());
    let ff = s.path().join("ff");
    let reader = fifo_read_once(&ff);
    // `-r`: a rule of its own, so the plain-text transcript comes out whole
    // (the default would summarize it), more than a pipe holds.
    let out = s.run(&[
        "compact",
        big.to_str().unwrap(),
        "-r",
        "-o",
        ff.to_str().unwrap(),
    ]);
    reader.join().unwrap();
    let err = failed(&out);
    assert!(err.contains("ff") && err.contains("Broken pipe"), "{err}");

    let id = s.import(&big);
    let ff2 = s.path().join("ff2");
    let reader = fifo_read_once(&ff2);
    let out = s.run(&[
        "c",
        "export",
        &id,
        "--output-format",
        "openai",
        "-o",
        ff2.to_str().unwrap(),
    ]);
    reader.join().unwrap();
    let err = failed(&out);
    assert!(err.contains("ff2") && err.contains("Broken pipe"), "{err}");
}

#[test]
fn compacting_or_exporting_into_a_closed_stdout_exits_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let s = Scratch::new();
    let big = big_openai(s.path());
    let id = s.import(&big);
    for args in [
        vec!["compact", big.to_str().unwrap(), "-r", "-o", "-"],
        vec!["c", "export", &id, "--output-format", "openai"],
    ] {
        let mut child = s
            .command()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(
            out.status.success(),
            "{args:?}: exit {:?}: {err}",
            out.status
        );
        assert!(!err.contains("error"), "{args:?}: {err}");
    }
}

// Finding 3: `append` is bounded like every input ------------------------

#[test]
fn append_stops_at_the_input_limit() {
    let s = Scratch::new();
    let id = s.import(&openai(s.path(), 1));
    let events = s.events_file(&id);
    let before = std::fs::read(&events).unwrap();
    // 100 short records, about 60 bytes each: past a 1000-byte limit.
    let many = s.path().join("many.jsonl");
    let line = json!({"type": "user", "content": "a short message here"}).to_string();
    std::fs::write(&many, format!("{line}\n").repeat(100)).unwrap();
    let out = s
        .command()
        .args(["c", "append", &id, "--input", many.to_str().unwrap()])
        .env("CTXFOLD_MAX_INPUT_BYTES", "1000")
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(
        err.contains("many.jsonl:")
            && err.contains("more than 1000 bytes")
            && err.contains("CTXFOLD_MAX_INPUT_BYTES"),
        "{err}"
    );
    // What came before the limit went in, as with any bad line.
    let appended = std::fs::read(&events).unwrap().len() - before.len();
    assert!(appended > 0 && appended < 2000, "{appended} bytes appended");

    // An endless input with no newline at all: nothing to append.
    let before = std::fs::read(&events).unwrap();
    let out = s
        .command()
        .args(["c", "append", &id, "--input", "/dev/zero"])
        .env("CTXFOLD_MAX_INPUT_BYTES", "1000")
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(
        err.contains(
            "/dev/zero:1: more than 1000 bytes, the input limit; set CTXFOLD_MAX_INPUT_BYTES"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(&events).unwrap(), before);
}

// Finding 4: a read-only JP folder is replaced, and keeps its mode --------

/// `ctxfold` run as an ordinary user: as root, through `setpriv` as
/// `nobody` (root ignores the permission bits this is about).
fn as_ordinary_user(dir: &Path) -> std::process::Command {
    if is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            common::BIN,
        ]);
        c.current_dir(dir)
            .env("HOME", dir)
            .env("XDG_DATA_HOME", dir.join("xdg-data"))
            .env("XDG_CONFIG_HOME", dir.join("xdg-config"));
        c
    } else {
        command_in(dir)
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // Who we are, without libc: the owner of a file we just made.
    let probe = tempfile::NamedTempFile::new().unwrap();
    probe.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn a_read_only_jp_folder_is_replaced_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    if is_root() {
        std::os::unix::fs::chown(t.path(), Some(65534), Some(65534)).unwrap();
    }
    let src = openai(t.path(), 2);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for ro in [0o555, 0o500] {
        let out_dir = t.path().join(format!("out{ro:o}"));
        let run = || {
            as_ordinary_user(t.path())
                .args([
                    "compact",
                    src.to_str().unwrap(),
                    "--output-format",
                    "jp",
                    "-o",
                ])
                .arg(&out_dir)
                .output()
                .unwrap()
        };
        let out = run();
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::set_permissions(&out_dir, std::fs::Permissions::from_mode(ro)).unwrap();
        let out = run();
        assert!(out.status.success(), "mode {ro:o}: {}", stderr(&out));
        assert_eq!(mode(&out_dir), ro, "the folder's mode was not kept");
        assert!(out_dir.join("events.json").is_file());
    }
    let mut names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["chat2.json", "out500", "out555"], "leftovers");
}

// Finding 6: renamed tool-call ids are valid in every format -------------

/// Two parallel calls sharing the id `c1`, as some models number them.
fn duplicate_ids_openai() -> Value {
    json!({"messages": [
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"b\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "text of a"},
        {"role": "tool", "tool_call_id": "c1", "content": "text of b"},
        {"role": "assistant", "content": "Both read."}
    ]})
}

/// Ids, each with what its block carries.
type Ids = Vec<(String, String)>;

/// The `tool_use` and `tool_result` ids of an Anthropic transcript.
fn anthropic_ids(t: &Value) -> (Ids, Ids) {
    let (mut uses, mut results) = (Vec::new(), Vec::new());
    for m in t["messages"].as_array().unwrap() {
        for b in m["content"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("tool_use") => uses.push((
                    b["id"].as_str().unwrap().to_owned(),
                    b["input"]["path"].as_str().unwrap().to_owned(),
                )),
                Some("tool_result") => results.push((
                    b["tool_use_id"].as_str().unwrap().to_owned(),
                    b["content"].to_string(),
                )),
                _ => {}
            }
        }
    }
    (uses, results)
}

#[test]
fn repeated_ids_exported_to_anthropic_are_valid_there() {
    let s = Scratch::new();
    let input = s.path().join("dup.json");
    write_json(&input, &duplicate_ids_openai());
    let out = s.run(&["c", "import", "dup.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    // The warning says which export writes `c1` back.
    assert!(err.contains("`c1_2`") && err.contains("OpenAI"), "{err}");

    // Anthropic requires ids matching ^[a-zA-Z0-9_-]+$, unique per message.
    let valid = |id: &str| {
        !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let exported: Value =
        serde_json::from_str(&s.ok(&["c", "export", "--output-format", "anthropic"])).unwrap();
    s.ok(&[
        "compact",
        "dup.json",
        "--output-format",
        "anthropic",
        "-o",
        "compacted.json",
    ]);
    let compacted: Value =
        serde_json::from_slice(&std::fs::read(s.path().join("compacted.json")).unwrap()).unwrap();
    for t in [exported, compacted] {
        let (uses, results) = anthropic_ids(&t);
        assert_eq!(uses.len(), 2, "{t}");
        assert!(uses.iter().all(|(id, _)| valid(id)), "{uses:?}");
        assert_ne!(uses[0].0, uses[1].0, "{uses:?}");
        // Each result still answers its own call.
        let answer = |path: &str| {
            let id = &uses.iter().find(|(_, p)| p == path).unwrap().0;
            results.iter().find(|(r, _)| r == id).unwrap().1.clone()
        };
        assert!(answer("a").contains("text of a"), "{results:?}");
        assert!(answer("b").contains("text of b"), "{results:?}");
    }
    // Back to OpenAI it is as it was.
    let back: Value =
        serde_json::from_str(&s.ok(&["c", "export", "--output-format", "openai"])).unwrap();
    assert_eq!(back, duplicate_ids_openai());
}

// Finding 7: `use` and `rm` -----------------------------------------------

/// `c use X` racing `c rm X`: X is moved to the trash after `use` found it
/// and before it wrote `active`. The moment is made certain with a FIFO in
/// place of X's `meta.json`: `use` waits on it until the test has moved
/// the folder (as `rm` does) and then feeds it the metadata.
#[test]
fn use_of_a_conversation_removed_meanwhile_leaves_active_alone() {
    use std::io::Write;
    let s = Scratch::new();
    let x = s.import(&openai(s.path(), 1));
    let y = s.import(&openai(s.path(), 2));
    let ws = s.path().join(".ctxfold");
    assert_eq!(
        std::fs::read_to_string(ws.join("active")).unwrap().trim(),
        y
    );
    let dir = ws.join("conversations").join(&x);
    let meta = std::fs::read(dir.join("meta.json")).unwrap();
    std::fs::remove_file(dir.join("meta.json")).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(dir.join("meta.json"))
        .status()
        .unwrap();
    assert!(st.success());

    let child = s
        .command()
        .args(["c", "use", &x])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the FIFO to write waits for `use` to open it to read: from
    // then on `use` has found X. Move X away, then let `use` go on.
    let mut fifo = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("meta.json"))
        .unwrap();
    std::fs::create_dir_all(ws.join("trash")).unwrap();
    std::fs::rename(&dir, ws.join("trash").join(&x)).unwrap();
    fifo.write_all(&meta).unwrap();
    drop(fifo);
    let out = child.wait_with_output().unwrap();

    let err = failed(&out);
    assert!(err.contains("is gone"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.join("active")).unwrap().trim(),
        y,
        "active names a trashed conversation"
    );
}

// Findings 8 and 9: broken conversations can be removed, and are listed --

/// Two good conversations and two broken ones (a corrupt and a missing
/// `meta.json`): (good, corrupt, missing).
fn with_broken(s: &Scratch) -> ([String; 2], String, String) {
    let good = [
        s.import(&openai(s.path(), 1)),
        s.import(&openai(s.path(), 2)),
    ];
    let corrupt = s.import(&openai(s.path(), 3));
    let missing = s.import(&openai(s.path(), 4));
    let conv = s.path().join(".ctxfold/conversations");
    std::fs::write(conv.join(&corrupt).join("meta.json"), "{\"id\": \"oops\"").unwrap();
    std::fs::remove_file(conv.join(&missing).join("meta.json")).unwrap();
    (good, corrupt, missing)
}

#[test]
fn a_conversation_with_a_broken_meta_json_can_be_removed() {
    let s = Scratch::new();
    let (good, corrupt, missing) = with_broken(&s);
    let out = s.run(&["c", "ls"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("ctxfold conversation rm {corrupt}")),
        "the warning says how to remove it: {err}"
    );
    let conv = s.path().join(".ctxfold/conversations");
    let events = std::fs::read(conv.join(&corrupt).join("events.jsonl")).unwrap();
    // By its full id, and by a prefix.
    let prefix = &missing[..missing.len() - 1];
    for id in [corrupt.as_str(), prefix] {
        let out = s.run(&["c", "rm", id]);
        assert!(out.status.success(), "rm {id}: {}", stderr(&out));
    }
    let trash = s.path().join(".ctxfold/trash");
    assert_eq!(
        std::fs::read(trash.join(&corrupt).join("events.jsonl")).unwrap(),
        events,
        "the folder goes to the trash whole"
    );
    assert!(trash.join(&missing).join("events.jsonl").is_file());
    let out = s.run(&["c", "ls", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "nothing broken is left");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [good[0].as_str(), good[1].as_str()]);
}

#[test]
fn ls_in_json_lists_broken_conversations_too() {
    let s = Scratch::new();
    let (good, corrupt, missing) = with_broken(&s);
    let v = s.json(&["c", "ls"]);
    let entries = v.as_array().unwrap();
    assert_eq!(entries.len(), 4, "{v:#}");
    // Good entries keep exactly the fields they had.
    for (e, id) in entries.iter().zip(&good) {
        let mut keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            ["active", "created_at", "id", "last_used_at", "title"]
        );
        assert_eq!(e["id"], id.as_str());
    }
    let broken = |id: &str| entries.iter().find(|e| e["id"] == id).cloned().unwrap();
    for (id, why) in [(&corrupt, "expected"), (&missing, "No such file")] {
        let e = broken(id);
        assert_eq!(e["broken"], true, "{e}");
        let error = e["error"].as_str().unwrap();
        assert!(
            error.contains("meta.json") && error.contains(why),
            "{error}"
        );
    }
}

// Finding 11: policy flags without a range keep what config keeps --------

#[test]
fn policy_flags_without_a_range_take_the_keep_from_config() {
    let s = Scratch::new();
    let long = "The answer explains the module in some detail. ".repeat(8);
    let mut messages = Vec::new();
    for i in 0..8 {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        messages.push(json!({"role": "assistant", "content": format!("{i}: {long}")}));
    }
    let src = s.path().join("eight.json");
    write_json(&src, &json!({ "messages": messages }));
    let range = |config: Option<&Path>| {
        let mut args = Vec::new();
        if let Some(c) = config {
            args.extend(["-c", c.to_str().unwrap()]);
        }
        args.extend(["compact", src.to_str().unwrap(), "-s", "-o", "out.json"]);
        let v = s.json(&args);
        let c = v["compactions"].as_array().unwrap();
        c.iter()
            .map(|c| {
                (
                    c["from_turn"].as_u64().unwrap(),
                    c["to_turn"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    // Built in: keep the first turn and the last three (turns count from 0
    // in JSON).
    // Each turn is one step: the four kept turns hold the last four steps.
    assert_eq!(range(None), [(1, 4)]);
    // keep_first and keep_last each from the first rule that has it.
    let cfg = s.path().join("keep.toml");
    std::fs::write(
        &cfg,
        "[[compaction.rules]]\nkeep_last = 2\nreasoning = \"strip\"\n\n\
         [[compaction.rules]]\nkeep_first = 3\nkeep_last = 5\nreasoning = \"strip\"\n",
    )
    .unwrap();
    // Five turns kept (1–3, 7–8), five steps: the first turn's step is
    // not among the last four (the built-in keep_steps), it folds too.
    assert_eq!(range(Some(&cfg)), [(0, 0), (3, 5)]);
    // A rule with neither leaves the built-in values.
    std::fs::write(&cfg, "[[compaction.rules]]\nreasoning = \"strip\"\n").unwrap();
    assert_eq!(range(Some(&cfg)), [(1, 4)]);
}

// Finding 12: a fork cleans what a killed import or fork left ------------

#[test]
fn a_fork_removes_what_a_killed_fork_left() {
    let s = Scratch::new();
    let id = s.import(&openai(s.path(), 2));
    let staging = s.path().join(".ctxfold/conversations/.staging");
    let dead = staging.join("20260101-000000-dead");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("events.jsonl"), "x".repeat(5000)).unwrap();
    std::fs::write(staging.join("20260101-000000-dead.lock"), "").unwrap();
    let out = s.run(&["c", "fork", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("note: removed") && err.contains("20260101-000000-dead"),
        "{err}"
    );
    assert!(!dead.exists());
    assert!(!staging.join("20260101-000000-dead.lock").exists());
}
