//! What the two agents' session files share (Claude Code's and Codex's
//! JSONL, see [`crate::claude_code`] and [`crate::codex`]): the file read
//! line by line, a line that is not JSON (a torn last line) kept as its
//! text, a line whose JSON ctxfold would write with other bytes kept as
//! its text beside the parsed value, the turns the agents do not record,
//! and new ids for a new session.

use std::path::Path;

use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
use ctxfold_core::{Body, Object, Record};
use serde::Deserialize;
use serde_json::Value;

mod aside;
mod packed;
pub(crate) use crate::field::Field;
pub use aside::Aside;
pub(crate) use packed::{pack, unpacked};

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
        /// The one field both agents' lines carry that ctxfold reads here.
        #[derive(Deserialize, Default)]
        struct Stamp<'a> {
            #[serde(default, borrow)]
            timestamp: Field<'a>,
        }
        self.value
            .as_ref()
            .and_then(|v| Stamp::deserialize(v).ok())
            .and_then(|s| s.timestamp.str())
            .unwrap_or("")
            .to_owned()
    }

    /// The hints of a record made from the line: the line as `envelope`
    /// (what the record does not hold of it), and its text when the JSON
    /// would be written with other bytes (`writes_back`, the line's
    /// [`Line::writes_back`] before it became the envelope).
    pub fn hints(&self, envelope: Value, writes_back: bool) -> Object {
        let mut h = Object::new();
        h.insert(hint::LINE.into(), envelope);
        if !writes_back {
            h.insert(hint::RAW.into(), Value::String(self.text.clone()));
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
            fields.insert(hint::LINE.into(), v.clone());
        }
        if !self.writes_back() {
            fields.insert(hint::TEXT.into(), Value::String(self.text.clone()));
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

/// The lines of a session file, one at a time, from its bytes or read
/// from the file as they are asked for: a line parsed, turned into
/// records and dropped before the next is read, so only the records kept
/// stay in memory, not every line's JSON tree (nor, read from the file,
/// its bytes). Whether the file started with a UTF-8 byte-order mark
/// (which an editor may have added) and whether its last line ends with a
/// newline are kept: an export writes both back as they were.
pub(crate) struct LineCursor {
    path: std::path::PathBuf,
    source: LineSource,
    /// Lines read so far.
    number: usize,
    done: bool,
    bom: bool,
}

/// Where a [`LineCursor`]'s lines come from.
enum LineSource {
    /// The file's bytes, read whole.
    Bytes {
        bytes: Vec<u8>,
        /// Where the next line starts.
        pos: usize,
        /// Where the last line ends (before the file's last newline).
        end: usize,
    },
    /// The file, read a line at a time.
    Stream {
        reader: Box<dyn std::io::BufRead>,
        /// The line being read, reused.
        buf: Vec<u8>,
        /// Bytes read so far, and the most the file may hold.
        read: u64,
        limit: u64,
        /// Whether the last line read ended with a newline (an empty file
        /// counts as one that does).
        newline: bool,
        /// A read that failed, or the file past `limit`: the lines end
        /// there, and [`LineCursor::error`] says why.
        error: Option<crate::FormatError>,
    },
}

impl LineCursor {
    /// The lines of `bytes`, the file at `path` (named in warnings).
    pub(crate) fn new(path: &Path, bytes: Vec<u8>) -> LineCursor {
        let bom = bytes.starts_with(crate::BOM);
        let pos = if bom { crate::BOM.len() } else { 0 };
        let end = if bytes.len() > pos && bytes.ends_with(b"\n") {
            bytes.len() - 1
        } else {
            bytes.len()
        };
        LineCursor {
            path: path.to_owned(),
            done: pos == bytes.len(),
            source: LineSource::Bytes { bytes, pos, end },
            number: 0,
            bom,
        }
    }

    /// The lines of the file at `path`, read from `reader` (at its start)
    /// as they are asked for: the same lines and warnings as
    /// [`LineCursor::new`] of its bytes. A file of more than `limit` bytes
    /// ends its lines there with the error [`crate::read_bytes`] gives.
    pub(crate) fn reading(
        path: &Path,
        reader: Box<dyn std::io::BufRead>,
        limit: u64,
    ) -> LineCursor {
        LineCursor {
            path: path.to_owned(),
            source: LineSource::Stream {
                reader,
                buf: Vec::new(),
                read: 0,
                limit,
                newline: true,
                error: None,
            },
            number: 0,
            done: false,
            bom: false,
        }
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file started with a byte-order mark (read from the
    /// file: known once its first line is read).
    pub(crate) fn bom(&self) -> bool {
        self.bom
    }

    /// Whether the file's last line ends with a newline (an empty file
    /// counts as one that does; read from the file: known once every line
    /// is read).
    pub(crate) fn final_newline(&self) -> bool {
        match &self.source {
            LineSource::Bytes { bytes, end, .. } => {
                *end != bytes.len() || bytes.len() == if self.bom { crate::BOM.len() } else { 0 }
            }
            LineSource::Stream { newline, .. } => *newline,
        }
    }

    /// Why the lines read from the file ended before its end, if they did
    /// (a read that failed, a file over the input limit).
    pub(crate) fn error(&mut self) -> Option<crate::FormatError> {
        match &mut self.source {
            LineSource::Stream { error, .. } => error.take(),
            LineSource::Bytes { .. } => None,
        }
    }

    /// The next line, `None` after the last. A line that is not UTF-8 is
    /// read with its bad bytes replaced and reported: it cannot be written
    /// back as it was.
    pub(crate) fn next_line(&mut self, warnings: &mut Vec<String>) -> Option<Line> {
        if self.done {
            return None;
        }
        let first = self.number == 0;
        let (raw, torn) = match &mut self.source {
            LineSource::Bytes { bytes, pos, end } => {
                let rest = &bytes[*pos..*end];
                let (raw, last) = match rest.iter().position(|&b| b == b'\n') {
                    Some(nl) => (&rest[..nl], false),
                    None => (rest, true),
                };
                if last {
                    self.done = true;
                } else {
                    *pos += raw.len() + 1;
                }
                // The last line is torn when the file does not end with a
                // newline.
                (raw, last && *end == bytes.len())
            }
            LineSource::Stream {
                reader,
                buf,
                read,
                limit,
                newline,
                error,
            } => {
                buf.clear();
                // One byte past the limit tells a file over it.
                let room = limit.saturating_add(1).saturating_sub(*read);
                let got = std::io::BufRead::read_until(
                    &mut std::io::Read::take(reader, room),
                    b'\n',
                    buf,
                );
                match got {
                    Ok(n) => *read += n as u64,
                    Err(e) => {
                        *error = Some(crate::FormatError::io(&self.path, e));
                        self.done = true;
                        return None;
                    }
                }
                if *read > *limit {
                    // As `read_bytes` says it of a file read whole.
                    *error = Some(crate::FormatError::Unreadable {
                        path: self.path.clone(),
                        detail: format!(
                            "more than {limit} bytes, the input limit; set {} to raise it",
                            crate::MAX_INPUT_VAR
                        ),
                    });
                    self.done = true;
                    return None;
                }
                if first && buf.starts_with(crate::BOM) {
                    self.bom = true;
                    buf.drain(..crate::BOM.len());
                }
                // Only the file's end leaves a line without its newline:
                // the last line, or nothing at all after the last newline.
                let last = buf.last() != Some(&b'\n');
                if last {
                    self.done = true;
                    if buf.is_empty() {
                        return None;
                    }
                } else {
                    buf.pop();
                }
                *newline = !last;
                (&buf[..], last)
            }
        };
        self.number += 1;
        Some(line_of(&self.path, self.number, raw, torn, warnings))
    }
}

/// Line `number` of the file at `path`, its bytes `raw`; `torn` when it
/// is the last and no newline ends it.
fn line_of(path: &Path, number: usize, raw: &[u8], torn: bool, warnings: &mut Vec<String>) -> Line {
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
    Line {
        number,
        text,
        value,
    }
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

/// The keys of the hints a record of a session line keeps under the
/// agent's key in its `extra` (ctxfold's own layout, not the agent's: read
/// through [`Hints`]).
pub(crate) mod hint {
    /// The line the record came from, its record's fields `null`; on an
    /// opaque record, the line whole.
    pub(crate) const LINE: &str = "line";
    /// The line's text, where its JSON would be written with other bytes.
    pub(crate) const RAW: &str = "raw";
    /// An opaque record's text, where its JSON is not the line's bytes.
    pub(crate) const TEXT: &str = "text";
    /// The lines an agent's compaction came from.
    pub(crate) const LINES: &str = "lines";
    /// A fingerprint of the text the record was read with.
    pub(crate) const FNV: &str = "fnv";
    /// Not the first record of its line.
    pub(crate) const MORE: &str = "more";
    /// The content was a string, not blocks.
    pub(crate) const STRING: &str = "string";
    /// The block the record came from, its record's fields `null`.
    pub(crate) const BLOCK: &str = "block";
    /// The block is written back whole while the record stands for it.
    pub(crate) const OPAQUE: &str = "opaque";
    /// A tool result's content was blocks.
    pub(crate) const BLOCKS: &str = "blocks";
    /// The first message an agent's compaction kept verbatim.
    pub(crate) const PRESERVED_HEAD: &str = "preserved_head";
    /// A call's arguments as written, where ctxfold would write them
    /// otherwise.
    pub(crate) const ARGUMENTS: &str = "arguments";
    /// The content was one text part.
    pub(crate) const ONE_PART: &str = "one_part";
}

/// A record's hints (see [`hint`]), read.
#[derive(Clone, Copy)]
pub(crate) struct Hints<'a>(pub(crate) &'a Object);

impl<'a> Hints<'a> {
    /// The record's hints under the agent's `key`.
    pub(crate) fn of(r: &'a Record, key: &str) -> Option<Hints<'a>> {
        hints(r, key).map(Hints)
    }

    /// The line (see [`hint::LINE`]), as a value.
    pub(crate) fn line_value(self) -> Option<&'a Value> {
        self.0.get(hint::LINE)
    }

    /// The line (see [`hint::LINE`]), an object.
    pub(crate) fn line(self) -> Option<&'a Object> {
        self.line_value().and_then(Value::as_object)
    }

    /// A string hint.
    pub(crate) fn str(self, key: &str) -> Option<&'a str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The line's text (see [`hint::RAW`]).
    pub(crate) fn raw(self) -> Option<&'a str> {
        self.str(hint::RAW)
    }

    /// An opaque record's text (see [`hint::TEXT`]).
    pub(crate) fn text(self) -> Option<&'a str> {
        self.str(hint::TEXT)
    }

    /// Whether the hint `key` is there (a flag).
    pub(crate) fn has(self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// The kept lines (see [`hint::LINES`]).
    pub(crate) fn lines(self) -> Option<&'a [Value]> {
        self.0
            .get(hint::LINES)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
    }

    /// Whether `text` is the text the record was read with (see
    /// [`hint::FNV`]).
    pub(crate) fn unchanged(self, text: &str) -> bool {
        self.str(hint::FNV) == Some(fingerprint(text).as_str())
    }

    /// The block (see [`hint::BLOCK`]), an object.
    pub(crate) fn block(self) -> Option<&'a Object> {
        self.0.get(hint::BLOCK).and_then(Value::as_object)
    }
}

