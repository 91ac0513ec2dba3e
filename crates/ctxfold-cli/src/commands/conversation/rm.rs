//! `conversation rm ID`: move a conversation to the workspace's trash.

use serde::Serialize;

use crate::cli::RmArgs;
use crate::context::Context;
use crate::render::Report;

/// The conversation moved, and where to.
#[derive(Serialize)]
pub struct Removed {
    removed: String,
    moved_to: String,
}

impl Report for Removed {}

impl std::fmt::Display for Removed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "moved conversation {} to {}",
            self.removed, self.moved_to
        )
    }
}

pub fn run(ctx: &Context, args: RmArgs) -> anyhow::Result<Removed> {
    let target = ctx.target()?;
    let (id, dest) = match &target.workspace {
        // A folder whose meta.json is broken can go too: only the folder
        // is needed.
        Some(ws) => {
            let (id, dir) = match ws.get_folder(&args.id)? {
                Ok(c) => (c.meta.id, c.dir),
                Err(b) => (b.id, b.dir),
            };
            let dest = ws.remove_folder(&id, &dir)?;
            (id, dest.display().to_string())
        }
        None => {
            let id = target.store.find(&args.id)?.id;
            let dest = target.store.trash(&id)?;
            (id, dest)
        }
    };
    Ok(Removed {
        removed: id,
        moved_to: dest,
    })
}
