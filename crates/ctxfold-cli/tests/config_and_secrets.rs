//! Issue 7, items 21 (unknown config keys and bad providers, everywhere),
//! 25 (API keys never printed nor stored) and 26 (one token estimator),
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
    let known = "expected one of compaction, prices, providers, proxy, query, store, tools";
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

/// `config show` never prints the proxy's token nor a credential header,
/// in text or JSON: it is what one pastes into a bug report.
#[test]
fn config_show_hides_the_proxy_token_and_credential_headers() {
    let s = Scratch::new();
    let f = write(
        &s,
        "secrets.toml",
        "[proxy]\ntoken = \"tok-7f3a9c1e-0b2d44\"\n\n[providers.work]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n[providers.work.headers]\nAuthorization = \"Bearer sk-live-42\"\nX-Title = \"ctxfold-tests\"\n",
    );
    let text = s.ok(&["config", "show", "-c", f.to_str().unwrap()]);
    let json = s.json(&["config", "show", "-c", f.to_str().unwrap()]);
    for shown in [text.clone(), json.to_string()] {
        assert!(!shown.contains("tok-7f3a9c1e-0b2d44"), "{shown}");
        assert!(!shown.contains("sk-live-42"), "{shown}");
        assert!(
            shown.contains("ctxfold-tests"),
            "other headers show: {shown}"
        );
    }
    assert!(text.contains("proxy.token = \"***\""), "{text}");
    assert_eq!(json["config"]["proxy"]["token"], "***");
    // Nor an error about it.
    let short = write(&s, "short.toml", "[proxy]\ntoken = \"tok-short\"\n");
    let out = s
        .command()
        .args(["config", "show", "-c", short.to_str().unwrap()])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("proxy.token"),
        "{err}"
    );
    assert!(!err.contains("tok-short"), "{err}");
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

// ---- item 25 ------------------------------------------------------------

/// The shared upstream, with canned replies: a real HTTP server on
/// 127.0.0.1.
use ctxfold_testkit::upstream::{self, Upstream};

const KEY: &str = "sk-cli-5e4d3c2b1a09f8e7d6c5";
const KEY_VAR: &str = "CTXFOLD_TEST_ECHO_KEY";

/// A conversation of four turns, imported; its id.
fn four_turns(s: &Scratch) -> String {
    let mut messages = Vec::new();
    for t in 1..=4 {
        messages.push(serde_json::json!({"role": "user", "content": format!("Question {t}: why does the parser fail on input {t}?")}));
        messages.push(serde_json::json!({"role": "assistant", "content": format!("Answer {t}: the loop bound in parse_{t} was off by one, now fixed.")}));
    }
    let f = write(
        s,
        "four.json",
        &serde_json::json!({ "messages": messages }).to_string(),
    );
    s.import(&f)
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            found.extend(files_holding(&p, needle));
        } else if String::from_utf8_lossy(&std::fs::read(&p).unwrap()).contains(needle) {
            found.push(p);
        }
    }
    found
}

/// `ctxfold -c CFG c compact ID -s -m echo/m --from 1 --to 3` against
/// `server`, the key in an environment variable.
fn compact_with_echo(s: &Scratch, id: &str, server: &Upstream) -> Output {
    let cfg = write(
        s,
        "echo.toml",
        &format!(
            "[providers.echo]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\n",
            server.base
        ),
    );
    s.command()
        .env(KEY_VAR, KEY)
        .args(["-c", cfg.to_str().unwrap(), "c", "compact", id])
        .args(["-s", "-m", "echo/m", "--from", "1", "--to", "3"])
        .output()
        .unwrap()
}

#[test]
fn an_upstream_echoing_the_key_in_an_error_never_gets_it_printed_or_stored() {
    use upstream::canned::Reply;
    let echoed = "invalid credentials in {authorization}";
    for reply in [
        Reply::json(401, serde_json::json!({"error": {"message": echoed}})),
        Reply::json(400, serde_json::json!({"error": {"message": echoed}})),
        Reply::json(500, serde_json::json!({"error": {"message": echoed}})),
        Reply::text(502, &format!("bad gateway; request headers: {echoed}")),
    ] {
        let s = Scratch::new();
        let id = four_turns(&s);
        let server = Upstream::canned(vec![reply.echoing()]);
        let out = compact_with_echo(&s, &id, &server);
        let err = stderr(&out);
        assert!(!out.status.success(), "expected failure: {err}");
        // The key did reach the upstream, which echoed it back.
        assert_eq!(
            server.requests()[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(!err.contains(KEY), "the key was printed: {err}");
        assert!(err.contains("Bearer [redacted]"), "{err}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(KEY), "{stdout}");
        assert_eq!(
            files_holding(s.path(), KEY),
            Vec::<PathBuf>::new(),
            "the key was stored"
        );
    }
}

#[test]
fn a_summary_that_repeats_the_key_is_stored_without_it() {
    let s = Scratch::new();
    let id = four_turns(&s);
    let server = Upstream::canned(vec![
        upstream::canned::Reply::json(
            200,
            serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant",
                    "content": "Parser fixes (turns 1-3). Sent with {authorization}."},
                    "finish_reason": "stop"}]
            }),
        )
        .echoing(),
    ]);
    let out = compact_with_echo(&s, &id, &server);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(files_holding(s.path(), KEY), Vec::<PathBuf>::new());
    let events = std::fs::read_to_string(s.events_file(&id)).unwrap();
    assert!(
        events.contains("Sent with Bearer [redacted]."),
        "the summary is stored, redacted"
    );
}

// ---- item 26 ------------------------------------------------------------

/// `ctxfold compact FILE ARGS` (the one-shot report) and `ctxfold c
/// compact ID ARGS` then `ctxfold stats ID`, on the same conversation:
/// (report raw, before, after) and (stats raw, view before, view after).
fn report_and_stats(s: &Scratch, src: &std::path::Path, args: &[&str]) -> [[u64; 3]; 2] {
    let out = s.path().join("out.json");
    let mut a = vec![
        "compact",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    let report = s.json(&a);
    let t = &report["tokens"];
    let id = s.import(src);
    let before = s.json(&["stats", &id]);
    let mut a = vec!["c", "compact", &id];
    a.extend_from_slice(args);
    s.ok(&a);
    let after = s.json(&["stats", &id]);
    assert_eq!(after["estimator"], "heuristic");
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    [
        [n(&t["raw"]), n(&t["before"]), n(&t["after"])],
        [
            n(&after["total"]["raw"]),
            n(&before["total"]["view"]),
            n(&after["total"]["view"]),
        ],
    ]
}

#[test]
fn the_compaction_report_and_stats_count_the_same_tokens() {
    let s = Scratch::new();
    let src = common::corpus().join("17727391057-managing-jp-conversations-in-git-worktrees");
    // The built-in rule (stripped reasoning and tool calls), then a
    // summary: every kind of view item is counted.
    for args in [&[][..], &["-s", "--from", "2", "--to", "6"][..]] {
        let [report, stats] = report_and_stats(&s, &src, args);
        assert!(report[2] < report[1], "{args:?}: nothing was folded");
        assert_eq!(report, stats, "{args:?}: [raw, before, after]");
    }
}
