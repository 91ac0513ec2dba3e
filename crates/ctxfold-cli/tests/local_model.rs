//! End to end against the real local model: llama.cpp's `llama-server`
//! running SmolLM2 on 127.0.0.1 (started by `scripts/local-model start`,
//! which sets `CTXFOLD_LOCAL_MODEL_URL`). A model summary through
//! `conversation compact -s -m …`, once through the OpenAI-compatible
//! endpoint and once through the Anthropic one.
//!
//! These tests are ignored by a plain `cargo test`, which must not need the
//! model; `scripts/test` (the README's test command, run by CI) starts the
//! model and runs them on their own with `--ignored`, one at a time.

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

fn url() -> String {
    std::env::var("CTXFOLD_LOCAL_MODEL_URL")
        .expect("CTXFOLD_LOCAL_MODEL_URL: start the model with `scripts/local-model start`")
}

/// A model summary of turn 6 of a corpus conversation (~1,000 tokens: one
/// call fits SmolLM2's 4,096-token window) through provider `provider`.
fn summarize_through(kind: &str, base_url: &str) {
    let s = Scratch::new();
    let cfg = s.path().join("local.toml");
    std::fs::write(
        &cfg,
        format!(
            "[providers.local]\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\nmax_tokens = 120\ntimeout_secs = 600\n"
        ),
    )
    .unwrap();
    let id = s.import(&corpus().join("17727391057-managing-jp-conversations-in-git-worktrees"));
    let out = s
        .command()
        .args(["-c", cfg.to_str().unwrap(), "c", "compact", &id])
        .args([
            "-s",
            "-m",
            "local/smollm2",
            "--from",
            "6",
            "--to",
            "6",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{kind}: {}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["tokens"]["after"].as_u64() < report["tokens"]["before"].as_u64());

    // The record holds the summary and its provenance.
    let shown = s.json(&["c", "show", &id]);
    let c = &shown["compactions"][0];
    assert_eq!(c["from_turn"], 5);
    assert_eq!(c["to_turn"], 5);
    let summary = &c["summary"];
    let text = summary["text"].as_str().unwrap();
    assert!(!text.trim().is_empty());
    let p = &summary["provenance"];
    assert_eq!(p["kind"], "derived");
    assert_eq!(p["summarizer"], "local/smollm2");
    assert!(p["instructions"].as_str().unwrap().contains("Pending work"));

    // The projection shows it in place of turn 6.
    let view = s.json(&["c", "print", &id, "--compacted"]);
    let items = view["items"].as_array().unwrap();
    let item = items
        .iter()
        .find(|i| i["kind"] == "summary")
        .expect("a summary item");
    assert_eq!(item["turns"], serde_json::json!([6, 6]));
    assert_eq!(item["text"], text);
    assert!(
        !items
            .iter()
            .any(|i| i["origin"]["turns"][0] == 6 && i["kind"] != "summary")
    );
}

#[test]
#[ignore = "needs the local model: scripts/local-model start (scripts/test does it)"]
fn model_summary_through_the_openai_endpoint() {
    summarize_through("openai", &format!("{}/v1", url()));
}

#[test]
#[ignore = "needs the local model: scripts/local-model start (scripts/test does it)"]
fn model_summary_through_the_anthropic_endpoint() {
    summarize_through("anthropic", &url());
}

#[test]
#[ignore = "needs the local model: scripts/local-model start (scripts/test does it)"]
fn the_window_comes_from_the_server() {
    let provider = ctxfold_providers::Provider::new(
        "local",
        ctxfold_providers::ProviderConfig::new(
            ctxfold_providers::ProviderKind::OpenAi,
            format!("{}/v1", url()),
        )
        .with_window_from(ctxfold_providers::WindowSource::LlamacppProps),
    );
    assert_eq!(provider.context_window("smollm2").unwrap(), Some(4096));
}

/// `ctxfold q` against the real local model with one local tool: the turn
/// completes and is recorded (its events, not the model's wording: a 135M
/// model may or may not call the tool; if it does, the call has its
/// result).
#[test]
#[ignore = "needs the local model: scripts/local-model start (scripts/test does it)"]
fn a_query_completes_a_turn_against_the_local_model() {
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        format!(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"{}/v1\"\nmax_tokens = 60\ntimeout_secs = 600\n\n[tools.list_files]\ncommand = [\"ls\"]\ndescription = \"List the files in the current directory.\"\nrun = \"unattended\"\n",
            url()
        ),
    )
    .unwrap();
    let out = s
        .command()
        .args(["q", "-m", "local/smollm2", "--new", "--format", "json"])
        .arg("Which files are in this directory? Use the list_files tool.")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let turn: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(turn["end"], "answered", "{turn}");
    let events = turn["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(&kinds[..2], ["turn_start", "user"], "{kinds:?}");
    assert!(
        matches!(kinds.last(), Some(&"assistant") | Some(&"reasoning")),
        "{kinds:?}"
    );
    let calls = kinds.iter().filter(|k| **k == "tool_call").count();
    let results = kinds.iter().filter(|k| **k == "tool_result").count();
    assert_eq!(calls, results, "{kinds:?}");
    // What was printed is what was recorded.
    assert_eq!(
        s.json(&["c", "print"]).as_array().unwrap().len(),
        events.len()
    );
}
