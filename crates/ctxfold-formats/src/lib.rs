//! Transcript formats: read a transcript into ctxfold records and write
//! records back out.
//!
//! | format | module | on disk |
//! | --- | --- | --- |
//! | ctxfold | [`ctxfold`] | `events.jsonl`, one record a line (a file, or a conversation folder holding it) |
//! | JP | [`jp`] | a folder with `events.json`, `metadata.json` and maybe `base_config.json` |
//! | OpenAI chat | [`openai`] | a JSON file: `{"messages": [...]}` (a request body) or a bare array |
//! | Anthropic messages | [`anthropic`] | a JSON file: `{"system": ..., "messages": [...]}` or a bare array |
//! | OpenAI Responses | [`responses`] | a request body: `{"input": ...}` (used by the proxy; not a [`Format`]) |
//! | Claude Code | [`claude_code`] | a session file: `~/.claude/projects/<folder>/<session id>.jsonl` |
//! | Codex | [`codex`] | a rollout: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` |
//!
//! Import never modifies its source. What a format holds that ctxfold's
//! records do not (JP's metadata file, a request's `model` and `tools`) is
//! kept in [`Transcript::extras`] so export can give it back.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

pub mod anthropic;
mod chat;
pub mod claude_code;
pub mod codex;
pub mod ctxfold;
mod detect;
mod field;
pub mod gemini;
pub mod jp;
pub mod message_reader;
pub mod openai;
pub mod output;
mod pairing;
mod reading;
pub mod responses;
mod session_lines;
mod streamed;
mod wire;

pub use detect::detect;
use detect::{Sniffed, sniff};
pub use session_lines::{Aside, Found};
pub use streamed::{RecordSource, export_streamed, export_streamed_bytes};

/// One message as an export writes it: built from its records (`M`, the
/// wire crate's message of the format), or a message ctxfold keeps whole
/// (one it could not read). Serializes as the message itself, so a caller
/// writing JSON text writes it without building JSON values.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Exported<M> {
    /// Built from the records.
    Built(M),
    /// Kept as it was sent.
    Kept(Value),
}

impl<M: ctxfold_wire::IntoValue> ctxfold_wire::IntoValue for Exported<M> {
    fn into_value(self) -> Value {
        match self {
            Exported::Built(m) => m.into_value(),
            Exported::Kept(v) => v,
        }
    }
}

/// A transcript format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// ctxfold's own JSONL log.
    Ctxfold,
    /// A JP conversation folder.
    Jp,
    /// OpenAI chat completions `messages`.
    Openai,
    /// Anthropic `messages`.
    Anthropic,
    /// A Claude Code session file.
    ClaudeCode,
    /// A Codex session file (rollout).
    Codex,
    /// A Gemini API request (`contents`).
    Gemini,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 7] = [
        Format::Ctxfold,
        Format::Jp,
        Format::Openai,
        Format::Anthropic,
        Format::ClaudeCode,
        Format::Codex,
        Format::Gemini,
    ];

    /// The name users type.
    pub fn name(self) -> &'static str {
        match self {
            Format::Ctxfold => "ctxfold",
            Format::Jp => "jp",
            Format::Openai => "openai",
            Format::Anthropic => "anthropic",
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::Gemini => "gemini",
        }
    }

    /// What the format is, in a few words, for help texts.
    pub fn summary(self) -> &'static str {
        match self {
            Format::Ctxfold => "ctxfold's own JSONL log",
            Format::Jp => "A JP conversation folder",
            Format::Openai => "OpenAI chat `messages`",
            Format::Anthropic => "Anthropic `messages`",
            Format::ClaudeCode => "A Claude Code session file",
            Format::Codex => "A Codex session file (rollout)",
            Format::Gemini => "A Gemini API request `contents`",
        }
    }

    /// Whether the format is an agent's own session file, which a
    /// compacted view is written to as a new session ([`new_session`]).
    pub fn is_agent_session(self) -> bool {
        matches!(self, Format::ClaudeCode | Format::Codex)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = FormatError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| FormatError::UnknownFormat(s.to_owned()))
    }
}

