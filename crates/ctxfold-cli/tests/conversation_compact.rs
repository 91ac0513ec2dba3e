//! `conversation compact`, `--dry-run`, `--reset`, `--restore`, `show`'s
//! compaction list, `print --compacted`, `fork -k`, and their errors,
//! through the real binary.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{Scratch, corpus, stderr};
use serde_json::Value;

const CONVERSATION: &str = "17738348630-workspace-sanitization-strategy"; // 9 turns

fn setup() -> (Scratch, String) {
    let s = Scratch::new();
    let id = s.import(&corpus().join(CONVERSATION));
    (s, id)
}

fn records(s: &Scratch, id: &str) -> u64 {
    s.json(&["c", "show", id])["counts"]["records"]
        .as_u64()
        .unwrap()
}

fn view_tokens(s: &Scratch, id: &str) -> usize {
    // The compacted view's size, in characters of its JSON.
    s.json(&["c", "print", id, "--compacted"])["items"]
        .to_string()
        .len()
}

#[test]
fn dry_run_writes_nothing_and_says_would() {
    let (s, id) = setup();
    let before = std::fs::read(s.events_file(&id)).unwrap();
    let out = s.ok(&["c", "compact", &id, "--dry-run"]);
    assert!(
        out.contains(
            "would compact turns 2–6: 3 reasoning blocks stripped, 10 tool requests and 22 tool results stripped"
        ),
        "{out}"
    );
    assert!(out.contains("dry run: nothing was written"), "{out}");
    assert_eq!(std::fs::read(s.events_file(&id)).unwrap(), before);
    let json = s.json(&["c", "compact", &id, "--dry-run"]);
    assert_eq!(json["dry_run"], true);
    assert!(json["tokens"]["after"].as_u64() < json["tokens"]["before"].as_u64());
}

#[test]
fn compact_appends_and_reset_restore_undo_by_appending() {
    let (s, id) = setup();
    let n0 = records(&s, &id);
    let full = view_tokens(&s, &id);
    // Whole turns (explicit keeps: no step folding), for a single record.
    let out = s.ok(&[
        "c",
        "compact",
        &id,
        "--keep-first",
        "1",
        "--keep-last",
        "3",
        "--note",
        "old tool output",
    ]);
    assert!(out.contains("compacted turns 2–6"), "{out}");
    assert!(out.contains("appended 1 compaction record(s)"), "{out}");
    s.ok(&["c", "compact", &id, "-k", "s:2..3"]);
    assert_eq!(records(&s, &id), n0 + 2);
    let compacted = view_tokens(&s, &id);
    assert!(compacted < full);

    // show lists them, numbered, with policies, source, note, status.
    let text = s.ok(&["c", "show", &id]);
    assert!(
        text.contains(
            "#1 turns 2–6: strip reasoning, strip tool calls [active, by user] — old tool output"
        ),
        "{text}"
    );
    assert!(
        text.contains("#2 turns 2–3: summary by digest [active, by user]"),
        "{text}"
    );
    // Compactions asked for by hand carry no budget, and show no line of it.
    assert!(!text.contains("budget:"), "{text}");
    let shown = s.json(&["c", "show", &id]);
    assert!(shown["compactions"][0].get("budget").is_none(), "{shown}");
    assert_eq!(shown["compactions"][0]["note"], "old tool output");
    assert_eq!(
        shown["compactions"][1]["summary"]["provenance"]["summarizer"],
        "digest"
    );

    // Reset #2: appended, nothing deleted; the view loses the summary.
    s.ok(&["c", "compact", &id, "--reset=2"]);
    assert_eq!(records(&s, &id), n0 + 3);
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["compactions"][1]["status"], "revoked");
    assert_eq!(shown["compactions"][0]["status"], "active");
    let items = s.json(&["c", "print", &id, "--compacted"])["items"].clone();
    assert!(
        !items
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["kind"] == "summary")
    );

    // Reset all: the view is the raw conversation again.
    s.ok(&["c", "compact", &id, "--reset"]);
    assert_eq!(view_tokens(&s, &id), full);

    // Restore all revoked: back to both compactions.
    let out = s.ok(&["c", "compact", &id, "--restore"]);
    assert!(out.contains("restored 2 compaction(s)"), "{out}");
    assert_eq!(view_tokens(&s, &id), compacted);
    assert_eq!(records(&s, &id), n0 + 5, "two compactions and three resets");

    // A number that does not exist is an error naming how many there are.
    let bad = s.run(&["c", "compact", &id, "--reset=9"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no compaction 9: this conversation has 2"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn print_compacted_marks_summaries_with_their_turns() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "4"]);
    let text = s.ok(&["c", "print", &id, "--compacted"]);
    assert!(
        text.contains("[ctxfold]\n[The text that follows summarizes turns 2–4"),
        "{text}"
    );
    assert!(text.contains("Digest of turns 2–4"));
    let v = s.json(&["c", "print", &id, "--compacted"]);
    let summary = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "summary")
        .unwrap();
    assert_eq!(summary["turns"], serde_json::json!([2, 4]));
    assert!(summary["origin"]["seq"][0].as_u64() < summary["origin"]["seq"][1].as_u64());
}

