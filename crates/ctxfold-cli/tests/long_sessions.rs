//! Agents' session files longer than one batch of records (issue 48: `c
//! import` stores a session's records batch by batch as it reads them, so
//! a long session is never whole in memory): generated sessions
//! (`ctxfold_testkit::agent_session`) imported and exported back byte for
//! byte, their title and extras (known only at the file's end) in the
//! conversation's metadata, and `compact FILE`'s output read back as it
//! was written.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;

use common::Scratch;
use ctxfold_testkit::agent_session::{self, Size};

/// `c export ID` in `format` to `out`; the bytes written.
fn export(s: &Scratch, id: &str, format: &str, out: &Path) -> Vec<u8> {
    s.ok(&[
        "c",
        "export",
        id,
        "--output-format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    std::fs::read(out).unwrap()
}

#[test]
fn a_long_claude_code_session_imports_in_batches_and_exports_byte_for_byte() {
    let s = Scratch::new();
    let mut bytes = Vec::new();
    // Several batches of records (4,096 a batch).
    agent_session::claude_code(&mut bytes, 12_000, Size::Typical).unwrap();
    // A title, known only at the end, and no final newline, which the
    // extras written last say.
    bytes.extend_from_slice(
        br#"{"type":"custom-title","customTitle":"a long session","sessionId":"5e55a0b1-c1a0-4de0-a0de-000000000001"}"#,
    );
    let file = s.path().join("long.jsonl");
    std::fs::write(&file, &bytes).unwrap();

    let v = s.json(&["c", "import", file.to_str().unwrap()]);
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(v["format"], "claude-code", "{v}");
    let n = v["records"].as_u64().unwrap();
    assert!(n > 3 * 4096, "{v}");
    let show = s.json(&["c", "show", &id]);
    assert_eq!(show["title"], "a long session", "{show}");
    assert_eq!(show["imported_from"]["format"], "claude-code", "{show}");
    // Every record in the log, numbered from 0 without a gap.
    let log = std::fs::read_to_string(s.events_file(&id)).unwrap();
    assert_eq!(log.lines().count() as u64, n);
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["seq"].as_u64(), Some(n - 1));

    let back = export(&s, &id, "claude-code", &s.path().join("back.jsonl"));
    assert!(back == bytes, "the export differs from the session read");
}

#[test]
fn a_long_codex_rollout_imports_in_batches_and_exports_byte_for_byte() {
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::codex(&mut bytes, 12_000, Size::Short).unwrap();
    let file = s.path().join("rollout.jsonl");
    std::fs::write(&file, &bytes).unwrap();

    let v = s.json(&["c", "import", file.to_str().unwrap()]);
    let id = v["id"].as_str().unwrap().to_owned();
    assert_eq!(v["format"], "codex", "{v}");
    assert!(v["records"].as_u64().unwrap() > 2 * 4096, "{v}");
    let back = export(&s, &id, "codex", &s.path().join("back.jsonl"));
    assert!(back == bytes, "the export differs from the rollout read");
}

#[test]
fn a_compacted_long_session_reads_back_as_it_was_written() {
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::claude_code(&mut bytes, 9_000, Size::Short).unwrap();
    let file = s.path().join("session.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let out = s.path().join("compacted.jsonl");
    s.ok(&[
        "compact",
        file.to_str().unwrap(),
        "-t",
        "-r",
        "--keep-last",
        "3",
        "-o",
        out.to_str().unwrap(),
    ]);
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() < bytes.len(), "nothing was folded");
    assert_eq!(std::fs::read(&file).unwrap(), bytes, "the original changed");
    // The compacted session is a session of its own: imported and
    // exported again, the same bytes.
    let id = s.import(&out);
    let back = export(&s, &id, "claude-code", &s.path().join("back.jsonl"));
    assert!(back == written, "the compacted session does not read back");
}

#[test]
fn a_compacted_long_codex_rollout_reads_back_as_it_was_written() {
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::codex(&mut bytes, 9_000, Size::Typical).unwrap();
    let file = s.path().join("rollout.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let out = s.path().join("compacted.jsonl");
    let args = |out: &str| {
        [
            "compact",
            file.to_str().unwrap(),
            "-t",
            "-r",
            "--keep-last",
            "3",
            "-o",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain([out.to_owned()])
        .collect::<Vec<_>>()
    };
    let to_file = args(out.to_str().unwrap());
    s.ok(&to_file.iter().map(String::as_str).collect::<Vec<_>>());
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() < bytes.len(), "nothing was folded");
    let id = s.import(&out);
    let back = export(&s, &id, "codex", &s.path().join("back.jsonl"));
    assert!(back == written, "the compacted rollout does not read back");
    // Written to standard output, the same session but for its new id.
    let to_stdout = args("-");
    let printed = s.ok(&to_stdout.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(printed.len(), written.len());
}

#[test]
fn a_stored_log_is_exported_as_it_loads_with_its_bad_lines_and_torn_tail() {
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::claude_code(&mut bytes, 3_000, Size::Short).unwrap();
    let file = s.path().join("session.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let id = s.import(&file);
    let events = s.events_file(&id);
    let log = std::fs::read(&events).unwrap();

    // A line that is not a record is skipped, as a load skips it, and said.
    let mut bad = log.clone();
    bad.extend_from_slice(b"not a record\n");
    std::fs::write(&events, &bad).unwrap();
    let out = s.path().join("back.jsonl");
    let a = s.run(&[
        "c",
        "export",
        &id,
        "--output-format",
        "claude-code",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(a.status.success(), "{a:?}");
    let stderr = String::from_utf8_lossy(&a.stderr);
    assert_eq!(
        stderr.matches("skipped, not a ctxfold record").count(),
        1,
        "{stderr}"
    );
    assert!(std::fs::read(&out).unwrap() == bytes, "the export differs");

    // A torn last line: loaded instead, which sets it aside.
    let mut torn = log;
    torn.extend_from_slice(b"{\"seq\":");
    std::fs::write(&events, &torn).unwrap();
    let back = export(&s, &id, "claude-code", &out);
    assert!(back == bytes, "the export differs");
    assert!(events.with_file_name("events.jsonl.torn").exists());
}

#[test]
fn a_long_codex_rollout_with_bad_lines_compacts_as_it_imports() {
    // `compact FILE` reads a rollout from the file a line at a time (not
    // its bytes whole): the same warnings as `c import`, which reads its
    // bytes, and the bad lines written back.
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::codex(&mut bytes, 3_000, Size::Typical).unwrap();
    let lines = bytes.iter().filter(|&&b| b == b'\n').count();
    bytes.extend_from_slice(b"{\"timestamp\":\"2026-11-01T09:00:00Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"note\",\"text\":\"\xff\"}}\n");
    bytes.extend_from_slice(b"{\"timestamp\":\"2026");
    let file = s.path().join("rollout.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let f = file.to_str().unwrap();
    let out = s.path().join("compacted.jsonl");
    let compacted = s.run(&[
        "compact",
        f,
        "-t",
        "-r",
        "--keep-last",
        "3",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(compacted.status.success(), "{}", common::stderr(&compacted));
    let imported = s.run(&["c", "import", f]);
    assert!(imported.status.success(), "{}", common::stderr(&imported));
    let warnings = |o: &std::process::Output| -> Vec<String> {
        common::stderr(o)
            .lines()
            .filter(|l| l.contains("rollout.jsonl: line "))
            .map(str::to_owned)
            .collect()
    };
    let said = warnings(&compacted);
    assert_eq!(said, warnings(&imported));
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].contains(&format!("line {}: not valid UTF-8", lines + 1)),
        "{said:?}"
    );
    assert!(
        said[1].contains(&format!("line {}: a torn last line", lines + 2)),
        "{said:?}"
    );
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() < bytes.len(), "nothing was folded");
    assert!(
        written.ends_with(b"\n{\"timestamp\":\"2026"),
        "the torn line is not written back as it was"
    );
}

#[test]
fn compact_file_says_what_detection_says_before_it_reads_a_rollout() {
    // The rollout read a line at a time is told from its first line;
    // everything else is said as before: a folder, then a bad limit,
    // then a file over the limit.
    let s = Scratch::new();
    let mut bytes = Vec::new();
    agent_session::codex(&mut bytes, 50, Size::Short).unwrap();
    let file = s.path().join("rollout.jsonl");
    std::fs::write(&file, &bytes).unwrap();
    let out = s.path().join("out.jsonl");
    let run = |input: &Path, limit: &str| {
        let got = s
            .command()
            .args([
                "compact",
                input.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ])
            .env("CTXFOLD_MAX_INPUT_BYTES", limit)
            .output()
            .unwrap();
        assert!(!got.status.success());
        common::stderr(&got)
    };
    let folder = run(s.path(), "abc");
    assert!(
        folder.contains("cannot tell the transcript format"),
        "{folder}"
    );
    let limit = run(&file, "abc");
    assert!(limit.contains("`abc` is not a number of bytes"), "{limit}");
    let over = run(&file, "100");
    assert!(
        over.contains("more than 100 bytes, the input limit"),
        "{over}"
    );
    assert!(!out.exists());
}