/// The `type` of `o` (a line, a payload, a block), if it has one: typed
/// or not, every shape the agents write is tagged by it.
pub(crate) fn type_tag(o: &Object) -> Option<&str> {
    #[derive(Deserialize)]
    struct Tagged<'a> {
        #[serde(rename = "type", default, borrow)]
        kind: Field<'a>,
    }
    Tagged::deserialize(o).ok()?.kind.str()
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

/// Where each record of a session goes, as the records come one line at
/// a time: a synthesized turn start before a record that opens a turn
/// (never between a tool call and its result), every record numbered,
/// repeated call ids made unique ([`crate::pairing::Pairing`]), and the
/// last record the model sees remembered (what an agent's compaction
/// covers).
pub(crate) struct Sequencer {
    key: &'static str,
    /// Calls without their result yet, by id, and how many in all.
    open_calls: std::collections::HashMap<String, usize>,
    open_total: usize,
    /// The assistant or a tool has had its say since the last turn start.
    answered: bool,
    next_seq: u64,
    /// The log's turn count so far (a `turn_start` opens a turn only after
    /// a conversation event), and whether the current turn holds one.
    turn: u32,
    holds: bool,
    last_visible: Option<(u64, u32)>,
    pairing: crate::pairing::Pairing,
}

impl Sequencer {
    /// For the records of an agent's session, hints under `key`.
    pub(crate) fn new(key: &'static str) -> Sequencer {
        Sequencer {
            key,
            open_calls: Default::default(),
            open_total: 0,
            answered: false,
            next_seq: 0,
            turn: 0,
            holds: false,
            last_visible: None,
            pairing: crate::pairing::Pairing::new(key),
        }
    }

