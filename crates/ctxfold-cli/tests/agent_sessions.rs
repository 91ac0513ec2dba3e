//! The agents' own session files, written by the real agents (Claude Code
//! and Codex from scripts/agents, CTXFOLD_CLAUDE and CTXFOLD_CODEX) run
//! straight against the scripted upstream (ctxfold_testkit::upstream::agent)
//! inside a network namespace with only loopback, HOME (and CODEX_HOME)
//! in a folder of the test's own.
//!
//! Each agent runs a few tool steps (the first task's steps think first:
//! signed thinking, reasoning items), goes on with `--continue` / `exec
//! resume --last`, and compacts its own history: Claude Code with
//! `/compact` in print mode, Codex on its own at
//! `model_auto_compact_token_limit`. Then the session file imports with
//! its counts and the agent's compaction (source `agent`: `c print` shows
//! the history before it, `--reset` brings it back), exports byte for
//! byte, and `ctxfold compact FILE` writes a new session beside it (the
//! original untouched) that the real agent resumes (`claude -p --resume
//! ID`, `codex exec resume ID`): the scripted upstream checks that the
//! resumed request holds the folds (the summary), not the raw tool output
//! they replaced, with every call answered.
//!
//! They are ignored by a plain `cargo test` (reported as skipped) and run
//! by `scripts/test`'s pass over ignored tests; asked for without the
//! agents or a network namespace they skip, and under `scripts/test` and
//! in CI they fail (`ctxfold_testkit::needs`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};

use common::Scratch;
use common::agent_run::{
    Agent, AgentHome, CODEX_CLASSIC, codex_session_runs, jsonl_files, run_agent, task, with_agent,
};
use ctxfold_testkit::upstream::agent::FINAL;
use ctxfold_testkit::upstream::{Seen, Upstream};

/// The model requests from number `after` on.
fn model_requests(up: &Upstream, after: usize) -> Vec<Seen> {
    up.requests()
        .into_iter()
        .filter(|r| r.n > after && r.is_model())
        .collect()
}

/// What every session test checks of the file the agent wrote: the counts
/// on import, the agent's compaction, the byte-exact round trip through
/// the store, and `print` / `--reset` around the agent's compaction.
/// Returns the scratch workspace.
fn check_import(file: &Path, format: &str, expect: &[(&str, u64)], raw_marker: &str) -> Scratch {
    let s = Scratch::new();
    let id = s.import(file);
    let show = s.json(&["c", "show", &id]);
    assert_eq!(show["imported_from"]["format"], format, "{show}");
    for (key, n) in expect {
        assert_eq!(
            show["counts"][key].as_u64(),
            Some(*n),
            "{key} of {}: {}",
            file.display(),
            show["counts"]
        );
    }
    let comps = show["compactions"].as_array().unwrap();
    assert!(!comps.is_empty(), "the agent's compaction was not read");
    for c in comps {
        assert_eq!(c["source"], "agent", "{c}");
    }
    // Byte for byte, out of the store.
    let out = s.path().join(format!("back.{format}.jsonl"));
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(file).unwrap(),
        "{}: not written back byte for byte",
        file.display()
    );
    // The history before the agent's compaction is in the log, not in the
    // view; undone, it is in the view again.
    assert!(s.ok(&["c", "print", &id]).contains(raw_marker));
    assert!(
        !s.ok(&["c", "print", &id, "--compacted"])
            .contains(raw_marker)
    );
    s.ok(&["c", "compact", &id, "--reset"]);
    assert!(
        s.ok(&["c", "print", &id, "--compacted"])
            .contains(raw_marker)
    );
    s
}

