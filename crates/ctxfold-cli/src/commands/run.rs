//! `ctxfold run AGENT [-- ARGS…]`: an agent in front of a proxy of its
//! own, in one command. The proxy serves this process's session on a free
//! loopback port; the agent is pointed at it through its environment and
//! command-line overrides (never by editing the user's files), gets
//! `ctxfold mcp` for recall where it takes MCP servers, and runs in the
//! foreground with the terminal. When it exits, a few lines say what was
//! recorded and saved, and the agent's exit status is ctxfold's.

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;

use crate::cli::RunArgs;
use crate::context::Context;

/// The agent's exit status, for `main` to exit with once the proxy is
/// stopped and the closing lines printed.
#[derive(Debug)]
pub struct AgentExit(pub u8);

impl std::fmt::Display for AgentExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the agent exited with status {}", self.0)
    }
}

impl std::error::Error for AgentExit {}

/// Where the proxy's log goes while the agent has the terminal: a file of
/// this process's, named in the closing lines when something was logged.
pub fn log_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ctxfold-run-{}.log", std::process::id()))
}

/// How an agent is pointed at the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Claude,
    Codex,
    Opencode,
    Aider,
    /// Any other command: the base-URL variables of both APIs set.
    Generic,
}

impl Kind {
    fn of(command: &str) -> Kind {
        let name = Path::new(command)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(command);
        match name {
            "claude" => Kind::Claude,
            "codex" => Kind::Codex,
            "opencode" => Kind::Opencode,
            "aider" => Kind::Aider,
            _ => Kind::Generic,
        }
    }
}

/// The upstreams the user's environment already named (the agent's own
/// base-URL variables): they become the proxy's, where config keeps its
/// built-in defaults. `(OpenAI, Anthropic)`.
fn upstreams_from_env(ctx: &Context) -> anyhow::Result<(Option<String>, Option<String>)> {
    let defaults = ctxfold_proxy::ProxyConfig::default();
    let config = &ctx.settings()?.proxy;
    let var = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
    };
    // Without `/v1`: the proxy adds the request's path, `/v1/…`.
    let base = |url: String| url.trim_end_matches('/').trim_end_matches("/v1").to_owned();
    let openai = var(&["OPENAI_BASE_URL", "OPENAI_API_BASE"])
        .filter(|_| config.openai == defaults.openai)
        .map(base);
    let anthropic = var(&["ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"])
        .filter(|_| config.anthropic == defaults.anthropic)
        .map(base);
    Ok((openai, anthropic))
}

/// Run the agent in front of a proxy of this session's.
pub fn run(ctx: &Context, args: RunArgs) -> anyhow::Result<()> {
    let (command, rest) = match (&args.agent, args.args.split_first()) {
        (Some(agent), _) => (agent.clone(), args.args.clone()),
        (None, Some((first, rest))) => (first.clone(), rest.to_vec()),
        (None, None) => anyhow::bail!(
            "name the agent (`ctxfold run claude`, codex, opencode or aider) or the command to run after `--` (`ctxfold run -- COMMAND ARGS…`)"
        ),
    };
    let kind = match &args.agent {
        Some(a) => Kind::of(a),
        None => Kind::Generic,
    };
    let upstreams = upstreams_from_env(ctx)?;
    let listen: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
    let built = crate::serving::build(ctx, Some(listen), args.observe, upstreams)?;
    let proxy = Arc::clone(&built.proxy);
    let started = ctxfold_store::now();
    let before = known_ids(&proxy);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(listen))
        .with_context(|| format!("listening on {listen}"))?;
    let addr = listener.local_addr()?;
    let base = format!("http://{addr}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = rt.spawn(ctxfold_proxy::serve(listener, Arc::clone(&proxy), async {
        let _ = stopped.await;
    }));

    // One line before the agent takes the terminal: where its requests go.
    crate::render::say!(
        "ctxfold: {command} through the proxy at {base}, recording in {}",
        built.place
    );
    let signals = listen_signals(&rt);
    let mut cmd = Command::new(&command);
    cmd.args(prefix_args(kind, &base, ctx, args.no_mcp)?);
    cmd.args(&rest);
    let _config_file = point(kind, &mut cmd, &base, ctx, args.no_mcp)?;
    let mut child = cmd.spawn().with_context(|| {
        format!("starting `{command}` (is it installed and on PATH? `ctxfold doctor` lists the agents it finds)")
    })?;
    // The terminal's Ctrl-C reaches the agent (its process group is ours):
    // this process only lets it pass; a SIGTERM or SIGHUP sent to this
    // process is passed on to the agent.
    let pid = child.id();
    let passing = rt.spawn(pass_signals(signals, pid));
    let status = child.wait().context("waiting for the agent")?;
    passing.abort();

    // Answers still being recorded finish before the runtime goes.
    let _ = stop.send(());
    let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(10), serving).await });
    rt.shutdown_timeout(Duration::from_secs(10));

    let touched = recorded(&proxy, &before, &started);
    let mut summary = closing_lines(&proxy, &touched, &command, status);
    if !touched.is_empty() {
        let ids: Vec<String> = touched.iter().map(|c| c.id.clone()).collect();
        // What `ctxfold stats` says of the same conversations.
        match crate::cost::conversations_cost(ctx, &ids) {
            Ok(cost) => {
                for line in cost.to_string().lines() {
                    summary.push_str(&format!("\n  {line}"));
                }
            }
            Err(e) => summary.push_str(&format!("\n  cost: not counted: {e:#}")),
        }
    }
    let log = log_path();
    if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
        summary.push_str(&format!("\n  the proxy's log: {}", log.display()));
    } else {
        let _ = std::fs::remove_file(&log);
    }
    crate::render::say!("{summary}");
    match exit_code(status) {
        0 => Ok(()),
        code => Err(AgentExit(code).into()),
    }
}

