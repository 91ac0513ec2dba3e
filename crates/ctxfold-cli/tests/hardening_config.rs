//! Issue 7, items 21 (unknown config keys and bad providers, everywhere),
//! 25 (API keys never printed nor stored) and 26 (one token estimator),
//! through the real binary.

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{Scratch, stderr};

/// The command failed cleanly: non-zero exit, no panic, and stderr is the
/// one line `want`.
fn fails_with(out: &Output, want: &str) {
    let err = stderr(out);
    assert!(
        !out.status.success(),
        "expected failure, got success: {err}"
    );
    assert!(!err.contains("panicked"), "panic: {err}");
    assert_eq!(err.trim_end(), format!("error: {want}"));
}

fn write(s: &Scratch, name: &str, text: &str) -> PathBuf {
    let p = s.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

// ---- item 21 ------------------------------------------------------------

#[test]
fn config_show_refuses_top_level_typos_naming_file_line_and_nearest_key() {
    let s = Scratch::new();
    let known = "expected one of compaction, providers, tools";
    for (text, line, key, nearest) in [
        (
            "[compation.auto]\nenabled = true\n",
            1,
            "compation",
            "compaction",
        ),
        (
            "[tools.\"*\"]\ncompaction = \"strip\"\n\n[tool.search]\ncompaction = \"strip-responses\"\n",
            4,
            "tool",
            "tools",
        ),
    ] {
        let f = write(&s, "typo.toml", text);
        let out = s.run(&["config", "show", "-c", f.to_str().unwrap()]);
        fails_with(
            &out,
            &format!(
                "{}:{line}: unknown key {key}: {known}; did you mean {nearest}?",
                f.display()
            ),
        );
    }
    // The workspace file too, and for every command that reads config.
    write(
        &s,
        ".ctxfold/config.toml",
        "[compation.auto]\nenabled = true\n",
    );
    let ws = s.path().join(".ctxfold/config.toml");
    let want = format!(
        "{}:1: unknown key compation: {known}; did you mean compaction?",
        ws.display()
    );
    fails_with(&s.run(&["config", "show"]), &want);
    let transcript = write(
        &s,
        "t.json",
        r#"{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}"#,
    );
    fails_with(
        &s.run(&["c", "import", transcript.to_str().unwrap()]),
        &want,
    );
}

#[test]
fn the_spec_config_example_is_accepted() {
    let s = Scratch::new();
    let f = write(
        &s,
        "spec.toml",
        "[[compaction.rules]]\nkeep_first = 1\nkeep_last = 3\nreasoning = \"strip\"\ntool_calls = \"strip\"\n\n\
         [compaction.auto]\nenabled = false\ntrigger_ratio = 0.75\nmin_turns = 5\n\
         [compaction.auto.rule]\nkeep_first = 1\nkeep_last = 3\nreasoning = \"strip\"\ntool_calls = \"strip\"\n\n\
         [tools.search]\ncompaction = \"strip-responses\"\n[tools.\"*\"]\ncompaction = \"strip\"\n\n\
         [providers.work]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"WORK_KEY\"\n",
    );
    let v = s.json(&["config", "show", "-c", f.to_str().unwrap()]);
    assert_eq!(v["config"]["compaction"]["auto"]["min_turns"], 5);
    assert_eq!(v["config"]["providers"]["work"]["kind"], "openai");
}

#[test]
fn config_show_refuses_bad_provider_entries_naming_file_and_line() {
    let s = Scratch::new();
    for (text, want) in [
        (
            "[providers.work]\nkind = \"openai\"\nbase_url = \"http://h/v1\"\ntimeout = 5\n",
            ":4: unknown key providers.work.timeout: expected one of kind, base_url, api_key_env, timeout_secs, connect_timeout_secs, max_retries, retry_base_delay_ms, retry_max_delay_secs, headers, max_tokens, context_window_from, context_window; did you mean timeout_secs?",
        ),
        (
            "[providers.work]\nkind = \"openia\"\nbase_url = \"http://h/v1\"\n",
            ":2: providers.work.kind = \"openia\": expected \"openai\" or \"anthropic\"",
        ),
        (
            "[providers.ollama]\nbase_url = \"localhost:11434\"\n",
            ":2: providers.ollama.base_url = \"localhost:11434\": expected a URL that starts with http:// or https:// (a string)",
        ),
        (
            "[providers.ollama]\nretry_max_delay_secs = -2\n",
            ":2: providers.ollama.retry_max_delay_secs = -2: expected a number of seconds >= 0",
        ),
        (
            "# mine\n[providers.mine]\nbase_url = \"http://h/v1\"\n",
            ":2: [providers.mine]: provider `mine`: `kind` is required for a provider that is not built in (anthropic, llamacpp, local, ollama, openai, openrouter, vllm)",
        ),
    ] {
        let f = write(&s, "bad.toml", text);
        let path = f.display().to_string();
        fails_with(
            &s.run(&["config", "show", "-c", &path]),
            &format!("{path}{want}"),
        );
        // A command that uses providers says the same.
        fails_with(
            &s.run(&["stats", "-c", &path, "-m", "work/x"]),
            &format!("{path}{want}"),
        );
    }
}
