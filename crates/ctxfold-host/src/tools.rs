//! Local tools: a `[tools.NAME]` declaration run as a command.
//!
//! The call's arguments (a JSON object) go to the command's standard
//! input as one line of JSON; its standard output is the result. Whatever
//! goes wrong — arguments that are not an object, a program that cannot be
//! started, a non-zero exit, a timeout, an interruption — becomes an error
//! result the model can read, never a panic or a hang.
//!
//! Output is bounded: at most `max_output_bytes` of standard output and
//! the last [`STDERR_TAIL`] bytes of standard error are kept, the rest is
//! read and counted but dropped, and both pipes are drained at the same
//! time so that a command filling one never blocks on it.
//!
//! The command runs in its own process group (Unix) in the host's current
//! directory. When it ends, times out or is interrupted, the whole group
//! is killed, so nothing it started outlives the call or holds its pipes;
//! and if the host itself is killed, [`crate::reaper`] kills the group.

use std::io::{self, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ctxfold_config::ToolDecl;
use ctxfold_providers::ToolSpec;
use serde_json::Value;

/// How much of standard error's end a failed call shows.
pub const STDERR_TAIL: usize = 2_000;

/// How often a running command is checked for its end, a timeout or an
/// interruption.
const POLL: Duration = Duration::from_millis(10);

/// Once the command's group is gone, how long its pipes may take to close
/// (a process that left the group can hold them open; then what was read
/// so far is used).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What became of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The command exited with status 0.
    Success,
    /// The command exited with another status, or a signal ended it.
    Failed,
    /// The command ran past its timeout and was killed.
    TimedOut,
    /// The run was cancelled (Ctrl-C) and the command killed.
    Interrupted,
    /// The command was not started: arguments that are not a JSON object,
    /// or a program that cannot be run.
    NotRun,
    /// The user declined the call (see [`crate::approval`]).
    Declined,
}

/// The result of a tool call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// What the model reads.
    pub content: String,
    /// Whether it is an error result.
    pub is_error: bool,
    /// What happened, for the host's own display.
    pub outcome: Outcome,
}

impl ToolResult {
    fn error(outcome: Outcome, content: String) -> ToolResult {
        ToolResult {
            content,
            is_error: true,
            outcome,
        }
    }

    /// The result of a call the user declined, with their reason if they
    /// gave one.
    pub fn declined(reason: Option<&str>) -> ToolResult {
        let mut content = "The user declined to run this tool call.".to_owned();
        if let Some(r) = reason {
            content.push_str(" Reason: ");
            content.push_str(r);
        }
        ToolResult::error(Outcome::Declined, content)
    }
}

/// The declared tools as the model is told of them.
pub fn tool_specs<'a>(decls: impl IntoIterator<Item = &'a ToolDecl>) -> Vec<ToolSpec> {
    decls
        .into_iter()
        .map(|d| ToolSpec {
            name: d.name.clone(),
            description: d.description.clone(),
            parameters: d.parameters.clone(),
        })
        .collect()
}

/// Run the tool `decl` with `arguments`. Setting `cancel` kills the
/// command and returns an [`Outcome::Interrupted`] result. The variables
/// named in `hidden` (provider keys) are removed from its environment: the
/// model must not be able to read them through a tool.
pub fn run_tool(
    decl: &ToolDecl,
    arguments: &Value,
    cancel: &AtomicBool,
    hidden: &[String],
) -> ToolResult {
    let name = &decl.name;
    if !arguments.is_object() {
        return ToolResult::error(
            Outcome::NotRun,
            format!(
                "{name} was not run: its arguments must be a JSON object, not {}: {}",
                ctxfold_core::json_text::describe(arguments),
                shorten(&arguments.to_string(), 200)
            ),
        );
    }
    let Some((program, args)) = decl.command.split_first() else {
        return ToolResult::error(Outcome::NotRun, format!("{name} has no command to run"));
    };
    let mut command = Command::new(program);
    for var in hidden {
        command.env_remove(var);
    }
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let why = match e.kind() {
                io::ErrorKind::NotFound => "no such program".to_owned(),
                _ => e.to_string(),
            };
            return ToolResult::error(
                Outcome::NotRun,
                format!(
                    "{name} was not run: cannot start {program}: {why} (command = {:?})",
                    decl.command
                ),
            );
        }
    };

    // Watches for the host's own death, until the group is killed below.
    #[cfg(unix)]
    let reaper = crate::reaper::watch(child.id());

    let mut input = serde_json::to_vec(arguments).unwrap_or_default();
    input.push(b'\n');
    // A thread, so that a command that never reads its input cannot block
    // us on a full pipe; a command that exits without reading is no error.
    if let Some(mut stdin) = child.stdin.take() {
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        drain(
            out,
            Keep::Head(decl.max_output_bytes),
            Stream::Out,
            tx.clone(),
        );
    }
    if let Some(err) = child.stderr.take() {
        drain(err, Keep::Tail(STDERR_TAIL), Stream::Err, tx);
    }

    let end = wait(&mut child, decl.timeout, cancel);
    kill_group(&mut child);
    #[cfg(unix)]
    drop(reaper);
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let grace = Instant::now() + DRAIN_GRACE;
    for _ in 0..2 {
        let left = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((Stream::Out, c)) => out = c,
            Ok((Stream::Err, c)) => err = c,
            Err(_) => break,
        }
    }

    let stdout = out.head_text(decl.max_output_bytes);
    match end {
        Ok(End::Exited(status)) if status.success() => ToolResult {
            content: if stdout.is_empty() {
                "(no output)".to_owned()
            } else {
                stdout
            },
            is_error: false,
            outcome: Outcome::Success,
        },
        Ok(End::Exited(status)) => ToolResult::error(
            Outcome::Failed,
            report(&format!("{name} failed: {}.", exit(status)), &stdout, &err),
        ),
        Ok(End::TimedOut) => ToolResult::error(
            Outcome::TimedOut,
            report(
                &format!(
                    "{name} timed out after {} and was stopped.",
                    seconds(decl.timeout)
                ),
                &stdout,
                &err,
            ),
        ),
        Ok(End::Interrupted) => ToolResult::error(
            Outcome::Interrupted,
            report(
                &format!("interrupted: {name} was stopped before it finished."),
                &stdout,
                &err,
            ),
        ),
        Err(e) => ToolResult::error(
            Outcome::Failed,
            report(
                &format!("{name}: lost track of the command: {e}."),
                &stdout,
                &err,
            ),
        ),
    }
}