/// A transcript read from a file, as ctxfold records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// The records, `seq` 0, 1, 2, … in order.
    pub records: Vec<Record>,
    /// A title, where the format has one.
    pub title: Option<String>,
    /// Format data that is not a record, keyed by format name (`"jp"`,
    /// `"openai"`, `"anthropic"`), kept so export can give it back.
    pub extras: Object,
    /// What was kept but not understood, for the user to read.
    pub warnings: Vec<String>,
}

/// Why a transcript could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A file could not be read or written. (The system's reason is the
    /// error's source, so chains print it once.)
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A file is not valid JSON.
    #[error("{}: invalid JSON: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A file is valid JSON but not the expected shape.
    #[error("{}: not a valid {format} transcript: {detail}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// The format it was read as.
        format: Format,
        /// What was expected, and where.
        detail: String,
    },
    /// `auto` could not tell the format.
    #[error("{}: cannot tell the transcript format: tried ctxfold, JP, OpenAI, Anthropic, Claude Code, Codex, Gemini; use --input-format ctxfold|jp|openai|anthropic|claude-code|codex|gemini ({detail})", path.display())]
    Undetected {
        /// The file.
        path: PathBuf,
        /// What was seen.
        detail: String,
    },
    /// An output that would be unsafe to write, or that is not what the
    /// format writes (a folder for a one-file format).
    #[error("{}: {reason}", path.display())]
    Refused {
        /// The output path.
        path: PathBuf,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A file that cannot be read as a transcript: too large, not UTF-8.
    #[error("{}: {detail}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        detail: String,
    },
    /// `CTXFOLD_MAX_INPUT_BYTES` is not a number of bytes.
    #[error("{MAX_INPUT_VAR}: `{0}` is not a number of bytes (e.g. 2000000000)")]
    BadLimit(String),
    /// A format name that does not exist.
    #[error(
        "unknown transcript format `{0}`: expected auto, ctxfold, jp, openai, anthropic, claude-code, codex or gemini"
    )]
    UnknownFormat(String),
}

impl FormatError {
    /// A [`FormatError::Json`] for `path` from a serde_json error.
    pub fn json(path: &Path, e: &serde_json::Error) -> Self {
        FormatError::Json {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        }
    }

    /// A [`FormatError::Shape`].
    pub fn shape(path: &Path, format: Format, detail: impl Into<String>) -> Self {
        FormatError::Shape {
            path: path.to_owned(),
            format,
            detail: detail.into(),
        }
    }

    /// A [`FormatError::Io`].
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The environment variable that bounds the size of an input.
pub const MAX_INPUT_VAR: &str = "CTXFOLD_MAX_INPUT_BYTES";
/// The input size limit when [`MAX_INPUT_VAR`] is not set: 1 GiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// The largest input read, in bytes: [`MAX_INPUT_VAR`], else
/// [`DEFAULT_MAX_INPUT_BYTES`].
pub fn max_input_bytes() -> Result<u64, FormatError> {
    match std::env::var_os(MAX_INPUT_VAR) {
        None => Ok(DEFAULT_MAX_INPUT_BYTES),
        Some(v) => {
            let s = v.to_string_lossy();
            s.trim()
                .parse()
                .map_err(|_| FormatError::BadLimit(s.into_owned()))
        }
    }
}

/// Read a whole file, at most [`max_input_bytes`] of it (a device such as
/// `/dev/zero` never ends).
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, FormatError> {
    use std::io::Read;
    let limit = max_input_bytes()?;
    let too_large = || FormatError::Unreadable {
        path: path.to_owned(),
        detail: format!(
            "more than {limit} bytes, the input limit; set {MAX_INPUT_VAR} to raise it"
        ),
    };
    let (f, pipe) = open_input(path)?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > limit {
        return Err(too_large());
    }
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| FormatError::io(path, e))?;
    if buf.len() as u64 > limit {
        return Err(too_large());
    }
    if pipe && buf.is_empty() {
        return Err(FormatError::Unreadable {
            path: path.to_owned(),
            detail: "is a named pipe that nothing was written to (no program had it open for writing); start the writer first".to_owned(),
        });
    }
    Ok(buf)
}

