//! The real agents (Claude Code, Codex) through `ctxfold proxy` in front
//! of the scripted upstream (ctxfold_testkit::upstream::agent): where they run, how they
//! are started, and the figures of what reached the upstream. Shared by
//! tests/real_agents.rs and tests/real_agents_cache.rs.
#![allow(dead_code)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::Scratch;
use super::agent_run::{Ran, enter_loopback_namespace, spawn_logged};
use super::proxy::Proxy;
use ctxfold_testkit::upstream::{Seen, Upstream};

/// The tests share 2 cores: one agent run at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Agent {
    Claude,
    /// Codex with its default model, or with the model named (`-m`).
    Codex(Option<&'static str>),
}

impl Agent {
    pub fn name(self) -> String {
        match self {
            Agent::Claude => "claude".into(),
            Agent::Codex(None) => "codex".into(),
            Agent::Codex(Some(m)) => format!("codex-{m}"),
        }
    }
}

/// Skip (stderr) or, under scripts/test and in CI, fail.
fn skip(msg: &str) {
    ctxfold_testkit::needs::missing("real-agents test", msg);
}

/// The agent's executable: the environment's, else scripts/agents' cache.
pub fn executable(agent: Agent) -> Option<PathBuf> {
    let (var, rel) = match agent {
        Agent::Claude => ("CTXFOLD_CLAUDE", "agents/node_modules/.bin/claude"),
        Agent::Codex(_) => ("CTXFOLD_CODEX", "agents/node_modules/.bin/codex"),
    };
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let cache = std::env::var_os("CTXFOLD_CI_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/ctxfold-ci")))?;
    Some(cache.join(rel)).filter(|p| p.is_file())
}

/// Run `body` with the agent's executable, on a thread in a network
/// namespace with only loopback (or skip, saying why).
pub fn in_namespace(agent: Agent, body: impl FnOnce(&Path) + Send + 'static) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exe) = executable(agent) else {
        skip(&format!(
            "{} is not installed (run `eval \"$(scripts/agents env)\"`, or set {})",
            agent.name(),
            match agent {
                Agent::Claude => "CTXFOLD_CLAUDE",
                Agent::Codex(_) => "CTXFOLD_CODEX",
            }
        ));
        return;
    };
    // A thread of its own: the namespace is the thread's, and everything it
    // starts (the upstream's threads, the proxy, the agent) inherits it.
    let outcome = std::thread::spawn(move || {
        enter_loopback_namespace()?;
        body(&exe);
        Ok::<(), String>(())
    })
    .join();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => skip(&format!("no network namespace with only loopback: {e}")),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

pub fn start_proxy(s: &Scratch, up: &Upstream, window: usize, emulate: bool) -> Proxy {
    let mut config = format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\nwindow = {window}\n",
        b = up.base
    );
    if emulate {
        config.push_str(
            "[proxy.upstreams.anthropic]\ncontext_management = \"emulate\"\n\
             [proxy.upstreams.openai]\ncontext_management = \"emulate\"\n",
        );
    }
    Proxy::start(s, &config)
}

/// The folders one agent session lives in: HOME (and CODEX_HOME) and its
/// working folder, under target/tmp (Codex refuses to make its helper
/// binaries under a temporary folder).
pub struct AgentHome {
    /// Removed when dropped.
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
    /// Claude Code's `--mcp-config` JSON, when `ctxfold mcp` is registered.
    pub mcp_config: Option<String>,
}

