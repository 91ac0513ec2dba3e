//! The config: every layer read and checked as a command would, what set
//! values besides the defaults, or the first thing wrong (its file and
//! line) and how to put it right.

use std::collections::BTreeMap;

use ctxfold_config::{ConfigError, Loaded, Source};

use super::Check;
use crate::context::Context;

/// The config's line, and the config when it could be read (the network
/// checks say where an upstream was set).
pub struct Config {
    /// The line.
    pub check: Check,
    /// The merged config.
    pub loaded: Option<Loaded>,
}

/// Read and check the config layers.
pub fn check(ctx: &Context) -> Config {
    match crate::settings::loaded_checked(ctx.workspace_root.clone(), &ctx.config) {
        Ok(l) => Config {
            check: Check::ok("config", summary(&l)),
            loaded: Some(l),
        },
        Err(e) => Config {
            check: Check::fail("config", format!("{e:#}"), fix(&e)),
            loaded: None,
        },
    }
}

/// Which layers set how many values: `2 values from workspace file …, 1
/// from environment CTXFOLD_…`, or the defaults alone.
fn summary(l: &Loaded) -> String {
    let mut by_layer: BTreeMap<String, usize> = BTreeMap::new();
    for source in l.origins.values() {
        if *source != Source::Builtin {
            *by_layer.entry(source.to_string()).or_default() += 1;
        }
    }
    if by_layer.is_empty() {
        return "built-in defaults only (no config file or CTXFOLD_ variable sets anything)"
            .to_owned();
    }
    let layers: Vec<String> = by_layer
        .iter()
        .map(|(layer, n)| {
            let s = if *n == 1 { "" } else { "s" };
            format!("{n} value{s} from {layer}")
        })
        .collect();
    format!(
        "{}; no unknown key (ctxfold config show: every value and where it came from)",
        layers.join(", ")
    )
}

/// What to do about a config error: the error itself names the file and
/// line (or variable, or flag) and what was expected.
fn fix(e: &anyhow::Error) -> String {
    match e.downcast_ref::<ConfigError>() {
        Some(ConfigError::UnknownKey {
            nearest: Some(n), ..
        }) => format!("rename the key to {n} there, or remove it"),
        Some(ConfigError::UnknownKey { .. }) => {
            "remove the key there (or move it to the section that takes it)".to_owned()
        }
        Some(ConfigError::UnknownEnv { name, .. }) => format!("unset {name}, or correct its name"),
        Some(ConfigError::Invalid { expected, .. }) => format!("set it to {expected}"),
        Some(ConfigError::Syntax { .. }) => "correct the TOML at the line named".to_owned(),
        Some(ConfigError::Missing { .. }) => "name an existing file with -c".to_owned(),
        Some(ConfigError::Read { .. }) => "make the file readable, or remove it".to_owned(),
        _ => "correct the value the message names".to_owned(),
    }
}
