//! The assistant's `compact` tool (SPEC §9) through the real binary: a
//! scripted model server on 127.0.0.1 plays the assistant, proposing
//! compactions by quoting the conversation; the user approves with
//! `--yes` or on a pseudo-terminal.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::model::{Say, events, model, on_a_terminal, workspace};
use common::{Scratch, stderr};
use serde_json::{Value, json};

/// The first three turns every test starts from: (message, answer).
const TURNS: [&str; 2] = ["set up the repo", "fix the divider bug in pane.rs"];

/// A conversation of three turns (the third runs one `echo_args` call with
/// long arguments), against a model that then plays `script`. Returns the
/// workspace and the requests the model got.
fn three_turns(kind: &'static str, script: Vec<Say>) -> (Scratch, SeenRequests) {
    three_turns_with(kind, "", script)
}

/// [`three_turns`] with more config.
fn three_turns_with(kind: &'static str, config: &str, script: Vec<Say>) -> (Scratch, SeenRequests) {
    let long = "x".repeat(300);
    let mut all = vec![
        Say::Text(
            "The repo is set up: cargo init made the crate, and a README says how to build and test it.",
        ),
        Say::Text(
            "Fixed: so the divider cursor works if I move to the divider from either side of the pane.",
        ),
        Say::Tool("echo_args", json!({"path": long})),
        Say::Text("All 12 tests pass, the divider tests too."),
    ];
    all.extend(script);
    let (base, seen) = model(kind, all);
    let s = workspace(kind, &base, config);
    let out = s.run(&["q", "-m", "fake/m", "--new", TURNS[0]]);
    assert!(out.status.success(), "{}", stderr(&out));
    for m in [TURNS[1], "run the tests"] {
        let out = s.run(&["q", m]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let n = seen.lock().unwrap().len();
    (s, SeenRequests { seen, from: n })
}

/// The requests of the server from the scripted part on.
struct SeenRequests {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    from: usize,
}

impl SeenRequests {
    fn all(&self) -> Vec<Value> {
        self.seen.lock().unwrap()[self.from..].to_vec()
    }
}

fn tool_results(s: &Scratch) -> Vec<Value> {
    events(s)
        .into_iter()
        .filter(|r| r["type"] == "tool_result")
        .collect()
}

fn assistant_compactions(s: &Scratch) -> Vec<Value> {
    events(s)
        .into_iter()
        .filter(|r| r["type"] == "compaction" && r["source"] == "assistant")
        .collect()
}

fn messages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect()
}

/// Quotes that name no turn, two turns, or a summary come back as tool
/// errors the model reads (and corrects); a good one is recorded, as
/// written by the assistant, in force from the next turn. `-u compact`
/// forces the first call only.
#[test]
fn quotes_that_miss_are_errors_the_model_corrects() {
    let summary = "Turn 2 fixed the divider bug in pane.rs.";
    let (s, seen) = three_turns(
        "openai",
        vec![
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "nowhere to be found", "summary": "x", "note": "n"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "the divider", "summary": "x", "note": "n"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"after_quote": "Made with cargo init", "reasoning": "strip", "note": "n"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "run the tests", "summary": summary, "note": "The fix is in the file."}]}),
            ),
            Say::Text("Folded."),
        ],
    );
    // Turn 1 already has a summary (the user's).
    s.ok(&[
        "c",
        "compact",
        "--from",
        "1",
        "--to",
        "1",
        "--summary-text",
        "Made with cargo init.",
    ]);
    let out = s.run(&["q", "-u", "compact", "--yes", "fold", "the", "old", "turns"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let results = tool_results(&s);
    let compact: Vec<&Value> = results[1..].iter().collect();
    let text = |k: usize| compact[k]["content"].as_str().unwrap().to_owned();
    assert_eq!(compact.len(), 4, "{results:?}");
    assert_eq!(compact[0]["is_error"], true);
    assert!(
        text(0).contains("no message holds this text"),
        "{}",
        text(0)
    );
    assert_eq!(compact[1]["is_error"], true);
    assert!(text(1).contains("matches in 2 places"), "{}", text(1));
    assert!(text(1).contains("turn 2: \""), "{}", text(1));
    assert!(text(1).contains("turn 3: \""), "{}", text(1));
    assert_eq!(compact[2]["is_error"], true);
    assert!(
        text(2).contains("inside the summary that stands for turn 1"),
        "{}",
        text(2)
    );
    assert_eq!(compact[3]["is_error"], false, "{}", text(3));
    assert!(text(3).contains("turns 1–2"), "{}", text(3));

    // The model read each error before its next call.
    let requests = seen.all();
    for k in 0..3 {
        let next = requests[k + 1].to_string();
        let said = serde_json::to_string(&text(k)).unwrap();
        assert!(next.contains(&said[1..said.len() - 1]), "request {}", k + 1);
    }
    // -u forces the first call only; the tool is offered throughout.
    assert_eq!(
        requests[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "compact"}})
    );
    assert!(requests[1].get("tool_choice").is_none());
    for r in &requests {
        let tools = r["tools"].to_string();
        assert!(tools.contains("\"compact\""), "{tools}");
    }

    let recorded = assistant_compactions(&s);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let c = &recorded[0];
    assert_eq!(
        (c["from_turn"].as_u64(), c["to_turn"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(c["summary"]["text"], summary);
    assert_eq!(
        c["summary"]["provenance"],
        json!({"kind": "supplied", "author": "assistant"})
    );
    assert_eq!(c["note"], "The fix is in the file.");
    // Turn 4 (index 3) is in progress: in force from turn 5 (index 4).
    assert_eq!(c["deferred_until_turn"], 4);
}

/// An approved compaction waits for the next turn: the rest of the turn's
/// requests extend the one before byte for byte, and the next turn's
/// request is compacted. `keep_last = 0` is raised to 1: the turn in
/// progress (its request, the call) stays. Both providers.
#[test]
fn compactions_take_effect_when_the_next_turn_starts() {
    for kind in ["openai", "anthropic"] {
        let summary = "We set up the repo, fixed the divider bug in pane.rs, and all tests pass.";
        let (s, seen) = three_turns(
            kind,
            vec![
                Say::Tool(
                    "compact",
                    json!({"rules": [{"keep_last": 0, "summary": summary, "note": "Everything is in the files."}]}),
                ),
                Say::Tool("echo_args", json!({"path": "a.txt"})),
                Say::Text("Folded."),
                Say::Text("Next, the docs."),
            ],
        );
        let out = s.run(&["q", "-t", "compact", "--yes", "fold everything, keep this"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));

        let recorded = assistant_compactions(&s);
        assert_eq!(recorded.len(), 1, "{kind}: {recorded:?}");
        assert_eq!(recorded[0]["from_turn"], 0);
        assert_eq!(
            recorded[0]["to_turn"], 2,
            "{kind}: the turn in progress is kept"
        );
        let result = &tool_results(&s)[1];
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("keep_last 0 was raised to 1"),
            "{kind}: {result}"
        );

        // Between turns: listed as the assistant's, deferred.
        let show = s.ok(&["c", "show"]);
        assert!(
            show.contains(
                "[deferred until turn 5, by assistant] — Everything is in the files.\n      kept "
            ),
            "{kind}: {show}"
        );
        // What it will keep once in force: the request it quotes, not the
        // ones it paraphrases.
        assert!(show.contains("1/3 user requests"), "{kind}: {show}");

        let out = s.run(&["q", "what next"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let requests = seen.all();
        assert_eq!(requests.len(), 4, "{kind}");
        // Within the turn: each request is the one before plus what came
        // after it, byte for byte.
        for k in 1..3 {
            let (before, after) = (messages(&requests[k - 1]), messages(&requests[k]));
            assert_eq!(after[..before.len()], before[..], "{kind}: request {k}");
        }
        let within = requests[2].to_string();
        assert!(within.contains(TURNS[1]), "{kind}");
        // The next turn: folded, the summary in its place; turn 4 kept.
        let next = requests[3].to_string();
        assert!(!next.contains(TURNS[1]), "{kind}: {next}");
        assert!(!next.contains("cargo init made the crate"), "{kind}");
        assert!(next.contains(summary), "{kind}: {next}");
        assert!(next.contains("fold everything, keep this"), "{kind}");

        let show = s.ok(&["c", "show"]);
        assert!(show.contains("[active, by assistant]"), "{kind}: {show}");
        let print = s.ok(&["c", "print"]);
        assert!(
            print.contains("by the assistant, active: summary written by assistant]\nnote: Everything is in the files."),
            "{kind}: {print}"
        );
    }
}

/// Two calls in one turn: each is planned against the log as the one
/// before left it. A written summary partly overlapping the first call's
/// (still deferred) summary is refused, naming both ranges; a tool policy
/// over the same turns is recorded after it.
#[test]
fn a_second_call_sees_the_first() {
    let s1 = "Turns 1-2: repo set up, divider bug fixed in pane.rs.";
    let (s, seen) = three_turns(
        "openai",
        vec![
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "run the tests", "summary": s1, "note": "first"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"after_quote": "set up the repo", "summary": "Turns 2-3 in brief.", "note": "second"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"tool_calls": "strip", "note": "third"}]}),
            ),
            Say::Text("Folded."),
            Say::Text("Next."),
        ],
    );
    let out = s.run(&["q", "-t", "compact", "--yes", "fold"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let results = tool_results(&s);
    let second = results[2]["content"].as_str().unwrap();
    assert_eq!(results[2]["is_error"], true);
    assert!(
        second.contains("turns 2–3 partly overlaps the summary of turns 1–2"),
        "{second}"
    );
    let recorded = assistant_compactions(&s);
    let notes: Vec<&str> = recorded
        .iter()
        .map(|c| c["note"].as_str().unwrap())
        .collect();
    assert_eq!(notes, ["first", "third"]);
    assert!(recorded[0]["seq"].as_u64() < recorded[1]["seq"].as_u64());
    // Each recorded just before its call's result.
    let all = events(&s);
    for c in &recorded {
        let at = all.iter().position(|r| r["seq"] == c["seq"]).unwrap();
        assert_eq!(all[at + 1]["type"], "tool_result");
    }

    let out = s.run(&["q", "next"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let next = seen.all().last().unwrap().to_string();
    assert!(next.contains(s1), "{next}");
    assert!(
        next.contains("[echo_args succeeded; its output (") && !next.contains(&"x".repeat(300)),
        "turn 3's tool call is stripped: {next}"
    );
}

/// A call that cannot be approved (no terminal, no `--yes`) records
/// nothing; neither does a call whose rules have nothing to do.
#[test]
fn a_declined_call_records_nothing() {
    let (s, _seen) = three_turns(
        "openai",
        vec![
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "run the tests", "summary": "Brief.", "note": "n"}]}),
            ),
            Say::Tool(
                "compact",
                json!({"rules": [{"keep_last": 3, "reasoning": "strip", "note": "n"}]}),
            ),
            Say::Text("OK."),
        ],
    );
    let out = s.run(&["q", "-t", "compact", "fold"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&s);
    let declined = results[1]["content"].as_str().unwrap();
    assert!(declined.contains("declined"), "{declined}");
    assert!(declined.contains("no one could be asked"), "{declined}");
    let nothing = results[2]["content"].as_str().unwrap();
    assert!(nothing.starts_with("nothing to compact"), "{nothing}");
    assert!(assistant_compactions(&s).is_empty());
}