impl AgentHome {
    pub fn new(agent: Agent, base: &str) -> AgentHome {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(tmp).unwrap();
        let root = tempfile::Builder::new()
            .prefix(&format!("agent-{}-", agent.name()))
            .tempdir_in(tmp)
            .unwrap();
        let home = root.path().join("home");
        let work = root.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        if matches!(agent, Agent::Codex(_)) {
            let codex = home.join(".codex");
            std::fs::create_dir_all(&codex).unwrap();
            std::fs::write(
                codex.join("config.toml"),
                format!(
                    "model_provider = \"ctxfold\"\ncheck_for_update_on_startup = false\n\n\
                     [analytics]\nenabled = false\n\n\
                     [model_providers.ctxfold]\nname = \"ctxfold\"\nbase_url = \"{base}/v1\"\n\
                     env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nsupports_websockets = false\n"
                ),
            )
            .unwrap();
        }
        AgentHome {
            root,
            home,
            work,
            mcp_config: None,
        }
    }

    /// [`AgentHome::new`] with `ctxfold mcp` registered on `store` as the
    /// README says: Claude Code's `--mcp-config`, Codex's
    /// `[mcp_servers.ctxfold]`.
    pub fn with_mcp(agent: Agent, base: &str, store: &Path) -> AgentHome {
        let mut home = AgentHome::new(agent, base);
        let bin = env!("CARGO_BIN_EXE_ctxfold");
        let args = ["--store", store.to_str().unwrap(), "mcp"];
        match agent {
            Agent::Claude => {
                home.mcp_config = Some(
                    json!({"mcpServers": {"ctxfold": {"command": bin, "args": args}}}).to_string(),
                );
            }
            Agent::Codex(_) => {
                let path = home.home.join(".codex/config.toml");
                let mut config = std::fs::read_to_string(&path).unwrap();
                config.push_str(&format!(
                    "\n[mcp_servers.ctxfold]\ncommand = {}\nargs = {}\n",
                    Value::String(bin.to_owned()),
                    json!(args)
                ));
                std::fs::write(&path, config).unwrap();
            }
        }
        home
    }
}

/// Run the agent once: `prompt`, a fresh session or (`resume`) the last.
pub fn run_agent(
    agent: Agent,
    exe: &Path,
    home: &AgentHome,
    base: &str,
    prompt: &str,
    resume: bool,
) -> Ran {
    let mut cmd = Command::new(exe);
    cmd.current_dir(&home.work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home.home)
        .env("LANG", "C.UTF-8")
        .env("TERM", "dumb");
    match agent {
        Agent::Claude => {
            cmd.args(["-p"]);
            if resume {
                cmd.arg("--continue");
            }
            if let Some(config) = &home.mcp_config {
                // Claude Code otherwise defers MCP tools behind its
                // ToolSearch, which a scripted model does not call.
                cmd.args(["--mcp-config", config, "--strict-mcp-config"])
                    .env("ENABLE_TOOL_SEARCH", "false");
            }
            cmd.args([prompt, "--dangerously-skip-permissions"])
                .env("IS_SANDBOX", "1")
                .env("ANTHROPIC_BASE_URL", base)
                .env("ANTHROPIC_API_KEY", "test")
                .env("DISABLE_TELEMETRY", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_ERROR_REPORTING", "1");
        }
        Agent::Codex(model) => {
            cmd.arg("exec");
            if resume {
                cmd.args(["resume", "--last"]);
            }
            if let Some(m) = model {
                cmd.args(["-m", m]);
            }
            cmd.args([
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                prompt,
            ])
            .env("CODEX_HOME", home.home.join(".codex"))
            .env("OPENAI_API_KEY", "test");
        }
    }
    spawn_logged(&mut cmd, exe, home.work.parent().unwrap())
}

/// The last `n` lines of a text.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Anthropic's cache markers out of a value, everywhere; and a `content`
/// that is one text block, as the string it stands for (the same tokens:
/// Claude Code sends its `role: "system"` message as one marked block in
/// its first request and as a string after).
pub fn strip_cache(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| {
                    let v = strip_cache(v);
                    let one_text = k == "content"
                        && v.as_array().is_some_and(|a| {
                            a.len() == 1
                                && a[0]["type"] == "text"
                                && a[0].as_object().is_some_and(|b| b.len() == 2)
                        });
                    if one_text {
                        (k.clone(), v[0]["text"].clone())
                    } else {
                        (k.clone(), v)
                    }
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache).collect()),
        other => other.clone(),
    }
}