/// A failure's first line, then what the command printed.
fn report(head: &str, stdout: &str, err: &Captured) -> String {
    let mut s = head.to_owned();
    if !stdout.is_empty() {
        s.push_str("\nStandard output:\n");
        s.push_str(stdout);
    }
    if err.total > 0 {
        let shown = err.kept.len() as u64;
        if shown < err.total {
            s.push_str(&format!(
                "\nStandard error (last {shown} of {} bytes):\n",
                err.total
            ));
        } else {
            s.push_str("\nStandard error:\n");
        }
        s.push_str(String::from_utf8_lossy(&err.kept).trim_end());
    }
    s
}

fn exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("ended by signal {sig}");
    }
    match status.code() {
        Some(c) => format!("exit status {c}"),
        None => status.to_string(),
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s == 1.0 {
        "1 second".to_owned()
    } else {
        format!("{s} seconds")
    }
}

/// `s` cut to at most `max` characters, with a note of how many more.
pub(crate) fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => {
            let more = s[at..].chars().count();
            format!("{}… ({more} more characters)", &s[..at])
        }
    }
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

/// Wait for the command, its timeout or `cancel`, whichever comes first.
fn wait(child: &mut Child, timeout: Duration, cancel: &AtomicBool) -> io::Result<End> {
    // A timeout too long for the clock is no timeout.
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(End::Exited(status));
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let end = if cancel.load(Ordering::Relaxed) {
            End::Interrupted
        } else if left == Some(Duration::ZERO) {
            End::TimedOut
        } else {
            thread::sleep(left.map_or(POLL, |l| POLL.min(l)));
            continue;
        };
        kill_group(child);
        let _ = child.kill();
        child.wait()?;
        return Ok(end);
    }
}

/// Kill the command's process group: the command, and whatever it started
/// that is still running. Already gone is fine.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        // The group's id is the command's pid (`process_group(0)`).
        let _ = kill_process_group(Pid::from_child(child), Signal::KILL);
    }
    #[cfg(not(unix))]
    {
        let _ = child.kill();
    }
}

#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

#[derive(Clone, Copy)]
enum Keep {
    /// The first n bytes.
    Head(usize),
    /// The last n bytes.
    Tail(usize),
}

/// What was kept of a stream, and how much it held in all.
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    total: u64,
}

impl Captured {
    /// The kept head as text, cut on a character boundary, with a note
    /// when bytes were cut.
    fn head_text(&self, max: usize) -> String {
        let mut kept = &self.kept[..];
        // A character the cut split in two is dropped whole.
        if self.total > kept.len() as u64
            && let Err(e) = std::str::from_utf8(kept)
            && e.error_len().is_none()
        {
            kept = &kept[..e.valid_up_to()];
        }
        let mut s = String::from_utf8_lossy(kept).into_owned();
        let cut = self.total - kept.len() as u64;
        if cut > 0 {
            if !s.is_empty() && !s.ends_with('\n') {
                s.push('\n');
            }
            s.push_str(&format!(
                "[output cut: {cut} of {} bytes not shown (max_output_bytes = {max})]",
                self.total
            ));
        }
        s
    }
}

/// Read `r` to its end on a thread, keeping what `keep` says, and send
/// what was kept.
fn drain(
    mut r: impl Read + Send + 'static,
    keep: Keep,
    stream: Stream,
    tx: mpsc::Sender<(Stream, Captured)>,
) {
    thread::spawn(move || {
        let mut c = Captured::default();
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            c.total += n as u64;
            match keep {
                Keep::Head(max) => {
                    let room = max.saturating_sub(c.kept.len());
                    c.kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Keep::Tail(max) => {
                    c.kept.extend_from_slice(&buf[..n]);
                    // Trim now and then, not on every read.
                    if c.kept.len() > 2 * max + buf.len() {
                        c.kept.drain(..c.kept.len() - max);
                    }
                }
            }
        }
        if let Keep::Tail(max) = keep
            && c.kept.len() > max
        {
            c.kept.drain(..c.kept.len() - max);
        }
        let _ = tx.send((stream, c));
    });
}