/// Open `path` to read, and whether it is a named pipe. A pipe is opened
/// without waiting for a writer (a plain open waits for ever when none
/// comes), then read as usual: what a writer already there sends, or
/// nothing.
#[cfg(unix)]
fn open_input(path: &Path) -> Result<(std::fs::File, bool), FormatError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io = |e| FormatError::io(path, e);
    let pipe = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if !pipe {
        return Ok((std::fs::File::open(path).map_err(io)?, false));
    }
    use rustix::fs::OFlags;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let flags = rustix::fs::fcntl_getfl(&f).map_err(|e| io(e.into()))?;
    rustix::fs::fcntl_setfl(&f, flags - OFlags::NONBLOCK).map_err(|e| io(e.into()))?;
    Ok((f, true))
}

#[cfg(not(unix))]
fn open_input(path: &Path) -> Result<(std::fs::File, bool), FormatError> {
    Ok((
        std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?,
        false,
    ))
}

/// Read a whole file as UTF-8 text, without a leading byte-order mark.
pub(crate) fn read_text(path: &Path) -> Result<String, FormatError> {
    utf8_text(path, read_bytes(path)?)
}

/// The UTF-8 byte-order mark, which some editors write first.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` read from `path` as UTF-8 text, without a leading byte-order
/// mark; an error names where the text stops being UTF-8.
pub(crate) fn utf8_text(path: &Path, mut bytes: Vec<u8>) -> Result<String, FormatError> {
    if bytes.starts_with(BOM) {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let detail = if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
            "is UTF-16 text (it starts with a UTF-16 byte-order mark); transcripts are read as UTF-8".to_owned()
        } else {
            let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            let column = String::from_utf8_lossy(&bytes[line_start..at]).chars().count() + 1;
            format!(
                "not valid UTF-8: byte 0x{:02X} at line {line}, column {column} (byte offset {at})",
                bytes[at]
            )
        };
        FormatError::Unreadable {
            path: path.to_owned(),
            detail,
        }
    })
}

/// Read a whole file as one JSON value.
pub(crate) fn read_json(path: &Path) -> Result<Value, FormatError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| FormatError::json(path, &e))
}

/// Whether the optional file `path` is there to read: `false` when nothing
/// is at that path, an error naming it when something is but cannot be
/// read as a file (a folder, a dangling link, no permission).
pub(crate) fn optional_file(path: &Path) -> Result<bool, FormatError> {
    let unreadable = |detail: &str| FormatError::Unreadable {
        path: path.to_owned(),
        detail: detail.to_owned(),
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(m) if m.is_dir() => Err(unreadable("is a folder, not a file")),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                Err(unreadable(
                    "is a symbolic link to something that does not exist",
                ))
            } else {
                Ok(false)
            }
        }
        Err(e) => Err(FormatError::io(path, e)),
    }
}

/// Write `bytes` to `path`, protecting nothing; see [`output`].
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), FormatError> {
    output::write_file(path, bytes, &output::Protect::none())
}

/// Read the transcript at `path`; `format` `None` means detect it.
pub fn import(path: &Path, format: Option<Format>) -> Result<Transcript, FormatError> {
    import_detected(path, format).map(|(_, t)| t)
}

