//! `ctxfold doctor`: what ctxfold needs checked one thing at a time, a
//! line each with its fix: the store, the config, the upstreams, a running
//! proxy, the agents on `PATH` and their MCP registration. The command
//! fails when a check does; a note (an agent not installed, `ctxfold mcp`
//! registered only for `ctxfold run`'s sessions) does not fail it.
//!
//! Doctor changes nothing: it never creates the global workspace, and the
//! file it writes to test a workspace is removed at once. (A PostgreSQL
//! store is opened as every command opens it, which brings its schema up
//! to date.)

mod agents;
mod config;
mod mcp;
mod network;
mod store;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::context::Context;
use crate::render::Report;

/// How long an upstream, a proxy or an agent's `--version` may take to
/// answer: long enough for a slow link, short enough that doctor never
/// hangs on what does not answer.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// It passed.
    Ok,
    /// Worth knowing, not wrong (the command still succeeds).
    Note,
    /// Wrong: the command fails.
    Fail,
}

/// One check's line: `ok   store: workspace …`, `FAIL upstream openai
/// https://…: connection refused — fix: …`.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// How it came out.
    pub status: Status,
    /// What was checked: `store`, `config`, `upstream openai`, `proxy`,
    /// `agent claude`, `mcp codex`, …
    pub check: String,
    /// What was found.
    pub found: String,
    /// What to do about it: for a failure the fix, for a note how to go
    /// further.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(check: impl Into<String>, found: impl Into<String>) -> Check {
        Check {
            status: Status::Ok,
            check: check.into(),
            found: found.into(),
            fix: None,
        }
    }

    /// A note, with what to do if one wants to.
    pub fn note(check: impl Into<String>, found: impl Into<String>, hint: Option<String>) -> Check {
        Check {
            status: Status::Note,
            check: check.into(),
            found: found.into(),
            fix: hint,
        }
    }

    /// A failed check and its fix.
    pub fn fail(
        check: impl Into<String>,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            status: Status::Fail,
            check: check.into(),
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.status {
            Status::Ok => "ok",
            Status::Note => "note",
            Status::Fail => "FAIL",
        };
        write!(f, "{word:<4} {}: {}", self.check, self.found)?;
        match (&self.fix, self.status) {
            (Some(fix), Status::Fail) => write!(f, " — fix: {fix}"),
            (Some(hint), _) => write!(f, " — {hint}"),
            (None, _) => Ok(()),
        }
    }
}

/// Every check, in the order they are printed.
#[derive(Debug, Serialize)]
pub struct Doctor {
    /// The checks.
    pub checks: Vec<Check>,
    /// How many failed.
    pub failed: usize,
}

impl Report for Doctor {
    fn outcome(&self) -> anyhow::Result<()> {
        if self.failed > 0 {
            let s = if self.failed == 1 { "" } else { "s" };
            anyhow::bail!(
                "{} of {} checks failed (the line{s} marked FAIL)",
                self.failed,
                self.checks.len()
            );
        }
        Ok(())
    }
}

impl std::fmt::Display for Doctor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.checks {
            writeln!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Run every check. The slow ones (the network, the agents' `--version`)
/// run side by side, each within [`TIMEOUT`].
pub fn run(ctx: &Context) -> anyhow::Result<Doctor> {
    let config = config::check(ctx);
    let settings = ctx.settings().ok();
    let mut checks = vec![store::check(ctx, settings)];
    checks.push(config.check);
    let (net, found) = std::thread::scope(|s| {
        let net = s.spawn(|| network::checks(settings, config.loaded.as_ref()));
        let found = agents::checks();
        // A thread that panicked lost only its lines: say so.
        let net = net.join().unwrap_or_else(|_| {
            vec![Check::fail(
                "network",
                "the checks of the upstreams and the proxy stopped",
                "run ctxfold doctor again; report it if it recurs",
            )]
        });
        (net, found)
    });
    checks.extend(net);
    checks.extend(found.checks);
    checks.extend(mcp::checks(ctx, &found.on_path));
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    Ok(Doctor { checks, failed })
}

/// `path` with the home folder written `~`, as the user would write it.
pub fn tilde(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

/// The first executable file named `cmd` in a `PATH` folder.
pub fn on_path(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(cmd))
        .find(|p| is_executable(p))
}

/// Whether `p` is a file this user may run.
#[cfg(unix)]
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `p` is a file (no mode bits to ask).
#[cfg(not(unix))]
pub fn is_executable(p: &Path) -> bool {
    p.is_file()
}
