//! ctxfold's layered TOML config (SPEC §5, §8).
//!
//! Layers, lowest to highest:
//!
//! 1. built-in defaults ([`Source::Builtin`]): the built-in rule and the
//!    `[compaction.auto]` defaults;
//! 2. the user file, `dirs::config_dir()/ctxfold/config.toml`
//!    (`$XDG_CONFIG_HOME/ctxfold/config.toml` on Linux);
//! 3. the workspace file, `<workspace root>/config.toml`, the root being
//!    the `.ctxfold/` folder;
//! 4. files named with `-c PATH`, in order;
//! 5. the environment ([`ENV_VARS`]);
//! 6. flags, applied by the caller with [`Loaded::set_flag`].
//!
//! Merge is by key path: a higher layer's value replaces the lower one at
//! that key; tables merge recursively; arrays replace whole, so a layer
//! that defines `[[compaction.rules]]` replaces every rule below it (and
//! the built-in rule). `[compaction.auto.rule]` is one rule and is also
//! replaced whole, not merged key by key.
//!
//! Every layer is checked on its own: an unknown key (at the top level or
//! inside a section), a wrong type or an unknown value is an error naming
//! the file and line (or variable, or flag), the dotted key, what was
//! expected and, for a likely typo, the nearest known key. The top-level
//! keys are listed in [`TOP_LEVEL_KEYS`]. `compaction` and `tools` are read
//! here; the other sections (`[providers]`) belong to other parts of
//! ctxfold, are passed through in [`Config::other`], and are checked layer
//! by layer with the [`SectionCheck`]s given to [`load_checked`].
//!
//! ```no_run
//! # fn main() -> Result<(), ctxfold_config::ConfigError> {
//! use ctxfold_config::{Layers, load};
//! let layers = Layers::standard(Some(".ctxfold".as_ref()), vec![]);
//! let loaded = load(&layers)?;
//! let rules = loaded.config.rules_or_builtin();
//! print!("{}", loaded.show_text());
//! # let _ = rules; Ok(()) }
//! ```

mod error;
mod keys;
mod layer;
mod prices;
mod reading;
pub mod rules;
mod schema;
mod secret;
mod tools;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use ctxfold_core::planner::{Rule, ToolHints};
use toml::{Table, Value};

pub use error::ConfigError;
pub use prices::{PRICE_KEYS, check_prices, price_table};
pub use schema::{SectionCheck, SectionProblem, TOP_LEVEL_KEYS, rule_to_toml};
pub use secret::mask_url;
pub use tools::{DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT, RunMode, ToolDecl};

use layer::Layer;
use reading::Ctx;
use schema::Parsed;

/// The environment variables ctxfold reads, and the key each one sets.
///
/// Values are typed as the key wants: `ENABLED` takes `true`/`false`
/// (also `1`/`0`, `yes`/`no`, `on`/`off`), `TRIGGER_RATIO`,
/// `TARGET_RATIO` and `SUMMARY_SHARE` a number in (0, 1], the others whole
/// numbers. An empty value counts as unset. Any
/// other variable starting with `CTXFOLD_COMPACTION_` is an error; other
/// `CTXFOLD_…` variables are left to the rest of ctxfold.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("CTXFOLD_COMPACTION_AUTO_ENABLED", "compaction.auto.enabled"),
    (
        "CTXFOLD_COMPACTION_AUTO_TRIGGER_RATIO",
        "compaction.auto.trigger_ratio",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_TARGET_RATIO",
        "compaction.auto.target_ratio",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_SUMMARY_SHARE",
        "compaction.auto.summary_share",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_EXCERPT_SHARE",
        "compaction.auto.excerpt_share",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_BAND_STEPS",
        "compaction.auto.band_steps",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_RESERVE_TOKENS",
        "compaction.auto.reserve_tokens",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_MIN_TURNS",
        "compaction.auto.min_turns",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_RETAIN_TOKENS",
        "compaction.auto.retain_tokens",
    ),
    (
        "CTXFOLD_COMPACTION_AUTO_COMPACTION_RETRIES",
        "compaction.auto.compaction_retries",
    ),
];

