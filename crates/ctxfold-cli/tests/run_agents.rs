//! `ctxfold run` through the real binary: any command with the base-URL
//! variables set (a Python client here), its exit status and SIGTERM
//! passed through, the proxy gone with it; and the real agents (Claude
//! Code, Codex) started by `ctxfold run` inside a loopback-only network
//! namespace, in front of the scripted upstream, with only `[proxy]`
//! upstreams and a window in config.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::agent_proxy::{Agent, in_namespace};
use common::agent_run::task;
use common::{Scratch, stderr};
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::agent::FINAL;
use serde_json::Value;

/// A client of both APIs: one chat completion through `OPENAI_BASE_URL`,
/// one message through `ANTHROPIC_BASE_URL`, each answer's text printed;
/// the base URL written to `base.txt`; exits with its first argument.
const CLIENT: &str = r#"
import json, os, sys, urllib.request
def post(url, body, headers):
    req = urllib.request.Request(url, json.dumps(body).encode(), dict(headers, **{"content-type": "application/json"}))
    return json.load(urllib.request.urlopen(req))
openai = os.environ["OPENAI_BASE_URL"]
open("base.txt", "w").write(openai)
a = post(openai + "/chat/completions",
         {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "first question steps=0"}]},
         {"authorization": "Bearer sk-test"})
print(a["choices"][0]["message"]["content"])
b = post(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
         {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "second question steps=0"}]},
         {"x-api-key": "test", "anthropic-version": "2023-06-01"})
print(b["content"][0]["text"])
sys.exit(int(sys.argv[1]))
"#;

fn workspace_over(up: &str) -> Scratch {
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        format!("[proxy]\nopenai = \"{up}\"\nanthropic = \"{up}\"\nwindow = 100000\n"),
    )
    .unwrap();
    s
}

/// Any command after `--`: both APIs reach the upstream through the
/// session's proxy, each conversation is recorded and named in the closing
/// lines, and the command's exit status is ctxfold's.
#[test]
fn a_command_after_dashes_runs_in_front_of_a_proxy_of_its_own() {
    let up = Upstream::start(1_000_000);
    let s = workspace_over(&up.base);
    let out = s
        .command()
        .args(["run", "--", "python3", "-c", CLIENT, "3"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.lines().count(), 2, "both answers: {said}");
    let seen = up.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[1].path, "/v1/messages");
    // The closing lines name what was recorded.
    let ls = s.json(&["c", "ls"]);
    let ids: Vec<&str> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{ls}");
    assert!(err.contains("2 conversations recorded"), "{err}");
    for id in &ids {
        assert!(err.contains(id), "{id} in {err}");
    }
    assert!(err.contains("2 request(s)"), "{err}");
    assert!(err.contains(&format!("ctxfold c show {}", ids[1])), "{err}");
    // The proxy went with the command.
    let base = std::fs::read_to_string(s.path().join("base.txt")).unwrap();
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "the proxy at {addr} still listens"
    );
}

