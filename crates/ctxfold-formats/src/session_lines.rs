//! What the two agents' session files share (Claude Code's and Codex's
//! JSONL, see [`crate::claude_code`] and [`crate::codex`]): the file read
//! line by line, a line that is not JSON (a torn last line) kept as its
//! text, a line whose JSON ctxfold would write with other bytes kept as
//! its text beside the parsed value, the turns the agents do not record,
//! and new ids for a new session.

use std::path::Path;

use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

use crate::FormatError;

/// The session files found in an agent's folder, and the entries passed
/// over.
#[derive(Debug, Default)]
pub struct Found {
    /// Each session's file and id, sorted.
    pub sessions: Vec<(std::path::PathBuf, String)>,
    /// Entries named like a session that are not read, and why: only
    /// regular files are. A symbolic link may lead anywhere (a link to
    /// `/etc/shadow` in a project's folder would be stored as a session)
    /// and a named pipe would block the import for ever.
    pub skipped: Vec<(std::path::PathBuf, &'static str)>,
}

/// Why an entry of this type (not followed through a link) is not read as
/// a session file: `None` for a regular file.
pub(crate) fn not_a_session_file(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_symlink() {
        Some("a symbolic link (links in an agent's folder are not followed)")
    } else {
        Some("not a regular file")
    }
}

/// One line of a session file.
pub(crate) struct Line {
    /// 1-based.
    pub number: usize,
    /// The line's text, without its newline.
    pub text: String,
    /// The line as JSON, when it is JSON.
    pub value: Option<Value>,
}

impl Line {
    /// Whether the JSON ctxfold writes for the value is the line's text:
    /// when it is not, the text is kept beside the value.
    pub fn writes_back(&self) -> bool {
        match &self.value {
            Some(v) => serde_json::to_string(v).is_ok_and(|s| s == self.text),
            None => false,
        }
    }

