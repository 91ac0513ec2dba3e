//! One conversation's `events.jsonl`: append-only, one record a line.
//!
//! - Appending costs time proportional to what is appended: the next `seq`
//!   comes from the file's last line, read backwards from the end.
//! - Writers are serialized by an advisory lock on a `lock` file beside the
//!   log (exclusive for appends, shared for loads), so two processes never
//!   interleave or lose records.
//! - A crash in the middle of an append leaves at most one incomplete last
//!   line. Loading moves it aside to `events.jsonl.torn` (appended, never
//!   overwritten) and reports it; the rest loads. When it cannot be moved
//!   (a full disk, a read-only workspace) it is left out with a warning and
//!   the next writer that can moves it. A write that fails (a full disk) is
//!   cut back, so it leaves no partial line.
//! - Reading needs no write access: the lock file is opened read-only, and
//!   when there is none and it cannot be created (a read-only workspace),
//!   the log is read without it.
//! - Writers never create a conversation's folder: a folder that went away
//!   (`conversation rm` meanwhile) is an error, and nothing is written.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use ctxfold_core::diagnostics::ResultScan;
use ctxfold_core::log::{LineNote, ResultScans};
use ctxfold_core::{Log, ReadLines, Record};

use crate::StoreError;
pub use crate::snapshot::{SNAPSHOT_FILE, SNAPSHOT_FROM};

/// File name of the log inside a conversation folder.
pub const EVENTS_FILE: &str = "events.jsonl";
/// File name of the side file that keeps torn tails.
pub const TORN_FILE: &str = "events.jsonl.torn";
const LOCK_FILE: &str = "lock";
const COMPACTION_LOCK_FILE: &str = "compaction.lock";
const TURN_LOCK_FILE: &str = "turn.lock";

/// The log of one conversation, by its folder.
#[derive(Debug, Clone)]
pub struct EventLog {
    dir: PathBuf,
}

/// What loading a log found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every complete record, in file order.
    pub records: Vec<Record>,
    /// What the user should know: torn tails set aside, lines kept but not
    /// understood.
    pub warnings: Vec<String>,
    /// The torn tail that was set aside, if any.
    pub torn: Option<TornTail>,
    /// What came from the log's snapshot, when one was used.
    pub snapshot: Option<FromSnapshot>,
    /// A snapshot is due and was not written (a load that leaves it:
    /// [`EventLog::load_leaving_snapshot`]); loading again with
    /// [`EventLog::load`] writes it.
    pub snapshot_due: bool,
}

/// What a load took from the log's snapshot (`events.snapshot`) rather
/// than from reading its lines.
#[derive(Debug, Default)]
pub struct FromSnapshot {
    /// Bytes at the log's start whose records came from it.
    pub bytes: u64,
    /// What the diagnostics recognizer found in tool results, by index in
    /// the records, when this build made them (see [`Loaded::into_log`]).
    /// Empty after [`EventLog::load_leaving_snapshot`], which keeps them
    /// only in the small form `into_log` reads: its commands load once and
    /// end, and a scan for each result is 48 bytes (18 MB, a tenth of the
    /// peak's allowance, at a million records).
    pub result_scans: Vec<(usize, ResultScan)>,
    /// The scans in their small form (see above).
    small: ResultScans,
}

impl Loaded {
    /// The records as a [`Log`], with the scans of their tool results that
    /// the snapshot kept, so they are not read again.
    pub fn into_log(self) -> Log {
        let scans = match self.snapshot {
            Some(FromSnapshot {
                result_scans,
                mut small,
                ..
            }) => {
                small.extend(result_scans);
                small
            }
            None => ResultScans::new(),
        };
        Log::from_records_with_scans(self.records, scans)
    }
}

/// An incomplete last line that a load moved to the side file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset in `events.jsonl` where it started.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Where it was kept.
    pub kept_in: PathBuf,
}

/// Holds the advisory lock until dropped.
pub(crate) struct Lock(File);

impl Lock {
    /// `f`, already locked.
    pub(crate) fn new(f: File) -> Self {
        Lock(f)
    }
}

