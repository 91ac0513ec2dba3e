//! `ctxfold config show`: the merged configuration and where each value
//! came from; refuses config that a command would refuse.

use serde::Serialize;
use serde_json::Value;

use crate::context::Context;
use crate::render::Report;

/// The configuration as `ctxfold_config` shows it, both ways.
#[derive(Serialize)]
#[serde(transparent)]
pub struct Shown {
    json: Value,
    #[serde(skip)]
    text: String,
}

impl Report for Shown {}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

pub fn show(ctx: &Context) -> anyhow::Result<Shown> {
    let l = crate::settings::loaded_checked(ctx.workspace_root.clone(), &ctx.config)?;
    Ok(Shown {
        json: l.show_json(),
        text: l.show_text(),
    })
}
