//! Hardening of transcript formats and output files (issue 7), through the
//! real binary: outputs never overwrite the input, are replaced whole (a JP
//! folder as a unit), keep their mode and leave no temporary files; imports
//! warn about repeated or unanswered tool-call ids, keep every JP field,
//! read the file's own times, accept a byte-order mark and an empty
//! transcript, bound the input size and say clearly what is wrong.

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

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Scratch, corpus, stderr};
use faults::SmallDisk;
use serde_json::{Value, json};

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rate-limiter-session.openai.json")
}

/// A small OpenAI transcript with one tool call, two turns.
fn small_openai() -> Value {
    json!({"messages": [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt b.txt"},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "You are welcome."}
    ]})
}

/// Names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure, got success; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr(out)
}

// ---- item 1: never overwrite the input, never write through a link ----

#[test]
fn an_output_symlink_to_a_hard_link_of_the_input_is_refused() {
    let s = Scratch::new();
    let input = s.path().join("in.json");
    write_json(&input, &small_openai());
    let before = std::fs::read(&input).unwrap();
    std::fs::hard_link(&input, s.path().join("hard.json")).unwrap();
    symlink(s.path().join("hard.json"), s.path().join("out.json")).unwrap();
    let out = s.run(&["compact", "in.json", "-o", "out.json", "-r"]);
    let err = failed(&out);
    assert!(err.contains("out.json"), "{err}");
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), before, "the input changed");
}

#[test]
fn a_jp_output_folder_of_links_into_the_input_is_refused() {
    let s = Scratch::new();
    let src = corpus().join("17758406187-missing-date-in-version-string");
    let input = s.path().join("in");
    std::fs::create_dir(&input).unwrap();
    for f in entries(&src) {
        std::fs::copy(src.join(&f), input.join(&f)).unwrap();
    }
    let before = std::fs::read(input.join("events.json")).unwrap();
    let out_dir = s.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    for f in entries(&input) {
        symlink(input.join(&f), out_dir.join(&f)).unwrap();
    }
    let out = s.run(&["compact", "in", "-o", "out", "-r"]);
    let err = failed(&out);
    assert!(err.contains("is the input"), "{err}");
    assert_eq!(std::fs::read(input.join("events.json")).unwrap(), before);
}

#[test]
fn a_symlink_output_is_replaced_and_its_target_left_alone() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    std::fs::write(s.path().join("other.json"), "keep me").unwrap();
    symlink(s.path().join("other.json"), s.path().join("out.json")).unwrap();
    s.ok(&["compact", "in.json", "-o", "out.json", "-r"]);
    let meta = std::fs::symlink_metadata(s.path().join("out.json")).unwrap();
    assert!(meta.file_type().is_file(), "out.json is still a link");
    assert_eq!(
        std::fs::read_to_string(s.path().join("other.json")).unwrap(),
        "keep me"
    );
    assert_eq!(
        read_json(&s.path().join("out.json"))["messages"][0]["role"],
        "user"
    );
}

#[test]
fn dev_stdout_is_still_written_through() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    let out = s
        .command()
        .args([
            "compact",
            "in.json",
            "-o",
            "/dev/stdout",
            "-r",
            "--format",
            "json",
        ])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    // The transcript, then the report.
    let transcript: Value = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(transcript["messages"][0]["content"], "list the files");
}

// ---- item 5: temporary files ----

#[test]
fn a_temp_file_left_by_a_killed_run_is_cleaned_at_the_next_write() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    // What a run killed between writing and renaming leaves behind.
    let stale = s.path().join(".out.json.ctxfold-tmp-Ab12Cd");
    std::fs::write(&stale, "half a transcr").unwrap();
    let stale_dir = s.path().join(".jp-out.ctxfold-tmp-Zz99Yy");
    std::fs::create_dir(&stale_dir).unwrap();
    std::fs::write(stale_dir.join("events.json"), "[").unwrap();
    s.ok(&["compact", "in.json", "-o", "out.json", "-r"]);
    assert!(!stale.exists(), "stale temp file kept");
    s.ok(&[
        "compact",
        "in.json",
        "-o",
        "jp-out",
        "--output-format",
        "jp",
        "-r",
    ]);
    assert!(!stale_dir.exists(), "stale staging folder kept");
    let names = entries(s.path());
    assert!(
        !names.iter().any(|n| n.contains("ctxfold-tmp")),
        "{names:?}"
    );
}

