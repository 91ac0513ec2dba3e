//! How commands print: a [`Report`] as text for people or JSON for
//! programs, through one [`Printer`]; and standard output and error that
//! never panic.

use std::io::Write;

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

/// `json` with `fields` set: a report's JSON is often another value's
/// with a few fields of the command's added at its end (a field it already
/// has keeps its place). A value that is not an object is left as it is.
pub fn with_fields<const N: usize>(
    mut json: serde_json::Value,
    fields: [(&str, serde_json::Value); N],
) -> serde_json::Value {
    if let serde_json::Value::Object(m) = &mut json {
        for (k, v) in fields {
            m.insert(k.to_owned(), v);
        }
    }
    json
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