    /// The `seq` and turn of the last record the model sees so far.
    pub(crate) fn last_visible(&self) -> Option<(u64, u32)> {
        self.last_visible
    }

    /// Put `r` to `out`, after a synthesized turn start when `opens` says
    /// it opens a turn (given whether the assistant or a tool spoke since
    /// the last turn start).
    pub(crate) fn push(
        &mut self,
        r: Record,
        opens: &mut dyn FnMut(&Record, bool) -> bool,
        out: &mut Vec<Record>,
    ) {
        if self.open_total == 0 && opens(&r, self.answered) {
            let start = turn_start(self.key, &r.ts);
            self.answered = false;
            self.place(start, out);
        }
        match &r.body {
            Body::ToolCall { id, .. } => {
                *self.open_calls.entry(id.clone()).or_default() += 1;
                self.open_total += 1;
            }
            Body::ToolResult { id, .. } => {
                if let Some(n) = self.open_calls.get_mut(id)
                    && *n > 0
                {
                    *n -= 1;
                    self.open_total -= 1;
                }
            }
            _ => {}
        }
        if r.body.is_assistant_side() || matches!(r.body, Body::ToolResult { .. }) {
            self.answered = true;
        }
        self.place(r, out);
    }

    fn place(&mut self, mut r: Record, out: &mut Vec<Record>) {
        r.seq = self.next_seq;
        self.next_seq += 1;
        if matches!(r.body, Body::TurnStart) {
            if self.holds {
                self.turn += 1;
            }
            self.holds = true;
        } else if r.body.is_model_visible() {
            self.holds = true;
            self.last_visible = Some((r.seq, self.turn));
        }
        self.pairing.push(&mut r);
        out.push(r);
    }

