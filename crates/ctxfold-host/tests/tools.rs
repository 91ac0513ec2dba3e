//! Running local tools: real commands, real processes.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use ctxfold_config::{RunMode, ToolDecl};
use ctxfold_host::tools::{Outcome, STDERR_TAIL, ToolResult, run_tool, tool_specs};
use serde_json::{Value, json};

fn tool(command: &[&str]) -> ToolDecl {
    ToolDecl {
        name: "t".into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        description: "a test tool".into(),
        parameters: json!({"type": "object", "properties": {}}),
        run: RunMode::Unattended,
        timeout: Duration::from_secs(20),
        max_output_bytes: 100_000,
    }
}

fn sh(script: &str) -> ToolDecl {
    tool(&["sh", "-c", script])
}

fn run(decl: &ToolDecl, args: &Value) -> ToolResult {
    run_tool(decl, args, &AtomicBool::new(false), &[])
}

#[test]
fn the_arguments_arrive_as_json_on_standard_input_and_standard_output_is_the_result() {
    let r = run(
        &sh("cat; echo done"),
        &json!({"path": "src/main.rs", "n": 3}),
    );
    assert_eq!(
        r,
        ToolResult {
            content: "{\"path\":\"src/main.rs\",\"n\":3}\ndone\n".into(),
            is_error: false,
            outcome: Outcome::Success,
        }
    );
}

#[test]
fn a_tool_that_prints_nothing_says_so() {
    let r = run(&sh("true"), &json!({}));
    assert_eq!((r.content.as_str(), r.is_error), ("(no output)", false));
}

#[test]
fn a_non_zero_exit_is_an_error_with_the_output_and_the_end_of_standard_error() {
    let r = run(
        &sh("echo partial; echo 'no such file: x' >&2; exit 3"),
        &json!({}),
    );
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(r.is_error);
    assert_eq!(
        r.content,
        "t failed: exit status 3.\nStandard output:\npartial\n\nStandard error:\nno such file: x"
    );
}

#[test]
fn a_command_past_its_timeout_is_killed_with_what_it_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    // A background child that holds the pipes open: only killing the whole
    // process group lets the call return without waiting on it.
    let mut decl = sh(&format!(
        "sleep 300 & echo $! > '{}'; echo started; wait",
        pid_file.display()
    ));
    decl.timeout = Duration::from_secs(1);
    let r = run(&decl, &json!({}));
    assert_eq!(r.outcome, Outcome::TimedOut, "{}", r.content);
    assert!(r.is_error);
    assert_eq!(
        r.content,
        "t timed out after 1 second and was stopped.\nStandard output:\nstarted\n"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(gone(pid), "the background sleep {pid} still runs");
}