#[test]
fn a_failed_write_leaves_the_old_output_and_no_temp_file() {
    let s = Scratch::new();
    let t = tempfile::tempdir().unwrap();
    let fs = SmallDisk::new(&t.path().join("disk"), 16 * 1024);
    write_json(&s.path().join("small.json"), &small_openai());
    let dest = fs.path().join("out.json");
    let dest_s = dest.to_str().unwrap();
    s.ok(&["compact", "small.json", "-o", dest_s, "-r"]);
    let before = std::fs::read(&dest).unwrap();
    // The example's 32 KB do not fit in 16 KiB.
    let big = example();
    let mut cmd = s.command();
    cmd.args(["compact", big.to_str().unwrap(), "-o", dest_s, "-r"]);
    let out = fs.command(cmd).output().unwrap();
    let err = failed(&out);
    assert!(
        err.contains("out.json") && faults::out_of_space(&err),
        "{err}"
    );
    assert_eq!(std::fs::read(&dest).unwrap(), before);
    assert_eq!(entries(fs.path()), ["out.json"]);
}

// ---- item 7: a JP folder is written as a unit ----

#[test]
fn a_jp_folder_that_cannot_be_written_whole_is_left_as_it_was() {
    let s = Scratch::new();
    let t = tempfile::tempdir().unwrap();
    let fs = SmallDisk::new(&t.path().join("disk"), 256 * 1024);
    let dest = fs.path().join("out");
    let dest_s = dest.to_str().unwrap();
    write_json(&s.path().join("small.json"), &small_openai());
    s.ok(&[
        "compact",
        "small.json",
        "-o",
        dest_s,
        "--output-format",
        "jp",
        "-r",
    ]);
    let events_before = std::fs::read(dest.join("events.json")).unwrap();
    // A JP conversation whose events fit and whose metadata does not.
    let jp = s.path().join("jp");
    std::fs::create_dir(&jp).unwrap();
    write_json(
        &jp.join("events.json"),
        &json!([
            {"timestamp": "2026-01-01 10:00:00.0", "type": "turn_start"},
            {"timestamp": "2026-01-01 10:00:01.0", "type": "chat_request", "content": "other"},
            {"timestamp": "2026-01-01 10:00:02.0", "type": "chat_response", "message": "reply"}
        ]),
    );
    write_json(
        &jp.join("metadata.json"),
        &json!({"title": "x".repeat(400_000)}),
    );
    let mut cmd = s.command();
    cmd.args(["compact", "jp", "-o", dest_s, "-r"]);
    let out = fs.command(cmd).output().unwrap();
    let err = failed(&out);
    assert!(err.contains("out") && faults::out_of_space(&err), "{err}");
    assert_eq!(
        std::fs::read(dest.join("events.json")).unwrap(),
        events_before,
        "events.json replaced although the folder could not be written"
    );
    assert_eq!(entries(fs.path()), ["out"]);
}

