//! What a long-running service and the scripts around it meet, through the
//! real binary: standard streams that cannot be written, a `query` killed
//! outright while its tool runs, passwords in connection strings, and
//! `meta.json` files of any JSON shape.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::model::{Say, events, model, workspace};
use common::{Scratch, stderr};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A conversation imported from a small OpenAI transcript; its id.
fn imported(s: &Scratch) -> String {
    let file = s.path().join("chat.json");
    std::fs::write(
        &file,
        json!([{"role": "user", "content": "Where is the bug?"},
               {"role": "assistant", "content": "In parse()."}])
        .to_string(),
    )
    .unwrap();
    s.ok(&[
        "c",
        "import",
        file.to_str().unwrap(),
        "--input-format",
        "openai",
    ])
    .trim()
    .to_owned()
}

fn full() -> Stdio {
    Stdio::from(std::fs::File::create("/dev/full").unwrap())
}

/// `ctxfold ARGS`, its standard output and error both `/dev/full` (a full
/// disk): the exit status.
fn into_full_disk(s: &Scratch, args: &[&str], stdout_full: bool) -> Option<i32> {
    let mut c = s.command();
    c.args(args).stdin(Stdio::null()).stderr(full());
    c.stdout(if stdout_full { full() } else { Stdio::null() });
    c.status().unwrap().code()
}

/// Standard error on a full disk: the command still ends with its own
/// status (1 for an error), never 101 for a panic, and what it did is done.
#[test]
fn no_command_panics_when_its_output_cannot_be_written() {
    let s = Scratch::new();
    let id = imported(&s);
    // The listing cannot be written: an error, said where it can be.
    assert_eq!(into_full_disk(&s, &["c", "ls"], true), Some(1));
    // A torn last line makes `show` warn on standard error; it repairs the
    // log all the same.
    let events = s
        .path()
        .join(format!(".ctxfold/conversations/{id}/events.jsonl"));
    let mut text = std::fs::read_to_string(&events).unwrap();
    text.push_str("{\"broken");
    std::fs::write(&events, text).unwrap();
    assert_eq!(into_full_disk(&s, &["c", "show", &id], false), Some(0));
    assert!(
        events.with_extension("jsonl.torn").exists(),
        "the torn tail was moved aside"
    );
    // An append that fails, and one that works, while standard error is full.
    let bad = s.path().join("bad.jsonl");
    std::fs::write(&bad, "not json\n").unwrap();
    assert_eq!(
        into_full_disk(
            &s,
            &["c", "append", &id, "--input", bad.to_str().unwrap()],
            false
        ),
        Some(1)
    );
    let good = s.path().join("good.jsonl");
    std::fs::write(
        &good,
        "{\"type\":\"user\",\"ts\":\"2026-12-02T00:00:00Z\",\"content\":\"And now?\"}\n",
    )
    .unwrap();
    assert_eq!(
        into_full_disk(
            &s,
            &["c", "append", &id, "--input", good.to_str().unwrap()],
            false
        ),
        Some(0)
    );
    let print = s.ok(&["c", "print", &id]);
    assert!(print.contains("And now?"), "{print}");
    // Warnings from the compaction service go through the log records'
    // writer, which panicked on a full standard error: a window too small
    // for the newest unit (`--auto`), a torn log read by `c compact -s`.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/rate-limiter-session.openai.json"
    );
    let out = s.path().join("compacted.json");
    let auto = [
        "compact",
        example,
        "-o",
        out.to_str().unwrap(),
        "--auto",
        "--window",
        "400",
    ];
    let summary = ["c", "compact", &id, "-s"];
    let tear = || {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&events)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn"))
            .unwrap();
    };
    for (way, args) in [("--auto", &auto[..]), ("-s", &summary[..])] {
        tear();
        let said = s.command().args(args).output().unwrap();
        let said = String::from_utf8_lossy(&said.stderr);
        assert!(
            said.contains("WARN") || said.contains("warning:"),
            "{way}: there is a warning to print: {said}"
        );
        tear();
        assert_eq!(into_full_disk(&s, args, false), Some(0), "{way}");
    }
    assert!(out.exists(), "--auto wrote its output");
    let shown = s.ok(&["c", "show", &id]);
    assert!(shown.contains("compaction"), "-s compacted: {shown}");
}