/// `ctxfold compact FILE ARGS…`: a new session beside the original, the
/// original untouched; its path and id.
fn compact_session(s: &Scratch, file: &Path, args: &[&str]) -> (PathBuf, String) {
    let before = std::fs::read(file).unwrap();
    let mut a = vec!["compact", file.to_str().unwrap()];
    a.extend_from_slice(args);
    let report = s.json(&a);
    assert!(
        std::fs::read(file).unwrap() == before,
        "the original changed"
    );
    let out = PathBuf::from(report["output"].as_str().unwrap());
    assert_eq!(out.parent(), file.parent(), "{report}");
    assert_ne!(out, file);
    let resume = report["resume"].as_str().unwrap().to_owned();
    let stem = out.file_stem().unwrap().to_str().unwrap();
    let id = stem[stem.len() - 36..].to_owned();
    assert!(resume.contains(&id), "{resume}");
    assert!(
        report["compactions"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "ctxfold folded nothing: {report}"
    );
    // Smaller: the folded history's lines are not in the new file (the
    // agent's own bookkeeping lines, kept whole, are).
    let (before, after) = (&report["bytes"]["before"], &report["bytes"]["after"]);
    assert!(
        after.as_u64().unwrap() < before.as_u64().unwrap(),
        "{before} → {after} bytes"
    );
    (out, id)
}

/// The resumed run's first request: what the compacted session gave the
/// model.
fn check_resumed(
    requests: &[Seen],
    list: &str,
    folded_summary: &str,
    raw_gone: &[&str],
    prompt: &str,
) {
    let first = requests.first().expect("the resumed agent sent no request");
    let req = first.json();
    let history = req[list].to_string();
    assert!(!first.rejected);
    assert!(first.pairing.is_empty(), "{:?}", first.pairing);
    assert!(
        history.contains(folded_summary),
        "the summary is not in the resumed request"
    );
    for raw in raw_gone {
        assert!(
            !history.contains(raw),
            "raw output the compaction folded reached the model: {raw}"
        );
    }
    assert!(history.contains(prompt));
    for r in requests {
        assert!(r.pairing.is_empty(), "request {}: {:?}", r.n, r.pairing);
    }
}

#[test]
#[ignore = "needs Claude Code and Codex (CTXFOLD_CLAUDE, CTXFOLD_CODEX) and a loopback-only network namespace: scripts/test installs and runs them"]
fn claude_code_session_compacted_and_resumed() {
    with_agent(Agent::Claude, |exe| {
        let up = Upstream::agents(None);
        let home = AgentHome::new(Agent::Claude, &up.base, "");
        let runs: [(&[&str], String); 5] = [
            (&[], task("thinkalpha", 2)),
            (&["--continue"], task("beta", 3)),
            // Print mode runs the slash command: Claude Code's own
            // compaction, a compact_boundary and its summary.
            (&["--continue"], "/compact".into()),
            (&["--continue"], task("gamma", 1)),
            (&["--continue"], task("delta", 1)),
        ];
        for (args, prompt) in &runs {
            let ran = run_agent(Agent::Claude, exe, &home, &up.base, args, prompt);
            assert!(ran.ok(), "claude {args:?} {prompt}: {}", ran.describe());
            if prompt.contains("ctxfold-task") {
                assert!(ran.stdout.contains(FINAL), "{}", ran.describe());
            }
        }
        let files = jsonl_files(&home.claude_projects());
        assert_eq!(files.len(), 1, "{files:?}");
        let file = &files[0];
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("\"compact_boundary\""), "no compaction");
        assert!(text.contains("\"thinking\""), "no thinking");
        // Prompts: thinkalpha, beta, /compact, gamma, delta; steps 2+3+1+1.
        let s = check_import(
            file,
            "claude-code",
            &[
                ("turns", 5),
                ("tool_call", 7),
                ("tool_result", 7),
                ("reasoning", 2),
                ("compaction", 1),
            ],
            "beta 2 line 200 of the build log",
        );
        // The built-in rule, keeping only the newest turn whole: gamma's
        // output is stripped (the turns before it the agent summarized).
        let (out, id) = compact_session(&s, file, &["--keep-last", "1"]);
        let n = up.len();
        let ran = run_agent(
            Agent::Claude,
            exe,
            &home,
            &up.base,
            &["--resume", &id],
            &task("epsilon", 1),
        );
        assert!(ran.ok(), "claude --resume {id}: {}", ran.describe());
        assert!(
            ran.stdout.contains("task epsilon, 1 of 1"),
            "{}",
            ran.describe()
        );
        check_resumed(
            &model_requests(&up, n),
            "messages",
            "done so far: ctxfold-step beta",
            &[
                "beta 2 line 200 of the build log",
                "gamma 1 line 200 of the build log",
            ],
            "ctxfold-task=epsilon",
        );
        // The agent went on in the new session's file.
        let grown = std::fs::read_to_string(&out).unwrap();
        assert!(grown.contains("ctxfold-task=epsilon"));
    });
}

#[test]
#[ignore = "needs Claude Code and Codex (CTXFOLD_CLAUDE, CTXFOLD_CODEX) and a loopback-only network namespace: scripts/test installs and runs them"]
fn codex_session_compacted_and_resumed() {
    with_agent(Agent::Codex, |exe| {
        let up = Upstream::agents(None);
        // Codex compacts its own history once a request is past this many
        // tokens: in the middle of beta (a fixed part of about 15,000, then
        // steps of about 7,000), leaving beta's second step and gamma after
        // its summary.
        let home = AgentHome::new(
            Agent::Codex,
            &up.base,
            "model_auto_compact_token_limit = 40000\n",
        );
        for (args, prompt) in &codex_session_runs() {
            let ran = run_agent(Agent::Codex, exe, &home, &up.base, args, prompt);
            assert!(ran.ok(), "codex {args:?} {prompt}: {}", ran.describe());
            assert!(ran.stdout.contains(FINAL), "{}", ran.describe());
        }
        let files = jsonl_files(&home.codex_home().join("sessions"));
        assert_eq!(files.len(), 1, "{files:?}");
        let file = &files[0];
        let text = std::fs::read_to_string(file).unwrap();
        let agent_compactions = text.matches("\"type\":\"compacted\"").count() as u64;
        assert!(agent_compactions >= 1, "Codex did not compact");
        // Code mode's custom calls (thinkalpha, 3, each reasoned first),
        // then function calls (beta 2, gamma 1).
        let s = check_import(
            file,
            "codex",
            &[
                ("turns", 3),
                ("tool_call", 6),
                ("tool_result", 6),
                ("reasoning", 3),
                ("compaction", agent_compactions),
            ],
            "thinkalpha 2 line 200 of the build log",
        );
        let (out, id) = compact_session(&s, file, &["--keep-last", "1"]);
        let n = up.len();
        let args = [&["resume", id.as_str()][..], &CODEX_CLASSIC].concat();
        let ran = run_agent(Agent::Codex, exe, &home, &up.base, &args, &task("delta", 1));
        assert!(ran.ok(), "codex exec resume {id}: {}", ran.describe());
        assert!(
            ran.stdout.contains("task delta, 1 of 1"),
            "{}",
            ran.describe()
        );
        check_resumed(
            &model_requests(&up, n),
            "input",
            "done so far: ctxfold-step",
            // thinkalpha's by Codex's own compaction, beta's second step's
            // by ctxfold's (the newest turn, gamma, kept whole).
            &[
                "thinkalpha 2 line 200 of the build log",
                "beta 2 line 200 of the build log",
            ],
            "ctxfold-task=delta",
        );
        let grown = std::fs::read_to_string(&out).unwrap();
        assert!(grown.contains("ctxfold-task=delta"));
    });
}
