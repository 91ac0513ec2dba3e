//! The real agents through `ctxfold proxy` on a log-like tool loop, priced
//! as the providers price their prompt cache (issue 44): Claude Code and
//! Codex (scripts/agents), in a loopback-only network namespace, against
//! the scripted upstream (ctxfold_testkit::upstream::agent) at a
//! 40,000-token window it enforces, run 40 shell steps of the generator
//! crates/ctxfold-testkit/src/upstream/agent/ctxfold-log.sh: about 29 KB of timestamped INFO and DEBUG
//! lines a step, with one ERROR line naming the step; steps 5, 15, 25 and
//! 35 print over 30 KB, which Claude Code saves to a file, showing the
//! model a `<persisted-output>` preview ("Full output saved to: PATH", the
//! first 2 KB; the ERROR line of those steps is within it). The same run
//! without the proxy, straight to an upstream with no window, is the
//! baseline.
//!
//! What the upstream received is measured so:
//! - a prefix change is a model request whose conversation (the fixed
//!   part, then the messages, cache markers stripped) does not start with
//!   the previous request's;
//! - characters billed: each request's longest common prefix with the
//!   previous one, over the same canonical flattening, at 0.1x (a cache
//!   read), the rest at 1.25x (a cache write); refused requests are not
//!   billed;
//! - an ERROR line is visible when the last request holds it verbatim (in
//!   the output, its excerpt or its fold);
//! - a saved-output path is kept when the last request holds it: every
//!   path Claude Code's session file shows a preview of.
//!
//! Each test asserts what issue 44 accepts: prefix changes at most one per
//! five steps, characters billed at most a sixth of the baseline's, every
//! step's ERROR line visible at the end, and (Claude Code) every saved
//! output's path kept; the run itself must be whole (exit 0, the final
//! answer, every step, no request over the window, tools paired). The
//! figures of both runs go to stderr and to
//! `target/tmp/real-agents-<agent>-log-40000.json` (each request's summary
//! beside it, `…-requests.jsonl` and `…-baseline-requests.jsonl`).
//!
//! Ignored by a plain `cargo test`; `scripts/test` runs them in its pass
//! over ignored tests.

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

use common::Scratch;
use common::agent_proxy::{
    Agent, AgentHome, check_requests, conversations, dump, figures, in_namespace, proxy_metrics,
    run_agent, shape, start_proxy, straight, strings, tail,
};
use common::agent_run::{Ran, jsonl_files, task};
use ctxfold_testkit::upstream::agent::{FINAL, log_error_line, write_log_script};
use ctxfold_testkit::upstream::{Seen, Upstream};
use serde_json::{Value, json};

/// Shell steps of the loop.
const STEPS: usize = 40;

/// The window the upstream enforces and the proxy is told.
const WINDOW: usize = 40_000;

/// The task's name (the upstream runs the log generator for `log…`).
const TASK: &str = "log";

/// What Claude Code writes before a saved output's path.
const SAVED: &str = "Full output saved to: ";

#[test]
#[ignore = "needs Claude Code and Codex (CTXFOLD_CLAUDE, CTXFOLD_CODEX) and a loopback-only network namespace: scripts/test installs and runs them"]
fn claude_code_log_loop_keeps_the_prompt_cache() {
    in_namespace(Agent::Claude, |exe| scenario(Agent::Claude, exe));
}

#[test]
#[ignore = "needs Claude Code and Codex (CTXFOLD_CLAUDE, CTXFOLD_CODEX) and a loopback-only network namespace: scripts/test installs and runs them"]
fn codex_log_loop_keeps_the_prompt_cache() {
    in_namespace(Agent::Codex(None), |exe| {
        scenario(Agent::Codex(None), exe);
    });
}

/// One run's figures, as the cache and the model see them.
#[derive(Debug, Default)]
struct Measure {
    /// Model requests, and of them refused as over the window.
    requests: usize,
    rejected: usize,
    /// Bytes of the model requests' bodies.
    chars_sent: usize,
    /// Characters of the canonical flattening, over the billed requests.
    chars_read: usize,
    /// Characters billed: prefix shared with the request before at 0.1x,
    /// the rest at 1.25x.
    billed: f64,
    prefix_changes: usize,
    /// (request number, first message that differs).
    changes_at: Vec<(usize, usize)>,
    /// Steps the upstream asked for (distinct `tool log K/N` answers).
    steps: usize,
    /// The steps whose ERROR line the last request does not hold.
    errors_missing: Vec<usize>,
    /// Saved-output paths the agent showed the model, and those the last
    /// request does not hold.
    saved: Vec<String>,
    saved_missing: Vec<String>,
}

impl Measure {
    fn errors_visible(&self) -> usize {
        STEPS - self.errors_missing.len()
    }

