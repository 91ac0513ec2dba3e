//! Outputs excerpted on arrival and bands sized for the prompt cache
//! (issue 44), through the library on real files: a tool loop whose every
//! step prints about 29 KB of log lines with one ERROR line, before every
//! model call at a 40,000-token window with a Claude Code-sized fixed
//! part, with the defaults.

// A test may panic on what it did not expect, and print.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_compactor::{BasicCompactor, Compactor, Context, Conversation, DigestOnly, Moment};
use ctxfold_core::planner::ToolHints;
use ctxfold_core::projection::{Item, project};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, JsonText, Log, Record};
use ctxfold_store::EventLog;
use ctxfold_tokens::Heuristic;

const WINDOW: u32 = 40_000;
const FIXED: usize = 19_000;
const STEPS: usize = 40;

fn record(body: Body) -> Record {
    Record::new(0, "2026-01-01T00:00:00Z", body)
}

/// Step `k`'s output: about 29 KB of log lines, one of them an ERROR
/// naming the step, somewhere in the middle.
fn log_output(k: usize) -> (String, String) {
    let error = format!(
        "2026-12-06T10:{:02}:17.204Z ERROR [worker-{k}] batch {k} failed: checksum mismatch in segment {}",
        k % 60,
        k * 7
    );
    let mut lines = Vec::new();
    let at = 120 + (k * 37) % 200;
    for i in 0..400 {
        if i == at {
            lines.push(error.clone());
        } else {
            lines.push(format!(
                "2026-12-06T10:{:02}:{:02}.{:03}Z INFO [worker-{}] processed batch {} of step {k} in {} ms",
                k % 60,
                i % 60,
                i,
                i % 8,
                i,
                10 + i % 90
            ));
        }
    }
    (lines.join("\n"), error)
}

/// What each item of the view says, for comparing requests.
fn texts(log: &Log) -> Vec<String> {
    let view = project(log);
    view.items
        .iter()
        .map(|item| match item {
            Item::Event { record, .. } => match &record.body {
                Body::ToolResult { content, .. } | Body::User { content, .. } => content.clone(),
                other => format!("{other:?}"),
            },
            Item::Clipped { .. } => item.clipped_text().unwrap(),
            Item::StrippedResult { .. } => item.stripped_line().unwrap(),
            Item::StrippedCall { .. } => item.stripped_arguments().unwrap().to_string(),
            Item::Summary { text, .. } => (*text).clone(),
            Item::Preamble => "preamble".into(),
        })
        .collect()
}

#[test]
fn a_log_heavy_loop_is_excerpted_on_arrival_and_folded_in_rare_wide_bands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("c")).unwrap();
    let store = EventLog::new(dir.path().join("c"));
    let policy = AutoPolicy {
        enabled: true,
        ..AutoPolicy::default()
    };
    let c = BasicCompactor::new(
        policy,
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let mut conv = Conversation::new(Log::new(), &store);
    conv.append(vec![
        record(Body::TurnStart),
        record(Body::User {
            content: "Run the batch job step by step and tell me what fails.".into(),
            author: None,
        }),
    ])
    .unwrap();
    let mut ctx = Context::new(Moment::BeforeStep, Some(WINDOW));
    ctx.extra_tokens = FIXED;
    let mut errors = Vec::new();
    let mut previous: Vec<String> = Vec::new();
    let (mut breaks, mut firings, mut excerpts) = (0, 0, 0);
    for k in 0..STEPS {
        let (output, error) = log_output(k);
        errors.push(error);
        let id = format!("call-{k}");
        conv.append(vec![
            record(Body::ToolCall {
                id: id.clone(),
                name: "Bash".into(),
                arguments: JsonText::from_value(
                    &serde_json::json!({"command": format!("./batch --step {k}")}),
                ),
            }),
            record(Body::ToolResult {
                id,
                content: output,
                is_error: false,
            }),
        ])
        .unwrap();
        let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
        let fired = out.committed.iter().any(|d| !d.compaction.is_excerpt());
        let excerpted: Vec<_> = out
            .committed
            .iter()
            .filter(|d| d.compaction.is_excerpt())
            .collect();
        assert_eq!(excerpted.len(), 1, "step {k}: its output excerpted at once");
        excerpts += 1;
        if fired {
            firings += 1;
            for d in out.committed.iter().filter(|d| !d.compaction.is_excerpt()) {
                eprintln!("step {k}: {}", d.compaction.budget.as_ref().unwrap().line());
            }
        }
        assert!(
            out.after <= out.budget.unwrap().limit(),
            "step {k}: {out:?}"
        );
        // The request: what the model saw before is still there, word for
        // word, unless a firing folded it.
        let now = texts(conv.log());
        let kept = previous.len() <= now.len() && now[..previous.len()] == previous[..];
        if !kept {
            breaks += 1;
            assert!(fired, "step {k}: the prefix changed with no firing");
        }
        previous = now;
    }
    eprintln!("{STEPS} steps: {excerpts} excerpts, {firings} firings, {breaks} prefix changes");
    assert!(
        breaks * 5 <= STEPS,
        "at most one prefix change per five steps: {breaks} in {STEPS}"
    );
    // Every step's ERROR line is still in what the model sees: in its
    // excerpt, or in the fold that stands for it.
    let last = texts(conv.log()).join("\n");
    let missing: Vec<&String> = errors
        .iter()
        .filter(|e| !last.contains(e.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {STEPS} ERROR lines gone: {missing:#?}",
        missing.len()
    );
}

/// Undoing an excerpt shows the whole output again, and it is not made
/// again on the next step: the user's undo stands.
#[test]
fn an_undone_excerpt_stays_undone() {
    let store = ctxfold_compactor::Memory;
    let c = BasicCompactor::new(
        AutoPolicy {
            enabled: true,
            ..AutoPolicy::default()
        },
        ToolHints::default(),
        Box::new(Heuristic::default()),
        Box::new(DigestOnly),
    );
    let mut conv = Conversation::new(Log::new(), &store);
    let (output, _) = log_output(1);
    conv.append(vec![
        record(Body::TurnStart),
        record(Body::User {
            content: "go".into(),
            author: None,
        }),
        record(Body::ToolCall {
            id: "a".into(),
            name: "Bash".into(),
            arguments: JsonText::from_value(&serde_json::json!({"command": "x"})),
        }),
        record(Body::ToolResult {
            id: "a".into(),
            content: output.clone(),
            is_error: false,
        }),
    ])
    .unwrap();
    let ctx = Context::new(Moment::BeforeStep, Some(WINDOW));
    let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
    let seq = out.committed[0].seq.unwrap();
    assert!(
        texts(conv.log())
            .iter()
            .any(|t| t.starts_with("[Excerpt of "))
    );
    let reset = ctxfold_core::CompactionReset {
        targets: ctxfold_core::compaction::ResetTargets::Some(vec![seq]),
        restore: false,
        extra: Default::default(),
    };
    conv.append(vec![record(Body::CompactionReset(Box::new(reset)))])
        .unwrap();
    let out = c.compact_if_needed(&mut conv, &ctx).unwrap();
    assert!(out.committed.is_empty(), "{out:?}");
    assert!(texts(conv.log()).iter().any(|t| t.contains(&output[..200])));
}
