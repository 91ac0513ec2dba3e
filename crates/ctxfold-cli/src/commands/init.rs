//! `ctxfold init`: a `.ctxfold/` workspace in the current directory.

use ctxfold_store::Workspace;
use serde::Serialize;

use crate::context::Context;
use crate::render::Report;

/// The workspace, and whether this command made it.
#[derive(Serialize)]
pub struct Initialized {
    workspace: String,
    created: bool,
}

impl Report for Initialized {}

impl std::fmt::Display for Initialized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let root = &self.workspace;
        if self.created {
            write!(f, "created workspace {root}")
        } else {
            write!(f, "workspace {root} already exists; nothing changed")
        }
    }
}

pub fn run(ctx: &Context) -> anyhow::Result<Initialized> {
    let (ws, created) = Workspace::init(&ctx.cwd)?;
    Ok(Initialized {
        workspace: ws.root().display().to_string(),
        created,
    })
}
