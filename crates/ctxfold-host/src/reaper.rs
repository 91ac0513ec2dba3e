//! A tool's process group dies with the host, however the host dies.
//!
//! [`tools::run_tool`](crate::tools::run_tool) kills a command's process
//! group when the call ends, times out or is interrupted; but a host that
//! is killed outright (SIGKILL, the OOM killer) runs no code, and the
//! command and what it started would run on. So, next to each command, a
//! small reaper process joins its group and waits on a pipe whose writing
//! end only the host holds: the kernel closes it when the host dies,
//! whatever kills it, and the reaper then kills the group (itself with
//! it). When the call ends normally, the host's own kill of the group ends
//! the reaper too.
//!
//! The reaper is the host's own binary, started with [`ARG`]: the binary
//! installs itself with [`install`] and hands [`ARG`] to [`run`] in `main`.
//! Without an installed binary (a library test), a tool runs without one.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

/// The first argument that makes the host's binary a reaper: `BINARY ARG
/// PGID`.
pub const ARG: &str = "__ctxfold-reap-tool-group";

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Use `program` (the running binary, which calls [`run`] when started
/// with [`ARG`]) as every tool's reaper.
pub fn install(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The reaper's whole life, given the arguments after [`ARG`]: wait until
/// standard input closes, then kill process group `PGID`. Never returns.
pub fn run(mut args: impl Iterator<Item = OsString>) -> ! {
    let pgid = args
        .next()
        .and_then(|a| a.into_string().ok())
        .and_then(|a| a.parse::<i32>().ok())
        // Groups 0 and 1 are "ours" and init's: never a tool's.
        .filter(|p| *p > 1);
    let Some(pgid) = pgid else {
        std::process::exit(2);
    };
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    std::process::exit(0)
}

/// A running reaper of one command's group; dropping it reaps the
/// process (once the group was killed, or it kills the group itself when
/// its pipe closes).
pub(crate) struct Reaper {
    child: Child,
    lifeline: Option<ChildStdin>,
}

/// Start a reaper in the group of the command whose pid (and group id,
/// `process_group(0)`) is `pgid`; `None` without an installed binary or
/// when it cannot start (the command then runs without one).
pub(crate) fn watch(pgid: u32) -> Option<Reaper> {
    use std::os::unix::process::CommandExt;
    let program = PROGRAM.get()?;
    let group = i32::try_from(pgid).ok()?;
    let mut child = Command::new(program)
        .arg(ARG)
        .arg(pgid.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(group)
        .spawn()
        .map_err(|e| tracing::debug!("no reaper for tool group {pgid}: {e}"))
        .ok()?;
    let lifeline = child.stdin.take();
    Some(Reaper { child, lifeline })
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Closing the pipe is the only message there is.
        drop(self.lifeline.take());
        let _ = self.child.wait();
    }
}
