//! The configuration a command runs with: built-in defaults < user file <
//! workspace `.ctxfold/config.toml` < `-c` files < `CTXFOLD_…` environment
//! (see `ctxfold config show`).

use std::path::PathBuf;

use std::collections::BTreeMap;

use ctxfold_config::{Layers, Loaded, SectionCheck, SectionProblem};
use ctxfold_core::planner::{Rule, ToolHints};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_providers::{ProviderConfig, ProviderKind, ProviderSettings, Providers};

/// Model calls allowed in one turn unless `[query] step_limit` says
/// otherwise.
pub const STEP_LIMIT: usize = 100;

/// What commands take from config.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The configured compaction rules, or the built-in one.
    pub rules: Vec<Rule>,
    /// Per-tool compaction hints.
    pub hints: ToolHints,
    /// Model providers: the built-in ones with `[providers.NAME]` over them.
    pub providers: Providers,
    /// `[compaction.auto]`.
    pub auto: AutoPolicy,
    /// Local tools declared with `[tools.NAME] command = …`.
    pub tools: BTreeMap<String, ctxfold_config::ToolDecl>,
    /// `[tools.compact] run`: when the assistant's `compact` tool records.
    pub compact_run: ctxfold_config::RunMode,
    /// `[query] step_limit`: model calls allowed in one turn (default 100).
    pub step_limit: usize,
    /// `[query] system`: a system prompt sent with every request.
    pub system: Option<String>,
    /// `[query] reasoning = "hide"`: reasoning is not shown on a terminal.
    pub hide_reasoning: bool,
    /// `[query] recall_tools` (default true): the built-in `recall` and
    /// `search` tools are offered whenever a compaction is in force.
    pub recall_tools: bool,
    /// `[proxy]`.
    pub proxy: ctxfold_proxy::ProxyConfig,
    /// The built-in price table with `[prices.MODEL]` over it.
    pub prices: ctxfold_core::cost::PriceTable,
    /// `[store] url`, and where it was set (for messages).
    pub store_url: Option<(String, String)>,
    /// Whether a layer other than the built-in defaults set
    /// `compaction.auto.enabled` (the proxy enables it when none did).
    pub auto_enabled_set: bool,
}

/// The checks of the sections the config crate passes through: each layer
/// is checked on its own so that an error names its file and line.
const CHECKS: &[SectionCheck] = &[
    SectionCheck {
        section: "prices",
        check: ctxfold_config::check_prices,
    },
    SectionCheck {
        section: "providers",
        check: check_providers,
    },
    SectionCheck {
        section: "query",
        check: check_query,
    },
    SectionCheck {
        section: "proxy",
        check: ctxfold_proxy::config::check,
    },
    SectionCheck {
        section: "store",
        check: check_store,
    },
];

/// `[store]`: `url`, where conversations are kept (`postgres://…`). The URL
/// itself is checked when the store is opened, whose messages never show
/// its password (a config error would print the value).
fn check_store(v: &toml::Value) -> Result<(), SectionProblem> {
    for (k, v) in SectionProblem::table(v, "a table ([store])")? {
        match k.as_str() {
            "url" if v.is_str() => {}
            "url" => {
                return Err(SectionProblem::invalid(
                    k,
                    "a string: postgres://user[:password]@host[:port]/database",
                ));
            }
            _ => return Err(SectionProblem::unknown(k, &["url"])),
        }
    }
    Ok(())
}

/// The keys of `[query]`.
const QUERY_KEYS: &[&str] = &["reasoning", "recall_tools", "step_limit", "system"];

/// `[query]`: `step_limit` (model calls in one turn, at least 1),
/// `system` (a system prompt sent with every request), `reasoning`
/// (`dim` or `hide`: how a terminal shows it) and `recall_tools` (whether
/// `recall` and `search` are offered while a compaction is in force).
fn check_query(v: &toml::Value) -> Result<(), SectionProblem> {
    for (k, v) in SectionProblem::table(v, "a table ([query])")? {
        let expected = match k.as_str() {
            "step_limit" if v.as_integer().is_some_and(|n| n >= 1) => continue,
            "system" if v.is_str() => continue,
            "reasoning" if matches!(v.as_str(), Some("dim" | "hide")) => continue,
            "recall_tools" if v.is_bool() => continue,
            "recall_tools" => {
                "true or false (offer recall and search while a compaction is in force)"
            }
            "step_limit" => "a number of model calls, at least 1",
            "reasoning" => "\"dim\" (shown dimmed on a terminal) or \"hide\"",
            "system" => "a string (the system prompt)",
            _ => return Err(SectionProblem::unknown(k, QUERY_KEYS)),
        };
        return Err(SectionProblem::invalid(k, expected));
    }
    Ok(())
}