/// On a terminal: the preview says everything needed to decide (turns,
/// first and last words, the summary's length, the note, the saving, and
/// a file holding what would be folded away); `y` records, `n` records
/// nothing and the model reads the reason, `e` records the rules as the
/// user edited them.
#[test]
fn approval_on_a_terminal_previews_records_declines_and_edits() {
    let summary = "ORIGINAL summary: the repo and the divider fix.";
    for keys in ["y\n", "n\nkeep them\n", "e\ny\n"] {
        let (s, seen) = three_turns(
            "openai",
            vec![
                Say::Tool(
                    "compact",
                    json!({"rules": [{"before_quote": "run the tests", "summary": summary, "note": "Both are in the files."}]}),
                ),
                Say::Text("OK."),
            ],
        );
        let ed = s.path().join("ed.sh");
        std::fs::write(&ed, "#!/bin/sh\nsed -i 's/ORIGINAL/EDITED/' \"$1\"\n").unwrap();
        let mut mode = std::fs::metadata(&ed).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&ed, mode).unwrap();
        let out = on_a_terminal(&s, "q -t compact fold", keys, Some(ed.to_str().unwrap()));
        let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        assert!(out.status.success(), "{keys:?}: {screen}{}", stderr(&out));

        for part in [
            "compact — 1 rule proposed, in effect from the next turn",
            "1. turns 1–2 → the assistant's summary (8 words), ~",
            "tokens smaller",
            "from  \"set up the repo\"",
            "to    \"…er cursor works if I move to the divider from either side of the pane.\"",
            "why   Both are in the files.",
            "Run compact? [y/n/e/?]",
        ] {
            assert!(screen.contains(part), "{keys:?}: {part:?} not in {screen}");
        }
        // The last preview's (an edit shows a new one, replacing the files
        // of the one before).
        let file = screen
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("folded away, in full: "))
            .unwrap_or_else(|| panic!("no preview file in {screen}"));
        let path = std::path::Path::new(file.trim());
        if keys.starts_with('n') {
            assert!(
                !path.exists(),
                "a declined call's preview file is removed: {file}"
            );
        } else {
            let dropped = std::fs::read_to_string(path).unwrap();
            assert!(
                dropped.contains("turn 2, user (replaced by the summary)"),
                "{dropped}"
            );
            assert!(dropped.contains(TURNS[1]), "{dropped}");
            assert!(
                dropped.contains("the repo and the divider fix."),
                "{dropped}"
            );
        }

        let recorded = assistant_compactions(&s);
        let result = &tool_results(&s)[1];
        let content = result["content"].as_str().unwrap();
        match keys {
            "y\n" => {
                assert_eq!(recorded.len(), 1);
                assert_eq!(recorded[0]["summary"]["text"], summary);
                assert!(!content.contains("edited"), "{content}");
                // The user is told what was recorded and how to undo it.
                assert!(
                    screen.contains("compaction #1 recorded (turns 1–2: summary written by assistant in place of 4 events), in effect from the next turn; undo: ctxfold conversation compact --reset=1"),
                    "{screen}"
                );
            }
            "e\ny\n" => {
                assert_eq!(recorded.len(), 1);
                assert_eq!(
                    recorded[0]["summary"]["text"],
                    "EDITED summary: the repo and the divider fix."
                );
                assert!(content.contains("The user edited your rules"), "{content}");
                // The edit was previewed again before `y`.
                assert_eq!(screen.matches("1 rule proposed").count(), 2, "{screen}");
            }
            _ => {
                assert!(recorded.is_empty(), "{recorded:?}");
                assert_eq!(result["is_error"], true);
                assert!(content.contains("keep them"), "{content}");
                let last = seen.all().last().unwrap().to_string();
                assert!(last.contains("keep them"), "{last}");
            }
        }
    }
}

