//! `ctxfold query` through the real binary against a scripted model server
//! on 127.0.0.1 that speaks OpenAI's and Anthropic's streaming shapes and
//! checks every request it gets: every tool call has its result, every
//! result its call.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::sync::atomic::Ordering;

use common::model::{PAUSED, Say, events, model, on_a_terminal, workspace};
use common::{Scratch, stderr};
use serde_json::{Value, json};

/// A turn with several tool calls and a final answer, in each provider's
/// streaming shape: the answer streams to standard output, every event is
/// recorded in order, and every request the model got was valid.
#[test]
fn a_turn_with_tools_records_every_event_in_order() {
    for kind in ["openai", "anthropic"] {
        let script = vec![
            Say::Tool("echo_args", json!({"path": "a.txt"})),
            Say::Tool("echo_args", json!({"path": "b.txt"})),
            Say::Text("Both files are fine."),
        ];
        let (base, seen) = model(kind, script);
        let s = workspace(kind, &base, "");
        let out = s.run(&["q", "-m", "fake/m", "--new", "check", "both", "files"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        let printed = String::from_utf8(out.stdout).unwrap();
        assert!(
            printed.contains("Both files are fine."),
            "{kind}: {printed}"
        );
        let kinds: Vec<String> = events(&s)
            .iter()
            .map(|r| r["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "turn_start",
                "user",
                "tool_call",
                "tool_result",
                "tool_call",
                "tool_result",
                "assistant"
            ],
            "{kind}"
        );
        let recs = events(&s);
        assert_eq!(recs[1]["content"], "check both files");
        assert_eq!(
            recs[3]["content"].as_str().unwrap().trim(),
            r#"{"path":"a.txt"}"#,
            "{kind}"
        );
        assert_eq!(recs[3]["is_error"], false);
        assert_eq!(recs[2]["id"], recs[3]["id"]);
        assert_eq!(
            seen.lock().unwrap().len(),
            3,
            "{kind}: one request per step"
        );
        // The next query continues the conversation, with the model it
        // remembered.
        let out = s.run(&["q", "and now?"]);
        assert!(out.status.success(), "{kind}: {}", stderr(&out));
        assert_eq!(events(&s).len(), 10, "{kind}");
        let last = seen.lock().unwrap().last().unwrap().clone();
        let tools = &last["tools"];
        assert!(tools.to_string().contains("echo_args"), "{kind}: {tools}");
        // `stats` counts the tool definitions the turn sent as its fixed
        // part (no system prompt is configured here): as the request is.
        let stats = s.json(&["stats"]);
        let fixed = stats["fixed"].as_u64().expect("the fixed part is recorded");
        let defined = tools.to_string().len() as u64 / 4;
        assert!(
            fixed > defined / 3 && fixed < defined * 3,
            "{kind}: {fixed} for {defined}: {stats}"
        );
    }
}

/// A runaway turn of 200 tool steps into an 8,000-token window completes:
/// compaction fires within the turn, every request fits the window and
/// keeps its tool pairs, and the final answer is recorded.
#[test]
fn a_runaway_turn_completes_within_the_window() {
    let mut script: Vec<Say> = (0..200)
        .map(|_| Say::Tool("echo_args", json!({"path": "x".repeat(300)})))
        .collect();
    script.push(Say::Text("All 200 steps done."));
    let (base, seen) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[query]\nstep_limit = 300\n[compaction.auto]\nenabled = true\n[compaction.auto.rule]\nkeep_first = 1\n[compaction.auto.rule.summary]\n",
    );
    let out = s.run(&["q", "-m", "fake/m", "--new", "--window", "8000", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 201);
    for (i, r) in requests.iter().enumerate() {
        // Characters / 4, the estimate's own measure, with room for the
        // wire format's keys.
        let size = r["messages"].to_string().len() / 4;
        assert!(size <= 8_000, "request {}: ~{size} tokens", i + 1);
    }
    let recs = events(&s);
    assert_eq!(recs.last().unwrap()["content"], "All 200 steps done.");
    let compactions = recs.iter().filter(|r| r["type"] == "compaction").count();
    assert!(compactions >= 2, "{compactions} compactions");
    assert!(
        stderr(&out).contains("automatic compaction before the next model call"),
        "{}",
        stderr(&out)
    );
}

/// Without a terminal, a tool that asks declines (the model reads why),
/// unless `--yes`.
#[test]
fn ask_without_a_terminal_declines_unless_yes() {
    let script = vec![Say::Tool("asker", json!({"path": "a"})), Say::Text("ok")];
    let (base, _) = model("openai", script.clone());
    let tool = "\n[tools.asker]\ncommand = [\"cat\"]\nrun = \"ask\"\n";
    let s = workspace("openai", &base, tool);
    let out = s.run(&["q", "-m", "fake/m", "--new", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = events(&s)
        .into_iter()
        .find(|r| r["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    let (base, _) = model("openai", script);
    let s = workspace("openai", &base, tool);
    let out = s.run(&["q", "-m", "fake/m", "--new", "--yes", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = events(&s)
        .into_iter()
        .find(|r| r["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["is_error"], false, "{result}");
}

/// The step limit ends a turn that never stops, with a clear message.
#[test]
fn the_step_limit_stops_a_loop() {
    let script: Vec<Say> = (0..10)
        .map(|_| Say::Tool("echo_args", json!({"path": "a"})))
        .collect();
    let (base, seen) = model("openai", script);
    let s = workspace("openai", &base, "\n[query]\nstep_limit = 3\n");
    let out = s.run(&["q", "-m", "fake/m", "--new", "go"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("3 times in a row"),
        "{}",
        stderr(&out)
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
    // What it did is recorded, every call with its result.
    let recs = events(&s);
    assert_eq!(
        recs.iter().filter(|r| r["type"] == "tool_result").count(),
        3
    );
}

/// A model name is needed once; without one the query says how to give it.
#[test]
fn a_query_without_a_model_says_how_to_name_one() {
    let s = Scratch::new();
    let out = s.run(&["q", "hello"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("-m provider/model"),
        "{}",
        stderr(&out)
    );
    // A built-in tool that does not exist is refused, not ignored.
    let out = s.run(&["q", "-m", "local/x", "-t", "compat", "hello"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("-t compat: no such built-in tool; the built-in tools are: compact"),
        "{err}"
    );
}

/// `[query]` is checked like every section: a bad value or an unknown key
/// names the file, the line and what was expected.
#[test]
fn query_settings_are_checked() {
    let s = Scratch::new();
    for (text, needle) in [
        (
            "[query]\nstep_limit = 0\n",
            "a number of model calls, at least 1",
        ),
        ("[query]\nsteps = 3\n", "step_limit"),
        ("[query]\nsystem = 3\n", "a string (the system prompt)"),
        (
            "[query]\nreasoning = \"loud\"\n",
            "\"dim\" (shown dimmed on a terminal) or \"hide\"",
        ),
    ] {
        let f = s.path().join("q.toml");
        std::fs::write(&f, text).unwrap();
        let out = s.run(&["-c", f.to_str().unwrap(), "config", "show"]);
        assert!(!out.status.success(), "{text}");
        let err = stderr(&out);
        assert!(
            err.contains("q.toml") && err.contains(needle),
            "{text}: {err}"
        );
    }
}

/// Ctrl-C (SIGINT to the real process) while a tool runs: the tool is
/// stopped, its call gets an error result, the turn ends with status 130,
/// the conversation loads, and the next query continues from it.
#[test]
fn ctrl_c_during_a_tool_run_leaves_a_valid_log() {
    let script = vec![Say::Tool("slow", json!({})), Say::Text("never reached")];
    let (base, seen) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[tools.slow]\ncommand = [\"sh\", \"-c\", \"touch started; sleep 30\"]\nrun = \"unattended\"\n",
    );
    let child = s
        .command()
        .args(["q", "-m", "fake/m", "--new", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = s.path().join("started");
    let t0 = std::time::Instant::now();
    while !started.exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "the tool never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(20),
        "the tool was stopped"
    );
    let recs = events(&s);
    let result = recs
        .iter()
        .find(|r| r["type"] == "tool_result")
        .expect("a result");
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "no model call after the interrupt"
    );
    // The next query continues from the valid log (the server answers text).
    let out = s.run(&["q", "continue"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    assert_eq!(recs.last().unwrap()["type"], "assistant");
}

/// Approval on a pseudo-terminal: `y` runs the call, `n` with a reason
/// declines it and the model reads the reason, `e` runs it with the
/// arguments as edited in `$EDITOR`.
#[test]
fn approval_on_a_terminal_runs_declines_and_edits() {
    let tool = "\n[tools.asker]\ncommand = [\"cat\"]\nrun = \"ask\"\n";
    let cases: [(&str, Option<&str>); 3] = [
        ("y\n", None),
        ("n\nnot this file\n", None),
        ("e\ny\n", Some("edit")),
    ];
    for (keys, editor) in cases {
        let (base, seen) = model(
            "openai",
            vec![
                Say::Tool("asker", json!({"path": "a.txt"})),
                Say::Text("ok"),
            ],
        );
        let s = workspace("openai", &base, tool);
        // An editor that points the call at another file.
        let ed = s.path().join("ed.sh");
        std::fs::write(&ed, "#!/bin/sh\nsed -i 's/a.txt/b.txt/' \"$1\"\n").unwrap();
        let mut mode = std::fs::metadata(&ed).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
        std::fs::set_permissions(&ed, mode).unwrap();
        let editor = editor.map(|_| ed.to_str().unwrap().to_owned());
        let out = on_a_terminal(&s, "q -m fake/m --new go", keys, editor.as_deref());
        assert!(
            out.status.success(),
            "{keys:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
        let result = events(&s)
            .into_iter()
            .find(|r| r["type"] == "tool_result")
            .unwrap();
        let content = result["content"].as_str().unwrap();
        match keys {
            "y\n" => {
                assert_eq!(result["is_error"], false, "{result}");
                assert!(content.contains("a.txt"), "{content}");
            }
            "e\ny\n" => {
                assert_eq!(result["is_error"], false, "{result}");
                assert!(content.contains("b.txt"), "{content}");
            }
            _ => {
                assert_eq!(result["is_error"], true, "{result}");
                assert!(content.contains("not this file"), "{content}");
                // The model was told.
                let last = seen.lock().unwrap().last().unwrap().to_string();
                assert!(last.contains("not this file"), "{last}");
            }
        }
    }
}

/// Ctrl-C while the model's answer streams: the answer is recorded, the
/// tool call it made gets an `interrupted` error result instead of running,
/// the turn ends with status 130, and the next query continues.
#[test]
fn ctrl_c_during_streaming_leaves_a_valid_log() {
    let script = vec![
        Say::SlowTool("echo_args", json!({"path": "a"})),
        Say::Text("back"),
    ];
    let (base, seen) = model("openai", script);
    let s = workspace("openai", &base, "");
    let child = s
        .command()
        .args(["q", "-m", "fake/m", "--new", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while seen.lock().unwrap().is_empty() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "no request"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Mid-stream: the server has sent its first event and pauses.
    while PAUSED.load(Ordering::SeqCst) == 0 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "never paused"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let recs = events(&s);
    let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["turn_start", "user", "tool_call", "tool_result"],
        "{recs:?}"
    );
    assert_eq!(recs[3]["is_error"], true);
    assert!(recs[3]["content"].as_str().unwrap().contains("interrupted"));
    let out = s.run(&["q", "continue"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(events(&s).last().unwrap()["content"], "back");
}

/// A tool that fails (non-zero exit) or times out gives an error result the
/// A tool that fails (non-zero exit), one that times out and one that
/// prints 10 MB: two error results the model reads and one result cut with
/// a note, and the turn goes on to its answer.
#[test]
fn failing_tools_give_error_results_and_the_loop_goes_on() {
    let script = vec![
        Say::Tool("fails", json!({})),
        Say::Tool("hangs", json!({})),
        Say::Tool("floods", json!({})),
        Say::Text("noted"),
    ];
    let (base, seen) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[tools.fails]\ncommand = [\"sh\", \"-c\", \"echo broken >&2; exit 3\"]\nrun = \"unattended\"\n[tools.hangs]\ncommand = [\"sleep\", \"30\"]\nrun = \"unattended\"\ntimeout = 1\n[tools.floods]\ncommand = [\"sh\", \"-c\", \"head -c 10000000 /dev/zero | tr '\\\\000' a\"]\nrun = \"unattended\"\nmax_output_bytes = 20000\n",
    );
    let out = s.run(&["q", "-m", "fake/m", "--new", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    let results: Vec<&Value> = recs.iter().filter(|r| r["type"] == "tool_result").collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"].as_str().unwrap().contains("broken"),
        "{}",
        results[0]
    );
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{}",
        results[1]
    );
    let flood = results[2]["content"].as_str().unwrap();
    assert!(flood.len() < 25_000, "cut: {} bytes", flood.len());
    assert!(flood.starts_with("aaaa"), "{}", &flood[..40]);
    assert_eq!(recs.last().unwrap()["content"], "noted");
    // What the model got back is what was recorded: bounded.
    let last = seen.lock().unwrap().last().unwrap().to_string();
    assert!(last.len() < 60_000, "{} bytes sent", last.len());
}

/// One turn at a time in a conversation: a second query while a turn runs
/// is refused and writes nothing; the first completes intact.
#[test]
fn a_second_query_on_a_busy_conversation_is_refused() {
    let script = vec![Say::Tool("slow", json!({})), Say::Text("first done")];
    let (base, _) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[tools.slow]\ncommand = [\"sh\", \"-c\", \"touch started; sleep 2; echo real output\"]\nrun = \"unattended\"\n",
    );
    let first = s
        .command()
        .args(["q", "-m", "fake/m", "--new", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !s.path().join("started").exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "the tool never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let n = events(&s).len();
    let second = s.run(&["q", "hello there"]);
    assert!(!second.status.success());
    let err = stderr(&second);
    assert!(
        err.contains("running a turn in another ctxfold query"),
        "{err}"
    );
    assert_eq!(events(&s).len(), n, "the second wrote nothing");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "turn_start",
            "user",
            "tool_call",
            "tool_result",
            "assistant"
        ]
    );
    assert!(recs[3]["content"].as_str().unwrap().contains("real output"));
}

/// A tool never sees the providers' keys, `-u` names a tool that exists,
/// and `-k` needs `=` (the message follows it).
#[test]
fn tools_never_see_keys_and_flags_do_not_swallow_the_message() {
    let script = vec![Say::Tool("env", json!({})), Say::Text("ok")];
    let (base, _) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[tools.env]\ncommand = [\"sh\", \"-c\", \"echo key=$OPENAI_API_KEY/$ANTHROPIC_API_KEY\"]\nrun = \"unattended\"\n",
    );
    let out = s
        .command()
        .args(["q", "-m", "fake/m", "--new", "-k", "what", "is", "set"])
        .env("OPENAI_API_KEY", "sk-SECRET-1")
        .env("ANTHROPIC_API_KEY", "sk-SECRET-2")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    let user = recs.iter().find(|r| r["type"] == "user").unwrap();
    assert_eq!(
        user["content"], "what is set",
        "-k took no word of the message"
    );
    let result = recs.iter().find(|r| r["type"] == "tool_result").unwrap();
    assert_eq!(
        result["content"].as_str().unwrap().trim(),
        "key=/",
        "{result}"
    );
    assert!(!recs.iter().any(|r| r.to_string().contains("SECRET")));
    let out = s.run(&["q", "-u", "nope", "go"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("-u nope: no such tool; the tools are: echo_args, env, compact"),
        "{err}"
    );
}

/// A model that calls a tool that does not exist, then one with arguments
/// that are not JSON: each gets an error result it can read, the loop goes
/// on, and the next request carries the call back as the model sent it.
#[test]
fn a_model_calling_unknown_tools_or_sending_broken_arguments_gets_errors_back() {
    let script = vec![
        Say::Tool("nope", json!({})),
        Say::Tool("echo_args", json!("{\"path\": \"src/ma")),
        Say::Text("sorry"),
    ];
    let (base, seen) = model("openai", script);
    let s = workspace("openai", &base, "");
    let out = s.run(&["q", "-m", "fake/m", "--new", "go"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    let results: Vec<&Value> = recs.iter().filter(|r| r["type"] == "tool_result").collect();
    assert_eq!(results.len(), 2, "{recs:#?}");
    let unknown = results[0]["content"].as_str().unwrap();
    assert_eq!(results[0]["is_error"], true);
    assert!(
        unknown.contains("no tool named `nope`") && unknown.contains("echo_args"),
        "{unknown}"
    );
    let broken = results[1]["content"].as_str().unwrap();
    assert_eq!(results[1]["is_error"], true);
    assert!(broken.contains("must be a JSON object"), "{broken}");
    assert_eq!(recs.last().unwrap()["content"], "sorry");
    // The third request passed the server's pairing checks, and gave the
    // model its broken arguments back verbatim.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let sent: Vec<&Value> = seen[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| &c["function"]["arguments"])
        .collect();
    assert_eq!(sent, [&json!("{}"), &json!("{\"path\": \"src/ma")]);
}

/// An Anthropic-style stream whose tool input is not JSON fails the turn
/// with a message that says so; the log stays valid and a next query on
/// the conversation works.
#[test]
fn a_broken_anthropic_tool_input_fails_the_turn_cleanly() {
    let script = vec![Say::Tool("echo_args", json!("{\"path\": "))];
    let (base, _) = model("anthropic", script);
    let s = workspace("anthropic", &base, "");
    let out = s.run(&["q", "-m", "fake/m", "--new", "go"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not JSON"), "{err}");
    // The log is whole: the next query (the server now answers "done")
    // sends a valid request and completes.
    let out = s.run(&["q", "-m", "fake/m", "again"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    assert_eq!(recs.last().unwrap()["content"], "done");
}
