//! A long log's records kept beside it in a binary form
//! (`events.snapshot`), so that loading it again reads the JSON of the
//! lines written since, not of every line (issue 26: `conversation show`
//! and the pages on a million events).
//!
//! - A snapshot covers the log's first `covered` bytes, whole lines, and
//!   says so with their CRC-32: it is used only when the log still starts
//!   with exactly those bytes (checked on another core while the records
//!   are decoded), else ignored. It is a cache: the log stays the one
//!   truth, and a snapshot that is missing, stale, from another version or
//!   corrupt costs one full read of the log, never a wrong record.
//! - It holds what reading those lines gave: the records and the notes on
//!   lines kept verbatim or skipped, with their line numbers, so a load
//!   through it reports what a full read does.
//! - It is written after a load that read at least [`SNAPSHOT_FROM`] bytes
//!   of JSON (a log under that size loads fast enough without one), to a
//!   temporary file renamed into place; a folder that is read-only or full
//!   keeps no snapshot, and loads as before.
//! - The common records are encoded field by field ([`postcard`]); the
//!   others (compactions, resets, records with unknown fields) as their
//!   JSON line, which reads back to the same record.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc;

use ctxfold_core::diagnostics::{Diagnostic, DiagnosticKind, Findings, ResultScan};
use ctxfold_core::log::{LineNote, ResultScans};
use ctxfold_core::{Body, JsonText, Record};
use serde::{Deserialize, Serialize};

/// File name of the snapshot inside a conversation folder.
pub const SNAPSHOT_FILE: &str = "events.snapshot";

/// A load that parsed at least this many bytes of JSON writes a snapshot.
pub const SNAPSHOT_FROM: u64 = 32 << 20;

/// What the file starts with; the number after it changes with the
/// encoding (an older or newer snapshot is ignored).
// 3: a scan counts the distinct diagnostics past its bound (`unkept`), and
// its kinds include log errors, log warnings and saved-output lines.
const MAGIC: &[u8; 12] = b"ctxfold-sn\x00\x03";

/// What a snapshot being written is called until it is renamed into place.
const TEMP_PREFIX: &str = ".events.snapshot.";

/// A temporary snapshot untouched this long was left by a process killed
/// while writing it: a live writer adds to it every few milliseconds.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// Records in one encoded chunk: chunks are decoded on every core.
const CHUNK: usize = 8192;

/// What a snapshot says of the log it covers.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    /// Bytes of the log covered, up to a line end.
    covered: u64,
    /// Lines in them.
    lines: u64,
    /// CRC-32 of those bytes.
    crc: u32,
    /// Records in the snapshot.
    records: u64,
    /// Notes on the covered lines, as reading them gave.
    notes: Vec<Note>,
    /// The program that scanned the tool results (see [`scanner`]): their
    /// scans are used only by the same one.
    scanner: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Note {
    line: u64,
    message: String,
    skipped: bool,
}

/// One record. `ts` and `metadata` are text: the timestamp as written, the
/// metadata as its JSON.
#[derive(Serialize, Deserialize)]
struct Entry<'a> {
    seq: u64,
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(borrow)]
    metadata: Option<Cow<'a, str>>,
    #[serde(borrow)]
    body: EntryBody<'a>,
}

