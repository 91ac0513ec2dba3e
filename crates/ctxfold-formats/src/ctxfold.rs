//! ctxfold's own log as a transcript: `events.jsonl`, one record a line.
//!
//! Import reads a `.jsonl` file or a conversation folder holding
//! `events.jsonl`; export writes one `.jsonl` file. A torn last line (no
//! newline, not valid JSON) is left out with a warning, as the store does.

use std::path::Path;

use ctxfold_core::Record;

use crate::{FormatError, Transcript, read_text, write_file};

/// Read a ctxfold log from a `.jsonl` file or a folder holding `events.jsonl`.
pub fn import(path: &Path) -> Result<Transcript, FormatError> {
    let file = if path.is_dir() {
        path.join("events.jsonl")
    } else {
        path.to_owned()
    };
    let text = read_text(&file)?;
    import_text(&file, &text)
}

/// Read a ctxfold log from its text (already read from `file`).
pub fn import_text(file: &Path, text: &str) -> Result<Transcript, FormatError> {
    let file = file.to_owned();
    let mut t = Transcript::default();
    let ends_clean = text.ends_with('\n');
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match Record::from_json_line(line) {
            Ok((rec, warn)) => {
                if let Some(w) = warn {
                    t.warnings
                        .push(format!("{}:{}: {w}", file.display(), i + 1));
                }
                t.records.push(rec);
            }
            // An unterminated last line after good records is a torn
            // append; alone, it is simply not a ctxfold log.
            Err(_) if i + 1 == lines.len() && !ends_clean && !t.records.is_empty() => {
                t.warnings.push(format!(
                    "{}:{}: incomplete last line ({} bytes) left out",
                    file.display(),
                    i + 1,
                    line.len()
                ));
            }
            Err(e) => {
                return Err(FormatError::shape(
                    &file,
                    crate::Format::Ctxfold,
                    format!("line {}: {e}", i + 1),
                ));
            }
        }
    }
    // 0, 1, 2, … whatever it was cut from, with compaction ranges and
    // reset targets following their records.
    t.records = ctxfold_core::log::renumber(std::mem::take(&mut t.records));
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
