//! A command's peak resident memory, as a user's `/usr/bin/time` reports
//! it: the benchmarks that hold the commands to a multiple of their input
//! file's size run the real binary and read its own `ru_maxrss`.

use std::process::Command;

/// Run `cmd` to its end, its output thrown away; its peak resident
/// memory in bytes. An error when it cannot be started or does not exit
/// with 0 (its stderr then in the message).
///
/// Linux carries a process's peak over `exec`: a child forked from a
/// process that holds much (a bench that has just generated a large log)
/// reports at least that, whatever the command uses. Run `cmd` from a
/// process that holds little (the `load` bench generates its log in a
/// child of its own for this).
// The child is waited for by `wait4` (which std's `Child` does not see).
#[allow(clippy::zombie_processes)]
pub fn run(cmd: &mut Command) -> Result<u64, String> {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let stderr = child.stderr.take();
    // Read while it runs: a full pipe would stall it.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_string(&mut e, &mut s);
        }
        s
    });
    // This child's own rusage: `getrusage(RUSAGE_CHILDREN)` would be the
    // largest of every child waited for so far.
    let (pid, status, usage) = wait4(child.id());
    let stderr = reader.join().unwrap_or_default();
    if pid != child.id() as libc::pid_t {
        return Err(format!("{cmd:?}: wait4 failed"));
    }
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!("{cmd:?} failed (status {status}): {stderr}"));
    }
    // Linux gives it in KiB.
    Ok(usage.ru_maxrss as u64 * 1024)
}

/// Wait for child `pid`: its pid, exit status and resource usage.
#[allow(unsafe_code)] // std has no wrapper for a child's own rusage
fn wait4(pid: u32) -> (libc::pid_t, libc::c_int, libc::rusage) {
    let mut status = 0;
    // SAFETY: `rusage` is plain integers, all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals; the pid is our child's,
    // not waited for yet.
    let got = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    (got, status, usage)
}