#[derive(Serialize, Deserialize)]
enum EntryBody<'a> {
    TurnStart,
    User {
        content: &'a str,
        author: Option<&'a str>,
    },
    Assistant(&'a str),
    Reasoning(&'a str),
    System(&'a str),
    ToolCall {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    ToolResult {
        id: &'a str,
        content: &'a str,
        is_error: bool,
        #[serde(borrow)]
        scan: Option<Scan<'a>>,
    },
    Structured(&'a str),
    /// Any other record, as its JSON line (its own `seq`, `ts` and
    /// `metadata` included).
    Line(Cow<'a, str>),
}

/// What the diagnostics recognizer found in a tool result
/// ([`ResultScan`]).
#[derive(Serialize, Deserialize)]
struct Scan<'a> {
    chars: u64,
    #[serde(borrow)]
    diagnostics: Vec<Found<'a>>,
    /// Distinct diagnostics past the recognizer's bound.
    unkept: u64,
}

/// A diagnostic: its kind, text, line and location.
type Found<'a> = (DiagnosticKind, &'a str, &'a str, Option<&'a str>);

impl<'a> Scan<'a> {
    fn of(scan: &'a ResultScan) -> Self {
        let found = |d: &'a Diagnostic| (d.kind, &*d.text, &*d.line, d.location.as_deref());
        Scan {
            chars: scan.chars as u64,
            diagnostics: scan.diagnostics.iter().map(found).collect(),
            unkept: scan.diagnostics.unkept as u64,
        }
    }

    fn result_scan(&self) -> ResultScan {
        let diagnostic = |&(kind, text, line, location): &Found<'_>| Diagnostic {
            kind,
            text: text.to_owned(),
            line: line.to_owned(),
            location: location.map(str::to_owned),
        };
        ResultScan {
            chars: self.chars as usize,
            diagnostics: Findings {
                list: self.diagnostics.iter().map(diagnostic).collect(),
                unkept: self.unkept as usize,
            },
        }
    }
}

/// Who scans the tool results: the running program, by its path, size and
/// time of change. Scans kept by another build (an upgrade, whose
/// recognizer may find other diagnostics) are made again; the records are
/// used whatever the build.
fn scanner() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let changed = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "{} {} {}",
        exe.display(),
        meta.len(),
        changed.as_nanos()
    ))
}

/// What a load through a snapshot read from it.
pub(crate) struct Restored {
    /// The covered part of the log, as a reader of its lines would give
    /// it: the next line is `lines + 1`, at byte `covered`.
    pub covered: u64,
    pub lines: usize,
    pub records: Vec<Record>,
    pub notes: Vec<LineNote>,
    /// The tool results' scans, by index, when this program made them.
    pub scans: ResultScans,
    /// Whether another program made them (they were left out): a snapshot
    /// of this one's is due.
    pub scans_stale: bool,
}

/// The records of `dir`'s snapshot, if it covers the start of `log` (of
/// `size` bytes) as it is now. `None` whenever it cannot be used.
pub(crate) fn restore(dir: &Path, log: &Path, size: u64) -> Option<Restored> {
    let mut file = BufReader::with_capacity(1 << 20, open_file(&dir.join(SNAPSHOT_FILE))?);
    let mut magic = [0u8; MAGIC.len()];
    file.read_exact(&mut magic).ok()?;
    if &magic != MAGIC {
        return None;
    }
    let mut bytes = Vec::new();
    if !read_frame(&mut file, &mut bytes).ok()? {
        return None;
    }
    let header: Header = postcard::from_bytes(&bytes).ok()?;
    // What any snapshot written here holds: some whole lines of the log,
    // at most a record a line. One claiming to cover nothing would have
    // the whole log read after its records (each record twice).
    if header.covered == 0
        || header.covered > size
        || header.lines == 0
        || header.lines > header.covered
        || header.records > header.lines
    {
        return None;
    }
    let (covered, expected) = (header.covered, header.crc);
    let this = scanner();
    let use_scans = this.is_some() && header.scanner == this;
    // The log's prefix is checked while the records are decoded.
    let (prefix, decoded) = std::thread::scope(|s| {
        let prefix = s.spawn(move || prefix(log, covered));
        let decoded = decode_all(&mut file, header.records, use_scans);
        (prefix.join().ok().flatten(), decoded)
    });
    // The same bytes, ending at a line's end.
    if prefix != Some((expected, Some(b'\n'))) {
        return None;
    }
    let Whole { records, scans } = decoded?;
    if records.len() as u64 != header.records {
        return None;
    }
    Some(Restored {
        covered,
        lines: usize::try_from(header.lines).ok()?,
        records,
        scans,
        scans_stale: this.is_some() && !use_scans,
        notes: header
            .notes
            .into_iter()
            .map(|n| LineNote {
                line: n.line as usize,
                message: n.message,
                skipped: n.skipped,
            })
            .collect(),
    })
}

/// What a snapshot written after a load covers: the log's first `covered`
/// bytes, `lines` lines, as they were when the log, last changed at
/// `modified`, was read.
pub(crate) struct Due {
    pub covered: u64,
    pub lines: usize,
    pub modified: Option<std::time::SystemTime>,
}