#[test]
fn derived_summary_grows_over_an_overlapping_one_and_says_so() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-s", "--from", "2", "--to", "4"]);
    let out = s.ok(&["c", "compact", &id, "-s", "--from", "4", "--to", "6"]);
    assert!(
        out.contains("compacted turns 2–6: summary by digest"),
        "{out}"
    );
    assert!(
        out.contains("asked for turns 4–6; grown to cover the summaries it overlaps"),
        "{out}"
    );
    // A written summary cannot grow: partial overlap is refused, naming turns.
    let bad = s.run(&[
        "c",
        "compact",
        &id,
        "--summary-text",
        "mine",
        "--from",
        "5",
        "--to",
        "8",
    ]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("turns 5–8 partly overlaps the summary of turns 2–6"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn fork_copies_and_compacts_the_copy_only() {
    let (s, id) = setup();
    let n0 = records(&s, &id);
    let forked = s.json(&["c", "fork", &id, "-k", "r+t:..-2"]);
    let new = forked["id"].as_str().unwrap();
    assert_ne!(new, id);
    assert_eq!(forked["compactions"], 1);
    assert_eq!(records(&s, &id), n0, "the original is untouched");
    assert_eq!(records(&s, new), n0 + 1);
    assert!(view_tokens(&s, new) < view_tokens(&s, &id));
    let plain = s.json(&["c", "fork", &id]);
    assert_eq!(records(&s, plain["id"].as_str().unwrap()), n0);
}

#[test]
fn nothing_to_compact_writes_nothing() {
    let s = Scratch::new();
    let id = s.import(&corpus().join("17758406187-missing-date-in-version-string")); // 2 turns
    let n0 = records(&s, &id);
    let whole_turns = ["c", "compact", &id, "--keep-first", "1", "--keep-last", "3"];
    let out = s.ok(&whole_turns);
    assert!(
        out.contains("nothing to compact; nothing was written"),
        "{out}"
    );
    assert!(
        out.contains("no turns left to compact in a conversation of 2 turns"),
        "{out}"
    );
    assert_eq!(records(&s, &id), n0);
    // A one-step conversation: nothing for the built-in rule either.
    let id = s.import(&corpus().join("17673969718-iana-reference-site"));
    let n0 = records(&s, &id);
    let out = s.ok(&["c", "compact", &id]);
    assert!(
        out.contains("nothing to compact; nothing was written"),
        "{out}"
    );
    assert_eq!(records(&s, &id), n0);
}

/// The built-in rule folds the old closed steps of the turns it keeps,
/// keeping the last four steps of those turns together verbatim
/// (`--keep-steps` says how many): a two-turn run shrinks, no tool call is
/// parted from its result, and the newest steps are untouched.
#[test]
fn the_built_in_rule_folds_the_old_steps_of_long_turns() {
    let s = Scratch::new();
    let id =
        s.import(&corpus().join("17732257364-stack-overflow-in-recursive-path-test-on-windows")); // 2 long turns
    let before = view_tokens(&s, &id);
    let report = s.json(&["c", "compact", &id, "--dry-run"]);
    let compactions = report["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), 2, "one per long turn: {report}");
    for c in compactions {
        assert_eq!(c["from_turn"], c["to_turn"], "steps of one turn: {c}");
        assert!(c["to_seq"].is_u64());
    }
    s.ok(&["c", "compact", &id]);
    let after = view_tokens(&s, &id);
    assert!(after < before, "{after} < {before}");
    // The view is valid (every call with its result), and the last four
    // steps of the conversation are as they were.
    let view = s.json(&["c", "print", &id, "--compacted"]);
    let items = view["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"stripped_result"), "{kinds:?}");
    let last = items.last().unwrap();
    assert_eq!(
        last["kind"], "event",
        "the newest step is untouched: {last}"
    );
    // More steps kept, less folded.
    let id2 =
        s.import(&corpus().join("17732257364-stack-overflow-in-recursive-path-test-on-windows"));
    s.ok(&["c", "compact", &id2, "--keep-steps", "10"]);
    let wider = view_tokens(&s, &id2);
    assert!(
        after < wider && wider < before,
        "{after} < {wider} < {before}"
    );
}

#[test]
fn bad_specs_bounds_config_and_models_are_explained() {
    let (s, id) = setup();
    let cases: [(&[&str], &str); 6] = [
        (&["-k", "r+x"], "compaction spec `r+x`: unknown policy `x`"),
        (&["-k", "t=shred"], "unknown tool mode `shred`"),
        (
            &["--from", "yesterday", "-r"],
            "--from yesterday: `yesterday` is not a bound",
        ),
        (&["--keep-last", "lots"], "`lots` is not a keep value"),
        (&["-t=shred"], "invalid value 'shred' for '--tools"),
        (&["-s", "-m", "nowhere/model"], "summarizer `nowhere/model`"),
    ];
    for (args, needle) in cases {
        let mut a = vec!["c", "compact", id.as_str()];
        a.extend_from_slice(args);
        let out = s.run(&a);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
    let cfg = s.path().join("bad.toml");
    std::fs::write(
        &cfg,
        "[[compaction.rules]]\nkeep_last = 3\ntool_calls = \"shred\"\n",
    )
    .unwrap();
    let out = s.run(&["-c", cfg.to_str().unwrap(), "c", "compact", &id]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml") && err.contains("compaction.rules[1].tool_calls"),
        "{err}"
    );
    assert!(err.contains("strip-responses"), "{err}");
}

#[test]
fn configured_rules_apply_and_config_show_says_where_from() {
    let (s, id) = setup();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[[compaction.rules]]\nkeep_first = 2\nkeep_last = 2\ntool_calls = \"omit\"\n",
    )
    .unwrap();
    let out = s.ok(&["c", "compact", &id, "--dry-run"]);
    assert!(
        out.contains("would compact turns 3–7: 38 tool events omitted"),
        "{out}"
    );
    let shown = s.ok(&["config", "show"]);
    assert!(
        shown.contains("compaction.rules[1].tool_calls = \"omit\""),
        "{shown}"
    );
    assert!(shown.contains("workspace file"), "{shown}");
    let json: Value = s.json(&["config", "show"]);
    assert_eq!(json["config"]["compaction"]["rules"][0]["keep_first"], 2);
    // A bare -k applies the configured rules; an explicit spec replaces them.
    let out = s.ok(&["c", "compact", &id, "--dry-run", "-k", "r:5..6"]);
    assert!(
        out.contains("would compact turns 5–6: ")
            && out.contains("reasoning block")
            && !out.contains("omit"),
        "{out}"
    );
    let out = s.ok(&["c", "compact", &id, "--dry-run", "-k", "-k", "r:5..6"]);
    assert!(
        out.contains("tool events omitted") && out.contains("reasoning block"),
        "{out}"
    );
}

#[test]
fn model_summaries_dry_run_offline_fail_cleanly_and_m_reaches_configured_rules() {
    let (s, id) = setup();
    let cfg = s.path().join("dead.toml");
    // A provider nobody listens to.
    std::fs::write(
        &cfg,
        "[providers.dead]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let n0 = records(&s, &id);

    // A dry run never calls the model.
    let out = s.ok(&[
        "-c",
        c,
        "c",
        "compact",
        &id,
        "-s",
        "-m",
        "dead/m",
        "--from",
        "2",
        "--to",
        "3",
        "--dry-run",
    ]);
    assert!(
        out.contains("would compact turns 2–3: summary by dead/m"),
        "{out}"
    );

    // The real run fails, says why, and records nothing.
    let bad = s.run(&[
        "-c", c, "c", "compact", &id, "-s", "-m", "dead/m", "--from", "2", "--to", "3",
    ]);
    assert!(!bad.status.success());
    let err = stderr(&bad);
    assert!(
        err.contains("dead/m") && err.contains("127.0.0.1:9"),
        "{err}"
    );
    // No compaction: only the failed attempt is on record (started and
    // finished, with the error), and `show` lists it.
    assert_eq!(records(&s, &id), n0 + 2, "the attempt only");
    let shown = s.json(&["c", "show", &id]);
    assert_eq!(shown["counts"]["compaction"], 0);
    let attempts = shown["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["state"], "failed");
    assert!(
        attempts[0]["finished"]["error"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1:9")
    );
    let text = s.ok(&["c", "show", &id]);
    assert!(
        text.contains("compaction attempts that recorded nothing"),
        "{text}"
    );
    assert!(text.contains("by dead/m: failed"), "{text}");

    // -m also names the summarizer of configured rules.
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[[compaction.rules]]\nkeep_first = 1\nkeep_last = 1\n[compaction.rules.summary]\n",
    )
    .unwrap();
    let out = s.ok(&["-c", c, "c", "compact", &id, "--dry-run"]);
    assert!(out.contains("summary by digest"), "{out}");
    let out = s.ok(&["-c", c, "c", "compact", &id, "--dry-run", "-m", "dead/m"]);
    assert!(out.contains("summary by dead/m"), "{out}");
}

#[test]
fn one_compaction_at_a_time() {
    let (s, id) = setup();
    let log = ctxfold_store::EventLog::new(s.events_file(&id).parent().unwrap());
    let held = log.try_compaction_lock().unwrap().expect("free at first");
    let n0 = records(&s, &id);
    let busy = s.run(&["c", "compact", &id]);
    assert!(!busy.status.success());
    assert!(
        stderr(&busy).contains("is being compacted by another process"),
        "{}",
        stderr(&busy)
    );
    assert_eq!(records(&s, &id), n0, "nothing appended");
    // Reading and appending events are not blocked by it.
    assert!(s.run(&["c", "show", &id]).status.success());
    drop(held);
    s.ok(&["c", "compact", &id, "--keep-first", "1", "--keep-last", "3"]);
    assert_eq!(records(&s, &id), n0 + 1);
}

/// Compactions a later summary covers (issue 45): `show` says they are
/// superseded and by which, instead of "active" with a figure of ~0
/// tokens; revoking one says the view does not change (and it does not);
/// revoking the summary over them brings them back into force.
#[test]
fn superseded_compactions_are_listed_and_reset_as_what_they_are() {
    let (s, id) = setup();
    s.ok(&["c", "compact", &id, "-k", "s:2..3"]);
    s.ok(&["c", "compact", &id, "-k", "r:2..5"]);
    s.ok(&["c", "compact", &id, "-k", "t:4..6"]);
    // Before the summary over all three, each of them is in force.
    let shown = s.json(&["c", "show", &id]);
    for c in shown["compactions"].as_array().unwrap() {
        assert_eq!(c["status"], "active", "{c}");
        assert_eq!(c["changes_view"], true, "{c}");
    }
    s.ok(&["c", "compact", &id, "-k", "s:1..7"]);

    let text = s.ok(&["c", "show", &id]);
    for n in 1..=3 {
        assert!(
            text.contains(&format!("[superseded by #4, by user]\n      superseded: #4 decides everything it covers; revoking #{n} changes nothing in the view until it is revoked")),
            "#{n}: {text}"
        );
    }
    assert!(
        text.contains("#4 turns 1–7: summary by digest [active, by user]"),
        "{text}"
    );
    // No figure of what is in view of a range another compaction made.
    assert_eq!(text.matches("the range ~").count(), 1, "{text}");
    let shown = s.json(&["c", "show", &id]);
    let listed = shown["compactions"].as_array().unwrap();
    for c in &listed[..3] {
        assert_eq!(c["status"], "superseded by #4", "{c}");
        assert_eq!(c["superseded_by"], 4, "{c}");
        assert_eq!(c["changes_view"], false, "{c}");
        assert!(c.get("kept").is_none(), "{c}");
    }
    assert_eq!(listed[3]["changes_view"], true);

    // Revoking a superseded one: recorded, and said to change nothing,
    // which it does not.
    let before = s.ok(&["c", "print", &id, "--compacted"]);
    let n = records(&s, &id);
    let out = s.ok(&["c", "compact", &id, "--reset=1"]);
    assert!(
        out.contains("the view does not change: #1 is superseded by #4, which decides everything it covers; it stays revoked if it is revoked"),
        "{out}"
    );
    assert_eq!(records(&s, &id), n + 1, "the reset is recorded");
    assert_eq!(s.ok(&["c", "print", &id, "--compacted"]), before);
    let json = s.json(&["c", "compact", &id, "--reset=2", "--dry-run"]);
    assert_eq!(json["view_changes"], false, "{json}");
    assert!(
        json["unchanged_because"]
            .as_str()
            .unwrap()
            .starts_with("#2 is superseded by #4"),
        "{json}"
    );

    // Revoking the summary over them: the view changes, nothing more is
    // said, and the two not revoked are in force again.
    let out = s.ok(&["c", "compact", &id, "--reset=4"]);
    assert!(!out.contains("does not change"), "{out}");
    assert_ne!(s.ok(&["c", "print", &id, "--compacted"]), before);
    let shown = s.json(&["c", "show", &id]);
    let status: Vec<&str> = shown["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["revoked", "active", "active", "revoked"]);
    // Restoring #1 now puts it back in force: said without a caveat.
    let out = s.ok(&["c", "compact", &id, "--restore=1"]);
    assert!(!out.contains("does not change"), "{out}");
}
