//! `conversation export`: a conversation (or the view the model gets) as
//! a transcript, to a file or folder, or to standard output.

use std::path::Path;

use anyhow::bail;
use ctxfold_formats::output::Protect;
use ctxfold_formats::{Format, Transcript};
use serde::Serialize;

use crate::cli::ExportArgs;
use crate::context::Context;
use crate::render::{Raw, Report};
use crate::store::protect_workspaces;

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
    let log = target.load(&meta.id)?;
    let records = if args.compacted {
        let view = ctxfold_core::projection::project(&log);
        ctxfold_core::materialize::materialize(&log, &view)
    } else {
        log.into_records()
    };
    let mut t = Transcript {
        records,
        title: meta.title.clone(),
        extras: meta.extras.clone(),
        warnings: Vec::new(),
    };
    if args.compacted {
        // The compacted view of an agent's session is a new session.
        ctxfold_formats::new_session(&mut t.extras, format);
    }
    // `-o -` is standard output, as for `compact -o -`, never a file named `-`.
    let output = args.output.as_deref().filter(|p| *p != Path::new("-"));
    match output {
        Some(path) => {
            let base = match &target.workspace {
                Some(ws) => Protect::none().and_workspace(ws.root()),
                None => Protect::none(),
            };
            let protect = protect_workspaces(base)?;
            ctxfold_formats::export_protected(&t, format, path, &protect)?;
            Ok(Exported::Written(Written {
                id: meta.id,
                format: format.name(),
                path: path.display().to_string(),
                shown_format: format,
            }))
        }
        None if format == Format::Jp => {
            bail!("a JP conversation is a folder: name it with -o PATH")
        }
        None => Ok(Exported::Stdout(Raw {
            stdout: ctxfold_formats::export_bytes(&t, format, Path::new("-"))?,
            stderr: String::new(),
        })),
    }
}