/// Read the transcript at `path` in `format`, or in the format it holds
/// when `format` is `None` (read and parsed once); says which format.
pub fn import_detected(
    path: &Path,
    format: Option<Format>,
) -> Result<(Format, Transcript), FormatError> {
    if let Some(f) = format {
        return Ok((f, import_as(path, f)?));
    }
    match sniff(path)? {
        Sniffed::Format(f) => Ok((f, import_as(path, f)?)),
        Sniffed::Jsonl(bytes) => Ok((Format::Ctxfold, ctxfold::import_bytes(path, &bytes)?)),
        Sniffed::Json(Format::Openai, v) => Ok((
            Format::Openai,
            openai::from_json(&v).map_err(|d| FormatError::shape(path, Format::Openai, d))?,
        )),
        Sniffed::Json(Format::Anthropic, v) => Ok((
            Format::Anthropic,
            anthropic::from_json(&v).map_err(|d| FormatError::shape(path, Format::Anthropic, d))?,
        )),
        Sniffed::Json(f, _) => Ok((f, import_as(path, f)?)),
        Sniffed::Session(Format::Codex, bytes) => Ok((
            Format::Codex,
            codex::Reader::new(path, bytes).into_transcript(),
        )),
        Sniffed::Session(f, bytes) => {
            Ok((f, claude_code::Reader::new(path, bytes).into_transcript()))
        }
    }
}

/// An agent's session file (Claude Code's, Codex's) read record by
/// record: each line is parsed, turned into its records and dropped before
/// the next, so a caller that stores or writes the records as they come
/// holds the file's bytes and a batch of records, not every line's JSON
/// (issue 48: a long session in memory proportional to what is kept).
/// [`SessionRecords::finish`], once every record is taken, gives the rest
/// of the transcript: its title, extras and warnings.
pub struct SessionRecords {
    reader: SessionReader,
    ready: std::collections::VecDeque<Record>,
    buf: Vec<Record>,
}

enum SessionReader {
    ClaudeCode(Box<claude_code::Reader>),
    Codex(Box<codex::Reader>),
}

impl Iterator for SessionRecords {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        while self.ready.is_empty() {
            let more = match &mut self.reader {
                SessionReader::ClaudeCode(r) => r.step(&mut self.buf),
                SessionReader::Codex(r) => r.step(&mut self.buf),
            };
            self.ready.extend(self.buf.drain(..));
            if !more {
                break;
            }
        }
        self.ready.pop_front()
    }
}

impl SessionRecords {
    /// The transcript without its records (those were handed out): the
    /// title, the format's extras (whether the file ended with a newline
    /// among them, known only at its end) and the warnings. Records not
    /// taken yet are read and dropped.
    pub fn finish(mut self) -> Transcript {
        while self.next().is_some() {}
        match self.reader {
            SessionReader::ClaudeCode(r) => r.finish(),
            SessionReader::Codex(r) => r.finish(),
        }
    }
}

impl SessionRecords {
    /// The next record with its hints packed: held as their JSON text, not
    /// as a JSON tree several times that size, for a caller that holds
    /// every record while reading none of their hints (`ctxfold compact
    /// FILE`). The session's export ([`export_protected`], [`export_bytes`]
    /// in the format read) unpacks them a record at a time; other formats
    /// do not read them.
    pub fn next_packed(&mut self) -> Option<Record> {
        let key = match self.reader {
            SessionReader::ClaudeCode(_) => claude_code::KEY,
            SessionReader::Codex(_) => codex::KEY,
        };
        let mut r = self.next()?;
        session_lines::pack(&mut r, key);
        Some(r)
    }

    /// Where [`SessionRecords::next_aside`] puts the packed hints of this
    /// session's records.
    pub fn aside(&self) -> Aside {
        Aside::new(match self.reader {
            SessionReader::ClaudeCode(_) => claude_code::KEY,
            SessionReader::Codex(_) => codex::KEY,
        })
    }

    /// [`SessionRecords::next_packed`], the packed text then moved into
    /// `aside` (the record's place in the session its key): for a caller
    /// that copies records it reads none of the hints of, and puts them
    /// back ([`Aside::restore`]) as each is written.
    pub fn next_aside(&mut self, aside: &mut Aside) -> Option<Record> {
        let mut r = self.next_packed()?;
        aside.take(&mut r);
        Some(r)
    }
}

/// A transcript read: an agent's session record by record, or any other
/// format whole.
pub enum Opened {
    /// An agent's session file, record by record.
    Records(Format, SessionRecords),
    /// A transcript of another format, whole.
    Whole(Format, Transcript),
}