#[test]
fn a_jp_export_replaces_the_folder_and_refuses_one_holding_other_files() {
    let s = Scratch::new();
    // A conversation without base_config.json.
    let id = s.import(&corpus().join("17648402467-flexible-llm-provider-architecture-design"));
    let dest = s.path().join("exp");
    std::fs::create_dir(&dest).unwrap();
    // A stale base_config.json from an older export goes; the folder is new.
    std::fs::write(dest.join("base_config.json"), "{}").unwrap();
    s.ok(&["c", "export", &id, "--output-format", "jp", "-o", "exp"]);
    assert_eq!(entries(&dest), ["events.json", "metadata.json"]);
    // A folder with anything else in it is not a JP export to replace.
    let home = s.path().join("notes");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("todo.txt"), "mine").unwrap();
    let out = s.run(&["c", "export", &id, "--output-format", "jp", "-o", "notes"]);
    let err = failed(&out);
    assert!(err.contains("todo.txt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(home.join("todo.txt")).unwrap(),
        "mine"
    );
}

// ---- item 24: modes ----

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_replaced_output_keeps_its_mode_and_a_new_one_follows_the_umask() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    let out = s.path().join("out.json");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o664)).unwrap();
    s.ok(&["compact", "in.json", "-o", "out.json", "-r"]);
    assert_eq!(mode(&out), 0o664);
    // New files, through a shell that sets the umask.
    let run = |args: &str| {
        let st = Command::new("sh")
            .arg("-c")
            .arg(format!("umask 027; exec \"$0\" {args}"))
            .arg(common::BIN)
            .current_dir(s.path())
            .env("HOME", s.path())
            .output()
            .unwrap();
        assert!(st.status.success(), "{}", stderr(&st));
    };
    run("compact in.json -o new.json -r");
    assert_eq!(mode(&s.path().join("new.json")), 0o640);
    run("compact in.json -o newjp --output-format jp -r");
    assert_eq!(mode(&s.path().join("newjp")), 0o750);
    assert_eq!(mode(&s.path().join("newjp/events.json")), 0o640);
}

// ---- items 9 and 10: tool-call ids ----

fn duplicate_ids_openai() -> Value {
    json!({"messages": [
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"b\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "text of a"},
        {"role": "tool", "tool_call_id": "c1", "content": "text of b"},
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "Done."}
    ]})
}

#[test]
fn duplicate_tool_call_ids_warn_and_keep_every_call_and_result() {
    let s = Scratch::new();
    let input = s.path().join("dup.json");
    write_json(&input, &duplicate_ids_openai());
    let out = s.run(&["c", "import", "dup.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning:") && err.contains("`c1`"), "{err}");
    // Paired by position: the first result answers the first call (path a),
    // the second the second (path b).
    let raw = s.json(&["c", "print"]);
    let pairs: Vec<(String, String)> = raw
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "tool_call" || r["type"] == "tool_result")
        .map(|r| {
            let what = match r["type"].as_str() {
                Some("tool_call") => r["arguments"]["path"].as_str().unwrap().to_owned(),
                _ => r["content"].as_str().unwrap().to_owned(),
            };
            (r["id"].as_str().unwrap().to_owned(), what)
        })
        .collect();
    let id_of = |what: &str| pairs.iter().find(|(_, w)| w == what).unwrap().0.clone();
    assert_eq!(id_of("a"), id_of("text of a"), "{pairs:?}");
    assert_eq!(id_of("b"), id_of("text of b"), "{pairs:?}");
    assert_ne!(id_of("a"), id_of("b"), "{pairs:?}");
    // The view keeps both calls and both results.
    let view = s.json(&["c", "print", "--compacted"]);
    let kinds: Vec<&str> = view["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_call").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_result").count(),
        2,
        "{kinds:?}"
    );
    // Compacting an unrelated turn keeps them too, with their own ids.
    s.ok(&[
        "compact", "dup.json", "-o", "out.json", "-r", "--from", "2", "--to", "2",
    ]);
    let msgs = read_json(&s.path().join("out.json"))["messages"].clone();
    assert_eq!(msgs[1]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(msgs[1]["tool_calls"][1]["id"], "c1");
    assert_eq!(msgs[2]["tool_call_id"], "c1");
    assert_eq!(msgs[3]["tool_call_id"], "c1");
    assert_eq!(msgs[3]["content"], "text of b");
    // Export gives the transcript back as it was.
    let back = s.ok(&["c", "export", "--output-format", "openai"]);
    let back: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(back, duplicate_ids_openai());
}