    /// The warnings of the pairing of call ids, once every record is in.
    pub(crate) fn finish(self, warnings: &mut Vec<String>) {
        self.pairing.finish(warnings);
    }
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
        match v.as_object().map(Hints) {
            Some(h) if h.0.len() == 1 && h.text().is_some() => {
                let raw = h.text().unwrap_or("");
                Out {
                    value: serde_json::from_str(raw).ok(),
                    raw: Some(raw.to_owned()),
                }
            }
            _ => Out::json(v.clone()),
        }
    }

    /// The line an `Other` record of the agent's kind keeps whole (see
    /// [`Line::opaque`]).
    pub(crate) fn of_opaque(fields: &Object) -> Out {
        let h = Hints(fields);
        Out {
            value: h.line_value().cloned(),
            raw: h.text().map(str::to_owned),
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

/// A session file written a line at a time: each line on its own, a newline
/// after the last unless the file read had none, after a byte-order mark
/// if it had one; so an export never holds the whole file (or every
/// line's JSON) at once.
pub(crate) struct LineWriter<'a> {
    w: &'a mut dyn std::io::Write,
    first: bool,
    final_newline: bool,
}

impl<'a> LineWriter<'a> {
    /// Start the file on `w`: the byte-order mark when `bom`; a newline
    /// after the last line unless `final_newline` is false.
    pub(crate) fn new(
        w: &'a mut dyn std::io::Write,
        final_newline: bool,
        bom: bool,
    ) -> std::io::Result<LineWriter<'a>> {
        if bom {
            w.write_all(crate::BOM)?;
        }
        Ok(LineWriter {
            w,
            first: true,
            final_newline,
        })
    }

    /// Write the next line.
    pub(crate) fn write(&mut self, l: &Out) -> std::io::Result<()> {
        if !self.first {
            self.w.write_all(b"\n")?;
        }
        self.first = false;
        self.w.write_all(l.text().as_bytes())
    }

    /// End the file.
    pub(crate) fn finish(self) -> std::io::Result<()> {
        if !self.first && self.final_newline {
            self.w.write_all(b"\n")?;
        }
        self.w.flush()
    }
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
    fn packed_hints_unpack_to_the_records_and_export_the_same_bytes() {
        for (file, key) in [
            ("claude-code.jsonl", crate::claude_code::KEY),
            ("codex.jsonl", crate::codex::KEY),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/agents")
                .join(file);
            let bytes = std::fs::read(&path).unwrap();
            let t = match key {
                "codex" => crate::codex::Reader::new(&path, bytes.clone()).into_transcript(),
                _ => crate::claude_code::Reader::new(&path, bytes.clone()).into_transcript(),
            };
            let mut packed = t.clone();
            let mut n = 0;
            for r in &mut packed.records {
                let before = r.clone();
                pack(r, key);
                if *r != before {
                    n += 1;
                    assert_eq!(unpacked(r, key).as_ref(), Some(&before), "{file}");
                } else {
                    assert!(unpacked(r, key).is_none(), "{file}");
                }
            }
            assert!(n > t.records.len() / 2, "{file}: {n} packed");
            let export = match key {
                "codex" => crate::codex::export_bytes,
                _ => crate::claude_code::export_bytes,
            };
            assert!(export(&packed) == bytes, "{file}: the export differs");
        }
    }

    #[test]
    fn a_torn_last_line_is_kept_and_reported() {
        let mut w = Vec::new();
        let mut c = LineCursor::new(Path::new("s.jsonl"), b"{\"a\":1}\n{\"b\":".to_vec());
        let lines: Vec<Line> = std::iter::from_fn(|| c.next_line(&mut w)).collect();
        assert!(!c.final_newline());
        assert_eq!(lines.len(), 2);
        assert!(lines[0].writes_back());
        assert!(lines[1].value.is_none());
        assert_eq!(lines[1].text, "{\"b\":");
        assert!(w[0].contains("line 2: a torn last line"), "{w:?}");
    }
}
