//! ctxfold's own log as a transcript: `events.jsonl`, one record a line.
//!
//! Import reads a `.jsonl` file or a conversation folder holding
//! `events.jsonl`, with the store's own line policy
//! ([`ctxfold_core::log::LineReader`]): a complete line that is not a record
//! is skipped with a warning, a torn last line is left out with a warning,
//! so whatever `conversation show` loads, `ctxfold compact` reads too. A
//! file in which no line is a record is not a ctxfold log: that is an
//! error, not an empty transcript. Export writes one `.jsonl` file.

use std::path::Path;

use ctxfold_core::Record;
use ctxfold_core::log::read_lines;

use crate::{FormatError, Transcript, write_file};

/// Read a ctxfold log from a `.jsonl` file or a folder holding `events.jsonl`.
pub fn import(path: &Path) -> Result<Transcript, FormatError> {
    let file = if path.is_dir() {
        path.join("events.jsonl")
    } else {
        path.to_owned()
    };
    // Bytes, not text: a line that is not UTF-8 is one bad line, as in the
    // store, not a reason to refuse the file.
    let bytes = crate::read_bytes(&file)?;
    import_bytes(&file, &bytes)
}

/// Read a ctxfold log from its text (already read from `file`).
pub fn import_text(file: &Path, text: &str) -> Result<Transcript, FormatError> {
    import_bytes(file, text.as_bytes())
}

/// Read a ctxfold log from its bytes (already read from `file`).
pub(crate) fn import_bytes(file: &Path, bytes: &[u8]) -> Result<Transcript, FormatError> {
    let read = read_lines(bytes);
    if read.records.is_empty()
        && let Some(bad) = &read.first_bad
    {
        return Err(FormatError::shape(
            file,
            crate::Format::Ctxfold,
            format!(
                "no line is a ctxfold record; line {}: {}",
                bad.line, bad.message
            ),
        ));
    }
    let mut t = Transcript::default();
    for n in &read.notes {
        t.warnings
            .push(format!("{}:{}: {}", file.display(), n.line, n.message));
    }
    if let Some(torn) = read.torn {
        t.warnings.push(format!(
            "{}:{}: incomplete last line ({} bytes at offset {}) left out",
            file.display(),
            torn.line,
            torn.len,
            torn.offset
        ));
    }
    // 0, 1, 2, … whatever it was cut from, with compaction ranges and
    // reset targets following their records.
    t.records = ctxfold_core::log::renumber(read.records);
    Ok(t)
}

/// Write records as a ctxfold `.jsonl` file.
pub fn export(records: &[Record], path: &Path) -> Result<(), FormatError> {
    let mut out = String::new();
    for r in records {
        out.push_str(&r.to_json_line());
        out.push('\n');
    }
    write_file(path, out.as_bytes())
}