    fn json(&self) -> Value {
        json!({"requests": self.requests, "rejected": self.rejected, "chars_sent": self.chars_sent,
            "chars_read": self.chars_read, "billed": self.billed.round(),
            "prefix_changes": self.prefix_changes, "prefix_changes_at": self.changes_at,
            "steps": self.steps, "error_lines_visible": self.errors_visible(),
            "error_lines_missing_steps": self.errors_missing,
            "saved_paths": self.saved.len(), "saved_paths_missing": self.saved_missing})
    }

    /// The figures in a line; `firings`: (automatic compactions, of them
    /// excerpts on arrival).
    fn line(&self, firings: Option<(usize, usize)>) -> String {
        format!(
            "requests {} (refused {}), characters sent {}, billed {:.0} (of {} read), prefix changes {}, \
             ERROR lines visible {}/{STEPS}, saved-output paths kept {}/{}, firings {}, steps {}/{STEPS}",
            self.requests,
            self.rejected,
            self.chars_sent,
            self.billed,
            self.chars_read,
            self.prefix_changes,
            self.errors_visible(),
            self.saved.len() - self.saved_missing.len(),
            self.saved.len(),
            firings.map_or("-".into(), |(f, e)| format!(
                "{f} ({e} excerpts on arrival, {} folds)",
                f - e
            )),
            self.steps,
        )
    }
}

/// A request as the cache reads it: its fixed part, then each message,
/// cache markers stripped, one after another.
fn flat(r: &Seen) -> Vec<char> {
    let s = shape(r);
    let mut text = s.fixed;
    for m in &s.messages {
        text.push('\n');
        text.push_str(m);
    }
    text.chars().collect()
}

/// The figures of `records`; `errors[k-1]` is step k's ERROR line,
/// `saved` the saved-output paths the agent showed the model.
fn measure(records: &[Seen], errors: &[String], saved: Vec<String>) -> Measure {
    let f = figures(records);
    let mut m = Measure {
        requests: f.requests,
        rejected: f.rejected,
        chars_sent: f.chars,
        prefix_changes: f.prefix_changes,
        changes_at: f.changes_at,
        saved,
        ..Measure::default()
    };
    let mut prev: Vec<char> = Vec::new();
    for r in records.iter().filter(|r| r.is_model() && !r.rejected) {
        let now = flat(r);
        let shared = now.iter().zip(&prev).take_while(|(a, b)| a == b).count();
        m.chars_read += now.len();
        m.billed += 0.1 * shared as f64 + 1.25 * (now.len() - shared) as f64;
        prev = now;
    }
    let mut asked: Vec<&str> = records
        .iter()
        .filter_map(|r| r.answer.strip_prefix(&format!("tool {TASK} ")))
        .collect();
    asked.sort_unstable();
    asked.dedup();
    m.steps = asked.len();
    let mut texts = Vec::new();
    if let Some(last) = records.iter().rev().find(|r| r.is_model() && !r.rejected) {
        strings(&last.json(), &mut texts);
    }
    let holds = |needle: &str| texts.iter().any(|t| t.contains(needle));
    m.errors_missing = (1..=STEPS).filter(|k| !holds(&errors[k - 1])).collect();
    m.saved_missing = m.saved.iter().filter(|p| !holds(p)).cloned().collect();
    m
}

/// The paths of the outputs Claude Code saved to a file and showed the
/// model a preview of, read from its session files (Codex saves none),
/// with how many files its `tool-results` folders hold.
fn saved_paths(agent: Agent, home: &AgentHome) -> (Vec<String>, usize) {
    if agent != Agent::Claude {
        return (Vec::new(), 0);
    }
    let projects = home.home.join(".claude/projects");
    let mut paths = Vec::new();
    for file in jsonl_files(&projects) {
        for line in std::fs::read_to_string(&file).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let mut texts = Vec::new();
            strings(&v, &mut texts);
            for t in texts {
                for (at, _) in t.match_indices(SAVED) {
                    let path: String = t[at + SAVED.len()..]
                        .chars()
                        .take_while(|c| !c.is_whitespace())
                        .collect();
                    if !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            }
        }
    }
    let mut files = 0;
    let mut stack = vec![projects];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p: PathBuf = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.parent().is_some_and(|d| d.ends_with("tool-results")) {
                files += 1;
            }
        }
    }
    (paths, files)
}

/// Automatic compactions the proxy recorded, over every conversation, and
/// of them those that only excerpt an output on its arrival (an
/// `excerpt_chars` and no other policy: they fold no band of history).
fn firings(s: &Scratch) -> (usize, usize) {
    let none = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
    let mut autos = Vec::new();
    for c in conversations(s) {
        let Some(id) = c["id"].as_str() else {
            continue;
        };
        autos.extend(
            s.json(&["c", "show", id])["compactions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| {
                    c["source"]
                        .as_str()
                        .is_some_and(|s| s.eq_ignore_ascii_case("auto"))
                }),
        );
    }
    let excerpts = autos
        .iter()
        .filter(|c| {
            c["excerpt_chars"].is_number()
                && [
                    "summary",
                    "reasoning",
                    "tool_calls",
                    "clip_chars",
                    "tool_overrides",
                ]
                .iter()
                .all(|k| none(&c[*k]))
        })
        .count();
    (autos.len(), excerpts)
}

