//! `conversation use ID`: make a conversation the active one.

use serde::Serialize;

use crate::cli::UseArgs;
use crate::context::Context;
use crate::render::Report;

/// The conversation now active.
#[derive(Serialize)]
pub struct Active {
    active: String,
}

impl Report for Active {}

impl std::fmt::Display for Active {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "active conversation: {}", self.active)
    }
}

pub fn run(ctx: &Context, args: UseArgs) -> anyhow::Result<Active> {
    let target = ctx.target()?;
    let m = target.store.find(&args.id)?;
    let id = target.store.set_active(&m.id)?.id;
    Ok(Active { active: id })
}
