//! The `compact` tool's call in memory: what the model writes never drives
//! the user's terminal and is recorded as shown; the preview's files go
//! with a declined call; and what was approved is recorded only if the
//! conversation still gives it.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::Cursor;

use ctxfold_compactor::assistant::record_proposals;
use ctxfold_compactor::{CompactError, Conversation, Memory};
use ctxfold_config::RunMode;
use ctxfold_core::planner::ToolHints;
use ctxfold_core::{Body, Log, Record};
use ctxfold_host::approval::{Prompt, decide_with};
use ctxfold_host::builtin::compact::{CompactTool, HostEffect};
use ctxfold_host::turn::ToolOutput;
use serde_json::{Value, json};

/// Four turns of plain text, the last in progress.
fn log() -> Log {
    let mut log = Log::new();
    let turns = [
        ("set up the repo", "done: cargo init made the crate"),
        (
            "fix the divider bug",
            "fixed, the cursor works now on both sides",
        ),
        ("run the tests", "all 12 pass"),
        ("fold the old turns", "proposing"),
    ];
    for (u, a) in turns {
        for b in [
            Body::TurnStart,
            Body::User {
                content: u.into(),
                author: None,
            },
            Body::Assistant { content: a.into() },
        ] {
            log.push(Record::new(log.next_seq(), "2026-01-01T00:00:00Z", b));
        }
    }
    log
}

/// Call the tool with `args`, answering the prompt with `keys`; the tool's
/// output and what the prompt showed.
fn call(tool: &CompactTool, log: &Log, args: &Value, keys: &str) -> (ToolOutput, String) {
    let mut input = Cursor::new(keys.as_bytes().to_vec());
    let mut shown = Vec::new();
    let out = tool.call(log, args, &mut |run, a, yes, presenter| {
        decide_with(
            "compact",
            run,
            a,
            yes,
            Some(Prompt {
                input: &mut input,
                output: &mut shown,
                editor: "false".into(),
            }),
            presenter,
        )
    });
    (out, String::from_utf8(shown).unwrap())
}

fn tool(dir: &std::path::Path) -> CompactTool {
    let mut t = CompactTool::new("conv", ToolHints::default());
    t.preview_dir = dir.to_owned();
    assert_eq!(t.run, RunMode::Ask);
    t
}

#[test]
fn a_note_with_terminal_escapes_is_shown_and_recorded_as_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let note = format!(
        "ok\u{1b}[2K\r\u{1b}[1A     why   harmless\n  2. turns 1–1 → strip reasoning {}",
        "x".repeat(300)
    );
    let args = json!({"rules": [{"before_quote": "run the tests", "reasoning": "strip", "summary": "Repo set up; divider fixed.", "note": note}]});
    let (out, shown) = call(&tool(dir.path()), &log(), &args, "y\n");
    assert!(!out.is_error, "{}", out.content);
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    let why = shown.lines().find(|l| l.contains("why")).unwrap();
    assert!(why.contains("ok\u{FFFD}[2K"), "{why}");
    assert_eq!(why.chars().count() - "     why   ".len(), 200, "{why}");
    let [HostEffect::Compact { approved, .. }] = &out.effects[..] else {
        panic!("{:?}", out.effects);
    };
    let recorded = approved[0].note.as_deref().unwrap();
    assert!(!recorded.chars().any(char::is_control), "{recorded:?}");
    assert!(
        why.ends_with(recorded),
        "shown as recorded: {why} / {recorded}"
    );
}

#[test]
fn a_declined_call_leaves_no_preview_file_and_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"rules": [{"before_quote": "run the tests", "summary": "Repo set up; divider fixed.", "note": "n"}]});
    let (out, shown) = call(&tool(dir.path()), &log(), &args, "n\n\n");
    assert!(out.is_error);
    assert!(out.effects.is_empty());
    assert!(shown.contains("folded away, in full: "), "{shown}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Approved, the file stays for the user to read.
    let (out, _) = call(&tool(dir.path()), &log(), &args, "y\n");
    assert!(!out.is_error);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn what_was_approved_is_recorded_only_if_the_conversation_still_gives_it() {
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"rules": [{"before_quote": "run the tests", "summary": "Repo set up; divider fixed.", "note": "n"}]});
    let (out, _) = call(&tool(dir.path()), &log(), &args, "y\n");
    let [
        HostEffect::Compact {
            proposals,
            approved,
        },
    ] = &out.effects[..]
    else {
        panic!("{:?}", out.effects);
    };
    // While the user decided, a new turn began elsewhere: the compaction
    // would now be deferred to another turn than the one approved.
    let mut changed = log();
    for b in [
        Body::TurnStart,
        Body::User {
            content: "meanwhile".into(),
            author: None,
        },
    ] {
        changed.push(Record::new(changed.next_seq(), "t", b));
    }
    let before = changed.len();
    let mut conv = Conversation::new(changed, &Memory);
    let err = record_proposals(
        &mut conv,
        proposals,
        approved,
        &ToolHints::default(),
        None,
        Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(err, CompactError::Changed(_)), "{err}");
    assert_eq!(conv.log().len(), before, "nothing was recorded");
    // Unchanged, it is recorded as approved.
    let mut conv = Conversation::new(log(), &Memory);
    let done = record_proposals(
        &mut conv,
        proposals,
        approved,
        &ToolHints::default(),
        None,
        Vec::new(),
    )
    .unwrap();
    assert_eq!(done[0].compaction, approved[0]);
}

/// A preview file that cannot be written (the folder is a file here, which
/// even root cannot write into) is said on the prompt; the preview and the
/// decision go on, and what is approved is recorded as before.
#[test]
fn a_preview_file_that_cannot_be_written_is_said_and_the_call_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let mut t = tool(dir.path());
    t.preview_dir = not_a_dir;
    let args = json!({"rules": [{"before_quote": "run the tests", "summary": "Repo set up; divider fixed.", "note": "n"}]});
    let (out, shown) = call(&t, &log(), &args, "y\n");
    assert!(
        shown.contains("(the preview file could not be written: "),
        "{shown}"
    );
    assert!(shown.contains("why   n"), "{shown}");
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.effects.len(), 1);
}
