//! `conversation import PATH`: a transcript as a new conversation, made
//! the active one; prints its id.

use ctxfold_store::ImportSource;
use serde::Serialize;

use crate::cli::ImportArgs;
use crate::context::Context;
use crate::render::{self, Report};

/// The new conversation.
#[derive(Serialize)]
pub struct Imported {
    id: String,
    records: usize,
    format: &'static str,
}

impl Report for Imported {}

impl std::fmt::Display for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id)
    }
}

pub fn run(ctx: &Context, args: ImportArgs) -> anyhow::Result<Imported> {
    let target = ctx.target()?;
    let path = &args.path;
    target.clean_staging();
    let (format, t) = ctxfold_formats::import_detected(path, args.input_format.format())?;
    render::warn_all(&t.warnings);
    let source = ImportSource {
        format: format.name().to_owned(),
        path: std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .display()
            .to_string(),
    };
    let n = t.records.len();
    let m = ctxfold_store::create_new(&*target.store, t.title, Some(source), t.extras, t.records)?;
    let id = target.store.set_active(&m.id)?.id;
    Ok(Imported {
        id,
        records: n,
        format: format.name(),
    })
}