/// SIGTERM sent to `ctxfold run` reaches the agent, whose own exit is
/// ctxfold's; a command that cannot be started is a clear error.
#[test]
fn sigterm_reaches_the_agent_and_its_status_is_passed_on() {
    let up = Upstream::start(1_000_000);
    let s = workspace_over(&up.base);
    let mut child = s
        .command()
        .args([
            "run",
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 42' TERM; echo ready > ready.txt; while :; do sleep 0.1; done",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = s.path().join("ready.txt");
    let t0 = Instant::now();
    while !ready.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "ctxfold run did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(42), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("got-term"));
    assert!(
        stderr(&out).contains("no conversation was recorded"),
        "{}",
        stderr(&out)
    );

    let missing = s.run(&["run", "--", "no-such-agent-anywhere"]);
    assert_eq!(missing.status.code(), Some(1));
    let err = stderr(&missing);
    assert!(
        err.contains("no-such-agent-anywhere") && err.contains("PATH"),
        "{err}"
    );
    let nothing = s.run(&["run"]);
    assert!(
        stderr(&nothing).contains("name the agent"),
        "{}",
        stderr(&nothing)
    );
}

/// `ctxfold ARGS` in `work`, HOME (and the XDG folders) in `home`.
fn ctxfold_in(work: &Path, home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctxfold"));
    c.current_dir(work)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("xdg-data"))
        .env("XDG_CONFIG_HOME", home.join("xdg-config"));
    c
}

/// Where one agent session under `ctxfold run` lives: HOME, the working
/// folder (a workspace whose `[proxy]` upstreams are the scripted
/// upstream's), and a folder on `PATH` holding the agent by its name.
struct Session {
    _root: tempfile::TempDir,
    up: Upstream,
    home: std::path::PathBuf,
    work: std::path::PathBuf,
    path: String,
}

impl Session {
    fn new(exe: &Path, name: &str) -> Session {
        let up = Upstream::agents(Some(60_000));
        // Under target/tmp: Codex refuses to make its helper binaries under
        // a temporary folder.
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(tmp).unwrap();
        let root = tempfile::Builder::new()
            .prefix(&format!("run-{name}-"))
            .tempdir_in(tmp)
            .unwrap();
        let (home, work, bin) = (
            root.path().join("home"),
            root.path().join("work"),
            root.path().join("bin"),
        );
        for d in [&home, &work, &bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(exe, bin.join(name)).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        // Codex's own switches that stop its traffic; the provider is
        // `ctxfold run`'s.
        std::fs::write(
            home.join(".codex/config.toml"),
            "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n",
        )
        .unwrap();
        assert!(
            ctxfold_in(&work, &home)
                .arg("init")
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success()
        );
        std::fs::write(
            work.join(".ctxfold/config.toml"),
            // The agents' default models are newer than the built-in
            // price table: priced here by family, as a user would.
            format!(
                "[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\nwindow = 60000\n\n\
                 [prices.\"claude-opus\"]\ninput = 5.0\noutput = 25.0\n\n\
                 [prices.\"gpt-6\"]\ninput = 1.25\noutput = 10.0\n",
                up.base
            ),
        )
        .unwrap();
        Session {
            _root: root,
            up,
            home,
            work,
            path,
        }
    }

    /// `program` in the session's folders (HOME, the XDG folders, the
    /// working folder), with the agents' switches that keep their traffic
    /// in.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.current_dir(&self.work)
            .env("HOME", &self.home)
            .env("XDG_DATA_HOME", self.home.join("xdg-data"))
            .env("XDG_CONFIG_HOME", self.home.join("xdg-config"))
            .env("PATH", &self.path)
            .env("CODEX_HOME", self.home.join(".codex"))
            .env("IS_SANDBOX", "1")
            .env("ANTHROPIC_API_KEY", "test")
            .env("OPENAI_API_KEY", "test")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("LANG", "C.UTF-8")
            // opencode, offline: its models from its own snapshot.
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1");
        c
    }

    /// The conversations recorded, by `c ls`.
    fn conversations(&self) -> Vec<Value> {
        let ls = ctxfold_in(&self.work, &self.home)
            .args(["c", "ls", "--format", "json"])
            .output()
            .unwrap();
        let ls: Value = serde_json::from_slice(&ls.stdout).unwrap();
        ls.as_array().unwrap().clone()
    }
}

/// A real agent under `ctxfold run NAME` (found on PATH, as a user's
/// would be), in the namespace, against the scripted upstream: the task
/// done, exit 0, one conversation named in the closing lines, every
/// model request recorded.
fn agent_runs(exe: &Path, name: &str, args: &[&str], steps: u64) {
    let session = Session::new(exe, name);
    let (up, home, work) = (&session.up, &session.home, &session.work);
    let out = session
        .command(env!("CARGO_BIN_EXE_ctxfold"))
        .args(["run", name, "--"])
        .args(args)
        .env("TERM", "dumb")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("[{name}] ctxfold run said:\n{err}");
    assert_eq!(out.status.code(), Some(0), "{name}: {err}\n{said}");
    assert!(said.contains(FINAL), "{name}: {said}\n{err}");
    assert!(!up.is_empty(), "the upstream served the agent");
    let convs = session.conversations();
    let ls = Value::Array(convs.clone());
    let seen: Vec<String> = up
        .requests()
        .iter()
        .map(|r| {
            let body = r.json();
            format!(
                "{} {:?} system={:.80} metadata={}",
                r.path,
                r.headers,
                body["system"].to_string(),
                body["metadata"]
            )
        })
        .collect();
    assert_eq!(convs.len(), 1, "{name}: one conversation: {ls}\n{seen:#?}");
    let id = convs[0]["id"].as_str().unwrap();
    assert!(
        err.contains("1 conversation recorded") && err.contains(id),
        "{err}"
    );
    // The cost in the closing lines is what `ctxfold stats` says.
    let stats = ctxfold_in(work, home).args(["stats", id]).output().unwrap();
    let stats = String::from_utf8_lossy(&stats.stdout);
    let cost = err
        .lines()
        .find(|l| l.trim_start().starts_with("cost:"))
        .unwrap_or_else(|| panic!("{name}: no cost in the closing lines: {err}"));
    assert!(
        stats.lines().any(|l| l.trim() == cost.trim()),
        "{name}: run said {cost:?}, stats said:\n{stats}"
    );
    let show = ctxfold_in(work, home)
        .args(["c", "show", id, "--format", "json"])
        .output()
        .unwrap();
    let show: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert!(
        show["counts"]["tool_call"].as_u64().unwrap_or(0) >= steps,
        "{name}: every step recorded: {show}"
    );
    assert!(
        show["counts"]["assistant"].as_u64().unwrap_or(0) >= 1,
        "{name}: the answer recorded: {show}"
    );
}

#[test]
#[ignore = "needs the real agents (scripts/agents) and a network namespace: run through scripts/test"]
fn claude_code_under_ctxfold_run() {
    in_namespace(Agent::Claude, |exe| {
        agent_runs(
            exe,
            "claude",
            &["-p", &task("run", 3), "--dangerously-skip-permissions"],
            3,
        )
    });
}

#[test]
#[ignore = "needs the real agents (scripts/agents) and a network namespace: run through scripts/test"]
fn codex_under_ctxfold_run() {
    in_namespace(Agent::Codex(None), |exe| {
        agent_runs(
            exe,
            "codex",
            &[
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                &task("run", 3),
            ],
            3,
        )
    });
}

/// The agent `var` names (scripts/agents, scripts/aider), in a
/// loopback-only namespace, or skip (fail under scripts/test).
fn with_exe(var: &str, body: fn(&Path)) {
    let Some(exe) = std::env::var_os(var).map(std::path::PathBuf::from) else {
        ctxfold_testkit::needs::missing("ctxfold run test", &format!("{var} is not set"));
        return;
    };
    let outcome = std::thread::spawn(move || {
        common::agent_run::enter_loopback_namespace()?;
        body(&exe);
        Ok::<(), String>(())
    })
    .join();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctxfold_testkit::needs::missing("ctxfold run test", &e),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[test]
#[ignore = "needs opencode (scripts/agents) and a network namespace: run through scripts/test"]
fn opencode_under_ctxfold_run() {
    with_exe("CTXFOLD_OPENCODE", |exe| {
        agent_runs(
            exe,
            "opencode",
            &["run", "-m", "anthropic/claude-sonnet-4-5", &task("run", 0)],
            0,
        )
    });
}

#[test]
#[ignore = "needs aider (scripts/aider) and a network namespace: run through scripts/test"]
fn aider_under_ctxfold_run() {
    with_exe("CTXFOLD_AIDER", |exe| {
        agent_runs(
            exe,
            "aider",
            &[
                "--model",
                "anthropic/claude-sonnet-4-5",
                "--no-git",
                "--yes-always",
                "--no-check-update",
                "--analytics-disable",
                "--no-show-model-warnings",
                "--no-pretty",
                "--no-stream",
                "--map-tokens",
                "0",
                "--message",
                &task("run", 0),
            ],
            0,
        )
    });
}

/// Claude Code at a terminal (a pseudo-terminal driven by
/// `tests/pty/drive.py`) under `ctxfold run claude`: its prompt comes up,
/// a task typed is answered on screen, Ctrl-C twice ends it as it does
/// without ctxfold, ctxfold ends with it (its closing lines on the screen)
/// and the proxy is gone.
#[test]
#[ignore = "needs the real agents (scripts/agents) and a network namespace: run through scripts/test"]
fn claude_code_interactively_under_ctxfold_run() {
    in_namespace(Agent::Claude, |exe| {
        let session = Session::new(exe, "claude");
        // What a first start would ask (theme, the key, trusting the
        // folder), answered as a user who has used Claude Code before.
        std::fs::write(
            session.home.join(".claude.json"),
            serde_json::json!({
                "hasCompletedOnboarding": true,
                "theme": "dark",
                "bypassPermissionsModeAccepted": true,
                "customApiKeyResponses": {"approved": ["test"], "rejected": []},
                "projects": {session.work.to_str().unwrap(): {
                    "hasTrustDialogAccepted": true,
                    "hasCompletedProjectOnboarding": true
                }}
            })
            .to_string(),
        )
        .unwrap();
        let script = serde_json::json!([
            {"wait": "through the proxy at", "timeout": 30},
            {"wait": "bypass permissions on", "timeout": 90},
            {"sleep": 1},
            {"type": task("tty", 2)},
            {"sleep": 0.5},
            {"key": "enter"},
            {"wait": FINAL, "timeout": 120},
            {"key": "ctrl-c"},
            {"sleep": 0.3},
            {"key": "ctrl-c"},
            {"wait": "conversation recorded", "timeout": 60},
        ]);
        let drive = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pty/drive.py");
        let out = session
            .command("python3")
            .args([drive, &script.to_string(), "--"])
            .args([env!("CARGO_BIN_EXE_ctxfold"), "run", "claude", "--"])
            .args(["--dangerously-skip-permissions"])
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout);
        let got: Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|e| panic!("{e}: {line} {}", stderr(&out)));
        let screen = got["screen"].as_str().unwrap_or_default();
        assert!(
            got["failed"].is_null(),
            "stuck at {}:\n{screen}",
            got["failed"]
        );
        assert_eq!(got["exit"], 0, "{screen}");
        let convs = session.conversations();
        assert_eq!(convs.len(), 1, "{convs:?}");
        let id = convs[0]["id"].as_str().unwrap();
        assert!(
            screen.contains(id),
            "the closing lines name {id}:\n{screen}"
        );
        // The proxy is gone with it.
        let base = screen
            .split("through the proxy at ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .unwrap();
        let addr = base.trim_start_matches("http://");
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "the proxy at {addr} still listens"
        );
        assert!(session.up.len() > 1);
    });
}