#[test]
fn duplicate_tool_use_ids_in_anthropic_are_kept_too() {
    let s = Scratch::new();
    let t = json!({"system": "be brief", "messages": [
        {"role": "user", "content": "run it twice"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "run", "input": {"n": 1}},
            {"type": "tool_use", "id": "t1", "name": "run", "input": {"n": 2}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "two"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "one"}
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    ]});
    write_json(&s.path().join("dup.json"), &t);
    let out = s.run(&["c", "import", "dup.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("`t1`"), "{}", stderr(&out));
    let view = s.json(&["c", "print", "--compacted"]);
    let results = view["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "tool_result")
        .count();
    assert_eq!(results, 2);
    let back: Value =
        serde_json::from_str(&s.ok(&["c", "export", "--output-format", "anthropic"])).unwrap();
    assert_eq!(back, t);
}

#[test]
fn a_tool_result_without_its_call_warns_on_import() {
    let s = Scratch::new();
    let t = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "tool", "tool_call_id": "ghost", "content": "where from?"}
    ]});
    write_json(&s.path().join("orphan.json"), &t);
    let out = s.run(&["c", "import", "orphan.json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning:") && err.contains("`ghost`"), "{err}");
    assert!(err.contains("no tool call"), "{err}");
}

// ---- item 11: every JP field survives ----

