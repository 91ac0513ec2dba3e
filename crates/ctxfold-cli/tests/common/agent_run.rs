//! Running the real agents (Claude Code, Codex) straight against the
//! scripted upstream (ctxfold_testkit::upstream::agent), with their session files written
//! under a folder of the test's own: used by tests/agent_sessions.rs.
//! (agent_proxy.rs runs them through the proxy, for tests/real_agents*.rs,
//! in this module's namespace and with its process runner.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest an agent may run.
pub const AGENT_TIMEOUT: Duration = Duration::from_secs(600);

/// Which agent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    fn var(self) -> &'static str {
        match self {
            Agent::Claude => "CTXFOLD_CLAUDE",
            Agent::Codex => "CTXFOLD_CODEX",
        }
    }
}

/// The agent's executable: the environment's, else scripts/agents' cache.
pub fn executable(agent: Agent) -> Option<PathBuf> {
    let rel = match agent {
        Agent::Claude => "agents/node_modules/.bin/claude",
        Agent::Codex => "agents/node_modules/.bin/codex",
    };
    if let Some(p) = std::env::var_os(agent.var()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let cache = std::env::var_os("CTXFOLD_CI_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/ctxfold-ci")))?;
    Some(cache.join(rel)).filter(|p| p.is_file())
}

/// Why the agent cannot run here, in the words `needs` prints.
pub fn not_installed(agent: Agent) -> String {
    format!(
        "{} is not installed (run `eval \"$(scripts/agents env)\"`, or set {})",
        agent.name(),
        agent.var()
    )
}

/// `unshare(CLONE_NEWNET)` for this thread, then `ip link set lo up`.
#[allow(unsafe_code)] // the one system call std has no wrapper for
pub fn enter_loopback_namespace() -> Result<(), String> {
    // SAFETY: unshare takes no pointers; it changes this thread's
    // namespaces only.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(format!(
            "unshare(CLONE_NEWNET): {} (needs root)",
            std::io::Error::last_os_error()
        ));
    }
    let out = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .output()
        .map_err(|e| format!("ip link set lo up: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ip link set lo up: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if std::net::TcpStream::connect_timeout(
        &"10.255.255.1:80".parse().unwrap(),
        Duration::from_millis(300),
    )
    .is_ok()
    {
        return Err("the namespace reaches beyond loopback".into());
    }
    Ok(())
}

/// HOME (with CODEX_HOME at `HOME/.codex`) and the working folder of one
/// agent's sessions, under target/tmp (Codex refuses to make its helper
/// binaries under a temporary folder).
pub struct AgentHome {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl AgentHome {
    /// For `agent`, its model API at `base`; `codex_extra` goes at the top
    /// of Codex's config.toml.
    pub fn new(agent: Agent, base: &str, codex_extra: &str) -> AgentHome {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(tmp).unwrap();
        let root = tempfile::Builder::new()
            .prefix(&format!("sessions-{}-", agent.name()))
            .tempdir_in(tmp)
            .unwrap();
        let home = root.path().join("home");
        let work = root.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        if agent == Agent::Codex {
            let codex = home.join(".codex");
            std::fs::create_dir_all(&codex).unwrap();
            std::fs::write(
                codex.join("config.toml"),
                format!(
                    "{codex_extra}model_provider = \"ctxfold\"\ncheck_for_update_on_startup = false\n\n\
                     [analytics]\nenabled = false\n\n\
                     [model_providers.ctxfold]\nname = \"ctxfold\"\nbase_url = \"{base}/v1\"\n\
                     env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\nsupports_websockets = false\n"
                ),
            )
            .unwrap();
        }
        AgentHome { root, home, work }
    }

    /// Claude Code's folder of this working folder's sessions.
    pub fn claude_projects(&self) -> PathBuf {
        self.home.join(".claude/projects")
    }