/// Without `-t compact` the tool is not offered, and a call to it is an
/// error result like any unknown tool.
#[test]
fn the_tool_is_off_unless_named() {
    let (s, seen) = three_turns(
        "openai",
        vec![
            Say::Tool(
                "compact",
                json!({"rules": [{"keep_last": 1, "reasoning": "strip", "note": "n"}]}),
            ),
            Say::Text("OK."),
        ],
    );
    let out = s.run(&["q", "--yes", "fold"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!seen.all()[0]["tools"].to_string().contains("\"compact\""));
    let result = &tool_results(&s)[1];
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("there is no tool named `compact`"),
        "{result}"
    );
    assert!(assistant_compactions(&s).is_empty());
}

/// `[tools.compact] run`: `unattended` records without asking (and says
/// so to the model); `edit` opens the rules in the editor first, then
/// shows the preview and asks: nothing is recorded unseen.
#[test]
fn the_run_mode_comes_from_config() {
    let call = || {
        vec![
            Say::Tool(
                "compact",
                json!({"rules": [{"before_quote": "run the tests", "summary": "ORIGINAL summary: the repo and the divider fix.", "note": "n"}]}),
            ),
            Say::Text("OK."),
        ]
    };
    let (s, _) = three_turns_with("openai", "[tools.compact]\nrun = \"unattended\"\n", call());
    let out = s.run(&["q", "-t", "compact", "fold"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(assistant_compactions(&s).len(), 1);
    let content = tool_results(&s)[1]["content"].as_str().unwrap().to_owned();
    assert!(content.starts_with("Recorded without asking"), "{content}");

    let (s, _) = three_turns_with("openai", "[tools.compact]\nrun = \"edit\"\n", call());
    let ed = s.path().join("ed.sh");
    std::fs::write(&ed, "#!/bin/sh\nsed -i 's/ORIGINAL/EDITED/' \"$1\"\n").unwrap();
    let mut mode = std::fs::metadata(&ed).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&ed, mode).unwrap();
    let out = on_a_terminal(&s, "q -t compact fold", "y\n", Some(ed.to_str().unwrap()));
    let screen = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(out.status.success(), "{screen}{}", stderr(&out));
    assert_eq!(screen.matches("1 rule proposed").count(), 1, "{screen}");
    let recorded = assistant_compactions(&s);
    assert_eq!(
        recorded[0]["summary"]["text"],
        "EDITED summary: the repo and the divider fix."
    );
}
