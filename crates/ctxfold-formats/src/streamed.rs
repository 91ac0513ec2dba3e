//! Exports of records handed out one at a time (issue 48): an agent's
//! session written from records a caller makes or reads as the export
//! asks for them (a compacted view made a record at a time, a stored log
//! read a line at a time), so the whole transcript is never in memory
//! beside what it is made from. Other formats are written whole, as
//! [`crate::export_protected`] writes them.

use std::io;
use std::path::Path;

use ctxfold_core::Record;

use crate::{Format, FormatError, Transcript, claude_code, codex, output};

/// Records an export reads in order, one at a time, as many times as it
/// passes over them (a Codex rollout's export passes twice).
pub trait RecordSource {
    /// Every record to `f`, in order; stops at the first error, `f`'s or
    /// the source's own (a stored log that cannot be read).
    fn each(&self, f: &mut dyn FnMut(&Record) -> io::Result<()>) -> io::Result<()>;
}

impl RecordSource for Vec<Record> {
    fn each(&self, f: &mut dyn FnMut(&Record) -> io::Result<()>) -> io::Result<()> {
        self.iter().try_for_each(f)
    }
}

/// Write the records of `records` to `path` in `format`, with `head`'s
/// title and extras (its own records are not read), refusing an output
/// `protect` protects: [`crate::export_protected`] for a transcript whose
/// records come one at a time. An agent's session is written as they
/// come; another format collects them first.
pub fn export_streamed(
    head: &Transcript,
    records: &dyn RecordSource,
    format: Format,
    path: &Path,
    protect: &output::Protect,
) -> Result<(), FormatError> {
    match format {
        Format::ClaudeCode => output::write_file_with(path, protect, &mut |w| {
            claude_code::export_records(head, records, w)
        }),
        Format::Codex => output::write_file_with(path, protect, &mut |w| {
            codex::export_records(head, records, w)
        }),
        _ => crate::export_protected(&whole(head, records, path)?, format, path, protect),
    }
}

/// [`crate::export_bytes`] for records that come one at a time.
pub fn export_streamed_bytes(
    head: &Transcript,
    records: &dyn RecordSource,
    format: Format,
    path: &Path,
) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::new();
    let written = match format {
        Format::ClaudeCode => claude_code::export_records(head, records, &mut out),
        Format::Codex => codex::export_records(head, records, &mut out),
        _ => return crate::export_bytes(&whole(head, records, path)?, format, path),
    };
    written.map_err(|e| FormatError::io(path, e))?;
    Ok(out)
}

/// `head` with the records of `records`, for a format written whole.
fn whole(
    head: &Transcript,
    records: &dyn RecordSource,
    path: &Path,
) -> Result<Transcript, FormatError> {
    let mut all = Vec::new();
    records
        .each(&mut |r| {
            all.push(r.clone());
            Ok(())
        })
        .map_err(|e| FormatError::io(path, e))?;
    Ok(Transcript {
        records: all,
        title: head.title.clone(),
        extras: head.extras.clone(),
        warnings: Vec::new(),
    })
}