    /// Codex's CODEX_HOME.
    pub fn codex_home(&self) -> PathBuf {
        self.home.join(".codex")
    }
}

/// What one agent invocation did.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    /// How long it ran.
    pub secs: f64,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == Some(0) && !self.timed_out
    }

    pub fn describe(&self) -> String {
        format!(
            "exit {:?}{}; stdout: {}\nstderr: {}",
            self.code,
            if self.timed_out { " (timed out)" } else { "" },
            self.stdout,
            self.stderr
        )
    }
}

/// Run the agent once with `args` (before the prompt) and `prompt`.
pub fn run_agent(
    agent: Agent,
    exe: &Path,
    home: &AgentHome,
    base: &str,
    args: &[&str],
    prompt: &str,
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
            cmd.arg("-p")
                .args(args)
                .args([prompt, "--dangerously-skip-permissions"])
                .env("IS_SANDBOX", "1")
                .env("ANTHROPIC_BASE_URL", base)
                .env("ANTHROPIC_API_KEY", "test")
                .env("DISABLE_TELEMETRY", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_ERROR_REPORTING", "1");
        }
        Agent::Codex => {
            cmd.arg("exec")
                .args(args)
                .args([
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    prompt,
                ])
                .env("CODEX_HOME", home.codex_home())
                .env("OPENAI_API_KEY", "test");
        }
    }
    spawn_logged(&mut cmd, exe, home.root.path())
}

/// Run `cmd` (the agent `exe`) with no input, its output written to
/// numbered `stdout-N.txt` / `stderr-N.txt` in `logs`, killed after
/// [`AGENT_TIMEOUT`].
pub fn spawn_logged(cmd: &mut Command, exe: &Path, logs: &Path) -> Ran {
    let n = std::fs::read_dir(logs).map_or(0, |d| d.count());
    let out_path = logs.join(format!("stdout-{n}.txt"));
    let err_path = logs.join(format!("stderr-{n}.txt"));
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", exe.display()));
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > AGENT_TIMEOUT {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    Ran {
        code: status.code(),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
        secs: start.elapsed().as_secs_f64(),
    }
}

/// Every `*.jsonl` file under `dir`, sorted.
pub fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The tests share 2 cores: one agent at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A task the scripted upstream plays: `steps` tool steps, named `name`.
pub fn task(name: &str, steps: usize) -> String {
    format!(
        "Run the build steps the tool loop asks for and report the result. ctxfold-task={name} ctxfold-steps={steps}"
    )
}

/// Run `scenario` for `agent` in a loopback-only namespace (one agent
/// at a time), or skip: reported as skipped under a plain `cargo test`,
/// failed under `scripts/test`.
pub fn with_agent(agent: Agent, scenario: fn(&Path)) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(exe) = executable(agent) else {
        ctxfold_testkit::needs::missing("real-agent test", &not_installed(agent));
        return;
    };
    let outcome = std::thread::spawn(move || {
        enter_loopback_namespace()?;
        scenario(&exe);
        Ok::<(), String>(())
    })
    .join();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctxfold_testkit::needs::missing(
            "real-agent test",
            &format!("no network namespace with only loopback: {e}"),
        ),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Codex's model with the classic top-level tools (`-m`).
pub const CODEX_CLASSIC: [&str; 2] = ["-m", "gpt-5.5"];

/// The Codex session of the tests, past a 40,000-token
/// `model_auto_compact_token_limit`: `thinkalpha` (3 steps, reasoned first,
/// the default model's code mode), then `beta` (2) and `gamma` (1)
/// resumed with the classic tools. Each run's arguments and prompt.
pub fn codex_session_runs() -> [(Vec<&'static str>, String); 3] {
    let resume = || [&["resume", "--last"][..], &CODEX_CLASSIC].concat();
    [
        (vec![], task("thinkalpha", 3)),
        (resume(), task("beta", 2)),
        (resume(), task("gamma", 1)),
    ]
}
