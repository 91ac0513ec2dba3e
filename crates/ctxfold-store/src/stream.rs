//! A conversation's log read a record at a time (issue 48): for a command
//! that writes each record as it reads it (`conversation export` of an
//! agent's session), so a long log is never in memory whole.
//!
//! The lines are read as [`EventLog::load`] reads them (the same parser,
//! the same warnings), up to the log's size when it was opened, under the
//! shared lock, so no writer was part way through a line: later appends
//! are not read, and the bytes read never change (the log is append-only;
//! only a torn tail is ever cut, and a log that ends in one is not
//! streamed: its load sets it aside). No snapshot is read or written.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom};
use std::path::PathBuf;

use ctxfold_core::Record;
use ctxfold_core::log::LineReader;

use crate::{EventLog, StoreError};

/// An open log, read a record at a time ([`Streamed::each`]).
pub struct Streamed {
    path: PathBuf,
    /// `None` for a log with no file yet (no records).
    file: Option<File>,
    /// The log's size when it was opened: what is read.
    end: u64,
}

impl EventLog {
    /// The log opened to be read a record at a time; `None` when it ends
    /// in a torn line (or a last record without its newline): then
    /// [`EventLog::load`] it, which sets the tail aside and says so.
    pub fn stream(&self) -> Result<Option<Streamed>, StoreError> {
        let path = self.path();
        let _guard = self.lock(false)?;
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // Gone with its folder (removed meanwhile) is not "empty".
                if let Some(dir) = path.parent().filter(|d| !d.is_dir()) {
                    return Err(StoreError::Vanished {
                        dir: dir.to_owned(),
                    });
                }
                return Ok(Some(Streamed {
                    path,
                    file: None,
                    end: 0,
                }));
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let end = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        if end > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::Start(end - 1))
                .and_then(|_| file.read_exact(&mut last))
                .map_err(|e| StoreError::io(&path, e))?;
            if last[0] != b'\n' {
                return Ok(None);
            }
        }
        Ok(Some(Streamed {
            path,
            file: Some(file),
            end,
        }))
    }
}

impl Streamed {
    /// Every record of the log to `f`, in file order, each read from its
    /// line and dropped after `f`; stops at the first error (reading the
    /// log, or `f`'s). Returns what [`EventLog::load`] would have warned
    /// of (lines skipped, records kept verbatim). May be called again: it
    /// reads the same records.
    pub fn each(
        &self,
        f: &mut dyn FnMut(Record) -> std::io::Result<()>,
    ) -> std::io::Result<Vec<String>> {
        let mut warnings = Vec::new();
        let Some(mut file) = self.file.as_ref() else {
            return Ok(warnings);
        };
        file.seek(SeekFrom::Start(0))?;
        let mut lines = BufReader::with_capacity(1 << 20, file.take(self.end));
        let (mut line, mut number, mut offset) = (Vec::new(), 0usize, 0u64);
        loop {
            line.clear();
            if lines.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            // One line through the loader's own reader: the same records,
            // the same notes.
            let mut reader = LineReader::after(number, offset);
            reader.push(&line);
            number += 1;
            offset += line.len() as u64;
            let read = reader.finish();
            for n in &read.notes {
                let kept = if n.skipped {
                    "; the line stays in the file"
                } else {
                    ""
                };
                warnings.push(format!(
                    "{}:{}: {}{kept}",
                    self.path.display(),
                    n.line,
                    n.message
                ));
            }
            for r in read.records {
                f(r)?;
            }
        }
        Ok(warnings)
    }
}