/// [`import_detected`], but an agent's session file (Claude Code's, Codex's)
/// comes record by record ([`SessionRecords`]) rather than whole.
pub fn open_detected(path: &Path, format: Option<Format>) -> Result<Opened, FormatError> {
    let session = |f: Format, bytes: Vec<u8>| {
        let reader = match f {
            Format::Codex => SessionReader::Codex(Box::new(codex::Reader::new(path, bytes))),
            _ => SessionReader::ClaudeCode(Box::new(claude_code::Reader::new(path, bytes))),
        };
        Opened::Records(
            f,
            SessionRecords {
                reader,
                ready: Default::default(),
                buf: Vec::new(),
            },
        )
    };
    match format {
        Some(f @ (Format::ClaudeCode | Format::Codex)) => Ok(session(f, read_bytes(path)?)),
        Some(_) => {
            let (f, t) = import_detected(path, format)?;
            Ok(Opened::Whole(f, t))
        }
        None => match sniff(path)? {
            Sniffed::Session(f, bytes) => Ok(session(f, bytes)),
            Sniffed::Format(f) => Ok(Opened::Whole(f, import_as(path, f)?)),
            Sniffed::Jsonl(bytes) => Ok(Opened::Whole(
                Format::Ctxfold,
                ctxfold::import_bytes(path, &bytes)?,
            )),
            Sniffed::Json(Format::Openai, v) => Ok(Opened::Whole(
                Format::Openai,
                openai::from_json(&v).map_err(|d| FormatError::shape(path, Format::Openai, d))?,
            )),
            Sniffed::Json(Format::Anthropic, v) => Ok(Opened::Whole(
                Format::Anthropic,
                anthropic::from_json(&v)
                    .map_err(|d| FormatError::shape(path, Format::Anthropic, d))?,
            )),
            Sniffed::Json(f, _) => Ok(Opened::Whole(f, import_as(path, f)?)),
        },
    }
}

fn import_as(path: &Path, format: Format) -> Result<Transcript, FormatError> {
    match format {
        Format::Ctxfold => ctxfold::import(path),
        Format::Jp => jp::import(path),
        Format::Openai => {
            let v = read_json(path)?;
            openai::from_json(&v).map_err(|d| FormatError::shape(path, Format::Openai, d))
        }
        Format::Anthropic => {
            let v = read_json(path)?;
            anthropic::from_json(&v).map_err(|d| FormatError::shape(path, Format::Anthropic, d))
        }
        Format::ClaudeCode => claude_code::import(path),
        Format::Codex => codex::import(path),
        Format::Gemini => {
            let v = read_json(path)?;
            gemini::from_json(&v).map_err(|d| FormatError::shape(path, Format::Gemini, d))
        }
    }
}

/// Set a transcript's `extras` up to be written in `format` as a new
/// session of its agent (a compacted view: the original stays as it is);
/// the new session's id, or `None` for a format that is not an agent's
/// session file.
pub fn new_session(extras: &mut Object, format: Format) -> Option<String> {
    match format {
        Format::ClaudeCode => Some(claude_code::new_session(extras)),
        Format::Codex => Some(codex::new_session(extras)),
        _ => None,
    }
}

/// Where the agent keeps new session `id` of a session read from `input`:
/// beside it, named as the agent names its sessions.
pub fn session_path(format: Format, input: &Path, id: &str) -> Option<PathBuf> {
    let dir = input
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match format {
        Format::ClaudeCode => Some(dir.join(format!("{id}.jsonl"))),
        Format::Codex => Some(dir.join(codex::file_name(id))),
        _ => None,
    }
}

/// The command that resumes session `id` written in `format` (`t` is the
/// session's transcript: Claude Code resumes from its working folder).
pub fn resume_command(format: Format, t: &Transcript, id: &str) -> Option<String> {
    match format {
        Format::ClaudeCode => {
            let cwd = claude_code::extra(t, claude_code::CWD).and_then(Value::as_str);
            Some(match cwd {
                Some(d) => format!("cd {} && claude --resume {id}", shell_word(d)),
                None => format!("claude --resume {id}"),
            })
        }
        Format::Codex => Some(format!("codex resume {id}")),
        _ => None,
    }
}