/// Write a snapshot of `records`, what reading what `due` covers of `log`
/// gave, with the `notes` on them and their tool results' scans (`known`:
/// those this build made already, by index, kept as they are). Written to
/// a temporary file in `dir` and renamed over the old one; on any failure
/// nothing is left behind but the old snapshot (or none).
pub(crate) fn write(
    dir: &Path,
    log: &Path,
    due: Due,
    records: &[Record],
    notes: &[LineNote],
    known: &[(usize, ResultScan)],
) -> std::io::Result<()> {
    let Due {
        covered,
        lines,
        modified,
    } = due;
    // The checksum must be of the bytes the records were read from: a log
    // changed since (by anything: appends too, for simplicity) gets its
    // snapshot from a later load.
    let unchanged =
        || modified.is_some() && std::fs::metadata(log).and_then(|m| m.modified()).ok() == modified;
    if !unchanged() {
        return Err(std::io::Error::other("the log changed since it was read"));
    }
    let (crc, last) = prefix(log, covered)
        .ok_or_else(|| std::io::Error::other("the log is shorter than what was read"))?;
    if !unchanged() {
        return Err(std::io::Error::other(
            "the log changed while it was checked",
        ));
    }
    // A last record without its newline gets one before the next append's
    // records: the snapshot ends where a line ends.
    if last.is_some_and(|b| b != b'\n') {
        return Err(std::io::Error::other("the log does not end with a newline"));
    }
    let header = Header {
        covered,
        lines: lines as u64,
        crc,
        records: records.len() as u64,
        notes: notes
            .iter()
            .map(|n| Note {
                line: n.line as u64,
                message: n.message.clone(),
                skipped: n.skipped,
            })
            .collect(),
        scanner: scanner(),
    };
    let with_scans = header.scanner.is_some();
    remove_abandoned(dir);
    let temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
    let mut w = BufWriter::with_capacity(1 << 20, temp.as_file());
    w.write_all(MAGIC)?;
    write_frame(&mut w, &postcard::to_allocvec(&header).map_err(invalid)?)?;
    // Chunks encoded (their tool results scanned) on every core, a round
    // of one chunk per thread at a time, written in order.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let mut scanned: Vec<Option<&ResultScan>> = vec![None; records.len()];
    for (i, scan) in known {
        if let Some(slot) = scanned.get_mut(*i) {
            *slot = Some(scan);
        }
    }
    let chunks: Vec<(&[Record], &[Option<&ResultScan>])> =
        records.chunks(CHUNK).zip(scanned.chunks(CHUNK)).collect();
    for round in chunks.chunks(threads) {
        let encoded: Vec<std::io::Result<Vec<u8>>> = std::thread::scope(|s| {
            let handles: Vec<_> = round
                .iter()
                .map(|&(chunk, known)| s.spawn(move || encode_chunk(chunk, known, with_scans)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for bytes in encoded {
            write_frame(&mut w, &bytes?)?;
        }
    }
    w.flush()?;
    drop(w);
    temp.persist(dir.join(SNAPSHOT_FILE)).map_err(|e| e.error)?;
    Ok(())
}

/// Remove the temporary snapshots in `dir` that processes killed while
/// writing them left behind (each as large as a snapshot); one another
/// process is writing now is left alone. Best effort: what cannot be
/// removed stays for the next writer.
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for e in entries.flatten() {
        let abandoned = e.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            && e.metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .is_some_and(|m| {
                    now.duration_since(m)
                        .is_ok_and(|idle| idle >= ABANDONED_AFTER)
                });
        if abandoned {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// One chunk's records encoded, with their tool results' scans when
/// `with_scans` (those `known`, else made now).
fn encode_chunk(
    chunk: &[Record],
    known: &[Option<&ResultScan>],
    with_scans: bool,
) -> std::io::Result<Vec<u8>> {
    let scans: Vec<Option<Cow<'_, ResultScan>>> = chunk
        .iter()
        .zip(known)
        .map(|(r, known)| match (&r.body, known) {
            (Body::ToolResult { .. }, Some(scan)) if with_scans => Some(Cow::Borrowed(*scan)),
            (
                Body::ToolResult {
                    content, is_error, ..
                },
                None,
            ) if with_scans => Some(Cow::Owned(ResultScan::new(content, *is_error))),
            _ => None,
        })
        .collect();
    let entries: Vec<Entry<'_>> = chunk
        .iter()
        .zip(&scans)
        .map(|(r, scan)| entry(r, scan.as_deref()))
        .collect();
    postcard::to_allocvec(&entries).map_err(invalid)
}

fn invalid(e: postcard::Error) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, e)
}

/// A frame: its length and the CRC-32 of its bytes (4 bytes each,
/// little-endian), then its bytes: a snapshot changed on disk reads as
/// corrupt, never as other records.
fn write_frame(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("frame too long"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&crc32fast::hash(bytes).to_le_bytes())?;
    w.write_all(bytes)
}

/// The next frame, read into `bytes` (whose room is reused); `false` at
/// the end of the file; an error if it is cut short or its bytes are not
/// what was written.
fn read_frame(r: &mut impl Read, bytes: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut head = [0u8; 8];
    match r.read_exact(&mut head[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut head[1..])?;
    let [a, b, c, d, e, f, g, h] = head;
    let len = u32::from_le_bytes([a, b, c, d]) as usize;
    let crc = u32::from_le_bytes([e, f, g, h]);
    bytes.clear();
    // Room made once (a frame is a few MiB), within what the file holds:
    // a corrupt length must not ask for gigabytes at once.
    let _ = bytes.try_reserve_exact(len.min(64 << 20));
    (&mut *r).take(len as u64).read_to_end(bytes)?;
    if bytes.len() != len || crc32fast::hash(bytes) != crc {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    Ok(true)
}

/// CRC-32 of the first `len` bytes of `path`, and the last of them; `None`
/// if it has fewer.
fn prefix(path: &Path, len: u64) -> Option<(u32, Option<u8>)> {
    let mut f = open_file(path)?.take(len);
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let (mut read, mut last) = (0u64, None);
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        last = Some(buf[n - 1]);
        read += n as u64;
    }
    (read == len).then(|| (hasher.finalize(), last))
}

/// `path` opened to read if it is a regular file. Opened without waiting:
/// a named pipe in a snapshot's place would block a load for ever.
fn open_file(path: &Path) -> Option<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // No effect on a regular file's reads.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let f = options.open(path).ok()?;
    f.metadata().ok()?.is_file().then_some(f)
}

/// Records decoded, and their tool results' scans by index.
#[derive(Default)]
struct Part {
    records: Vec<Record>,
    scans: Vec<(usize, ResultScan)>,
}

/// Every record decoded, and their tool results' scans.
#[derive(Default)]
struct Whole {
    records: Vec<Record>,
    scans: ResultScans,
}

/// Every chunk of the file decoded, on every core, in order (with the
/// scans when `scans`). `None` if a chunk does not decode.
fn decode_all(file: &mut impl Read, expected: u64, scans: bool) -> Option<Whole> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let (jobs, queue) = mpsc::sync_channel::<(usize, Vec<u8>)>(threads);
    let queue = Mutex::new(queue);
    let (parts, done) = mpsc::channel::<(usize, Option<Part>)>();
    // Frames decoded come back to be read into again: fresh memory for
    // each was a third of the load in page faults.
    let (spare, spares) = mpsc::channel::<Vec<u8>>();
    // So do the parts, once their records are moved into the whole: a
    // fresh vector for each chunk's records was 100 MB of memory freed
    // and taken again at a million records, which the allocator gives
    // back only after a while (a tenth of the log's size in the peak).
    let (joined, empty) = mpsc::channel::<Part>();
    let empty = Mutex::new(empty);
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (queue, parts, spare, empty) = (&queue, parts.clone(), spare.clone(), &empty);
            s.spawn(move || {
                loop {
                    let job = match queue.lock() {
                        Ok(q) => q.recv(),
                        Err(_) => return,
                    };
                    let Ok((index, bytes)) = job else { return };
                    let mut part = empty
                        .lock()
                        .ok()
                        .and_then(|e| e.try_recv().ok())
                        .unwrap_or_default();
                    let part = decode_chunk(&bytes, scans, &mut part).then_some(part);
                    let _ = spare.send(bytes);
                    if parts.send((index, part)).is_err() {
                        return;
                    }
                }
            });
        }
        drop((parts, spare));
        // Joined in order as they come (while the file is read on), each
        // part freed once joined: the records are held once, not twice.
        let mut all = Whole::default();
        let mut failed = all
            .records
            .try_reserve(usize::try_from(expected).unwrap_or(usize::MAX))
            .is_err();
        let mut pending = std::collections::BTreeMap::new();
        let (mut sent, mut next) = (0, 0);
        let mut take = |(index, part): (usize, Option<Part>), failed: &mut bool| {
            match part {
                Some(part) => {
                    pending.insert(index, part);
                }
                None => *failed = true,
            }
            while let Some(mut part) = pending.remove(&next) {
                // Room for every scan at once, guessed from the first
                // part (as the records' room is made): grown by doubling,
                // the vector was copied, old and new held for a moment.
                if next == 0 && !part.records.is_empty() {
                    let share = part.scans.len() as f64 / part.records.len() as f64;
                    all.scans
                        .reserve((expected.min(1 << 32) as f64 * share * 1.1) as usize);
                }
                let before = all.records.len();
                all.records.append(&mut part.records);
                all.scans
                    .extend(part.scans.drain(..).map(|(i, scan)| (before + i, scan)));
                let _ = joined.send(part);
                next += 1;
            }
        };
        while !failed {
            while let Ok(part) = done.try_recv() {
                take(part, &mut failed);
            }
            let mut bytes = spares.try_recv().unwrap_or_default();
            match read_frame(file, &mut bytes) {
                Ok(true) => {
                    failed |= jobs.send((sent, bytes)).is_err();
                    sent += 1;
                }
                Ok(false) => break,
                Err(_) => failed = true,
            }
        }
        // Workers stop once the queue is empty and closed.
        drop(jobs);
        for part in done {
            take(part, &mut failed);
        }
        (!failed && next == sent).then_some(all)
    })
}