#[test]
fn jp_records_with_every_optional_field_come_back_byte_for_byte() {
    let s = Scratch::new();
    let dir = s.path().join("jp");
    std::fs::create_dir(&dir).unwrap();
    // Keys in unusual orders, fields ctxfold does not model, fields named
    // like ctxfold's own (`author`, `seq`, `ts`, `jp`).
    let events = r#"[
  {
    "type": "turn_start",
    "timestamp": "2026-01-01 10:00:00.0",
    "seq": 7
  },
  {
    "timestamp": "2026-01-01 10:00:01.0",
    "type": "chat_request",
    "author": "ana",
    "content": "hello",
    "schema": {
      "type": "object"
    },
    "metadata": {
      "k": "dmFsdWU="
    }
  },
  {
    "timestamp": "2026-01-01 10:00:01.5",
    "type": "chat_request",
    "content": "again",
    "author": {
      "name": "bot"
    },
    "ts": "x",
    "jp": 1
  },
  {
    "metadata": {},
    "timestamp": "2026-01-01 10:00:02.0",
    "type": "chat_response",
    "message": "hi",
    "extra_field": [
      1,
      2
    ]
  },
  {
    "timestamp": "2026-01-01 10:00:03.0",
    "type": "tool_call_request",
    "name": "ls",
    "id": "c1",
    "arguments": {
      "path": "Lg=="
    },
    "content": "odd"
  },
  {
    "timestamp": "2026-01-01 10:00:04.0",
    "type": "tool_call_response",
    "id": "c1",
    "content": "YS50eHQ="
  }
]
"#;
    std::fs::write(dir.join("events.json"), events).unwrap();
    std::fs::write(dir.join("metadata.json"), "{\n  \"title\": \"t\"\n}\n").unwrap();
    let out = s.run(&["c", "import", "jp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    s.ok(&["c", "export", &id, "--output-format", "jp", "-o", "back"]);
    let back = std::fs::read_to_string(s.path().join("back/events.json")).unwrap();
    assert_eq!(back, events);
}

// ---- item 17: times ----

#[test]
fn chat_transcripts_use_their_own_times_for_duration_bounds() {
    let s = Scratch::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Long enough that a digest summary is smaller than the turn.
    let long = "about the old topic, at some length. ".repeat(60);
    let t = json!({"messages": [
        {"role": "user", "content": format!("old question {long}"), "timestamp": now - 5 * 3600},
        {"role": "assistant", "content": format!("old answer {long}"), "timestamp": now - 5 * 3600 + 10},
        {"role": "user", "content": "new question", "timestamp": now - 600},
        {"role": "assistant", "content": "new answer", "timestamp": now - 590}
    ]});
    write_json(&s.path().join("timed.json"), &t);
    let v = s.json(&[
        "compact",
        "timed.json",
        "-o",
        "out.json",
        "-s",
        "--to",
        "2h",
    ]);
    assert_eq!(v["timeline"][0]["label"], "summarized", "{v}");
    assert_eq!(v["timeline"][0]["to_turn"], 1, "{v}");
    assert_eq!(v["timeline"][1]["label"], "kept", "{v}");
    // The times are kept as they were.
    let out = read_json(&s.path().join("out.json"));
    let last = out["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["timestamp"], now - 590);
}

#[test]
fn a_transcript_without_times_says_so_up_front() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    let out = s.run(&["compact", "in.json", "-r", "--from", "2h"]);
    let err = failed(&out);
    assert!(err.contains("no timestamps"), "{err}");
    assert!(err.contains("turn numbers"), "{err}");
}

// ---- item 22: clear messages ----

#[test]
fn a_byte_order_mark_is_accepted() {
    let s = Scratch::new();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(serde_json::to_vec(&small_openai()).unwrap());
    std::fs::write(s.path().join("bom.json"), bytes).unwrap();
    s.ok(&["compact", "bom.json", "-o", "out.json", "-r"]);
    assert_eq!(
        read_json(&s.path().join("out.json"))["messages"][0]["role"],
        "user"
    );
}

#[test]
fn text_that_is_not_utf8_is_named_once_with_its_position() {
    let s = Scratch::new();
    std::fs::write(s.path().join("bad.json"), b"{\"messages\": [\n\"\xFF\"]}").unwrap();
    let err = failed(&s.run(&["compact", "bad.json"]));
    assert_eq!(err.matches("UTF-8").count(), 1, "{err}");
    assert!(err.contains("bad.json") && err.contains("line 2"), "{err}");
}

#[test]
fn arguments_given_as_an_object_are_read() {
    let s = Scratch::new();
    let t = json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "done"}
    ]});
    write_json(&s.path().join("obj.json"), &t);
    s.ok(&["c", "import", "obj.json"]);
    let back: Value =
        serde_json::from_str(&s.ok(&["c", "export", "--output-format", "openai"])).unwrap();
    assert_eq!(back, t);
}

#[test]
fn an_output_naming_a_folder_for_a_one_file_format_is_explained() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    let err = failed(&s.run(&["compact", "in.json", "-o", "sub/", "-r"]));
    assert!(err.contains("sub/") && err.contains("a file name"), "{err}");
    assert!(!err.contains("Not a directory"), "{err}");
    std::fs::create_dir(s.path().join("dir")).unwrap();
    let err = failed(&s.run(&["compact", "in.json", "-o", "dir", "-r"]));
    assert!(err.contains("is a folder"), "{err}");
}

#[test]
fn a_jp_folder_that_cannot_be_read_is_not_called_an_unknown_format() {
    let s = Scratch::new();
    let dir = s.path().join("jp");
    std::fs::create_dir(&dir).unwrap();
    symlink(s.path().join("missing.json"), dir.join("events.json")).unwrap();
    let err = failed(&s.run(&["compact", "jp"]));
    assert!(!err.contains("cannot tell"), "{err}");
    assert!(err.contains("events.json"), "{err}");
    let dir2 = s.path().join("jp2");
    std::fs::create_dir_all(dir2.join("events.json")).unwrap();
    let err = failed(&s.run(&["compact", "jp2"]));
    assert!(!err.contains("cannot tell"), "{err}");
    assert!(
        err.contains("events.json") && err.contains("folder"),
        "{err}"
    );
}

