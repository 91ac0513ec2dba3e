//! A long log's snapshot written after the command, not during it (issue
//! 48): a command that loads one conversation and ends (`c show`, `stats`)
//! answers from the log read line by line, and the snapshot its load would
//! have written (`events.snapshot`, what makes the next load fast) is
//! written by a copy of this binary started in the background as the
//! command ends, the way `git gc --auto` detaches. The first command
//! after a log grows past the size that keeps one is then no slower for
//! it.
//!
//! The copy is started with [`ARG`] and the conversations' folders; it
//! loads each the usual way, which writes the snapshot (or finds one
//! another process wrote meanwhile), and says nothing. A snapshot is a
//! cache: if the copy cannot start or fails, the next load writes it.

use std::path::PathBuf;
use std::sync::Mutex;

/// The first argument that makes the binary the snapshot writer.
pub const ARG: &str = "__ctxfold-write-snapshots";

/// Conversation folders whose snapshot is due, in load order.
static DUE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Have the snapshot of the log in `dir` written once the command ends.
pub fn due(dir: PathBuf) {
    if let Ok(mut due) = DUE.lock()
        && !due.contains(&dir)
    {
        due.push(dir);
    }
}

/// Start the writer of every snapshot said due, in the background, in a
/// session of its own (a terminal's hangup or Ctrl-C after the command
/// ends does not stop it), its output nowhere.
pub fn start_writer() {
    let dirs = DUE
        .lock()
        .map(|mut d| std::mem::take(&mut *d))
        .unwrap_or_default();
    if dirs.is_empty() {
        return;
    }
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    let mut cmd = std::process::Command::new(me);
    cmd.arg(ARG)
        .args(&dirs)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // Not waited for: the process reaps it when it ends, which is now.
    if let Err(e) = cmd.spawn() {
        tracing::debug!(error = %e, "the snapshot writer did not start");
    }
}

/// The writer: load each folder's log, which writes its snapshot.
pub fn run(dirs: impl Iterator<Item = std::ffi::OsString>) -> ! {
    for dir in dirs {
        let _ = ctxfold_store::EventLog::new(PathBuf::from(dir)).load();
    }
    std::process::exit(0)
}