/// Whether the process has died (gone, or a zombie not yet reaped). A
/// killed process takes a moment to die: wait for it, up to 10 s.
fn gone(pid: u32) -> bool {
    let stat = Path::new("/proc").join(pid.to_string()).join("stat");
    for _ in 0..1000 {
        match std::fs::read_to_string(&stat) {
            Err(_) => return true,
            // `pid (comm) STATE …`: the state follows the last `)`.
            Ok(s)
                if s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with(['Z', 'X'])) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    false
}

#[test]
fn ten_megabytes_of_output_are_cut_to_the_limit_with_a_note() {
    let r = run(&sh("yes | head -c 10000000"), &json!({}));
    assert_eq!(r.outcome, Outcome::Success);
    let note = "[output cut: 9900000 of 10000000 bytes not shown (max_output_bytes = 100000)]";
    assert!(
        r.content.ends_with(note),
        "{}",
        &r.content[r.content.len() - 200..]
    );
    let body = &r.content[..r.content.len() - note.len()];
    assert_eq!(body.len(), 100_000);
    assert!(
        body.bytes()
            .enumerate()
            .all(|(i, b)| b == if i % 2 == 0 { b'y' } else { b'\n' })
    );
}

#[test]
fn both_streams_are_drained_at_once_and_standard_error_keeps_its_end() {
    // 5 MB on each stream, interleaved: a host reading one pipe to its end
    // before the other would block the command on the full second pipe.
    let r = run(
        &sh(
            "yes out | head -c 5000000 & yes err | head -c 4999996 >&2; echo last >&2; wait; exit 1",
        ),
        &json!({}),
    );
    assert_eq!(r.outcome, Outcome::Failed);
    let (head, rest) = r.content.split_once("\nStandard output:\n").unwrap();
    assert_eq!(head, "t failed: exit status 1.");
    let (stdout, stderr) = rest
        .split_once(&format!(
            "\nStandard error (last {STDERR_TAIL} of 5000001 bytes):\n"
        ))
        .unwrap();
    assert!(stdout.ends_with(
        "\n[output cut: 4900000 of 5000000 bytes not shown (max_output_bytes = 100000)]"
    ));
    assert!(stderr.ends_with("err\nerr\nlast"), "{stderr}");
    assert!(stderr.len() <= STDERR_TAIL);
}

#[test]
fn a_cut_never_splits_a_character() {
    let mut decl = sh("printf 'ééé'");
    decl.max_output_bytes = 5;
    let r = run(&decl, &json!({}));
    assert_eq!(
        r.content,
        "éé\n[output cut: 2 of 6 bytes not shown (max_output_bytes = 5)]"
    );
}

#[test]
fn arguments_that_are_not_an_object_are_an_error_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let decl = sh(&format!("touch '{}'", marker.display()));
    for (args, what) in [
        (
            json!("{\"path\": \"x\"}"),
            "a string: \"{\\\"path\\\": \\\"x\\\"}\"",
        ),
        (json!([1, 2]), "an array: [1,2]"),
        (Value::Null, "null: null"),
    ] {
        let r = run(&decl, &args);
        assert_eq!(r.outcome, Outcome::NotRun);
        assert!(r.is_error);
        assert_eq!(
            r.content,
            format!("t was not run: its arguments must be a JSON object, not {what}")
        );
    }
    assert!(!marker.exists());
}

#[test]
fn a_missing_program_is_an_error_result() {
    let r = run(&tool(&["ctxfold-no-such-program", "--x"]), &json!({}));
    assert_eq!(r.outcome, Outcome::NotRun);
    assert_eq!(
        r.content,
        "t was not run: cannot start ctxfold-no-such-program: no such program (command = [\"ctxfold-no-such-program\", \"--x\"])"
    );
}

#[test]
fn a_command_that_ignores_large_arguments_does_not_block() {
    // 1 MB of arguments, more than a pipe holds, to a command that never
    // reads them.
    let big = "x".repeat(1 << 20);
    let r = run(&sh("echo ignored"), &json!({"text": big}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        ("ignored\n", Outcome::Success)
    );
}

#[test]
fn a_cancelled_run_is_interrupted() {
    let mut decl = sh("echo begun; sleep 300");
    // No clock holds this deadline: the run waits for the command alone.
    decl.timeout = Duration::MAX;
    let r = run_tool(&decl, &json!({}), &AtomicBool::new(true), &[]);
    assert_eq!(r.outcome, Outcome::Interrupted);
    assert!(r.is_error);
    assert!(
        r.content
            .starts_with("interrupted: t was stopped before it finished."),
        "{}",
        r.content
    );
}

#[test]
fn a_declined_call_tells_the_model_why() {
    let r = ToolResult::declined(Some("use the test runner instead"));
    assert_eq!(
        (r.content.as_str(), r.is_error, r.outcome),
        (
            "The user declined to run this tool call. Reason: use the test runner instead",
            true,
            Outcome::Declined
        )
    );
}

#[test]
fn tool_specs_carry_name_description_and_schema() {
    let mut a = tool(&["ls"]);
    a.name = "list_files".into();
    a.parameters = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let specs = tool_specs([&a]);
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].name, "list_files");
    assert_eq!(specs[0].description, "a test tool");
    assert_eq!(specs[0].parameters, a.parameters);
}