/// A dotted key from its segments, quoting those that are not bare TOML
/// keys (`["providers", "my box"]` → `providers."my box"`), as
/// [`Loaded::origins`] and [`Loaded::where_set`] spell keys.
pub fn dotted(segments: &[&str]) -> String {
    segments
        .iter()
        .fold(String::new(), |p, s| keys::join(&p, s))
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in defaults.
    Builtin,
    /// The user file.
    User(PathBuf),
    /// The workspace file.
    Workspace(PathBuf),
    /// A file named with `-c`.
    File(PathBuf),
    /// An environment variable (its name).
    Env(String),
    /// A command-line flag (as the caller names it, e.g. `--keep-last`).
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("built-in"),
            Source::User(p) => write!(f, "user file {}", p.display()),
            Source::Workspace(p) => write!(f, "workspace file {}", p.display()),
            Source::File(p) => write!(f, "file {} (-c)", p.display()),
            Source::Env(v) => write!(f, "environment {v}"),
            Source::Flag(x) => write!(f, "flag {x}"),
        }
    }
}

impl Source {
    /// As JSON: `{"layer": "user", "path": …}`, `{"layer": "env",
    /// "var": …}`, `{"layer": "flag", "flag": …}`, `{"layer": "built-in"}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let path = |p: &Path| p.display().to_string();
        match self {
            Source::Builtin => json!({"layer": "built-in"}),
            Source::User(p) => json!({"layer": "user", "path": path(p)}),
            Source::Workspace(p) => json!({"layer": "workspace", "path": path(p)}),
            Source::File(p) => json!({"layer": "file", "path": path(p)}),
            Source::Env(v) => json!({"layer": "env", "var": v}),
            Source::Flag(x) => json!({"layer": "flag", "flag": x}),
        }
    }
}

/// `[compaction.auto]` (SPEC §8): the core's [`AutoPolicy`] (defaults,
/// meanings and bounds defined there, once), as the config read it.
///
/// [`AutoPolicy`]: ctxfold_core::trigger::AutoPolicy
pub type AutoConfig = ctxfold_core::trigger::AutoPolicy;

/// The merged config.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    /// `[[compaction.rules]]`; `None` when no layer defines any (use
    /// [`Rule::builtin`], or [`Config::rules_or_builtin`]). `Some(vec![])`
    /// when a layer says `compaction.rules = []`: no rules at all.
    pub rules: Option<Vec<Rule>>,
    /// `[compaction.auto]`.
    pub auto: AutoConfig,
    /// `[tools.NAME] compaction = …` and `[tools."*"]`.
    pub hints: ToolHints,
    /// The local tools, `[tools.NAME]` tables with a `command`, by name.
    pub tools: BTreeMap<String, ToolDecl>,
    /// `[tools.compact] run`: when the assistant's `compact` tool records
    /// (`ask` by default).
    pub compact_run: RunMode,
    /// Every other top-level key, merged, as raw TOML.
    pub other: Table,
}

impl Config {
    /// The configured rules, or the built-in rule when none are.
    pub fn rules_or_builtin(&self) -> Vec<Rule> {
        self.rules.clone().unwrap_or_else(|| vec![Rule::builtin()])
    }
}

/// What to load: the caller names the files and hands in the environment.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// The user file; missing is fine.
    pub user: Option<PathBuf>,
    /// The workspace file; missing is fine.
    pub workspace: Option<PathBuf>,
    /// `-c` files, lowest first; a missing one is an error.
    pub files: Vec<PathBuf>,
    /// Environment variables (name, value); see [`ENV_VARS`].
    pub env: Vec<(String, String)>,
}