    /// The line's `timestamp`, `""` when it has none.
    pub fn ts(&self) -> String {
        self.value
            .as_ref()
            .and_then(|v| v.get("timestamp"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    }

    /// The hints of a record made from the line: the line as `envelope`
    /// (what the record does not hold of it), and its text when the JSON
    /// would be written with other bytes.
    pub fn hints(&self, envelope: Value) -> Object {
        let mut h = Object::new();
        h.insert("line".into(), envelope);
        if !self.writes_back() {
            h.insert("raw".into(), Value::String(self.text.clone()));
        }
        h
    }

    /// The record of the agent's own compaction the line holds: `text`
    /// its summary, as the agent wrote it, and `note` whose it is. Its
    /// range is set once every record has its `seq`.
    pub fn agent_compaction(&self, text: String, note: &str) -> Record {
        let mut c = Compaction::new(0, 0, Source::Agent);
        c.summary = Some(Summary {
            text,
            provenance: Provenance::Supplied {
                author: Source::Agent,
            },
        });
        c.note = Some(note.into());
        Record::new(0, self.ts(), Body::Compaction(Box::new(c)))
    }

    /// The line kept whole, as a record of kind `key`: its JSON, and its
    /// text when that would be written otherwise (its text alone when it
    /// is not JSON).
    pub fn opaque(&self, key: &str) -> Record {
        let mut fields = Object::new();
        if let Some(v) = &self.value {
            fields.insert("line".into(), v.clone());
        }
        if !self.writes_back() {
            fields.insert("text".into(), Value::String(self.text.clone()));
        }
        Record::new(
            0,
            self.ts(),
            Body::Other {
                kind: key.into(),
                fields: Box::new(fields),
            },
        )
    }
}

/// A session file read: its lines, whether its last line ends with a
/// newline, and whether it started with a UTF-8 byte-order mark (which an
/// editor may have added); an export writes both back as they were.
pub(crate) struct SessionText {
    pub(crate) lines: Vec<Line>,
    pub(crate) final_newline: bool,
    pub(crate) bom: bool,
}

/// The lines of a session file. A line that is not UTF-8 is read with its
/// bad bytes replaced and reported: it cannot be written back as it was.
pub(crate) fn read_lines(
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<SessionText, FormatError> {
    let bytes = crate::read_bytes(path)?;
    Ok(split_lines(path, &bytes, warnings))
}

/// [`read_lines`] on bytes already read.
pub(crate) fn split_lines(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> SessionText {
    let (lines, final_newline, bom) = match bytes.strip_prefix(crate::BOM) {
        Some(rest) => {
            let (lines, nl) = split(path, rest, warnings);
            (lines, nl, true)
        }
        None => {
            let (lines, nl) = split(path, bytes, warnings);
            (lines, nl, false)
        }
    };
    SessionText {
        lines,
        final_newline,
        bom,
    }
}

fn split(path: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> (Vec<Line>, bool) {
    let final_newline = bytes.is_empty() || bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut lines = Vec::new();
    if bytes.is_empty() {
        return (lines, true);
    }
    let count = body.split(|&b| b == b'\n').count();
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let number = i + 1;
        let text = match std::str::from_utf8(raw) {
            Ok(s) => s.to_owned(),
            Err(_) => {
                warnings.push(format!(
                    "{}: line {number}: not valid UTF-8; kept with the bad bytes replaced",
                    path.display()
                ));
                String::from_utf8_lossy(raw).into_owned()
            }
        };
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                if !text.trim().is_empty() {
                    let torn = number == count && !final_newline;
                    warnings.push(format!(
                        "{}: line {number}: {}: {e}; kept as it is",
                        path.display(),
                        if torn {
                            "a torn last line (no newline, not JSON)"
                        } else {
                            "not JSON"
                        }
                    ));
                }
                None
            }
        };
        lines.push(Line {
            number,
            text,
            value,
        });
    }
    (lines, final_newline)
}

/// The hints object under `key` in a record's `extra`, if any. (Read
/// back from a ctxfold log, a compaction's unknown fields, the hints among
/// them, are the compaction's own.)
pub(crate) fn hints<'a>(r: &'a Record, key: &str) -> Option<&'a Object> {
    match &r.body {
        Body::Compaction(c) => r.extra.get(key).or_else(|| c.extra.get(key)),
        _ => r.extra.get(key),
    }
    .and_then(Value::as_object)
}

/// Hint: a `turn_start` the importer made.
pub(crate) const SYNTHESIZED: &str = "synthesized";

/// A synthesized `turn_start` (hint [`SYNTHESIZED`] under `key`), at `ts`.
pub(crate) fn turn_start(key: &str, ts: &ctxfold_core::ts::Ts) -> Record {
    let mut start = Record::new(0, ts.clone(), Body::TurnStart);
    let mut h = Object::new();
    h.insert(SYNTHESIZED.into(), Value::Bool(true));
    start.extra.insert(key.into(), Value::Object(h));
    start
}

/// 64-bit FNV-1a of `s`: whether a text changed since import, in a few
/// bytes of hint (stable across Rust versions, unlike std's hasher).
pub(crate) fn fingerprint(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// 128 bits no earlier call in this process returned: the time, a
/// counter, and std's per-process random hash keys.
fn random_bits(salt: &str) -> u128 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = jiff::Timestamp::now().as_nanosecond();
    let state = std::collections::hash_map::RandomState::new();
    let mut a = state.build_hasher();
    a.write_i128(now);
    a.write_u64(n);
    a.write(salt.as_bytes());
    let mut b = state.build_hasher();
    b.write_u64(a.finish());
    b.write_u64(n ^ 0x9e37_79b9_7f4a_7c15);
    b.write(salt.as_bytes());
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

fn uuid_text(bits: u128) -> String {
    let h = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A random (version 4) UUID.
pub(crate) fn uuid_v4() -> String {
    let bits = random_bits("v4");
    let bits = (bits & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    uuid_text(bits)
}

/// A time-ordered (version 7) UUID, as Codex makes its session ids.
pub(crate) fn uuid_v7() -> String {
    let ms = jiff::Timestamp::now().as_millisecond().max(0) as u128;
    let rand = random_bits("v7") & ((1u128 << 80) - 1);
    let bits = (ms << 80) | rand;
    let bits = (bits & !(0xf << 76) & !(0x3 << 62)) | (0x7 << 76) | (0x2 << 62);
    uuid_text(bits)
}

/// Insert synthesized turn starts: before each record `opens` says opens
/// a turn (given the records since the last turn start), never between a
/// tool call and its result.
pub(crate) fn with_turns(
    records: Vec<Record>,
    key: &str,
    mut opens: impl FnMut(&Record, &[Record]) -> bool,
) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::with_capacity(records.len() + records.len() / 8);
    let mut open_calls: std::collections::HashMap<String, usize> = Default::default();
    let mut turn_from = 0;
    for r in records {
        let inside = open_calls.values().any(|&n| n > 0);
        if !inside && opens(&r, &out[turn_from..]) {
            out.push(turn_start(key, &r.ts));
            turn_from = out.len();
        }
        match &r.body {
            Body::ToolCall { id, .. } => *open_calls.entry(id.clone()).or_default() += 1,
            Body::ToolResult { id, .. } => {
                if let Some(n) = open_calls.get_mut(id) {
                    *n = n.saturating_sub(1);
                }
            }
            _ => {}
        }
        out.push(r);
    }
    out
}

/// One line to write: its JSON, and the text to write while the JSON is
/// what it was read as.
pub(crate) struct Out {
    pub(crate) value: Option<Value>,
    pub(crate) raw: Option<String>,
}

impl Out {
    /// A line ctxfold writes from `v`.
    pub(crate) fn json(v: Value) -> Out {
        Out {
            value: Some(v),
            raw: None,
        }
    }

    /// A line kept whole in a hint: `{"text": …}` when it was kept as
    /// text (not JSON, or JSON ctxfold would write with other bytes), else
    /// the JSON itself.
    pub(crate) fn kept(v: &Value) -> Out {
        match v.as_object() {
            Some(o) if o.len() == 1 && o.get("text").is_some_and(Value::is_string) => {
                let raw = o.get("text").and_then(Value::as_str).unwrap_or("");
                Out {
                    value: serde_json::from_str(raw).ok(),
                    raw: Some(raw.to_owned()),
                }
            }
            _ => Out::json(v.clone()),
        }
    }

    /// Its text: the bytes it was read as while its JSON is unchanged.
    fn text(&self) -> String {
        match (&self.value, &self.raw) {
            (Some(v), Some(raw)) => match serde_json::from_str::<Value>(raw) {
                Ok(read) if read == *v => raw.clone(),
                _ => serde_json::to_string(v).unwrap_or_default(),
            },
            (Some(v), None) => serde_json::to_string(v).unwrap_or_default(),
            (None, Some(raw)) => raw.clone(),
            (None, None) => String::new(),
        }
    }
}

/// The file's bytes: `lines` one per line, with a newline after the last
/// unless the file read had none (`final_newline`), after a byte-order
/// mark if it had one (`bom`).
pub(crate) fn join(lines: &[Out], final_newline: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice(crate::BOM);
    }
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(l.text().as_bytes());
    }
    if !lines.is_empty() && final_newline {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_their_version_and_differ() {
        let a = uuid_v4();
        let b = uuid_v4();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        let v7 = uuid_v7();
        assert_eq!(&v7[14..15], "7");
    }

    #[test]
    fn a_torn_last_line_is_kept_and_reported() {
        let mut w = Vec::new();
        let read = split_lines(Path::new("s.jsonl"), b"{\"a\":1}\n{\"b\":", &mut w);
        let (lines, nl) = (read.lines, read.final_newline);
        assert!(!nl);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].writes_back());
        assert!(lines[1].value.is_none());
        assert_eq!(lines[1].text, "{\"b\":");
        assert!(w[0].contains("line 2: a torn last line"), "{w:?}");
    }
}