/// `s` as one shell word.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Write `transcript` to `path` in `format`. JP writes a folder; the others
/// write one file. Outputs are replaced whole; see [`output`].
pub fn export(transcript: &Transcript, format: Format, path: &Path) -> Result<(), FormatError> {
    export_protected(transcript, format, path, &output::Protect::none())
}

/// [`export`], refusing an output `protect` protects (the input of
/// `ctxfold compact`), checked again as the output is written.
pub fn export_protected(
    transcript: &Transcript,
    format: Format,
    path: &Path,
    protect: &output::Protect,
) -> Result<(), FormatError> {
    match format {
        Format::Jp => jp::export_protected(transcript, path, protect),
        // An agent's session goes to the file a line at a time: a long
        // one never whole in memory beside its records.
        Format::ClaudeCode => output::write_file_with(path, protect, &mut |w| {
            claude_code::export_to(transcript, w)
        }),
        Format::Codex => {
            output::write_file_with(path, protect, &mut |w| codex::export_to(transcript, w))
        }
        _ => output::write_file(path, &export_bytes(transcript, format, path)?, protect),
    }
}

/// A one-file transcript's bytes (`path` only names it in errors). A JP
/// conversation is a folder: asking for its bytes is an error.
pub fn export_bytes(
    transcript: &Transcript,
    format: Format,
    path: &Path,
) -> Result<Vec<u8>, FormatError> {
    let v = match format {
        Format::Ctxfold => {
            let mut out = String::new();
            for r in &transcript.records {
                out.push_str(&r.to_json_line());
                out.push('\n');
            }
            return Ok(out.into_bytes());
        }
        Format::Jp => {
            return Err(FormatError::Refused {
                path: path.to_owned(),
                reason: "a JP conversation is a folder: name it with -o PATH".into(),
            });
        }
        Format::Openai => openai::to_json(&chat_records(&transcript.records), &transcript.extras),
        Format::Anthropic => {
            anthropic::to_json(&chat_records(&transcript.records), &transcript.extras)
        }
        Format::Gemini => gemini::to_json(&chat_records(&transcript.records), &transcript.extras),
        Format::ClaudeCode => return Ok(claude_code::export_bytes(transcript)),
        Format::Codex => return Ok(codex::export_bytes(transcript)),
    };
    let mut bytes = serde_json::to_vec_pretty(&v).map_err(|e| FormatError::json(path, &e))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The provider's compaction a record holds, kept whole as it was read:
/// an Anthropic `compaction` block or an OpenAI Responses `compaction`
/// item (issue 29).
pub fn provider_compaction(r: &Record) -> Option<&Value> {
    anthropic::other_block(r)
        .or_else(|| responses::other_item(r))
        .filter(|v| ctxfold_wire::context_management::is_compaction(v))
}

/// The records a chat transcript (OpenAI, Anthropic) is written from: all
/// but an answer cut short that a later answer replaced
/// ([`ctxfold_core::cut_short::replaced`]), and but an answer's text that
/// says nothing (an empty answer, or what was kept of one cut short before
/// any text arrived) and carries no field of a message: written, it would
/// be an empty text block or an empty assistant message, which the APIs
/// refuse. The proxy writes requests with the formats' `to_json` directly:
/// what a client sent goes upstream as it was sent.
pub fn chat_records(records: &[Record]) -> Vec<&Record> {
    let replaced = ctxfold_core::cut_short::replaced(records);
    records
        .iter()
        .zip(replaced)
        .filter(|(r, replaced)| !replaced && !says_nothing(r))
        .map(|(r, _)| r)
        .collect()
}

/// An assistant text that is blank, with no message fields kept beside it
/// (an OpenAI `refusal`, say, is kept in `extra` and written back) and no
/// content parts that are not text (kept in metadata `openai_content`).
fn says_nothing(r: &Record) -> bool {
    let parts = chat::meta(r, openai::CONTENT)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    matches!(&r.body, Body::Assistant { content } if content.trim().is_empty())
        && r.extra.is_empty()
        && !parts
}