impl Layers {
    /// `dirs::config_dir()/ctxfold/config.toml`, when there is a config
    /// dir.
    pub fn user_file() -> Option<PathBuf> {
        dirs::config_dir().map(|d| d.join("ctxfold").join("config.toml"))
    }

    /// The usual layers: the user file, `workspace_root/config.toml` (the
    /// root being the `.ctxfold/` folder), the `-c` files, and the
    /// process's `CTXFOLD_…` variables (those that are valid UTF-8).
    pub fn standard(workspace_root: Option<&Path>, files: Vec<PathBuf>) -> Layers {
        Layers {
            user: Layers::user_file(),
            workspace: workspace_root.map(|r| r.join("config.toml")),
            files,
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .filter(|(k, _)| k.starts_with("CTXFOLD_"))
                .collect(),
        }
    }
}

/// The merged config and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The merged config.
    pub config: Config,
    /// The source of every leaf of the merged table, by dotted key
    /// (`compaction.auto.enabled`, `compaction.rules[1].keep_last`,
    /// `tools."*".compaction`; rules numbered from 1).
    pub origins: BTreeMap<String, Source>,
    merged: Table,
    /// For each key a file set, the last file that did and the line.
    lines: BTreeMap<String, (Source, usize)>,
    checks: Vec<SectionCheck>,
}

/// Load and merge the layers. A missing user or workspace file is
/// skipped; anything wrong in a layer is an error naming it.
pub fn load(layers: &Layers) -> Result<Loaded, ConfigError> {
    load_checked(layers, &[])
}

/// [`load`], also running `checks` on each layer (and on each later
/// [`Loaded::set_flag`]) for the sections other parts of ctxfold read.
pub fn load_checked(layers: &Layers, checks: &[SectionCheck]) -> Result<Loaded, ConfigError> {
    let mut loaded = Loaded::builtin();
    loaded.checks = checks.to_vec();
    if let Some(p) = &layers.user
        && let Some(l) = layer::read_file(p, Source::User(p.clone()), false)?
    {
        loaded.apply(l)?;
    }
    if let Some(p) = &layers.workspace
        && let Some(l) = layer::read_file(p, Source::Workspace(p.clone()), false)?
    {
        loaded.apply(l)?;
    }
    for p in &layers.files {
        if let Some(l) = layer::read_file(p, Source::File(p.clone()), true)? {
            loaded.apply(l)?;
        }
    }
    for l in layer::env_layers(&layers.env)? {
        loaded.apply(l)?;
    }
    loaded.rebuild()?;
    Ok(loaded)
}

impl Loaded {
    /// The built-in defaults alone.
    pub fn builtin() -> Loaded {
        let mut auto = Table::new();
        let d = AutoConfig::default();
        auto.insert("enabled".into(), Value::Boolean(d.enabled));
        auto.insert("trigger_ratio".into(), Value::Float(d.trigger_ratio));
        auto.insert("target_ratio".into(), Value::Float(d.target_ratio));
        auto.insert("summary_share".into(), Value::Float(d.summary_share));
        auto.insert("excerpt_share".into(), Value::Float(d.excerpt_share));
        auto.insert("band_steps".into(), Value::Integer(d.band_steps.into()));
        auto.insert("min_turns".into(), Value::Integer(d.min_turns.into()));
        auto.insert(
            "compaction_retries".into(),
            Value::Integer(d.compaction_retries.into()),
        );
        auto.insert("rule".into(), Value::Table(rule_to_toml(&d.rule)));
        let mut compaction = Table::new();
        compaction.insert(
            "rules".into(),
            Value::Array(vec![Value::Table(rule_to_toml(&Rule::builtin()))]),
        );
        compaction.insert("auto".into(), Value::Table(auto));
        let mut table = Table::new();
        table.insert("compaction".into(), Value::Table(compaction));

        let mut origins = BTreeMap::new();
        keys::table_leaves(&table, &mut |p, _| {
            origins.insert(p.to_owned(), Source::Builtin);
        });
        Loaded {
            config: Config::default(),
            origins,
            merged: table,
            lines: BTreeMap::new(),
            checks: Vec::new(),
        }
    }

