//! `conversation export`: a conversation (or the view the model gets) as
//! a transcript, to a file or folder, or to standard output.

use std::path::Path;

use std::cell::Cell;

use anyhow::bail;
use ctxfold_core::Record;
use ctxfold_core::materialize::Materialized;
use ctxfold_formats::output::Protect;
use ctxfold_formats::{Format, RecordSource, Transcript};
use ctxfold_store::{EventLog, Streamed};
use serde::Serialize;

use crate::cli::ExportArgs;
use crate::context::Context;
use crate::render::{self, Raw, Report};
use crate::store::{Target, protect_workspaces};

/// Where the transcript went: a path, or standard output as it is.
pub enum Exported {
    Written(Written),
    Stdout(Raw),
}

/// A transcript written to a path.
#[derive(Serialize)]
pub struct Written {
    id: String,
    format: &'static str,
    path: String,
    #[serde(skip)]
    shown_format: Format,
}

impl Report for Exported {
    fn raw(&self) -> Option<&[u8]> {
        match self {
            Exported::Written(_) => None,
            Exported::Stdout(r) => r.raw(),
        }
    }
}

impl Serialize for Exported {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Exported::Written(w) => w.serialize(s),
            Exported::Stdout(r) => r.serialize(s),
        }
    }
}

impl std::fmt::Display for Exported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exported::Written(w) => write!(f, "wrote {} ({})", w.path, w.shown_format),
            Exported::Stdout(r) => r.fmt(f),
        }
    }
}

pub fn run(ctx: &Context, args: ExportArgs) -> anyhow::Result<Exported> {
    let target = ctx.target()?;
    let format: Format = args.output_format.into();
    let meta = target.resolve(args.conversation.id.as_deref())?;
    let mut head = Transcript {
        records: Vec::new(),
        title: meta.title.clone(),
        extras: meta.extras.clone(),
        warnings: Vec::new(),
    };
    if args.compacted {
        // The compacted view of an agent's session is a new session.
        ctxfold_formats::new_session(&mut head.extras, format);
    }
    // An agent's session is written a record at a time as the records are
    // read or made (issue 48): a workspace's log read a line at a time, a
    // compacted view made a record at a time, never a second copy whole.
    let agent = matches!(format, Format::ClaudeCode | Format::Codex);
    let streamed = match &target.workspace {
        Some(ws) if agent && !args.compacted => {
            EventLog::new(ws.root().join("conversations").join(&meta.id)).stream()?
        }
        _ => None,
    };
    let (log, view, made, read);
    let records: Option<&dyn RecordSource> = match streamed {
        Some(s) => {
            read = Read {
                log: s,
                warned: Cell::new(false),
            };
            Some(&read)
        }
        None => {
            log = target.load(&meta.id)?;
            if args.compacted {
                view = ctxfold_core::projection::project(&log);
                made = Made(Materialized::new(&log, &view));
                Some(&made)
            } else {
                // Whole, as it was loaded.
                head.records = log.into_records();
                None
            }
        }
    };
    write(
        &target,
        &meta.id,
        &head,
        records,
        format,
        args.output.as_deref(),
    )
}

/// Write the transcript (`head`'s title and extras, the records of
/// `records`, else `head`'s own) to `output`, or to standard output.
fn write(
    target: &Target,
    id: &str,
    head: &Transcript,
    records: Option<&dyn RecordSource>,
    format: Format,
    output: Option<&Path>,
) -> anyhow::Result<Exported> {
    // `-o -` is standard output, as for `compact -o -`, never a file named `-`.
    let output = output.filter(|p| *p != Path::new("-"));
    match output {
        Some(path) => {
            let base = match &target.workspace {
                Some(ws) => Protect::none().and_workspace(ws.root()),
                None => Protect::none(),
            };
            let protect = protect_workspaces(base)?;
            match records {
                Some(records) => {
                    ctxfold_formats::export_streamed(head, records, format, path, &protect)?
                }
                None => ctxfold_formats::export_protected(head, format, path, &protect)?,
            }
            Ok(Exported::Written(Written {
                id: id.to_owned(),
                format: format.name(),
                path: path.display().to_string(),
                shown_format: format,
            }))
        }
        None if format == Format::Jp => {
            bail!("a JP conversation is a folder: name it with -o PATH")
        }
        None => Ok(Exported::Stdout(Raw {
            stdout: match records {
                Some(records) => {
                    ctxfold_formats::export_streamed_bytes(head, records, format, Path::new("-"))?
                }
                None => ctxfold_formats::export_bytes(head, format, Path::new("-"))?,
            },
            stderr: String::new(),
        })),
    }
}

/// A workspace's log read a line at a time as the export reads it; what
/// its load would have warned of said once, after the first pass.
struct Read {
    log: Streamed,
    warned: Cell<bool>,
}

impl RecordSource for Read {
    fn each(&self, f: &mut dyn FnMut(&Record) -> std::io::Result<()>) -> std::io::Result<()> {
        let warnings = self.log.each(&mut |r| f(&r))?;
        if !self.warned.replace(true) {
            render::warn_all(&warnings);
        }
        Ok(())
    }
}

/// The compacted view made a record at a time as the export reads it.
struct Made<'l, 'v, 'a>(Materialized<'l, 'v, 'a>);

impl RecordSource for Made<'_, '_, '_> {
    fn each(&self, f: &mut dyn FnMut(&Record) -> std::io::Result<()>) -> std::io::Result<()> {
        self.0.each(&mut |m| f(&m.record))
    }
}