/// One chunk's records (and scans, `with_scans`) decoded into `part`,
/// emptied first; `false` if it does not decode. Each entry is made a
/// record as it is read: no vector of the chunk's entries besides.
fn decode_chunk(bytes: &[u8], with_scans: bool, part: &mut Part) -> bool {
    part.records.clear();
    part.scans.clear();
    let mut de = postcard::Deserializer::from_bytes(bytes);
    serde::de::DeserializeSeed::deserialize(Chunk { with_scans, part }, &mut de).is_ok()
}

/// The entries of a chunk, read one at a time into a [`Part`].
struct Chunk<'p> {
    with_scans: bool,
    part: &'p mut Part,
}

impl<'de> serde::de::DeserializeSeed<'de> for Chunk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Chunk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a chunk of snapshot entries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Chunk { with_scans, part } = self;
        if let Some(n) = seq.size_hint() {
            // Room within what a chunk holds: a corrupt length asks for no more.
            part.records.reserve(n.min(CHUNK));
        }
        while let Some(e) = seq.next_element::<Entry<'de>>()? {
            if let (true, EntryBody::ToolResult { scan: Some(s), .. }) = (with_scans, &e.body) {
                part.scans.push((part.records.len(), s.result_scan()));
            }
            let r = record(e).ok_or_else(|| serde::de::Error::custom("not a record"))?;
            part.records.push(r);
        }
        Ok(())
    }
}