    /// The merged table (what [`Loaded::show_json`] prints as `config`).
    pub fn merged(&self) -> &Table {
        &self.merged
    }

    /// Where the value at `key` came from (a leaf, as in
    /// [`Loaded::origins`]).
    pub fn origin(&self, key: &str) -> Option<&Source> {
        self.origins.get(key)
    }

    /// Where `key` (a dotted key, a leaf or a table such as
    /// `providers.work`) was last set: `PATH:LINE` for a file,
    /// `environment variable X`, `flag X`, or `built-in defaults`; `None`
    /// when no layer set it.
    pub fn where_set(&self, key: &str) -> Option<String> {
        let mut set_by = self
            .origins
            .iter()
            .filter(|(k, _)| keys::is_under(k, key))
            .map(|(_, s)| s);
        let first = set_by.clone().next()?;
        // A file's line only when that file is still what set the value
        // (the environment or a flag may have set it since).
        match self.lines.get(key) {
            Some((source, line)) if set_by.any(|s| s == source) => {
                Some(error::at(source, &Some(*line)))
            }
            _ => Some(error::at(first, &None)),
        }
    }

    /// Set `key` (a dotted TOML key such as `compaction.auto.enabled` or
    /// `tools."*".compaction`) to `value` on behalf of `flag`, the top
    /// layer. The value is checked like a file's; on error nothing
    /// changes. A whole rules list is set with key `compaction.rules` and an
    /// array of [`rule_to_toml`] tables.
    pub fn set_flag(&mut self, flag: &str, key: &str, value: Value) -> Result<(), ConfigError> {
        let segs = keys::split(key).ok_or_else(|| ConfigError::BadKey {
            flag: flag.to_owned(),
            key: key.to_owned(),
        })?;
        let layer = Layer {
            source: Source::Flag(flag.to_owned()),
            table: layer::nest(segs.into_iter(), value),
            lines: BTreeMap::new(),
        };
        let mut next = self.clone();
        next.apply(layer)?;
        next.rebuild()?;
        *self = next;
        Ok(())
    }

    /// Check one layer on its own, then merge it in.
    fn apply(&mut self, l: Layer) -> Result<(), ConfigError> {
        let ctx = Ctx::Layer {
            source: &l.source,
            lines: &l.lines,
        };
        schema::parse(&l.table, &ctx)?;
        for c in &self.checks {
            schema::run_check(&l.table, c, &ctx)?;
        }
        layer::merge(&mut self.merged, &l.table, "", &l.source, &mut self.origins);
        for (k, line) in &l.lines {
            self.lines.insert(k.clone(), (l.source.clone(), *line));
        }
        Ok(())
    }

    /// Read the merged table into [`Loaded::config`].
    fn rebuild(&mut self) -> Result<(), ConfigError> {
        let p: Parsed = schema::parse(
            &self.merged,
            &Ctx::Merged {
                origins: &self.origins,
            },
        )?;
        let rules_builtin = self
            .origins
            .iter()
            .find(|(k, _)| keys::is_under(k, "compaction.rules"))
            .is_none_or(|(_, s)| *s == Source::Builtin);
        let d = AutoConfig::default();
        self.config = Config {
            rules: if rules_builtin { None } else { p.rules },
            auto: AutoConfig {
                enabled: p.enabled.unwrap_or(d.enabled),
                trigger_ratio: p.trigger_ratio.unwrap_or(d.trigger_ratio),
                target_ratio: p.target_ratio.unwrap_or(d.target_ratio),
                reserve_tokens: p.reserve_tokens.map(tokens).or(d.reserve_tokens),
                min_turns: p.min_turns.unwrap_or(d.min_turns),
                retain_tokens: p.retain_tokens.map(tokens).or(d.retain_tokens),
                compaction_retries: p.compaction_retries.unwrap_or(d.compaction_retries),
                summary_share: p.summary_share.unwrap_or(d.summary_share),
                excerpt_share: p.excerpt_share.unwrap_or(d.excerpt_share),
                band_steps: p.band_steps.unwrap_or(d.band_steps),
                rule: p.auto_rule.unwrap_or(d.rule),
            },
            hints: p.hints,
            tools: p.tools,
            compact_run: p.compact_run.unwrap_or_default(),
            other: p.other,
        };
        Ok(())
    }

