//! `ctxfold doctor` through the real binary: a good setup passes every
//! check (exit 0), with a fake upstream on 127.0.0.1, a running proxy, an
//! agent on `PATH` and `ctxfold mcp` registered; then each fault it checks,
//! one at a time over that good setup, fails it with a line naming the
//! fault and no other line failing.

// A test may panic on what it did not expect, and print.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::proxy::Proxy;
use common::{BIN, Scratch, stderr};
use ctxfold_testkit::faults::ReadOnly;
use ctxfold_testkit::pg;
use ctxfold_testkit::upstream::Upstream;

/// A good setup: a scratch workspace, the fake upstream named by the
/// user's config for both APIs, a `claude` on a `PATH` of the test's own.
struct Setup {
    scratch: Scratch,
    upstream: Upstream,
    bin: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let scratch = Scratch::new();
        let upstream = Upstream::start(100_000);
        let bin = scratch.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let s = Setup {
            scratch,
            upstream,
            bin,
        };
        s.user_config("");
        s.agent("claude", "echo '2.1.332 (Claude Code)'");
        s
    }

    fn path(&self) -> &Path {
        self.scratch.path()
    }

    /// The user's config: both upstreams the fake, then `more`.
    fn user_config(&self, more: &str) {
        let dir = self.path().join("xdg-config/ctxfold");
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\n{more}",
            self.upstream.base
        );
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    /// An executable `name` on the test's `PATH` running `script`.
    fn agent(&self, name: &str, script: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    /// `ctxfold doctor ARGS` in `dir`, HOME and XDG folders in the
    /// scratch folder, `PATH` the test's own, no `CTXFOLD_…` variable.
    fn doctor_in(&self, dir: &Path, args: &[&str]) -> Output {
        let mut c = Command::new(BIN);
        c.current_dir(dir)
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.path().join("xdg-data"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("PATH", &self.bin)
            .env_remove("CODEX_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .arg("doctor")
            .args(args);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("CTXFOLD_") {
                c.env_remove(k);
            }
        }
        c.output().unwrap()
    }

    fn doctor(&self, args: &[&str]) -> Output {
        self.doctor_in(self.path(), args)
    }
}

/// The lines of a text report.
fn lines(out: &Output) -> Vec<String> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The one failed line, after checking the command failed and no other
/// line did.
fn only_failure(out: &Output) -> String {
    let all = lines(out);
    assert!(
        !out.status.success(),
        "doctor passed: {all:#?}\n{}",
        stderr(out)
    );
    let failed: Vec<&String> = all.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(failed.len(), 1, "one failure expected: {all:#?}");
    assert!(
        stderr(out).contains("1 of ") && stderr(out).contains("checks failed"),
        "{}",
        stderr(out)
    );
    failed[0].clone()
}

/// The line of `check`.
fn line<'a>(all: &'a [String], check: &str) -> &'a str {
    all.iter()
        .find(|l| {
            l[5..].starts_with(&format!("{check}:")) || l[5..].starts_with(&format!("{check} "))
        })
        .unwrap_or_else(|| panic!("no line for {check}: {all:#?}"))
}

/// A loopback address where nothing listens (a port just freed).
fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