/// How `r` is kept (a tool result with its `scan`).
fn entry<'a>(r: &'a Record, scan: Option<&'a ResultScan>) -> Entry<'a> {
    let line = || Entry {
        seq: r.seq,
        ts: Cow::Borrowed(""),
        metadata: None,
        body: EntryBody::Line(Cow::Owned(r.to_json_line())),
    };
    if !r.extra.is_empty() {
        return line();
    }
    let body = match &r.body {
        Body::TurnStart => EntryBody::TurnStart,
        Body::User { content, author } => EntryBody::User {
            content,
            author: author.as_deref(),
        },
        Body::Assistant { content } => EntryBody::Assistant(content),
        Body::Reasoning { content } => EntryBody::Reasoning(content),
        Body::System { content } => EntryBody::System(content),
        Body::ToolCall {
            id,
            name,
            arguments,
        } => EntryBody::ToolCall {
            id,
            name,
            arguments: arguments.text(),
        },
        Body::ToolResult {
            id,
            content,
            is_error,
        } => EntryBody::ToolResult {
            id,
            content,
            is_error: *is_error,
            scan: scan.map(Scan::of),
        },
        Body::Structured { data } => EntryBody::Structured(data.text()),
        Body::Compaction(_) | Body::CompactionReset(_) | Body::Other { .. } => return line(),
    };
    let metadata = match &r.metadata {
        None => None,
        Some(m) => match serde_json::to_string(m) {
            Ok(text) => Some(Cow::Owned(text)),
            Err(_) => return line(),
        },
    };
    Entry {
        seq: r.seq,
        ts: r.ts.text(),
        metadata,
        body,
    }
}

