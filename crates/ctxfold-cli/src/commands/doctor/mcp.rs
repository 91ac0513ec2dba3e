//! Whether the agents' own config registers `ctxfold mcp` (the `recall`
//! and `search` tools): Claude Code's `~/.claude.json` (user and project
//! scope) and `.mcp.json` files, Codex's `[mcp_servers.NAME]` in its
//! `config.toml`. `ctxfold run` registers it for its session without
//! editing those files, so no lasting registration is a note; one that
//! runs a `ctxfold` that is not there is a failure (the agent's tools
//! would be missing without a word).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Check, is_executable, on_path, tilde};
use crate::context::Context;

/// A server entry of an agent's config: its name, command and arguments.
struct Server {
    name: String,
    command: String,
    args: Vec<String>,
}

impl Server {
    /// Whether it runs `ctxfold mcp`.
    fn is_ours(&self) -> bool {
        let file = Path::new(&self.command)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        matches!(file, "ctxfold" | "ctxfold.exe") && self.args.first().is_some_and(|a| a == "mcp")
    }
}

/// The lines of the agents found (`on_path`) or configured here.
pub fn checks(ctx: &Context, on_path_agents: &[&str]) -> Vec<Check> {
    let mut lines = Vec::new();
    let claude_files = claude_files(&ctx.cwd);
    if on_path_agents.contains(&"claude") || claude_files.iter().any(|(f, _)| f.is_file()) {
        lines.push(agent(
            "claude",
            &claude_files,
            "claude mcp add --scope user ctxfold -- ctxfold mcp",
            &ctx.cwd,
        ));
    }
    let codex_file = codex_file();
    let codex_files: Vec<(PathBuf, Reader)> = codex_file
        .into_iter()
        .map(|f| (f, codex_servers as Reader))
        .collect();
    if on_path_agents.contains(&"codex") || codex_files.iter().any(|(f, _)| f.is_file()) {
        let at = codex_files
            .first()
            .map_or_else(|| "~/.codex/config.toml".to_owned(), |(f, _)| tilde(f));
        lines.push(agent(
            "codex",
            &codex_files,
            &format!("add to {at}: [mcp_servers.ctxfold] command = \"ctxfold\", args = [\"mcp\"]"),
            &ctx.cwd,
        ));
    }
    lines
}

/// Reads the servers a config file registers, for the folder doctor runs
/// in.
type Reader = fn(&str, &Path) -> Result<Vec<Server>, String>;

/// An agent's line over its config files (those that do not exist are
/// passed over).
fn agent(cmd: &str, files: &[(PathBuf, Reader)], add: &str, cwd: &Path) -> Check {
    let check = format!("mcp {cmd}");
    let mut looked = Vec::new();
    for (file, read) in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        looked.push(tilde(file));
        let servers = match read(&text, cwd) {
            Ok(s) => s,
            Err(e) => {
                return Check::fail(
                    check,
                    format!("{}: {e}", tilde(file)),
                    format!("correct the file ({cmd} reads it when it starts)"),
                );
            }
        };
        if let Some(s) = servers.iter().find(|s| s.is_ours()) {
            let runs = Path::new(&s.command);
            let there = if runs.components().count() > 1 {
                is_executable(runs)
            } else {
                on_path(&s.command).is_some()
            };
            if !there {
                return Check::fail(
                    check,
                    format!(
                        "server `{}` in {} runs {}, which is not there",
                        s.name,
                        tilde(file),
                        s.command
                    ),
                    format!(
                        "point it at this ctxfold ({}), or put ctxfold on PATH",
                        std::env::current_exe()
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|_| "ctxfold".to_owned())
                    ),
                );
            }
            return Check::ok(
                check,
                format!("ctxfold mcp registered as `{}` in {}", s.name, tilde(file)),
            );
        }
    }
    let where_ = if looked.is_empty() {
        "no config file".to_owned()
    } else {
        looked.join(", ")
    };
    Check::note(
        check,
        format!(
            "ctxfold mcp not registered ({where_}); ctxfold run {cmd} registers it for its session"
        ),
        Some(format!("to have it in every session: {add}")),
    )
}

/// Claude Code's files: `.claude.json` (in `CLAUDE_CONFIG_DIR`, else the
/// home folder) and the `.mcp.json` of this folder and those above it.
fn claude_files(cwd: &Path) -> Vec<(PathBuf, Reader)> {
    let home = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|d| !d.is_empty())
        .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()))
        .map(PathBuf::from);
    let user = home.map(|h| (h.join(".claude.json"), claude_user as Reader));
    let projects = cwd
        .ancestors()
        .map(|d| (d.join(".mcp.json"), claude_project as Reader));
    user.into_iter().chain(projects).collect()
}

/// `.claude.json`: the user's servers, and those of this folder's project
/// (`projects[FOLDER].mcpServers`, for this folder or one above it).
fn claude_user(text: &str, cwd: &Path) -> Result<Vec<Server>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let mut servers = json_servers(&v["mcpServers"]);
    if let Some(projects) = v["projects"].as_object() {
        for dir in cwd.ancestors() {
            if let Some(p) = dir.to_str().and_then(|d| projects.get(d)) {
                servers.extend(json_servers(&p["mcpServers"]));
            }
        }
    }
    Ok(servers)
}

/// A project's `.mcp.json`: `mcpServers`.
fn claude_project(text: &str, _cwd: &Path) -> Result<Vec<Server>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    Ok(json_servers(&v["mcpServers"]))
}

/// `{"NAME": {"command": …, "args": […]}}`; entries without a command
/// (servers over HTTP) are not ctxfold's.
fn json_servers(v: &Value) -> Vec<Server> {
    let Some(map) = v.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(name, s)| {
            Some(Server {
                name: name.clone(),
                command: s["command"].as_str()?.to_owned(),
                args: s["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// Codex's `config.toml`: in `CODEX_HOME`, else `~/.codex`.
fn codex_file() -> Option<PathBuf> {
    let dir = std::env::var_os("CODEX_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|d| !d.is_empty())
                .map(|h| PathBuf::from(h).join(".codex"))
        })?;
    Some(dir.join("config.toml"))
}

/// `[mcp_servers.NAME] command = …, args = […]`.
fn codex_servers(text: &str, _cwd: &Path) -> Result<Vec<Server>, String> {
    let v: toml::Table = toml::from_str(text).map_err(|e| format!("not valid TOML: {e}"))?;
    let Some(map) = v.get("mcp_servers").and_then(toml::Value::as_table) else {
        return Ok(Vec::new());
    };
    Ok(map
        .iter()
        .filter_map(|(name, s)| {
            Some(Server {
                name: name.clone(),
                command: s.get("command")?.as_str()?.to_owned(),
                args: s
                    .get("args")
                    .and_then(toml::Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        })
        .collect())
}