/// `[providers]` as one layer sets it: a table of `[providers.NAME]`
/// tables whose keys are [`ProviderSettings::KEYS`], each value accepted on
/// its own (as [`ProviderSettings::resolve`] would take it).
fn check_providers(v: &toml::Value) -> Result<(), SectionProblem> {
    for (name, entry) in SectionProblem::table(v, "a table of providers ([providers.NAME])")? {
        let entry = entry.as_table().ok_or_else(|| SectionProblem::Invalid {
            key: vec![name.clone()],
            expected: format!(
                "a table of provider settings ({})",
                ProviderSettings::key_names().join(", ")
            ),
        })?;
        for (k, v) in entry {
            let key = vec![name.clone(), k.clone()];
            let Some((_, expected)) = ProviderSettings::KEYS.iter().find(|(n, _)| n == k) else {
                return Err(SectionProblem::UnknownKey {
                    key,
                    expected: ProviderSettings::key_names(),
                });
            };
            // One key at a time, so the error names the key; resolved over
            // a stand-in so values serde accepts but resolve refuses (a
            // base_url without a scheme, a negative duration) are caught.
            let one = toml::Value::Table([(k.clone(), v.clone())].into_iter().collect());
            let stand_in = ProviderConfig::new(ProviderKind::OpenAi, "http://stand-in");
            let accepted = one
                .try_into::<ProviderSettings>()
                .is_ok_and(|s| s.resolve(name, Some(stand_in)).is_ok());
            if !accepted {
                return Err(SectionProblem::Invalid {
                    key,
                    expected: (*expected).to_owned(),
                });
            }
        }
    }
    Ok(())
}

fn loaded(workspace_root: Option<PathBuf>, extra: &[PathBuf]) -> anyhow::Result<Loaded> {
    let layers = Layers::standard(workspace_root.as_deref(), extra.to_vec());
    Ok(ctxfold_config::load_checked(&layers, CHECKS)?)
}

/// The providers config names, laid over the built-in ones. What is left
/// to find wrong once every layer passed [`check_providers`] is a provider
/// that is not built in and misses `kind` or `base_url` in every layer:
/// the error names the last place that set it.
fn providers(l: &Loaded) -> anyhow::Result<Providers> {
    let Some(table) = l.config.other.get("providers") else {
        return Ok(Providers::builtin());
    };
    let settings: BTreeMap<String, ProviderSettings> = table
        .clone()
        .try_into()
        .map_err(|e| anyhow::anyhow!("config [providers]: {e}"))?;
    for (name, s) in &settings {
        let mut one = BTreeMap::new();
        one.insert(name.clone(), s.clone());
        if let Err(e) = Providers::with_settings(&one) {
            let at = l
                .where_set(&ctxfold_config::dotted(&["providers", name]))
                .unwrap_or_else(|| "config".to_owned());
            anyhow::bail!("{at}: [providers.{name}]: {e}");
        }
    }
    Ok(Providers::with_settings(&settings)?)
}

/// Load the settings for a command run in `workspace_root` (if any) with
/// `-c` files `extra`.
pub fn load(workspace_root: Option<PathBuf>, extra: &[PathBuf]) -> anyhow::Result<Settings> {
    let l = loaded(workspace_root, extra)?;
    // A value of `[query]`.
    let query = |key: &str| l.config.other.get("query").and_then(|q| q.get(key));
    let prices = ctxfold_config::price_table(l.config.other.get("prices")).map_err(|e| {
        let (key, expected) = match e {
            SectionProblem::Invalid { key, expected } => (key, expected),
            SectionProblem::UnknownKey { key, expected } => (key, expected.join(", ")),
        };
        anyhow::anyhow!("config: prices.{}: expected {expected}", key.join("."))
    })?;
    Ok(Settings {
        rules: l.config.rules_or_builtin(),
        hints: l.config.hints.clone(),
        tools: l.config.tools.clone(),
        compact_run: l.config.compact_run,
        step_limit: query("step_limit")
            .and_then(toml::Value::as_integer)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(STEP_LIMIT),
        system: query("system")
            .and_then(toml::Value::as_str)
            .map(str::to_owned),
        hide_reasoning: query("reasoning").and_then(toml::Value::as_str) == Some("hide"),
        recall_tools: query("recall_tools")
            .and_then(toml::Value::as_bool)
            .unwrap_or(true),
        auto: l.config.auto.clone(),
        providers: providers(&l)?,
        proxy: match l.config.other.get("proxy") {
            // Each layer passed the check: the merged table does too.
            Some(v) => ctxfold_proxy::ProxyConfig::default()
                .apply(v)
                .map_err(|e| anyhow::anyhow!("config [proxy]: {e:?}"))?,
            None => ctxfold_proxy::ProxyConfig::default(),
        }
        .with_prices(prices.clone()),
        // Each layer passed the check; the merged one named input and
        // output for every model.
        prices,
        store_url: l
            .config
            .other
            .get("store")
            .and_then(|t| t.get("url"))
            .and_then(toml::Value::as_str)
            .map(|u| {
                let at = l
                    .where_set("store.url")
                    .unwrap_or_else(|| "config".to_owned());
                (u.to_owned(), at)
            }),
        auto_enabled_set: l
            .origin("compaction.auto.enabled")
            .is_some_and(|s| !matches!(s, ctxfold_config::Source::Builtin)),
    })
}

/// The config layers loaded and checked, providers included: what
/// `ctxfold config show` shows, refusing config that a command would
/// refuse.
pub fn loaded_checked(
    workspace_root: Option<PathBuf>,
    extra: &[PathBuf],
) -> anyhow::Result<Loaded> {
    let l = loaded(workspace_root, extra)?;
    providers(&l)?;
    Ok(l)
}