/// The record `e` keeps; `None` if it does not read as one.
fn record(e: Entry<'_>) -> Option<Record> {
    let body = match e.body {
        EntryBody::Line(line) => return Record::from_json_line(&line).ok().map(|(r, _)| r),
        EntryBody::TurnStart => Body::TurnStart,
        EntryBody::User { content, author } => Body::User {
            content: content.to_owned(),
            author: author.map(str::to_owned),
        },
        EntryBody::Assistant(content) => Body::Assistant {
            content: content.to_owned(),
        },
        EntryBody::Reasoning(content) => Body::Reasoning {
            content: content.to_owned(),
        },
        EntryBody::System(content) => Body::System {
            content: content.to_owned(),
        },
        EntryBody::ToolCall {
            id,
            name,
            arguments,
        } => Body::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: JsonText::parse(arguments)?,
        },
        EntryBody::ToolResult {
            id,
            content,
            is_error,
            ..
        } => Body::ToolResult {
            id: id.to_owned(),
            content: content.to_owned(),
            is_error,
        },
        EntryBody::Structured(data) => Body::Structured {
            data: JsonText::parse(data)?,
        },
    };
    let mut r = Record::new(e.seq, e.ts.as_ref(), body);
    if let Some(m) = e.metadata {
        r.metadata = Some(Box::new(serde_json::from_str(&m).ok()?));
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scans a snapshot keeps: this build's (those it knew kept as
    /// they were), never another's, whose records are used all the same;
    /// and no snapshot of a log changed since it was read.
    #[test]
    fn scans_are_kept_for_this_build_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        let line = r#"{"seq":0,"ts":"t","type":"tool_result","id":"a","content":"error: boom","is_error":true}"#;
        std::fs::write(&log, format!("{line}\n")).unwrap();
        let (record, _) = Record::from_json_line(line).unwrap();
        let size = std::fs::metadata(&log).unwrap().len();
        let due = Due {
            covered: size,
            lines: 1,
            modified: std::fs::metadata(&log).unwrap().modified().ok(),
        };
        write(
            dir.path(),
            &log,
            due,
            std::slice::from_ref(&record),
            &[],
            &[],
        )
        .unwrap();
        // A log changed since it was read gets no snapshot.
        let stale = Due {
            covered: size,
            lines: 1,
            modified: Some(std::time::UNIX_EPOCH),
        };
        assert!(write(dir.path(), &log, stale, &[], &[], &[]).is_err());
        let restored = restore(dir.path(), &log, size).unwrap();
        assert_eq!(restored.records, std::slice::from_ref(&record));
        assert_eq!(restored.scans.len(), 1);
        assert!(!restored.scans.into_vec()[0].1.diagnostics.is_empty());
        assert!(!restored.scans_stale);

        // The same file with another scanner in its header.
        let path = dir.path().join(SNAPSHOT_FILE);
        let bytes = std::fs::read(&path).unwrap();
        let mut r = &bytes[MAGIC.len()..];
        let mut frame = Vec::new();
        assert!(read_frame(&mut r, &mut frame).unwrap());
        let mut header: Header = postcard::from_bytes(&frame).unwrap();
        header.scanner = Some("another build".into());
        let mut out = MAGIC.to_vec();
        write_frame(&mut out, &postcard::to_allocvec(&header).unwrap()).unwrap();
        out.extend_from_slice(r);
        std::fs::write(&path, out).unwrap();
        let restored = restore(dir.path(), &log, size).unwrap();
        assert_eq!(restored.records, std::slice::from_ref(&record));
        assert!(restored.scans.is_empty());
        assert!(restored.scans_stale, "a snapshot of this build's is due");

        // A scan known already is kept as it is, not made again.
        let known = ResultScan {
            chars: 99,
            diagnostics: Default::default(),
        };
        let due = Due {
            covered: size,
            lines: 1,
            modified: std::fs::metadata(&log).unwrap().modified().ok(),
        };
        let records = std::slice::from_ref(&record);
        write(dir.path(), &log, due, records, &[], &[(0, known.clone())]).unwrap();
        assert_eq!(
            restore(dir.path(), &log, size).unwrap().scans.into_vec(),
            [(0, known)]
        );
    }
}
