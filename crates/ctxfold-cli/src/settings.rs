//! The configuration a command runs with: built-in defaults < user file <
//! workspace `.ctxfold/config.toml` < `-c` files < `CTXFOLD_…` environment
//! (see `ctxfold config show`).

use std::path::PathBuf;

use std::collections::BTreeMap;

use ctxfold_config::{Layers, Loaded};
use ctxfold_core::planner::{Rule, ToolHints};
use ctxfold_providers::{ProviderSettings, Providers};
use serde_json::Value;

use crate::render::Printer;

/// What commands take from config.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The configured compaction rules, or the built-in one.
    pub rules: Vec<Rule>,
    /// Per-tool compaction hints.
    pub hints: ToolHints,
    /// Model providers: the built-in ones with `[providers.NAME]` over them.
    pub providers: Providers,
}

fn loaded(workspace_root: Option<PathBuf>, extra: &[PathBuf]) -> anyhow::Result<Loaded> {
    let layers = Layers::standard(workspace_root.as_deref(), extra.to_vec());
    Ok(ctxfold_config::load(&layers)?)
}

/// Load the settings for a command run in `workspace_root` (if any) with
/// `-c` files `extra`.
pub fn load(workspace_root: Option<PathBuf>, extra: &[PathBuf]) -> anyhow::Result<Settings> {
    let l = loaded(workspace_root, extra)?;
    let providers = match l.config.other.get("providers") {
        None => Providers::builtin(),
        Some(table) => {
            let settings: BTreeMap<String, ProviderSettings> = table
                .clone()
                .try_into()
                .map_err(|e| {
                    anyhow::anyhow!(
                        "config [providers] (see `ctxfold config show` for which file set what): {e}"
                    )
                })?;
            Providers::with_settings(&settings)?
        }
    };
    Ok(Settings {
        rules: l.config.rules_or_builtin(),
        hints: l.config.hints.clone(),
        providers,
    })
}

/// `ctxfold config show`.
pub fn show(
    workspace_root: Option<PathBuf>,
    extra: &[PathBuf],
    out: &Printer,
) -> anyhow::Result<()> {
    let l = loaded(workspace_root, extra)?;
    let json: Value = l.show_json();
    out.emit(&json, || l.show_text())
}