/// The conversations the store holds now.
fn known_ids(proxy: &ctxfold_proxy::server::Proxy) -> std::collections::HashSet<String> {
    proxy
        .book
        .store()
        .list()
        .map(|l| l.conversations.into_iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

/// What the agent is started with before its own arguments: the options
/// that point it at the proxy and register recall, where it takes them
/// on its command line.
fn prefix_args(kind: Kind, base: &str, ctx: &Context, no_mcp: bool) -> anyhow::Result<Vec<String>> {
    let mcp = mcp_command(ctx)?;
    Ok(match kind {
        Kind::Claude if !no_mcp => vec![
            "--mcp-config".into(),
            json!({"mcpServers": {"ctxfold": {"command": mcp.0, "args": mcp.1}}}).to_string(),
        ],
        Kind::Codex => {
            // A provider of its own (`-c` overrides: the user's
            // config.toml is not touched), on the Responses API over HTTP.
            let auth = if std::env::var_os("OPENAI_API_KEY").is_some() {
                "env_key = \"OPENAI_API_KEY\""
            } else {
                // Signed in with ChatGPT: its login goes with the requests.
                "requires_openai_auth = true"
            };
            let mut v = vec![
                "-c".into(),
                "model_provider=\"ctxfold\"".into(),
                "-c".into(),
                format!(
                    "model_providers.ctxfold={{ name = \"ctxfold\", base_url = {}, {auth}, wire_api = \"responses\", supports_websockets = false }}",
                    toml_string(&format!("{base}/v1"))
                ),
            ];
            if !no_mcp {
                v.push("-c".into());
                v.push(format!(
                    "mcp_servers.ctxfold={{ command = {}, args = [{}] }}",
                    toml_string(&mcp.0),
                    mcp.1
                        .iter()
                        .map(|a| toml_string(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            v
        }
        _ => Vec::new(),
    })
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    // JSON's string escapes are TOML's for basic strings.
    serde_json::Value::String(text.to_owned()).to_string()
}

/// `ctxfold mcp` as the agent should start it: this binary, on the same
/// store.
fn mcp_command(ctx: &Context) -> anyhow::Result<(String, Vec<String>)> {
    let exe = std::env::current_exe().context("finding the ctxfold binary for `ctxfold mcp`")?;
    let mut args = Vec::new();
    if let Some(store) = &ctx.store {
        args.extend(["--store".to_owned(), store.clone()]);
    } else if let Some(root) = &ctx.workspace_root {
        // The agent may change folders: the workspace by its path.
        args.extend(["--store".to_owned(), root.display().to_string()]);
    }
    args.push("mcp".into());
    Ok((exe.display().to_string(), args))
}

/// Point the agent at the proxy through its environment; a temporary
/// config file the agent is told about where it needs one (opencode),
/// kept until the agent is done.
fn point(
    kind: Kind,
    cmd: &mut Command,
    base: &str,
    ctx: &Context,
    no_mcp: bool,
) -> anyhow::Result<Option<tempfile::NamedTempFile>> {
    let v1 = format!("{base}/v1");
    match kind {
        Kind::Claude => {
            cmd.env("ANTHROPIC_BASE_URL", base);
        }
        Kind::Codex => {}
        Kind::Aider => {
            // aider reads the OpenAI base from its option's variable and the
            // Anthropic one from litellm's (it has no flag for it).
            cmd.env("AIDER_OPENAI_API_BASE", &v1)
                .env("OPENAI_API_BASE", &v1)
                .env("ANTHROPIC_API_BASE", base);
        }
        Kind::Opencode => {
            let mut config = json!({
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    "anthropic": {"options": {"baseURL": v1}},
                    "openai": {"options": {"baseURL": v1}},
                },
            });
            if !no_mcp {
                let (exe, args) = mcp_command(ctx)?;
                let mut command = vec![exe];
                command.extend(args);
                config["mcp"] =
                    json!({"ctxfold": {"type": "local", "command": command, "enabled": true}});
            }
            let mut file = tempfile::Builder::new()
                .prefix("ctxfold-opencode-")
                .suffix(".json")
                .tempfile()
                .context("writing opencode's config for this session")?;
            std::io::Write::write_all(&mut file, config.to_string().as_bytes())?;
            cmd.env("OPENCODE_CONFIG", file.path());
            return Ok(Some(file));
        }
        Kind::Generic => {
            cmd.env("OPENAI_BASE_URL", &v1)
                .env("OPENAI_API_BASE", &v1)
                .env("ANTHROPIC_BASE_URL", base)
                .env("ANTHROPIC_API_BASE", base);
        }
    }
    Ok(None)
}

/// SIGINT, SIGTERM and SIGHUP, listened for from [`listen_signals`] on:
/// one that comes before the agent's pid is known waits in its stream.
#[cfg(unix)]
type Signals = [tokio::signal::unix::Signal; 3];
#[cfg(not(unix))]
type Signals = ();

/// Register the handlers before the agent starts: a signal in between
/// would otherwise end this process by its default action and leave the
/// agent behind.
fn listen_signals(rt: &tokio::runtime::Runtime) -> Option<Signals> {
    let _in = rt.enter();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        Some([
            signal(SignalKind::interrupt()).ok()?,
            signal(SignalKind::terminate()).ok()?,
            signal(SignalKind::hangup()).ok()?,
        ])
    }
    #[cfg(not(unix))]
    {
        Some(())
    }
}

/// Let Ctrl-C pass to the agent (a handler, not an ignore: an ignored
/// signal would be the agent's too), and pass SIGTERM and SIGHUP on.
async fn pass_signals(signals: Option<Signals>, pid: u32) {
    #[cfg(unix)]
    {
        let Some([mut int, mut term, mut hup]) = signals else {
            return;
        };
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        loop {
            let sig = tokio::select! {
                _ = int.recv() => continue,
                _ = term.recv() => rustix::process::Signal::TERM,
                _ = hup.recv() => rustix::process::Signal::HUP,
            };
            // The agent has not been reaped yet while this runs: its pid
            // is still its own.
            let _ = rustix::process::kill_process(pid, sig);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (signals, pid);
        std::future::pending::<()>().await;
    }
}

/// The exit status to pass on: the agent's code, or 128 and the signal
/// that ended it, as a shell says.
fn exit_code(status: ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return u8::try_from(code & 0xff).unwrap_or(1);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return u8::try_from(128 + sig).unwrap_or(1);
        }
    }
    1
}

/// The conversations the session recorded in: new ones, and those it
/// appended to (their `last_used_at` is written at a proxy's first append).
fn recorded(
    proxy: &ctxfold_proxy::server::Proxy,
    before: &std::collections::HashSet<String>,
    started: &str,
) -> Vec<ctxfold_store::ConversationMeta> {
    let mut touched: Vec<ctxfold_store::ConversationMeta> = proxy
        .book
        .store()
        .list()
        .map(|l| l.conversations)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| !before.contains(&c.id) || c.last_used_at.as_str() >= started)
        .collect();
    touched.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    touched
}

/// What the session recorded and saved, in a few lines.
fn closing_lines(
    proxy: &ctxfold_proxy::server::Proxy,
    touched: &[ctxfold_store::ConversationMeta],
    command: &str,
    status: ExitStatus,
) -> String {
    let store = proxy.book.store();
    let text = proxy.metrics.render();
    let requests = crate::metrics_text::total(&text, "ctxfold_proxy_requests_total");
    let compactions = crate::metrics_text::total(&text, "ctxfold_proxy_compactions_total");
    let (raw, sent) = (
        crate::metrics_text::total(&text, "ctxfold_proxy_tokens_before_total"),
        crate::metrics_text::total(&text, "ctxfold_proxy_tokens_after_total"),
    );
    let name = Path::new(command)
        .file_name()
        .map_or_else(|| command.into(), |n| n.to_string_lossy().into_owned());
    let mut out = format!("ctxfold: {name} exited ({status}); ");
    match touched.len() {
        0 => out.push_str("no conversation was recorded"),
        1 => out.push_str("1 conversation recorded"),
        n => out.push_str(&format!("{n} conversations recorded")),
    }
    out.push_str(&format!(" in {}\n", store.location()));
    for c in touched {
        out.push_str(&format!(
            "  {}  {}\n",
            c.id,
            c.title.as_deref().unwrap_or("(untitled)")
        ));
    }
    out.push_str(&format!(
        "  {requests} request(s), {compactions} compaction(s); tokens sent ~{sent} of ~{raw} without ctxfold"
    ));
    if raw > 0 && sent < raw {
        out.push_str(&format!(" ({}% fewer)", (raw - sent) * 100 / raw));
    }
    out.push('\n');
    if let Some(first) = touched.last() {
        out.push_str(&format!(
            "  see and undo: ctxfold c show {0} · ctxfold ui, then http://127.0.0.1:7441/c/{0}",
            first.id
        ));
    }
    out
}
