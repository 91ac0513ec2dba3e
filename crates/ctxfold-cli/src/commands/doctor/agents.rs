//! The agents `ctxfold run` knows ([`crate::agents::KNOWN`]) found on
//! `PATH`, each asked its version: one that fails or hangs on `--version`
//! will not start under `ctxfold run` either. An agent not installed is a
//! note, not a failure: only the ones used matter.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use super::{Check, TIMEOUT, on_path};

/// The agents' lines, and the commands found on `PATH` (for the MCP
/// checks).
pub struct Found {
    /// The lines.
    pub checks: Vec<Check>,
    /// The known agents found, by command.
    pub on_path: Vec<&'static str>,
}

/// Look for every known agent on `PATH` and ask each found its version,
/// side by side.
pub fn checks() -> Found {
    let found: Vec<(&str, &str, PathBuf)> = crate::agents::KNOWN
        .iter()
        .filter_map(|&(cmd, name)| Some((cmd, name, on_path(cmd)?)))
        .collect();
    let mut checks: Vec<Check> = std::thread::scope(|s| {
        let runs: Vec<_> = found
            .iter()
            .map(|(cmd, name, path)| s.spawn(move || agent(cmd, name, path)))
            .collect();
        runs.into_iter()
            .zip(&found)
            .map(|(r, (cmd, _, _))| {
                r.join().unwrap_or_else(|_| {
                    Check::fail(
                        format!("agent {cmd}"),
                        "the check stopped",
                        "run ctxfold doctor again",
                    )
                })
            })
            .collect()
    });
    let missing: Vec<&str> = crate::agents::KNOWN
        .iter()
        .map(|(cmd, _)| *cmd)
        .filter(|cmd| !found.iter().any(|(c, _, _)| c == cmd))
        .collect();
    if found.is_empty() {
        checks.push(Check::note(
            "agents",
            format!("none of {} on PATH", missing.join(", ")),
            Some("install one to use it with ctxfold run; any OpenAI- or Anthropic-compatible client works through ctxfold proxy".to_owned()),
        ));
    } else if !missing.is_empty() {
        checks.push(Check::note(
            "agents",
            format!("not on PATH: {}", missing.join(", ")),
            None,
        ));
    }
    Found {
        checks,
        on_path: found.iter().map(|(cmd, _, _)| *cmd).collect(),
    }
}

/// An agent's line: its version, or how `--version` failed.
fn agent(cmd: &str, name: &str, path: &Path) -> Check {
    let check = format!("agent {cmd}");
    let fix = format!(
        "check that `{} --version` runs; reinstall {name} if it does not",
        path.display()
    );
    match version(path) {
        Ok(v) => {
            // `claude --version` says `2.1.332 (Claude Code)` already.
            let named = if v.contains(name) {
                v
            } else {
                format!("{name} {v}")
            };
            Check::ok(
                check,
                format!("{named} at {} (ctxfold run {cmd} knows it)", path.display()),
            )
        }
        Err(e) => Check::fail(check, format!("{} --version {e}", path.display()), fix),
    }
}

/// The first line `path --version` prints, within [`TIMEOUT`]; or what
/// went wrong, worded to follow the command.
fn version(path: &Path) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    // Read on threads, through channels: a process it left running may
    // hold the pipes open, and doctor must not wait for it.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = mpsc::channel();
        if let Some(mut pipe) = pipe {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = pipe.by_ref().take(1 << 16).read_to_end(&mut bytes);
                let _ = tx.send(bytes);
            });
        }
        rx
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("gave no answer within {} s", TIMEOUT.as_secs()));
            }
            Err(e) => return Err(format!("could not be waited for: {e}")),
        }
    };
    let left = |rx: &mpsc::Receiver<Vec<u8>>| {
        let wait = deadline.saturating_duration_since(Instant::now());
        let bytes = rx.recv_timeout(wait).unwrap_or_default();
        first_line(&String::from_utf8_lossy(&bytes))
    };
    let (stdout, stderr) = (left(&out), left(&err));
    if !status.success() {
        let said = stderr
            .or(stdout)
            .map(|l| format!(": {l}"))
            .unwrap_or_default();
        return Err(format!("failed ({status}){said}"));
    }
    stdout
        .or(stderr)
        .ok_or_else(|| "printed nothing".to_owned())
}

/// The first line that is not blank, trimmed and kept short.
fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut short: String = line.chars().take(100).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    Some(short)
}
