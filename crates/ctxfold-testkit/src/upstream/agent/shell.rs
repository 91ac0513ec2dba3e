//! The agent's shell tool, found among a request's tools, and the
//! commands its steps run (the log generator of `log…` tasks included).

use std::path::Path;

use serde_json::Value;

use super::super::Api;
use super::STEP_LINES;

/// The agent's shell tool, as its definition names it.
#[derive(Debug, Clone)]
pub enum Shell {
    /// Anthropic-style `{"command": "…"}` (Claude Code's `Bash`).
    Command(String),
    /// Codex's `exec_command`: `{"cmd": "…"}` (the string parameter the
    /// schema names).
    Cmd(String, String),
    /// Codex's `shell`: `{"command": ["bash", "-lc", "…"]}`.
    Argv(String),
    /// Codex's code mode (its default model): no top-level `tools`, an
    /// `additional_tools` input item whose namespace `functions` holds a
    /// custom tool `exec` taking JavaScript that calls
    /// `tools.exec_command({cmd})`.
    CodeMode(String),
}

/// The shell tool among the request's tools.
pub fn find_shell(req: &Value, api: Api) -> Option<Shell> {
    if api == Api::Responses && req["tools"].as_array().is_none_or(Vec::is_empty) {
        return code_mode(req);
    }
    let tools = req["tools"].as_array()?;
    let name = |t: &Value| t["name"].as_str().unwrap_or("").to_owned();
    let schema = |t: &Value| match api {
        Api::Responses => t["parameters"].clone(),
        _ => t["input_schema"].clone(),
    };
    if let Some(t) = tools.iter().find(|t| name(t) == "Bash") {
        return Some(Shell::Command(name(t)));
    }
    if let Some(t) = tools.iter().find(|t| name(t) == "exec_command") {
        let props = schema(t)["properties"].clone();
        let param = ["cmd", "command"]
            .into_iter()
            .find(|p| props.get(*p).is_some())
            .unwrap_or("cmd");
        return Some(Shell::Cmd(name(t), param.to_owned()));
    }
    if let Some(t) = tools.iter().find(|t| name(t) == "shell") {
        return Some(Shell::Argv(name(t)));
    }
    // Any tool taking a string `command`.
    tools
        .iter()
        .find(|t| schema(t)["properties"]["command"]["type"] == "string")
        .map(|t| Shell::Command(name(t)))
}

/// Codex's code-mode `exec` tool, in an `additional_tools` input item.
fn code_mode(req: &Value) -> Option<Shell> {
    fn find(tools: &Value) -> Option<String> {
        tools.as_array()?.iter().find_map(|t| {
            if t["type"] == "custom"
                && t["name"] == "exec"
                && t["description"]
                    .as_str()
                    .is_some_and(|d| d.contains("exec_command"))
            {
                return Some("exec".to_owned());
            }
            find(&t["tools"])
        })
    }
    req["input"]
        .as_array()?
        .iter()
        .filter(|i| i["type"] == "additional_tools")
        .find_map(|i| find(&i["tools"]))
        .map(Shell::CodeMode)
}

/// The JavaScript for code mode's `exec` that runs `cmd` and hands back
/// its output.
pub fn code_mode_source(cmd: &str) -> String {
    format!(
        "const r = await tools.exec_command({{cmd: {}}});\ntext(r.output);\n",
        Value::String(cmd.to_owned())
    )
}

/// The command of step `k` of `n`: a marker line, then about 28,000
/// characters of build log (a `log…` task: the log [`LOG_SCRIPT`] prints
/// for step `k`).
pub fn step_command(task: &str, k: usize, n: usize) -> String {
    if task.starts_with("log") {
        return format!("echo 'ctxfold-step {task} {k}/{n}'; bash {LOG_SCRIPT} {k}");
    }
    format!(
        "echo 'ctxfold-step {task} {k}/{n}'; seq -f '{task} {k} line %g of the build log: warning: something happened here' 1 {STEP_LINES}"
    )
}

/// The log generator a `log…` task's steps run, by this name, in the
/// agent's working folder: `bash ctxfold-log.sh K` prints step K's log.
pub const LOG_SCRIPT: &str = "ctxfold-log.sh";

/// Write [`LOG_SCRIPT`] into `dir` (the agent's working folder).
pub fn write_log_script(dir: &Path) {
    std::fs::write(dir.join(LOG_SCRIPT), include_str!("ctxfold-log.sh")).unwrap();
}

/// The log step `k` prints, as [`LOG_SCRIPT`] in `dir` prints it.
pub fn log_output(dir: &Path, k: usize) -> String {
    let out = std::process::Command::new("bash")
        .arg(LOG_SCRIPT)
        .arg(k.to_string())
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{LOG_SCRIPT} {k}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The one ERROR line of step `k`'s log.
pub fn log_error_line(dir: &Path, k: usize) -> String {
    let log = log_output(dir, k);
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ")).collect();
    assert_eq!(
        errors.len(),
        1,
        "{LOG_SCRIPT} {k} prints {} ERROR lines",
        errors.len()
    );
    errors[0].to_owned()
}
