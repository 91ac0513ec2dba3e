//! How commands print: a [`Report`] as text for people or JSON for
//! programs, through one [`Printer`]; and standard output and error that
//! never panic.

use std::fmt::Write as _;
use std::io::Write;

use ctxfold_core::{Body, Log, Record};

use crate::cli::OutputFormat;

/// What a command gives back to be printed: `Serialize` is what
/// `--format json` prints, `Display` the text for people.
pub trait Report: serde::Serialize + std::fmt::Display {
    /// Bytes that stand for the report on standard output whatever the
    /// format (a transcript written to `-`, a completion script); its text
    /// then goes to standard error as it is.
    fn raw(&self) -> Option<&[u8]> {
        None
    }

    /// How the command ends once the report is printed: an error for a
    /// copy that left conversations out.
    fn outcome(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Bytes for standard output as they are, and a note for standard error:
/// what `export` and `compact -o -` write, and a completion script.
pub struct Raw {
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Report for Raw {
    fn raw(&self) -> Option<&[u8]> {
        Some(&self.stdout)
    }
}

/// Never printed as JSON: [`Report::raw`] stands for it.
impl serde::Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

impl std::fmt::Display for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.stderr)
    }
}

/// Prints a command's report in the chosen format.
pub struct Printer {
    format: OutputFormat,
}

impl Printer {
    pub fn new(format: OutputFormat) -> Self {
        Printer { format }
    }

    pub fn is_json(&self) -> bool {
        self.format == OutputFormat::Json
    }

    /// Print `json` in JSON mode, `text` otherwise: for the commands not
    /// yet giving back a [`Report`].
    pub fn emit(
        &self,
        json: &serde_json::Value,
        text: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        let mut bytes = if self.is_json() {
            serde_json::to_vec_pretty(json)?
        } else {
            text().into_bytes()
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        to_stdout(&bytes)
    }

    /// Print `report`: pretty JSON in JSON mode, its text otherwise, each
    /// ending with a newline (an empty text prints nothing); or its raw
    /// bytes. Then the command ends as the report says.
    pub fn print<R: Report + ?Sized>(&self, report: &R) -> anyhow::Result<()> {
        if let Some(raw) = report.raw() {
            to_stdout(raw)?;
            to_stderr(&report.to_string());
            return report.outcome();
        }
        let mut bytes = if self.is_json() {
            serde_json::to_vec_pretty(report)?
        } else {
            report.to_string().into_bytes()
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        to_stdout(&bytes)?;
        report.outcome()
    }
}

/// Our standard output was closed by its reader (`print | head`): no
/// error of ours, so the command ends quietly. Only writes to standard
/// output return it; a broken pipe anywhere else (an output file that is
/// a FIFO, a provider's connection) is an error like any other.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Write `bytes` to standard output, and flush them.
pub fn to_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to standard output")),
    }
}

/// Write `text` to standard error. A standard error that cannot be
/// written (a full disk, a closed pipe) loses the message, never the
/// command: what it did is done, and its exit status still says how.
pub fn to_stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` that does not panic: see [`to_stderr`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::render::to_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use say;

/// Print warnings to standard error.
pub fn warn_all(warnings: &[String]) {
    for w in warnings {
        say!("warning: {w}");
    }
}

/// A conversation as text: a header per turn (1-based), one block per event.
pub fn transcript_text(log: &Log) -> String {
    let by_seq = crate::statuses::compaction_statuses(log)
        .into_iter()
        .map(|(i, words)| (log.records()[i].seq, words))
        .collect();
    turns_text(
        log.records()
            .iter()
            .enumerate()
            .map(|(i, r)| (log.turn_of(i), r)),
        &by_seq,
    )
}

/// Records with the (0-based) turn each belongs to, as text. `statuses`
/// says, by `seq`, whether each compaction record is in force. What was
/// kept of an answer cut short is marked, and so is one a later answer
/// replaced (`ctxfold_core::cut_short::replaced`): the conversation went
/// on from the answer after it.
pub fn turns_text<'a>(
    entries: impl Iterator<Item = (u32, &'a Record)>,
    statuses: &std::collections::HashMap<u64, String>,
) -> String {
    let entries: Vec<(u32, &Record)> = entries.collect();
    let records: Vec<&Record> = entries.iter().map(|(_, r)| *r).collect();
    let replaced = ctxfold_core::cut_short::replaced(&records);
    let mut out = String::new();
    let mut current_turn = None;
    for ((turn, rec), replaced) in entries.into_iter().zip(replaced) {
        let visible = rec.body.is_model_visible() || matches!(rec.body, Body::TurnStart);
        if visible && current_turn != Some(turn) {
            current_turn = Some(turn);
            let _ = writeln!(out, "\n━━ turn {} ━━", u64::from(turn) + 1);
        }
        let cut = match (replaced, ctxfold_core::cut_short::is_cut_short(rec)) {
            (true, _) => ", cut short, replaced by the answer after it",
            (false, true) => ", cut short",
            (false, false) => "",
        };
        match &rec.body {
            Body::TurnStart => {}
            Body::User { content, author } => {
                let who = author.as_deref().unwrap_or("user");
                let _ = writeln!(out, "[{who}]\n{}", content.trim_end());
            }
            Body::Assistant { content } => {
                let _ = writeln!(out, "[assistant{cut}]\n{}", content.trim_end());
            }
            Body::Reasoning { content } => {
                let _ = writeln!(out, "[reasoning{cut}]\n{}", content.trim_end());
            }
            Body::ToolCall {
                id,
                name,
                arguments,
            } => {
                let _ = writeln!(out, "[tool call {name} {id}{cut}]\n{arguments}");
            }
            Body::ToolResult {
                id,
                content,
                is_error,
            } => {
                let status = if *is_error { "error" } else { "ok" };
                let _ = writeln!(out, "[tool result {id}: {status}]\n{}", content.trim_end());
            }
            Body::Structured { data } => {
                let _ = writeln!(out, "[structured{cut}]\n{data}");
            }
            Body::System { content } => {
                let _ = writeln!(out, "[system]\n{}", content.trim_end());
            }
            Body::Compaction(c) => {
                // Who asked, what it does, and whether it is in force yet:
                // an assistant's compaction waits for the next turn.
                let status = statuses
                    .get(&rec.seq)
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "[compaction of turns {}-{}, record {}, by {}{status}: {}]",
                    u64::from(c.from_turn) + 1,
                    u64::from(c.to_turn) + 1,
                    rec.seq,
                    source_words(c.source),
                    c.describe().join(", ")
                );
                if let Some(note) = &c.note {
                    let _ = writeln!(out, "note: {note}");
                }
            }
            Body::CompactionReset(_) => {
                let _ = writeln!(out, "[compaction reset, record {}]", rec.seq);
            }
            Body::Other { kind, .. } => {
                let _ = writeln!(out, "[{kind}, record {}]", rec.seq);
            }
        }
    }
    out
}

/// Who made a compaction, as the transcript says it.
fn source_words(s: ctxfold_core::compaction::Source) -> &'static str {
    use ctxfold_core::compaction::Source;
    match s {
        Source::User => "the user",
        Source::Assistant => "the assistant",
        Source::Auto => "automatic compaction",
    }
}