    /// The merged config as a TOML-ish listing, one leaf a line, each
    /// with where it came from:
    ///
    /// ```text
    /// compaction.auto.enabled = true                # from environment CTXFOLD_COMPACTION_AUTO_ENABLED
    /// compaction.rules[1].keep_last = 3             # from workspace file /w/.ctxfold/config.toml
    /// ```
    pub fn show_text(&self) -> String {
        let mut rows = Vec::new();
        // Never a secret: URLs masked, tokens and credential headers `***`.
        let shown = secret::masked(&self.merged);
        keys::table_leaves(&shown, &mut |p, v| {
            let src = self
                .origins
                .get(p)
                .map_or_else(|| "unknown".to_owned(), Source::to_string);
            rows.push((format!("{p} = {}", reading::render(v)), src));
        });
        let width = rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for (line, src) in rows {
            let pad = width - line.chars().count();
            out.push_str(&format!("{line}{}    # from {src}\n", " ".repeat(pad)));
        }
        // A key with no value (TOML has no null) is said in words, so that
        // every key of [compaction.auto] shows up with its default.
        if self.config.auto.retain_tokens.is_none() {
            out.push_str(
                "# compaction.auto.retain_tokens is unset: a tenth of the room (the window less the fixed part and the reserve)\n",
            );
        }
        if self.config.auto.reserve_tokens.is_none() {
            out.push_str(
                "# compaction.auto.reserve_tokens is unset: a sixteenth of the window, at most the request's max_tokens\n",
            );
        }
        // And each tool's defaults, which no layer writes.
        for (name, d) in &self.config.tools {
            let key = dotted(&["tools", name]);
            let unset: Vec<String> = [
                ("run", format!("\"{}\"", d.run.as_str())),
                ("timeout", d.timeout.as_secs_f64().to_string()),
                ("max_output_bytes", d.max_output_bytes.to_string()),
            ]
            .into_iter()
            .filter(|(k, _)| !self.origins.contains_key(&keys::join(&key, k)))
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
            if !unset.is_empty() {
                out.push_str(&format!("# {key}: {} (defaults)\n", unset.join(", ")));
            }
        }
        out
    }

    /// `{"config": <merged table>, "origins": {"<dotted key>": <source>},
    /// "tools": {"<name>": <declaration, defaults filled in>}}`, sources as
    /// in [`Source::to_json`].
    pub fn show_json(&self) -> serde_json::Value {
        let mut origins = serde_json::Map::new();
        keys::table_leaves(&self.merged, &mut |p, _| {
            if let Some(s) = self.origins.get(p) {
                origins.insert(p.to_owned(), s.to_json());
            }
        });
        serde_json::json!({
            "config": to_json(&Value::Table(secret::masked(&self.merged))),
            "origins": origins,
            "tools": tools::to_json(&self.config.tools),
        })
    }
}

/// TOML to JSON: datetimes become strings, non-finite floats strings.
pub(crate) fn to_json(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::String(s) => J::String(s.clone()),
        Value::Integer(i) => J::from(*i),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or_else(|| J::String(f.to_string()), J::Number)
        }
        Value::Boolean(b) => J::Bool(*b),
        Value::Datetime(d) => J::String(d.to_string()),
        Value::Array(a) => J::Array(a.iter().map(to_json).collect()),
        Value::Table(t) => J::Object(t.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
    }
}

/// A token count from config as the core counts tokens (a count past what
/// this machine can address is as good as unbounded).
fn tokens(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