/// Held while a compaction is planned, summarized and appended: only one
/// compaction runs on a conversation at a time (SPEC §8). Appends of
/// events go on meanwhile; they take the log's own lock.
pub struct CompactionLock(#[allow(dead_code)] Lock);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

impl EventLog {
    /// The log in conversation folder `dir` (which need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        EventLog { dir: dir.into() }
    }

    /// Path of `events.jsonl`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(EVENTS_FILE)
    }

    /// Take the log's lock, exclusive (to write) or shared (to read).
    ///
    /// The lock file is opened read-only when it exists (`flock` needs no
    /// write access), and created only when missing. A reader that finds
    /// none and cannot create one (read-only workspace) gets `None` and
    /// reads unlocked: nobody can be writing there either. A writer checks,
    /// once it holds the lock, that the file it locked is still the one in
    /// the conversation folder: if the folder was moved away meanwhile
    /// (`conversation rm`), it must not write.
    pub(crate) fn lock(&self, exclusive: bool) -> Result<Option<Lock>, StoreError> {
        let path = self.dir.join(LOCK_FILE);
        let f = match self.open_lock_file(&path)? {
            Ok(f) => f,
            Err(_) if !exclusive => return Ok(None),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let r = if exclusive { f.lock() } else { f.lock_shared() };
        r.map_err(|e| StoreError::io(&path, e))?;
        if exclusive {
            self.check_still_here(&f, &path)?;
        }
        Ok(Some(Lock(f)))
    }

    /// The lock file at `path`, opened (created when missing): the folder
    /// gone is `Vanished`, any other failure left to the caller to judge.
    fn open_lock_file(&self, path: &Path) -> Result<std::io::Result<File>, StoreError> {
        match open_or_create(path) {
            Err(e) if e.kind() == ErrorKind::NotFound && !self.dir.is_dir() => {
                Err(StoreError::Vanished {
                    dir: self.dir.clone(),
                })
            }
            other => Ok(other),
        }
    }

    /// Whether `locked` (opened from `path`) is still the file at `path`.
    fn check_still_here(&self, locked: &File, path: &Path) -> Result<(), StoreError> {
        let vanished = || StoreError::Vanished {
            dir: self.dir.clone(),
        };
        let now = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(vanished()),
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let held = locked.metadata().map_err(|e| StoreError::io(path, e))?;
        if same_file(&held, &now) {
            Ok(())
        } else {
            Err(vanished())
        }
    }

    /// Take the turn lock without waiting: one agent turn at a time in a
    /// conversation (two would interleave their events). `Ok(None)` means
    /// another process is running a turn in it now.
    pub fn try_turn_lock(&self) -> Result<Option<CompactionLock>, StoreError> {
        self.try_named_lock(TURN_LOCK_FILE)
    }

    /// Take the compaction lock without waiting. `Ok(None)` means another
    /// process is compacting this conversation now.
    pub fn try_compaction_lock(&self) -> Result<Option<CompactionLock>, StoreError> {
        self.try_named_lock(COMPACTION_LOCK_FILE)
    }

    fn try_named_lock(&self, name: &str) -> Result<Option<CompactionLock>, StoreError> {
        let path = self.dir.join(name);
        let f = self
            .open_lock_file(&path)?
            .map_err(|e| StoreError::io(&path, e))?;
        match f.try_lock() {
            Ok(()) => Ok(Some(CompactionLock(Lock(f)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io(&path, e)),
        }
    }

    /// Load every complete record. A complete line that is not a record is
    /// skipped with a warning (it stays in the file, untouched). An
    /// incomplete last line is left out and reported; it is moved to the
    /// side file when that can be done, else left for the next writer.
    /// Nothing here needs write access.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        self.load_keeping_snapshots_from(SNAPSHOT_FROM)
    }

    /// [`EventLog::load`], keeping a snapshot of the records once a load
    /// reads `bytes` bytes of JSON or more rather than from
    /// [`SNAPSHOT_FROM`] (a log under that size loads fast enough without
    /// one); `u64::MAX` keeps none.
    pub fn load_keeping_snapshots_from(&self, bytes: u64) -> Result<Loaded, StoreError> {
        self.load_with(bytes, true)
    }

    /// [`EventLog::load`] without writing the snapshot a load that reads
    /// 32 MiB of JSON or more leaves: [`Loaded::snapshot_due`] says whether
    /// one is due, for a command that answers first and has it written
    /// after (the snapshot costs as much as the JSON it saves reading).
    pub fn load_leaving_snapshot(&self) -> Result<Loaded, StoreError> {
        self.load_with(SNAPSHOT_FROM, false)
    }

    fn load_with(&self, bytes: u64, write: bool) -> Result<Loaded, StoreError> {
        let path = self.path();
        let scan = {
            let _guard = self.lock(false)?;
            scan(&self.dir, &path, bytes, !write)?
        };
        let snapshot_due = !write && scan.snapshot_due.is_some();
        // Outside the lock: writers need not wait for it, and what it
        // covers stays as it was read (only a torn tail is ever cut).
        if let Some(due) = scan.snapshot_due.filter(|_| write) {
            // A cache: a folder it cannot be written to loads as before.
            let known = scan.snapshot.as_ref().map_or(&[][..], |s| &s.result_scans);
            let written =
                crate::snapshot::write(&self.dir, &path, due, &scan.records, &scan.notes, known);
            if let Err(e) = written {
                tracing::debug!(dir = %self.dir.display(), error = %e, "no snapshot written");
            }
        }
        let mut loaded = Loaded {
            records: scan.records,
            warnings: scan.warnings,
            torn: None,
            snapshot: scan.snapshot,
            snapshot_due,
        };
        if let Some((line, offset, len)) = scan.torn {
            let what = format!(
                "{}:{line}: incomplete last line ({len} bytes at offset {offset})",
                path.display()
            );
            // Another process may have repaired it meanwhile: check again.
            let set_aside = self
                .lock(true)
                .and_then(|_guard| self.set_aside_torn_tail(offset, len));
            match set_aside {
                Ok(Some(torn)) => {
                    loaded
                        .warnings
                        .push(format!("{what} moved to {}", torn.kept_in.display()));
                    loaded.torn = Some(torn);
                }
                Ok(None) => {}
                Err(e @ StoreError::Vanished { .. }) => return Err(e),
                Err(e) => loaded.warnings.push(format!(
                    "{what} left out; it could not be moved to {} ({}), so it stays at the end of the log until the next write moves it",
                    self.dir.join(TORN_FILE).display(),
                    error_chain(&e)
                )),
            }
        }
        Ok(loaded)
    }

    /// Move the bytes from `offset` to the end of the file to the side file
    /// and cut them off, if the file still ends with exactly those
    /// `len` bytes unterminated. Caller holds the exclusive lock.
    fn set_aside_torn_tail(&self, offset: u64, len: u64) -> Result<Option<TornTail>, StoreError> {
        let path = self.path();
        let (mut f, size) = open_sized(&path, OpenOptions::new().read(true).write(true))?;
        if size != offset + len {
            return Ok(None);
        }
        let mut tail = Vec::with_capacity(len as usize);
        f.seek(SeekFrom::Start(offset))
            .and_then(|_| f.read_to_end(&mut tail))
            .map_err(|e| StoreError::io(&path, e))?;
        if tail.is_empty() || tail.ends_with(b"\n") {
            return Ok(None);
        }
        let side = self.dir.join(TORN_FILE);
        let existed = side.exists();
        let (mut s, before) = open_sized(&side, OpenOptions::new().create(true).append(true))?;
        tail.push(b'\n');
        if let Err(e) = s.write_all(&tail).and_then(|_| s.sync_data()) {
            // A partial copy would run into the next attempt's: take it
            // back (shrinking needs no space).
            if existed {
                let _ = s.set_len(before);
            } else {
                let _ = std::fs::remove_file(&side);
            }
            return Err(StoreError::io(&side, e));
        }
        // Only once the tail is safe in the side file is it cut off.
        f.set_len(offset)
            .and_then(|_| f.sync_data())
            .map_err(|e| StoreError::io(&path, e))?;
        Ok(Some(TornTail {
            offset,
            len,
            kept_in: side,
        }))
    }

    /// Append records, giving them the next `seq` numbers (whatever `seq`
    /// they carry). Returns the `seq` of the first and one past the last.
    ///
    /// Records go through a buffer to the file and are synced to disk at
    /// the end. A write that fails (a full disk) is cut back to where the
    /// log ended, so nothing of the batch is written; a crash part way
    /// keeps every record fully written before it. The conversation folder
    /// must exist: it is never created here.
    pub fn append(
        &self,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<std::ops::Range<u64>, StoreError> {
        match self.append_if(None, records)? {
            Ok(range) => Ok(range),
            // Without an expected seq every next seq is accepted.
            Err(next) => Ok(next..next),
        }
    }

    /// Append as [`EventLog::append`] does, but only if the log's next
    /// `seq` is `expected` (a conditional append: the writer's view of the
    /// log is still the stored one). `Ok(Err(next))` means it is `next`
    /// instead, and nothing was written.
    pub fn append_at(
        &self,
        expected: u64,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Result<std::ops::Range<u64>, u64>, StoreError> {
        self.append_if(Some(expected), records)
    }

    /// The `seq` the next appended record gets. Takes the log's lock (a
    /// torn tail is set aside first, as an append would).
    pub fn next_seq(&self) -> Result<u64, StoreError> {
        let _guard = self.lock(true)?;
        self.prepare_tail()
    }

    /// The next `seq` as the file's complete lines say, without the lock
    /// (see [`crate::Store::peek_next_seq`]): an unterminated last line,
    /// torn or still being written, is stepped over and left alone.
    pub fn peek_next_seq(&self) -> Result<u64, StoreError> {
        let path = self.path();
        let Some((mut f, start, last)) = last_line(&path)? else {
            return Ok(0);
        };
        if last.ends_with(b"\n") {
            return seq_after_lines(&mut f, &path, start, last);
        }
        if start == 0 {
            return Ok(0);
        }
        let (start, line) = line_before(&mut f, start).map_err(|e| StoreError::io(&path, e))?;
        seq_after_lines(&mut f, &path, start, line)
    }

    fn append_if(
        &self,
        expected: Option<u64>,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Result<std::ops::Range<u64>, u64>, StoreError> {
        let _guard = self.lock(true)?;
        let path = self.path();
        let next = self.prepare_tail()?;
        if expected.is_some_and(|e| e != next) {
            return Ok(Err(next));
        }
        let (file, start) = open_sized(&path, OpenOptions::new().create(true).append(true))?;
        let mut w = BufWriter::with_capacity(64 * 1024, file);
        let mut seq = next;
        let written = (|| {
            for mut r in records {
                // `seq` stays below the maximum so that "one past the last"
                // (the range returned) exists.
                if seq == u64::MAX {
                    return Err(StoreError::SeqOverflow {
                        path: path.clone(),
                        seq: seq - 1,
                    });
                }
                r.seq = seq;
                seq += 1;
                w.write_all(r.to_json_line().as_bytes())
                    .and_then(|_| w.write_all(b"\n"))
                    .map_err(|e| StoreError::io(&path, e))?;
            }
            w.flush().map_err(|e| StoreError::io(&path, e))
        })();
        // Whatever is still buffered is dropped, never written after a cut.
        let (file, _) = w.into_parts();
        let synced = written.and_then(|()| file.sync_data().map_err(|e| StoreError::io(&path, e)));
        if let Err(e) = synced {
            let _ = file.set_len(start).and_then(|()| file.sync_data());
            return Err(e);
        }
        Ok(Ok(next..seq))
    }

    /// Make the file end with a complete line and return the next `seq`.
    /// Caller holds the exclusive lock. Reads from the end only as far back
    /// as the last record: time proportional to the last line, not the log.
    fn prepare_tail(&self) -> Result<u64, StoreError> {
        let path = self.path();
        let Some((mut f, start, last)) = last_line(&path)? else {
            return Ok(0);
        };
        let io = |e| StoreError::io(&path, e);
        if !last.ends_with(b"\n") {
            // Unterminated: parse it whole (a torn line can end in `}`).
            let whole = std::str::from_utf8(&last)
                .ok()
                .and_then(|t| Record::from_json_line(t).ok())
                .map(|(r, _)| r.seq);
            match whole {
                Some(seq) => {
                    let next = after(&path, seq)?;
                    // Complete record, newline lost: finish the line.
                    let mut a = OpenOptions::new().append(true).open(&path).map_err(io)?;
                    a.write_all(b"\n").map_err(io)?;
                    return Ok(next);
                }
                None => {
                    self.set_aside_torn_tail(start, last.len() as u64)?;
                    drop(f);
                    return self.prepare_tail();
                }
            }
        }
        seq_after_lines(&mut f, &path, start, last)
    }
}

/// The file at `path` and its last line (where it starts, its bytes);
/// `None` when there is no file or it is empty.
fn last_line(path: &Path) -> Result<Option<(File, u64, Vec<u8>)>, StoreError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let io = |e| StoreError::io(path, e);
    let size = f.metadata().map_err(io)?.len();
    if size == 0 {
        return Ok(None);
    }
    let (start, line) = line_before(&mut f, size).map_err(io)?;
    Ok(Some((f, start, line)))
}

/// The `seq` after the last record among complete lines, the last of them
/// `line` (starting at `start`). Blank lines and lines that are not
/// records (left in place, skipped on load) are stepped over.
fn seq_after_lines(
    f: &mut File,
    path: &Path,
    start: u64,
    line: Vec<u8>,
) -> Result<u64, StoreError> {
    let (mut line_start, mut line) = (start, line);
    loop {
        if let Some(seq) = seq_of(&line) {
            return after(path, seq);
        }
        if line_start == 0 {
            return Ok(0);
        }
        (line_start, line) = line_before(f, line_start).map_err(|e| StoreError::io(path, e))?;
    }
}

/// The `seq` after `seq`; a hand-edited log can leave none. Records get
/// at most `u64::MAX - 1`, so that one past the last exists.
fn after(path: &Path, seq: u64) -> Result<u64, StoreError> {
    match seq.checked_add(1) {
        Some(next) if next < u64::MAX => Ok(next),
        _ => Err(StoreError::SeqOverflow {
            path: path.to_owned(),
            seq,
        }),
    }
}

/// `path` opened with `options`, and its size then: what a writer checks
/// before it appends or cuts.
fn open_sized(path: &Path, options: &OpenOptions) -> Result<(File, u64), StoreError> {
    let f = options.open(path).map_err(|e| StoreError::io(path, e))?;
    let size = f.metadata().map_err(|e| StoreError::io(path, e))?.len();
    Ok((f, size))
}

/// Open `path` read-only, or create it when missing.
fn open_or_create(path: &Path) -> std::io::Result<File> {
    match File::open(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path),
        other => other,
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    // Without inode numbers, the file being there at all is what is checked.
    true
}

/// An error and its sources, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// The seq of a record line (with or without its newline), or `None` if it
/// is not a record. The whole line is parsed, as loading parses it: a line
/// that only starts like a record (`{"seq":7,"x}`) is skipped by loading,
/// so its number must not count either. One line: still time proportional
/// to the last record, not the log.
fn seq_of(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let text = std::str::from_utf8(line).ok()?;
    if text.trim().is_empty() {
        return None;
    }
    Record::from_json_line(text).ok().map(|(r, _)| r.seq)
}

/// The line that ends at byte `end` (its newline included when there is
/// one at `end - 1`) and where it starts. Scans back in chunks for the
/// previous newline, then reads the line once.
fn line_before(f: &mut File, end: u64) -> std::io::Result<(u64, Vec<u8>)> {
    const CHUNK: u64 = 64 * 1024;
    // The newline that ends this line is not the one we look for.
    let mut pos = end.saturating_sub(1);
    let mut buf = vec![0; CHUNK as usize];
    let start = loop {
        if pos == 0 {
            break 0;
        }
        let from = pos.saturating_sub(CHUNK);
        let chunk = &mut buf[..(pos - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            break from + i as u64 + 1;
        }
        pos = from;
    };
    let mut line = vec![0; (end - start) as usize];
    f.seek(SeekFrom::Start(start))?;
    f.read_exact(&mut line)?;
    Ok((start, line))
}

struct Scan {
    records: Vec<Record>,
    warnings: Vec<String>,
    /// Line, offset and length of an incomplete last line.
    torn: Option<(usize, u64, u64)>,
    /// The notes on the lines read, for a snapshot.
    notes: Vec<LineNote>,
    /// Bytes and lines a snapshot of these records would cover, when one
    /// should be written.
    snapshot_due: Option<crate::snapshot::Due>,
    /// What came from the snapshot.
    snapshot: Option<FromSnapshot>,
}

/// Read the log with the one line policy of
/// [`ctxfold_core::log::LineReader`], on every core; through its snapshot
/// (`crate::snapshot`) where one covers its start.
/// With `small`, the scans the snapshot kept stay in their small form
/// (see [`FromSnapshot::result_scans`]).
fn scan(dir: &Path, path: &Path, snapshot_from: u64, small: bool) -> Result<Scan, StoreError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // Gone with its folder (removed meanwhile) is not "empty".
            if let Some(dir) = path.parent().filter(|d| !d.is_dir()) {
                return Err(StoreError::Vanished {
                    dir: dir.to_owned(),
                });
            }
            return Ok(Scan {
                records: Vec::new(),
                warnings: Vec::new(),
                torn: None,
                notes: Vec::new(),
                snapshot_due: None,
                snapshot: None,
            });
        }
        Err(e) => return Err(StoreError::io(path, e)),
    };
    let meta = file.metadata().map_err(|e| StoreError::io(path, e))?;
    let (size, modified) = (meta.len(), meta.modified().ok());
    let restored = (size >= snapshot_from)
        .then(|| crate::snapshot::restore(dir, path, size))
        .flatten();
    let mut snapshot = None;
    // After an upgrade the snapshot's scans are another build's: written
    // again with this one's, once.
    let mut rescan = false;
    let (read, from) = match restored {
        Some(r) => {
            rescan = r.scans_stale;
            snapshot = Some(match small {
                true => FromSnapshot {
                    bytes: r.covered,
                    result_scans: Vec::new(),
                    small: r.scans,
                },
                false => FromSnapshot {
                    bytes: r.covered,
                    result_scans: r.scans.into_vec(),
                    small: ResultScans::new(),
                },
            });
            file.seek(SeekFrom::Start(r.covered))
                .map_err(|e| StoreError::io(path, e))?;
            let tail =
                crate::parallel_lines::read_lines_after(file, size - r.covered, r.lines, r.covered)
                    .map_err(|e| StoreError::io(path, e))?;
            let mut read = ReadLines {
                records: r.records,
                notes: r.notes,
                lines: r.lines,
                ..ReadLines::default()
            };
            read.join(tail);
            (read, r.covered)
        }
        None => (
            crate::parallel_lines::read_lines(file, size).map_err(|e| StoreError::io(path, e))?,
            0,
        ),
    };
    // What was read, whole lines, up to: a torn tail is left out (and a
    // log whose last record lacks its newline gets no snapshot: the next
    // append writes one before its own records).
    let end = read.torn.map_or(size, |t| t.offset);
    let lines = read.torn.map_or(read.lines, |t| t.line - 1);
    // Lines read since the snapshot (or all of them) that are enough to
    // keep; none at all leave the snapshot as it is.
    let read_since = end.saturating_sub(from);
    let snapshot_due =
        (rescan || read_since > 0 && read_since >= snapshot_from).then_some(crate::snapshot::Due {
            covered: end,
            lines,
            modified,
        });
    let warnings = read
        .notes
        .iter()
        .map(|n| {
            let kept = if n.skipped {
                "; the line stays in the file"
            } else {
                ""
            };
            format!("{}:{}: {}{kept}", path.display(), n.line, n.message)
        })
        .collect();
    Ok(Scan {
        records: read.records,
        warnings,
        torn: read.torn.map(|t| (t.line, t.offset, t.len)),
        notes: read.notes,
        snapshot_due,
        snapshot,
    })
}