/// One model request as the cache sees it: the fixed part's text and each
/// message's text, cache markers stripped.
pub struct Shape {
    pub fixed: String,
    pub messages: Vec<String>,
    pub tokens: usize,
}

pub fn shape(r: &Seen) -> Shape {
    let req = strip_cache(&r.json());
    let (fixed, list) = if r.path.starts_with("/v1/responses") {
        (
            format!("{}{}", req["instructions"], req["tools"]),
            &req["input"],
        )
    } else {
        (
            format!("{}{}", req["system"], req["tools"]),
            &req["messages"],
        )
    };
    Shape {
        fixed,
        messages: list
            .as_array()
            .map(|a| a.iter().map(Value::to_string).collect())
            .unwrap_or_default(),
        tokens: r.tokens.unwrap_or(0),
    }
}

/// The figures of a run's model requests.
#[derive(Default, Debug)]
pub struct Figures {
    pub requests: usize,
    pub rejected: usize,
    pub chars: usize,
    pub max_tokens: usize,
    pub prefix_changes: usize,
    /// Where each prefix change was: (request number, first message that
    /// differs).
    pub changes_at: Vec<(usize, usize)>,
    /// Tokens the run's history grew by (messages new in each request).
    pub growth: usize,
    /// Priced in base-input-token units: cache reads 0.1x, writes 1.25x.
    pub cost: f64,
    pub cache_read_tokens: usize,
    pub cache_write_tokens: usize,
}