#[test]
fn an_empty_transcript_is_valid() {
    let s = Scratch::new();
    write_json(&s.path().join("empty.json"), &json!({"messages": []}));
    s.ok(&["compact", "empty.json", "-o", "out.json", "-r"]);
    assert_eq!(
        read_json(&s.path().join("out.json")),
        json!({"messages": []})
    );
    s.ok(&["c", "import", "empty.json"]);
}

// ---- item 23: input size ----

#[test]
fn an_input_larger_than_the_limit_is_refused() {
    let s = Scratch::new();
    let out = s
        .command()
        .args([
            "compact",
            example().to_str().unwrap(),
            "-o",
            "out.json",
            "-r",
        ])
        .env("CTXFOLD_MAX_INPUT_BYTES", "1000")
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(err.contains("CTXFOLD_MAX_INPUT_BYTES"), "{err}");
    assert!(err.contains("1000"), "{err}");
    assert!(!s.path().join("out.json").exists());
}

#[test]
fn an_endless_input_stops_at_the_limit() {
    let s = Scratch::new();
    let out = s
        .command()
        .args(["compact", "/dev/zero", "-o", "out.json"])
        .env("CTXFOLD_MAX_INPUT_BYTES", "100000")
        .output()
        .unwrap();
    let err = failed(&out);
    assert!(
        err.contains("/dev/zero") && err.contains("CTXFOLD_MAX_INPUT_BYTES"),
        "{err}"
    );
    let bad = s
        .command()
        .args(["compact", "/dev/null"])
        .env("CTXFOLD_MAX_INPUT_BYTES", "lots")
        .output()
        .unwrap();
    let err = failed(&bad);
    assert!(
        err.contains("CTXFOLD_MAX_INPUT_BYTES") && err.contains("lots"),
        "{err}"
    );
}

#[test]
fn the_report_still_counts_bytes_for_a_file_output() {
    let s = Scratch::new();
    write_json(&s.path().join("in.json"), &small_openai());
    let v = s.json(&["compact", "in.json", "-o", "out.json", "-r"]);
    let size = std::fs::metadata(s.path().join("out.json")).unwrap().size();
    assert_eq!(v["bytes"]["after"], size);
}

/// A ctxfold log, however it is named or detected, is bounded like every
/// other input, and a line of it that is not UTF-8 is one bad line, not a
/// reason to refuse the file.
#[test]
fn a_ctxfold_log_is_bounded_and_read_line_by_line() {
    let s = Scratch::new();
    let log = s.path().join("log.jsonl");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(
        br#"{"seq":0,"ts":"2026-01-01T00:00:00Z","type":"user","content":"hello"}"#,
    );
    bytes.push(b'\n');
    bytes.extend_from_slice(b"\xff\xfe not text\n");
    bytes.extend_from_slice(
        br#"{"seq":1,"ts":"2026-01-01T00:00:01Z","type":"assistant","content":"hi"}"#,
    );
    bytes.push(b'\n');
    std::fs::write(&log, &bytes).unwrap();
    for format in ["auto", "ctxfold"] {
        let out = s
            .command()
            .args([
                "compact",
                "log.jsonl",
                "--input-format",
                format,
                "-o",
                "out.jsonl",
                "-r",
            ])
            .env("CTXFOLD_MAX_INPUT_BYTES", "100")
            .output()
            .unwrap();
        let err = failed(&out);
        assert!(err.contains("CTXFOLD_MAX_INPUT_BYTES"), "{format}: {err}");
        let out = s
            .command()
            .args([
                "compact",
                "log.jsonl",
                "--input-format",
                format,
                "-o",
                "out.jsonl",
                "-r",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("log.jsonl:2"),
            "{format}: {}",
            stderr(&out)
        );
        let written = std::fs::read_to_string(s.path().join("out.jsonl")).unwrap();
        assert_eq!(written.lines().count(), 2, "{format}: {written}");
    }
}