#[test]
fn a_good_setup_passes_every_check() {
    let s = Setup::new();
    let proxy = Proxy::start(&s.scratch, "");
    s.user_config(&format!("listen = \"{}\"\n", proxy.addr()));
    // One request through the proxy, which its line then counts.
    let answered = ureq::get(&proxy.url("/v1/models")).call().unwrap();
    assert_eq!(answered.status(), 200);
    std::fs::write(
        s.path().join(".claude.json"),
        format!(
            r#"{{"mcpServers": {{"recall": {{"type": "stdio", "command": "{BIN}", "args": ["mcp"]}}}}}}"#
        ),
    )
    .unwrap();
    let probes_before = s.upstream.requests().len();

    let out = s.doctor(&[]);
    let all = lines(&out);
    assert!(out.status.success(), "{all:#?}\n{}", stderr(&out));
    assert!(all.iter().all(|l| !l.starts_with("FAIL")), "{all:#?}");
    let root = s.path().join(".ctxfold");
    assert!(
        line(&all, "store").starts_with(&format!(
            "ok   store: workspace {} (found from here; writable, 0 conversations",
            root.display()
        )),
        "{all:#?}"
    );
    let config = line(&all, "config");
    assert!(config.starts_with("ok   config: "), "{config}");
    assert!(config.contains("from user file"), "{config}");
    for api in ["openai", "anthropic"] {
        let l = line(&all, &format!("upstream {api}"));
        assert!(
            l.starts_with(&format!(
                "ok   upstream {api} {}: reachable (HTTP 200",
                s.upstream.base
            )),
            "{l}"
        );
    }
    // Each upstream was asked once, by doctor itself.
    let probes: Vec<_> = s.upstream.requests()[probes_before..]
        .iter()
        .map(|r| {
            (
                r.method.clone(),
                r.header("user-agent").unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(probes.len(), 2, "{probes:?}");
    assert!(
        probes
            .iter()
            .all(|(m, ua)| m == "GET" && ua.starts_with("ctxfold-doctor/"))
    );
    let p = line(&all, "proxy");
    assert!(
        p.starts_with(&format!(
            "ok   proxy {}: a ctxfold proxy answers; ",
            proxy.addr()
        )),
        "{p}"
    );
    assert!(
        p.contains("; 1 request answered, 0 compactions recorded"),
        "{p}"
    );
    let claude = line(&all, "agent claude");
    assert_eq!(
        claude,
        format!(
            "ok   agent claude: 2.1.332 (Claude Code) at {} (ctxfold run claude knows it)",
            s.bin.join("claude").display()
        )
    );
    assert!(
        line(&all, "agents").starts_with("note agents: not on PATH: codex, opencode, aider"),
        "{all:#?}"
    );
    assert_eq!(
        line(&all, "mcp claude"),
        "ok   mcp claude: ctxfold mcp registered as `recall` in ~/.claude.json"
    );
    // Doctor left nothing in the workspace.
    let left: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".doctor"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // The same as JSON: every check, none failed.
    let out = s.doctor(&["--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed"], 0);
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), all.len());
    assert_eq!(checks[0]["check"], "store");
    assert_eq!(checks[0]["status"], "ok");
}

#[test]
fn no_workspace_fails_the_store_line() {
    let s = Setup::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = s.doctor_in(elsewhere.path(), &[]);
    let failed = only_failure(&out);
    assert!(
        failed.starts_with(&format!(
            "FAIL store: no workspace: no .ctxfold/ in {} or above, and no global one at {}",
            elsewhere.path().display(),
            s.path().join("xdg-data/ctxfold").display()
        )),
        "{failed}"
    );
    assert!(failed.contains("— fix: ctxfold init"), "{failed}");
    // Doctor did not create the global workspace.
    assert!(!s.path().join("xdg-data/ctxfold").exists());
}

#[test]
fn a_read_only_workspace_fails_the_store_line() {
    let s = Setup::new();
    let root = s.path().join(".ctxfold");
    let _ro = ReadOnly::new(&root);
    let failed = only_failure(&s.doctor(&[]));
    assert!(
        failed.starts_with(&format!(
            "FAIL store: workspace {} (found from here) is not writable: cannot create a file in {}",
            root.display(),
            root.display()
        )),
        "{failed}"
    );
    assert!(failed.contains("— fix: make it writable"), "{failed}");
}

#[test]
fn an_unknown_config_key_fails_the_config_line_with_its_file_and_line() {
    let s = Setup::new();
    let file = s.path().join(".ctxfold/config.toml");
    std::fs::write(&file, "[proxy]\nwindow = 1000\nlistn = \"127.0.0.1:1\"\n").unwrap();
    let out = s.doctor(&[]);
    let failed = only_failure(&out);
    assert!(
        failed.starts_with(&format!(
            "FAIL config: {}:3: unknown key proxy.listn",
            file.display()
        )),
        "{failed}"
    );
    assert!(
        failed.ends_with("— fix: rename the key to listen there, or remove it"),
        "{failed}"
    );
    // The other checks still ran: the store, and the agents.
    let all = lines(&out);
    assert!(line(&all, "store").starts_with("ok   store:"), "{all:#?}");
    assert!(
        line(&all, "agent claude").starts_with("ok   agent claude:"),
        "{all:#?}"
    );
}

#[test]
fn an_upstream_that_refuses_connections_fails_its_line() {
    let s = Setup::new();
    let dead = format!("http://{}", dead_addr());
    let user = s.path().join("xdg-config/ctxfold/config.toml");
    std::fs::write(
        &user,
        format!(
            "[proxy]\nopenai = \"{}\"\nanthropic = \"{dead}\"\n",
            s.upstream.base
        ),
    )
    .unwrap();
    let failed = only_failure(&s.doctor(&[]));
    assert_eq!(
        failed,
        format!(
            "FAIL upstream anthropic {dead}: connection refused — fix: start the server there, or point [proxy] anthropic (set at {}:3) at one that is up",
            user.display()
        )
    );
}

#[test]
fn a_configured_proxy_address_where_nothing_listens_fails_the_proxy_line() {
    let s = Setup::new();
    let dead = dead_addr();
    s.user_config(&format!("listen = \"{dead}\"\n"));
    let failed = only_failure(&s.doctor(&[]));
    let user = s.path().join("xdg-config/ctxfold/config.toml");
    assert_eq!(
        failed,
        format!(
            "FAIL proxy {dead}: no ctxfold proxy (connection refused); [proxy] listen is set at {}:4 — fix: start it: ctxfold proxy (or remove [proxy] listen if agents are not pointed there)",
            user.display()
        )
    );
}

#[test]
fn something_else_at_the_proxy_address_fails_the_proxy_line() {
    let s = Setup::new();
    // The fake upstream answers /healthz, but not as a ctxfold proxy.
    let addr = s.upstream.base.trim_start_matches("http://").to_owned();
    s.user_config(&format!("listen = \"{addr}\"\n"));
    let failed = only_failure(&s.doctor(&[]));
    assert!(
        failed.starts_with(&format!(
            "FAIL proxy {addr}: something else answers there (HTTP 200 to /healthz), not a ctxfold proxy"
        )),
        "{failed}"
    );
}

#[test]
fn an_agent_that_fails_its_version_fails_its_line() {
    let s = Setup::new();
    let codex = s.agent(
        "codex",
        "echo 'Error: Cannot find module codex.js' >&2\nexit 3",
    );
    let failed = only_failure(&s.doctor(&[]));
    assert_eq!(
        failed,
        format!(
            "FAIL agent codex: {0} --version failed (exit status: 3): Error: Cannot find module codex.js — fix: check that `{0} --version` runs; reinstall Codex if it does not",
            codex.display()
        )
    );
}

#[test]
fn an_agent_that_hangs_on_its_version_fails_its_line_in_time() {
    let s = Setup::new();
    // Not `exec`: the shell's child keeps the output pipe open after the
    // shell is killed, and doctor must not wait for it either.
    let aider = s.agent("aider", "PATH=/usr/bin:/bin\nsleep 60");
    let start = Instant::now();
    let failed = only_failure(&s.doctor(&[]));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        failed.starts_with(&format!(
            "FAIL agent aider: {} --version gave no answer within 5 s",
            aider.display()
        )),
        "{failed}"
    );
}

