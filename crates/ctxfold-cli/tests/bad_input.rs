//! Bad input gets a clear error naming the input and what was expected,
//! never a panic; what can be kept is kept with a warning.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::process::Output;

use common::{Scratch, corpus_conversations, stderr};

/// The command failed cleanly: non-zero exit, no panic, and stderr says
/// each of `needles`.
fn fails_saying(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected failure, got success: {err}"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    for n in needles {
        assert!(err.contains(n), "stderr lacks {n:?}: {err}");
    }
}

#[test]
fn malformed_json_names_the_file_and_the_position() {
    let s = Scratch::new();
    let f = s.path().join("broken.json");
    std::fs::write(
        &f,
        "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"},\n  oops]}",
    )
    .unwrap();
    let out = s.run(&["c", "import", f.to_str().unwrap()]);
    fails_saying(&out, &["broken.json", "invalid JSON", "line 2"]);
}

#[test]
fn truncated_jp_conversation_names_events_json() {
    let s = Scratch::new();
    let src = &corpus_conversations()[0];
    let dst = s.path().join("cut");
    std::fs::create_dir(&dst).unwrap();
    let events = std::fs::read(src.join("events.json")).unwrap();
    std::fs::write(dst.join("events.json"), &events[..events.len() / 2]).unwrap();
    std::fs::copy(src.join("metadata.json"), dst.join("metadata.json")).unwrap();
    let out = s.run(&["c", "import", dst.to_str().unwrap()]);
    fails_saying(&out, &["cut/events.json", "invalid JSON", "EOF"]);
    // Nothing half-imported was left behind.
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 0);
}

#[test]
fn missing_file_is_named() {
    let s = Scratch::new();
    let out = s.run(&["c", "import", "nope.json"]);
    fails_saying(&out, &["nope.json", "such file"]);
    let out = s.run(&["c", "import", "nope", "--input-format", "jp"]);
    fails_saying(&out, &["nope", "such file"]);
}