fn alive(pid: &str) -> bool {
    // A zombie (no init in the test's namespace to reap it) is dead.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// SIGKILL of `ctxfold q` while a tool runs: the tool and what it started
/// die with it, and the next query repairs the log and goes on.
#[test]
fn a_tool_dies_with_a_query_killed_outright() {
    let script = vec![Say::Tool("slow", json!({})), Say::Text("never reached")];
    let (base, _seen) = model("openai", script);
    let s = workspace(
        "openai",
        &base,
        "\n[tools.slow]\ncommand = [\"bash\", \"-c\", \"sleep 60 & echo $! > child.pid; echo $$ > tool.pid; cat; wait\"]\nrun = \"unattended\"\n",
    );
    let mut q = s
        .command()
        .args(["q", "-m", "fake/m", "--new", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tool, child) = (s.path().join("tool.pid"), s.path().join("child.pid"));
    let t0 = Instant::now();
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
    };
    let (tool_pid, child_pid) = loop {
        if let (Some(a), Some(b)) = (read(&tool), read(&child)) {
            break (a, b);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the tool never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(alive(&tool_pid) && alive(&child_pid));
    q.kill().unwrap();
    q.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&tool_pid) || alive(&child_pid) {
        assert!(
            Instant::now() < deadline,
            "the tool ({tool_pid}) or its child ({child_pid}) outlived the killed query"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The next query closes the unfinished call and goes on.
    let out = s.run(&["q", "continue"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let recs = events(&s);
    assert!(
        recs.iter()
            .any(|r| r["type"] == "tool_result" && r["is_error"] == true),
        "{recs:?}"
    );
    assert_eq!(recs.last().unwrap()["type"], "assistant");
}

/// `config show` never prints a password, in any form a store URL takes.
#[test]
fn config_show_hides_every_password() {
    for (url, secret) in [
        ("host=h password='se cret' dbname=d", "cret"),
        ("host=h password=hunter2 dbname=d", "hunter2"),
        ("postgres://u:hunter2@h/db", "hunter2"),
        ("postgres://u:p%40ssw0rd@h/db?sslmode=disable", "ssw0rd"),
        (
            "postgres://h/db?password=hunter2&sslmode=disable",
            "hunter2",
        ),
    ] {
        let s = Scratch::new();
        std::fs::write(
            s.path().join(".ctxfold/config.toml"),
            format!("[store]\nurl = {}\n", toml_string(url)),
        )
        .unwrap();
        for format in ["text", "json"] {
            let out = s.run(&["config", "show", "--format", format]);
            let all = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!all.contains(secret), "{url} ({format}): {all}");
            assert!(all.contains("***"), "{url} ({format}): {all}");
        }
    }
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("model".to_owned()),
                    Just("key".to_owned()),
                    Just("fixed_tokens".to_owned()),
                    Just("metadata".to_owned()),
                    "[a-z_]{1,6}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// `meta.json` holding any JSON under the keys ctxfold reads (its own
    /// entry, the proxy's, JP's), or in its own fields: every command that
    /// reads it ends without a panic, with success or a message.
    #[test]
    fn any_json_in_meta_json_panics_no_command(
        ours in any_json(), proxy in any_json(), jp in any_json(), title in any_json(),
    ) {
        let (base, _seen) = model("openai", vec![]);
        let s = workspace("openai", &base, "");
        let id = imported(&s);
        let path = s.path().join(format!(".ctxfold/conversations/{id}/meta.json"));
        let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        meta["extras"] = json!({"ctxfold": ours, "proxy": proxy, "jp": jp});
        for variant in [meta.clone(), { let mut m = meta.clone(); m["title"] = title.clone(); m }] {
            std::fs::write(&path, variant.to_string()).unwrap();
            let out_dir = s.path().join("out");
            let _ = std::fs::remove_dir_all(&out_dir);
            for args in [
                vec!["c", "ls"],
                vec!["c", "show", &id],
                vec!["stats", &id],
                vec!["c", "export", &id, "--output-format", "jp", "-o", out_dir.to_str().unwrap()],
                vec!["c", "use", &id],
                vec!["q", "-m", "fake/m", "hello"],
            ] {
                let out = s.command().args(&args).stdin(Stdio::null()).output().unwrap();
                let err = stderr(&out);
                prop_assert!(
                    out.status.code().is_some_and(|c| c == 0 || c == 1) && !err.contains("panicked"),
                    "{args:?} with {variant}: {:?} {err}", out.status
                );
            }
        }
    }
}