impl Figures {
    pub fn json(&self) -> Value {
        json!({"requests": self.requests, "rejected": self.rejected, "chars_sent": self.chars,
            "max_request_tokens": self.max_tokens, "prefix_changes": self.prefix_changes,
            "prefix_changes_at": self.changes_at, "growth_tokens": self.growth,
            "cost_base_input_tokens": self.cost.round(), "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens})
    }
}

pub fn figures(records: &[Seen]) -> Figures {
    let mut f = Figures::default();
    let mut prev: Option<Shape> = None;
    for r in records.iter().filter(|r| r.is_model()) {
        f.requests += 1;
        f.chars += r.body.len();
        if r.rejected {
            f.rejected += 1;
            continue;
        }
        let s = shape(r);
        f.max_tokens = f.max_tokens.max(s.tokens);
        let mut read_chars = 0;
        if let Some(p) = &prev {
            let same = s
                .messages
                .iter()
                .zip(&p.messages)
                .take_while(|(a, b)| a == b)
                .count();
            let is_prefix = s.fixed == p.fixed && same == p.messages.len();
            if !is_prefix {
                f.prefix_changes += 1;
                f.changes_at
                    .push((r.n, if s.fixed == p.fixed { same } else { 0 }));
            }
            if s.fixed == p.fixed {
                read_chars = s.fixed.chars().count()
                    + s.messages[..same]
                        .iter()
                        .map(|m| m.chars().count())
                        .sum::<usize>();
            }
            let before: HashSet<&String> = p.messages.iter().collect();
            f.growth += s
                .messages
                .iter()
                .filter(|m| !before.contains(m))
                .map(|m| m.chars().count())
                .sum::<usize>()
                / 4;
        }
        let read = (read_chars / 4).min(s.tokens);
        let write = s.tokens - read;
        f.cache_read_tokens += read;
        f.cache_write_tokens += write;
        f.cost += 0.1 * read as f64 + 1.25 * write as f64;
        prev = Some(s);
    }
    f
}

/// `ctxfold c ls --format json`, `c show ID --format json`.
pub fn conversations(s: &Scratch) -> Vec<Value> {
    s.json(&["c", "ls"]).as_array().cloned().unwrap_or_default()
}

/// Every string in a JSON value.
pub fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The proxy's `/metrics` counters (`ctxfold_proxy_…` lines, comments
/// and zero-valued histogram buckets left out), as name → value.
pub fn proxy_metrics(p: &Proxy) -> Value {
    let text = ureq::get(&format!("{}/metrics", p.base))
        .call()
        .ok()
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .unwrap_or_default();
    let mut out = serde_json::Map::new();
    for line in text.lines() {
        if line.starts_with('#') || line.contains("_bucket") {
            continue;
        }
        if let Some((k, v)) = line.rsplit_once(' ')
            && let Ok(v) = v.parse::<f64>()
        {
            out.insert(k.to_owned(), json!(v));
        }
    }
    Value::Object(out)
}

/// Every request in a line of `target/tmp/real-agents-<label>-requests.jsonl`
/// (and, with `CTXFOLD_AGENTS_DUMP` set, every body in a folder beside it).
pub fn dump(label: &str, records: &[Seen]) {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let bodies = std::env::var_os("CTXFOLD_AGENTS_DUMP").map(|_| {
        let d = tmp.join(format!("real-agents-{label}-bodies"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    });
    let mut lines = String::new();
    for r in records {
        let req = r.json();
        let list = if r.path.starts_with("/v1/responses") {
            &req["input"]
        } else {
            &req["messages"]
        };
        let last = list.as_array().and_then(|a| a.last()).map(|m| {
            let t = m.to_string();
            t.chars().take(300).collect::<String>()
        });
        lines.push_str(
            &json!({"n": r.n, "method": r.method, "path": r.path, "tokens": r.tokens,
            "rejected": r.rejected, "answer": r.answer, "pairing": r.pairing, "bytes": r.body.len(),
            "items": list.as_array().map(Vec::len), "last": last})
            .to_string(),
        );
        lines.push('\n');
        if let Some(d) = &bodies {
            std::fs::write(d.join(format!("{:03}.json", r.n)), &r.body).unwrap();
        }
    }
    std::fs::write(
        tmp.join(format!("real-agents-{label}-requests.jsonl")),
        lines,
    )
    .unwrap();
}

/// The window held and the tools paired, on every model request.
pub fn check_requests(records: &[Seen], window: usize, what: &str, fail: &mut impl FnMut(String)) {
    let rejected: Vec<String> = records
        .iter()
        .filter(|r| r.rejected)
        .map(|r| format!("#{} ({} tokens)", r.n, r.tokens.unwrap_or(0)))
        .collect();
    if !rejected.is_empty() {
        fail(format!(
            "{what}: {} requests refused as over the {window}-token window: {}",
            rejected.len(),
            rejected.join(", ")
        ));
    }
    let unpaired: Vec<String> = records
        .iter()
        .filter(|r| !r.pairing.is_empty())
        .map(|r| format!("#{}: {}", r.n, r.pairing.join("; ")))
        .collect();
    if !unpaired.is_empty() {
        fail(format!(
            "{what}: tool pairing broken on {} requests: {}",
            unpaired.len(),
            unpaired.join(" | ")
        ));
    }
    if !records.iter().any(|r| r.is_model()) {
        fail(format!("{what}: no model request reached the upstream"));
    }
}

/// One agent session straight to a scripted upstream with no window (no
/// proxy): the baseline a run through the proxy is compared with.
pub struct Straight {
    pub ran: Ran,
    pub records: Vec<Seen>,
    pub home: AgentHome,
}

/// Run `agent` once on `prompt` straight to a fresh upstream with no
/// window, `setup` preparing its folders first.
pub fn straight(
    agent: Agent,
    exe: &Path,
    prompt: &str,
    setup: impl FnOnce(&AgentHome),
) -> Straight {
    let up = Upstream::agents(None);
    let home = AgentHome::new(agent, &up.base);
    setup(&home);
    let ran = run_agent(agent, exe, &home, &up.base, prompt, false);
    Straight {
        ran,
        records: up.requests(),
        home,
    }
}