#[test]
fn wrong_format_says_what_was_expected() {
    let s = Scratch::new();
    let f = s.path().join("thing.json");
    std::fs::write(&f, r#"{"foo": 1}"#).unwrap();
    let out = s.run(&["c", "import", f.to_str().unwrap()]);
    fails_saying(
        &out,
        &[
            "thing.json",
            "cannot tell the transcript format",
            "--input-format",
        ],
    );

    // A chat transcript read as a JP conversation.
    let chat = s.path().join("chat.json");
    std::fs::write(
        &chat,
        r#"{"messages": [{"role": "user", "content": "hi"}]}"#,
    )
    .unwrap();
    let out = s.run(&[
        "c",
        "import",
        chat.to_str().unwrap(),
        "--input-format",
        "jp",
    ]);
    fails_saying(
        &out,
        &[
            "chat.json",
            "not a valid jp transcript",
            "expected a JSON array of JP events",
        ],
    );

    // A JP folder read as a ctxfold log.
    let jp = corpus_conversations().remove(0);
    let out = s.run(&[
        "c",
        "import",
        jp.to_str().unwrap(),
        "--input-format",
        "ctxfold",
    ]);
    fails_saying(&out, &["events.jsonl"]);

    // A chat transcript read as a ctxfold log.
    let out = s.run(&[
        "c",
        "import",
        chat.to_str().unwrap(),
        "--input-format",
        "ctxfold",
    ]);
    fails_saying(&out, &["chat.json", "line 1", "seq"]);
}

#[test]
fn unknown_transcript_format_name_lists_the_known_ones() {
    let s = Scratch::new();
    let out = s.run(&["c", "import", "x.json", "--input-format", "yaml"]);
    fails_saying(
        &out,
        &[
            "yaml",
            "--input-format",
            "auto, ctxfold, jp, openai, anthropic",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = s.run(&["c", "export", "--output-format", "yaml"]);
    fails_saying(
        &out,
        &["yaml", "--output-format", "ctxfold, jp, openai, anthropic"],
    );
}

#[test]
fn unknown_conversation_and_no_active_conversation_are_explained() {
    let s = Scratch::new();
    fails_saying(
        &s.run(&["c", "show", "zzz"]),
        &["no conversation `zzz`", "conversation ls"],
    );
    fails_saying(&s.run(&["c", "show"]), &["none is active"]);
    fails_saying(
        &s.run(&["c", "export", "--output-format", "jp"]),
        &["none is active"],
    );
}

#[test]
fn a_corrupt_line_inside_the_log_is_skipped_with_a_warning_and_kept() {
    let s = Scratch::new();
    let f = s.path().join("log.jsonl");
    std::fs::write(
        &f,
        "{\"seq\":0,\"ts\":\"t\",\"type\":\"user\",\"content\":\"a\"}\n\
         {\"seq\":1,\"ts\":\"t\",\"type\":\"assistant\",\"content\":\"b\"}\n",
    )
    .unwrap();
    let id = s.import(&f);
    let events = s.events_file(&id);
    let mut text = std::fs::read_to_string(&events).unwrap();
    text.insert_str(text.find('\n').unwrap() + 1, "{garbage\n");
    std::fs::write(&events, &text).unwrap();
    let out = s.run(&["c", "show", &id, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("events.jsonl:2") && err.contains("skipped"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["counts"]["records"], 2);
    // The line is still in the file: nothing the user had is lost.
    assert!(
        std::fs::read_to_string(&events)
            .unwrap()
            .contains("{garbage")
    );
}

#[test]
fn jp_records_that_cannot_be_understood_are_kept_and_written_back() {
    let s = Scratch::new();
    let dir = s.path().join("odd");
    std::fs::create_dir(&dir).unwrap();
    let events = r#"[
  {
    "timestamp": "2026-01-01 10:00:00.0",
    "type": "chat_request",
    "content": "hello"
  },
  {
    "timestamp": "2026-01-01 10:00:01.0",
    "type": "hologram",
    "beam": [
      1,
      2
    ]
  },
  {
    "timestamp": "2026-01-01 10:00:02.0",
    "type": "tool_call_request",
    "name": "no id here"
  },
  42
]
"#;
    std::fs::write(dir.join("events.json"), events).unwrap();
    std::fs::write(dir.join("metadata.json"), "{\n  \"title\": \"Odd\"\n}\n").unwrap();
    let out = s
        .command()
        .args(["c", "import", dir.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        "event 1", "hologram", "event 2", "no `id`", "event 3", "a number",
    ] {
        assert!(err.contains(needle), "warning lacks {needle:?}: {err}");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["id"].as_str().unwrap();
    assert_eq!(s.json(&["c", "show", id])["counts"]["records"], 4);
    let back = s.path().join("back");
    s.ok(&[
        "c",
        "export",
        id,
        "--output-format",
        "jp",
        "-o",
        back.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(back.join("events.json")).unwrap(),
        events
    );
}

/// `ctxfold ARGS` in `s`, killed if it has not ended within 30 s (a
/// command that waits for ever is a failure, not a hung suite).
fn within_30s(s: &Scratch, args: &[&str]) -> Output {
    let child = s
        .command()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("ctxfold {args:?} still waits after 30 s");
        }
    }
}

/// A named pipe as the input of `c import` or `compact`: with nothing
/// writing to it, a clear error at once (it used to wait for ever for a
/// writer); with a writer already there, read as any file.
#[test]
fn a_named_pipe_as_input_never_waits_for_ever() {
    let s = Scratch::new();
    let fifo = s.path().join("session.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let f = fifo.to_str().unwrap();
    let out_file = s.path().join("out.json");
    let out = out_file.to_str().unwrap();
    for args in [
        &["c", "import", f][..],
        &["c", "import", f, "--input-format", "openai"][..],
        &["compact", f, "-o", out][..],
    ] {
        let got = within_30s(&s, args);
        fails_saying(&got, &["session.json", "named pipe"]);
    }
    assert!(!out_file.exists());
    assert!(s.json(&["c", "ls"]).as_array().unwrap().is_empty());
    // A writer that is there first: the pipe is read whole.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rate-limiter-session.openai.json"
    );
    let mut writer = std::process::Command::new("sh")
        .args(["-c", &format!("cat '{example}' > '{f}'")])
        .spawn()
        .unwrap();
    // The writer's open waits for a reader: give it the time to start.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let got = within_30s(&s, &["c", "import", f, "--input-format", "openai"]);
    assert!(got.status.success(), "{}", stderr(&got));
    assert!(writer.wait().unwrap().success());
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 1);
}

/// `c export -o -` writes to standard output, as `compact -o -` does,
/// never a file named `-`.
#[test]
fn export_to_dash_is_standard_output() {
    let s = Scratch::new();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rate-limiter-session.openai.json"
    );
    let id = s.ok(&["c", "import", example]).trim().to_owned();
    let to_dash = s.ok(&["c", "export", &id, "--output-format", "openai", "-o", "-"]);
    let plain = s.ok(&["c", "export", &id, "--output-format", "openai"]);
    assert_eq!(to_dash, plain);
    assert!(serde_json::from_str::<serde_json::Value>(&to_dash).is_ok());
    assert!(!s.path().join("-").exists(), "a file named - was written");
    // A JP conversation is a folder: `-` cannot be one.
    let out = s.run(&["c", "export", &id, "--output-format", "jp", "-o", "-"]);
    fails_saying(&out, &["folder"]);
}