#[test]
fn an_mcp_registration_of_a_missing_ctxfold_fails_its_line() {
    let s = Setup::new();
    s.agent("codex", "echo 'codex-cli 0.171.0'");
    let codex_home = s.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        "[mcp_servers.ctxfold]\ncommand = \"/opt/gone/ctxfold\"\nargs = [\"mcp\"]\n",
    )
    .unwrap();
    let out = s.doctor(&[]);
    let failed = only_failure(&out);
    assert!(
        failed.starts_with(
            "FAIL mcp codex: server `ctxfold` in ~/.codex/config.toml runs /opt/gone/ctxfold, which is not there — fix: point it at this ctxfold ("
        ),
        "{failed}"
    );
    // Claude Code without a registration: a note with how to add one.
    let all = lines(&out);
    assert_eq!(
        line(&all, "mcp claude"),
        "note mcp claude: ctxfold mcp not registered (no config file); ctxfold run claude registers it for its session — to have it in every session: claude mcp add --scope user ctxfold -- ctxfold mcp"
    );
    assert!(
        line(&all, "agent codex").starts_with("ok   agent codex: Codex codex-cli 0.171.0 at "),
        "{all:#?}"
    );
}

#[test]
fn a_postgresql_store_that_cannot_be_reached_fails_the_store_line() {
    let s = Setup::new();
    let url = format!("postgres://ctxfold:secret@{}/ctxfold", dead_addr());
    let failed = only_failure(&s.doctor(&["--store", &url]));
    assert!(
        failed.starts_with("FAIL store: PostgreSQL (named by --store): "),
        "{failed}"
    );
    assert!(
        !failed.contains("secret"),
        "the password is shown: {failed}"
    );
    assert!(
        failed.contains("— fix: start the server or correct the URL in --store"),
        "{failed}"
    );
}

#[test]
fn a_postgresql_store_passes_with_its_schema_version() {
    let Some(db) = pg::TestDb::new("a_postgresql_store_passes_with_its_schema_version") else {
        return;
    };
    let s = Setup::new();
    let out = s.doctor(&["--store", &db.url]);
    let all = lines(&out);
    assert!(out.status.success(), "{all:#?}\n{}", stderr(&out));
    let store = line(&all, "store");
    assert!(
        store.starts_with("ok   store: PostgreSQL postgres://"),
        "{store}"
    );
    assert!(
        store.contains("(named by --store; schema version "),
        "{store}"
    );
}