/// The run itself whole: exit 0, the final answer, every step.
fn whole(what: &str, ran: &Ran, m: &Measure, fail: &mut impl FnMut(String)) {
    if ran.code != Some(0) || !ran.stdout.contains(FINAL) {
        fail(format!(
            "{what}: the agent exited {:?}{} (final answer printed: {}); its stderr ends:\n{}",
            ran.code,
            if ran.timed_out { " (timed out)" } else { "" },
            ran.stdout.contains(FINAL),
            tail(&ran.stderr, 15)
        ));
    }
    if m.steps != STEPS {
        fail(format!("{what}: {} of {STEPS} steps run", m.steps));
    }
}

fn scenario(agent: Agent, exe: &Path) {
    let label = format!("{}-log-{WINDOW}", agent.name());
    let mut failures: Vec<String> = Vec::new();
    let mut fail = |m: String| {
        eprintln!("[{label}] FAIL: {m}");
        failures.push(m);
    };
    let prompt = task(TASK, STEPS);

    // Through the proxy.
    let up = Upstream::agents(Some(WINDOW));
    let s = Scratch::new();
    let proxy = start_proxy(&s, &up, WINDOW, false);
    let home = AgentHome::new(agent, &proxy.base);
    write_log_script(&home.work);
    let errors: Vec<String> = (1..=STEPS).map(|k| log_error_line(&home.work, k)).collect();
    let ran = run_agent(agent, exe, &home, &proxy.base, &prompt, false);
    let records = up.requests();
    let (saved, saved_files) = saved_paths(agent, &home);
    let through = measure(&records, &errors, saved);
    let fired = firings(&s);
    let metrics = proxy_metrics(&proxy);
    dump(&label, &records);
    drop(proxy);
    eprintln!(
        "[{label}] through the proxy: exited {:?} after {:.0}s; {}",
        ran.code,
        ran.secs,
        through.line(Some(fired))
    );

    // The baseline: straight to an upstream with no window.
    let base = straight(agent, exe, &prompt, |h| write_log_script(&h.work));
    let (base_saved, base_files) = saved_paths(agent, &base.home);
    let without = measure(&base.records, &errors, base_saved);
    eprintln!(
        "[{label}] without the proxy: exited {:?} after {:.0}s; {}",
        base.ran.code,
        base.ran.secs,
        without.line(None)
    );
    dump(&format!("{label}-baseline"), &base.records);

    whole("through the proxy", &ran, &through, &mut fail);
    check_requests(&records, WINDOW, "through the proxy", &mut fail);
    whole("without the proxy", &base.ran, &without, &mut fail);
    if agent == Agent::Claude && (through.saved.is_empty() || through.saved.len() != saved_files) {
        fail(format!(
            "Claude Code's session shows {} saved-output previews for {saved_files} saved files: \
             the loop's large steps did not exercise them as measured",
            through.saved.len()
        ));
    }

    // What issue 44 accepts.
    if through.prefix_changes * 5 > STEPS {
        fail(format!(
            "{} prefix changes in {STEPS} steps, over one per five (request, first differing message: {:?})",
            through.prefix_changes, through.changes_at
        ));
    }
    if through.billed * 6.0 > without.billed {
        fail(format!(
            "{:.0} characters billed, over a sixth of the {:.0} without the proxy ({:.2}x)",
            through.billed,
            without.billed,
            through.billed / without.billed.max(1.0)
        ));
    }
    if !through.errors_missing.is_empty() {
        fail(format!(
            "the last request shows the ERROR line of {}/{STEPS} steps; missing: steps {:?} (step {}'s: {})",
            through.errors_visible(),
            through.errors_missing,
            through.errors_missing[0],
            errors[through.errors_missing[0] - 1]
        ));
    }
    if !through.saved_missing.is_empty() {
        fail(format!(
            "the last request lost {} of {} saved-output paths Claude Code showed the model: {:?}",
            through.saved_missing.len(),
            through.saved.len(),
            through.saved_missing
        ));
    }

    let report = json!({"agent": agent.name(), "window": WINDOW, "steps": STEPS,
        "through_the_proxy": {"exit": ran.code, "final_answer": ran.stdout.contains(FINAL),
            "secs": ran.secs.round(), "firings": fired.0, "excerpts": fired.1, "saved_files": saved_files,
            "figures": through.json(), "proxy_metrics": metrics},
        "without_the_proxy": {"exit": base.ran.code, "final_answer": base.ran.stdout.contains(FINAL),
            "secs": base.ran.secs.round(), "saved_files": base_files, "figures": without.json()},
        "billed_vs_baseline": through.billed / without.billed.max(1.0),
        "failures": failures});
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("real-agents-{label}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    eprintln!("[{label}] written to {}", path.display());
    assert!(
        failures.is_empty(),
        "{label}: {} failures:\n- {}",
        failures.len(),
        failures.join("\n- ")
    );
}
