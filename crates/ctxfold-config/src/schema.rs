//! The schema: reading the `compaction` and `tools` parts of a TOML table
//! into core types, with errors that name the key and what was expected.
//!
//! The same reader checks each layer on its own (a partial table) and
//! builds the final [`Config`](crate::Config) from the merged table.

use std::collections::BTreeMap;

use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
use ctxfold_core::planner::{Rule, SummaryRequest, ToolHints};
use toml::{Table, Value};

use crate::error::ConfigError;
use crate::keys::{index, join};
use crate::reading::{Ctx, int, positive, table};

/// Every top-level key a config file may hold: the one list to extend when
/// ctxfold gains a section. Any other top-level key is an error, as a
/// typo anywhere must be (`[compation.auto]`, `[tool.search]`).
/// `compaction` and `tools` are read by this crate; the others are passed
/// through whole in [`Config::other`](crate::Config::other) to the part of
/// ctxfold that reads them, which checks every layer with a
/// [`SectionCheck`] so that its errors name the file and line too.
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "compaction", // [[compaction.rules]], [compaction.auto]: read here
    "prices",     // [prices.MODEL]: dollars per million tokens (checked by the CLI)
    "providers",  // [providers.NAME]: ctxfold-providers (checked by the CLI)
    "proxy",      // [proxy]: ctxfold-proxy (checked by the CLI)
    "query",      // [query]: the agent host (checked by the CLI)
    "store",      // [store] url: where conversations are kept (checked by the CLI)
    "tools",      // [tools.NAME]: read here
];

const COMPACTION_KEYS: &[&str] = &["auto", "rules"];
const AUTO_KEYS: &[&str] = &[
    "band_steps",
    "compaction_retries",
    "enabled",
    "excerpt_share",
    "min_turns",
    "reserve_tokens",
    "retain_tokens",
    "rule",
    "summary_share",
    "target_ratio",
    "trigger_ratio",
];
const RULE_KEYS: &[&str] = &[
    "from",
    "keep_first",
    "keep_last",
    "keep_diagnostics",
    "keep_steps",
    "reasoning",
    "summary",
    "to",
    "tool_calls",
];
const SUMMARY_KEYS: &[&str] = &["instructions", "model"];

const BOUND_EXPECTED: &str = "a turn number from 1 (3), a count from the end (-3 or \"-3\"), a duration (\"5h\", \"30m\", \"2d\") or \"last-compaction\"";
const KEEP_EXPECTED: &str = "a number of turns (3) or a duration (\"2h\", \"30m\", \"2d\")";

/// What a [`SectionCheck`] found wrong, at a key inside its section.
#[derive(Debug, Clone, PartialEq)]
pub enum SectionProblem {
    /// A key that is not known at that place.
    UnknownKey {
        /// The key's path below the section (`["work", "timeout"]` for
        /// `providers.work.timeout`).
        key: Vec<String>,
        /// The keys accepted at that place.
        expected: Vec<&'static str>,
    },
    /// A value that is not accepted.
    Invalid {
        /// The value's path below the section; empty for the section
        /// itself.
        key: Vec<String>,
        /// What would have been accepted.
        expected: String,
    },
}

impl SectionProblem {
    /// `key` (one level below the section) holds a value that is not
    /// `expected`.
    pub fn invalid(key: &str, expected: impl Into<String>) -> Self {
        SectionProblem::Invalid {
            key: vec![key.to_owned()],
            expected: expected.into(),
        }
    }

    /// `key` (one level below the section) is not one of `expected`.
    pub fn unknown(key: &str, expected: &[&'static str]) -> Self {
        SectionProblem::UnknownKey {
            key: vec![key.to_owned()],
            expected: expected.to_vec(),
        }
    }

    /// The section `v` as a table, or the problem that it is not
    /// (`expected` says what it should be: "a table (`[proxy]`)").
    pub fn table<'a>(v: &'a toml::Value, expected: &str) -> Result<&'a toml::Table, Self> {
        v.as_table().ok_or_else(|| SectionProblem::Invalid {
            key: vec![],
            expected: expected.to_owned(),
        })
    }
}

/// A check of a top-level section that this crate passes through (see
/// [`TOP_LEVEL_KEYS`]) for the part of ctxfold that reads it: run on each
/// layer that sets the section, so that a problem is reported like this
/// crate's own, naming the file and line (or variable, or flag).
#[derive(Debug, Clone, Copy)]
pub struct SectionCheck {
    /// The top-level key checked.
    pub section: &'static str,
    /// Checks the section's value as one layer sets it.
    pub check: fn(&Value) -> Result<(), SectionProblem>,
}

/// Run `c` on `table` (one layer), worded through `ctx`.
pub(crate) fn run_check(table: &Table, c: &SectionCheck, ctx: &Ctx) -> Result<(), ConfigError> {
    let Some(v) = table.get(c.section) else {
        return Ok(());
    };
    let path = |key: &[String]| key.iter().fold(join("", c.section), |p, s| join(&p, s));
    match (c.check)(v) {
        Ok(()) => Ok(()),
        Err(SectionProblem::UnknownKey { key, expected }) => {
            let name = key.last().map_or(c.section, String::as_str);
            Err(ctx.unknown(&path(&key), name, &expected))
        }
        Err(SectionProblem::Invalid { key, expected }) => {
            let at = key
                .iter()
                .try_fold(v, |v, seg| v.as_table()?.get(seg))
                .unwrap_or(v);
            Err(ctx.invalid(&path(&key), at, expected))
        }
    }
}

/// What one table says; every field is `None`/empty when not set.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub rules: Option<Vec<Rule>>,
    pub enabled: Option<bool>,
    pub trigger_ratio: Option<f64>,
    pub target_ratio: Option<f64>,
    pub reserve_tokens: Option<u64>,
    pub min_turns: Option<u32>,
    pub retain_tokens: Option<u64>,
    pub compaction_retries: Option<u32>,
    pub summary_share: Option<f64>,
    pub excerpt_share: Option<f64>,
    pub band_steps: Option<u32>,
    pub auto_rule: Option<Rule>,
    pub hints: ToolHints,
    /// The local tools; only filled when reading the merged table.
    pub tools: BTreeMap<String, crate::ToolDecl>,
    /// `[tools.compact] run`.
    pub compact_run: Option<crate::RunMode>,
    pub other: Table,
}

/// Read a (possibly partial) config table.
pub(crate) fn parse(table: &Table, ctx: &Ctx) -> Result<Parsed, ConfigError> {
    let mut out = Parsed::default();
    for (k, v) in table {
        match k.as_str() {
            "compaction" => parse_compaction(v, ctx, &mut out)?,
            "tools" => {
                let tools = crate::tools::parse_tools(v, ctx)?;
                out.hints = tools.hints;
                out.tools = tools.tools;
                out.compact_run = tools.compact_run;
            }
            _ if TOP_LEVEL_KEYS.contains(&k.as_str()) => {
                out.other.insert(k.clone(), v.clone());
            }
            _ => return Err(ctx.unknown(&join("", k), k, TOP_LEVEL_KEYS)),
        }
    }
    Ok(out)
}

fn parse_compaction(v: &Value, ctx: &Ctx, out: &mut Parsed) -> Result<(), ConfigError> {
    let t = table(v, "compaction", ctx, "a table ([compaction])")?;
    for (k, v) in t {
        let key = join("compaction", k);
        match k.as_str() {
            "rules" => {
                let expected = "an array of rule tables ([[compaction.rules]])";
                let arr = v.as_array().ok_or_else(|| ctx.invalid(&key, v, expected))?;
                let rules = arr
                    .iter()
                    .enumerate()
                    .map(|(i, r)| parse_rule(r, &index(&key, i), ctx))
                    .collect::<Result<Vec<_>, _>>()?;
                out.rules = Some(rules);
            }
            "auto" => parse_auto(v, &key, ctx, out)?,
            _ => return Err(ctx.unknown(&key, k, COMPACTION_KEYS)),
        }
    }
    Ok(())
}

fn parse_auto(v: &Value, key: &str, ctx: &Ctx, out: &mut Parsed) -> Result<(), ConfigError> {
    let t = table(v, key, ctx, "a table ([compaction.auto])")?;
    for (k, v) in t {
        let key = join(key, k);
        match k.as_str() {
            "enabled" => {
                out.enabled = Some(
                    v.as_bool()
                        .ok_or_else(|| ctx.invalid(&key, v, "true or false"))?,
                );
            }
            "trigger_ratio" => {
                let expected = "a number greater than 0 and at most 1 (such as 0.75)";
                out.trigger_ratio = Some(ratio(v, &key, ctx, expected)?);
            }
            "target_ratio" => {
                let expected = "a number greater than 0 and at most 1 (such as 0.5)";
                out.target_ratio = Some(ratio(v, &key, ctx, expected)?);
            }
            "summary_share" => {
                let expected = "a number greater than 0 and at most 1 (such as 0.1)";
                out.summary_share = Some(ratio(v, &key, ctx, expected)?);
            }
            "excerpt_share" => {
                let expected = "a number from 0 (off) to 1 (such as 0.05)";
                let r = match v {
                    Value::Float(f) => *f,
                    Value::Integer(i) => *i as f64,
                    _ => return Err(ctx.invalid(&key, v, expected)),
                };
                if !(0.0..=1.0).contains(&r) {
                    return Err(ctx.invalid(&key, v, expected));
                }
                out.excerpt_share = Some(r);
            }
            "band_steps" => {
                out.band_steps = Some(int(v, &key, ctx, u32::MAX.into(), "a whole number >= 0")?)
            }
            "reserve_tokens" => {
                out.reserve_tokens = Some(int(v, &key, ctx, i64::MAX, "a number of tokens >= 0")?)
            }
            "min_turns" => {
                out.min_turns = Some(int(v, &key, ctx, u32::MAX.into(), "a whole number >= 0")?)
            }
            "retain_tokens" => {
                out.retain_tokens = Some(int(v, &key, ctx, i64::MAX, "a number of tokens >= 0")?)
            }
            "compaction_retries" => {
                out.compaction_retries =
                    Some(int(v, &key, ctx, u32::MAX.into(), "a whole number >= 0")?)
            }
            "rule" => out.auto_rule = Some(parse_rule(v, &key, ctx)?),
            _ => return Err(ctx.unknown(&key, k, AUTO_KEYS)),
        }
    }
    Ok(())
}

/// A share in (0, 1].
fn ratio(v: &Value, key: &str, ctx: &Ctx, expected: &str) -> Result<f64, ConfigError> {
    let r = match v {
        Value::Float(f) => *f,
        Value::Integer(i) => *i as f64,
        _ => return Err(ctx.invalid(key, v, expected)),
    };
    if !(r > 0.0 && r <= 1.0) {
        return Err(ctx.invalid(key, v, expected));
    }
    Ok(r)
}

/// One rule: a `[[compaction.rules]]` entry or `[compaction.auto.rule]`.
fn parse_rule(v: &Value, key: &str, ctx: &Ctx) -> Result<Rule, ConfigError> {
    let t = table(
        v,
        key,
        ctx,
        "a rule table (keep_first, keep_last, keep_steps, from, to, reasoning, tool_calls, keep_diagnostics, summary)",
    )?;
    let mut rule = Rule::default();
    for (k, v) in t {
        let key = join(key, k);
        match k.as_str() {
            "from" => rule.from = Some(bound(v, &key, ctx, false)?),
            "to" => rule.to = Some(bound(v, &key, ctx, true)?),
            "keep_first" => rule.keep_first = Some(keep(v, &key, ctx)?),
            "keep_last" => rule.keep_last = Some(keep(v, &key, ctx)?),
            "keep_steps" => {
                let expected = "a whole number of steps >= 1";
                rule.keep_steps = Some(positive(v, &key, ctx, expected)?);
            }
            "reasoning" => {
                rule.reasoning = Some(match v.as_str() {
                    Some("strip") => ReasoningPolicy::Strip,
                    _ => return Err(ctx.invalid(&key, v, "one of strip")),
                });
            }
            "tool_calls" => {
                rule.tool_calls = Some(match v.as_str() {
                    Some("strip") => ToolPolicy::Strip,
                    Some("strip-requests") => ToolPolicy::StripRequests,
                    Some("strip-responses") => ToolPolicy::StripResponses,
                    Some("omit") => ToolPolicy::Omit,
                    _ => {
                        return Err(ctx.invalid(
                            &key,
                            v,
                            "one of strip, strip-requests, strip-responses, omit",
                        ));
                    }
                });
            }
            "summary" => rule.summary = Some(summary(v, &key, ctx)?),
            "keep_diagnostics" => {
                // A result yields at most this many: more could not be shown.
                let max = ctxfold_core::diagnostics::MAX_PER_RESULT as i64;
                rule.keep_diagnostics = Some(int(
                    v,
                    &key,
                    ctx,
                    max,
                    &format!("a whole number of diagnostics from 0 to {max}"),
                )?);
            }
            _ => return Err(ctx.unknown(&key, k, RULE_KEYS)),
        }
    }
    if !rule.has_policy() {
        return Err(ctx.invalid(
            key,
            v,
            "a rule that says how to compact: reasoning, tool_calls or a [summary] table",
        ));
    }
    Ok(rule)
}

fn summary(v: &Value, key: &str, ctx: &Ctx) -> Result<SummaryRequest, ConfigError> {
    let t = table(v, key, ctx, "a table (model, instructions), possibly empty")?;
    let (mut model, mut instructions) = (None, None);
    for (k, v) in t {
        let key = join(key, k);
        let text = || {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| ctx.invalid(&key, v, "a string"))
        };
        match k.as_str() {
            "model" => model = Some(text()?),
            "instructions" => instructions = Some(text()?),
            _ => return Err(ctx.unknown(&key, k, SUMMARY_KEYS)),
        }
    }
    Ok(SummaryRequest::Derive {
        model,
        instructions,
    })
}

fn bound(v: &Value, key: &str, ctx: &Ctx, is_end: bool) -> Result<Bound, ConfigError> {
    let b = match v {
        Value::Integer(i) if *i > 0 => u32::try_from(*i).ok().map(Bound::Turn),
        Value::Integer(i) if *i < 0 => i
            .checked_neg()
            .and_then(|n| u32::try_from(n).ok())
            .map(Bound::FromEnd),
        Value::String(s) => s.parse::<Bound>().ok(),
        _ => None,
    };
    match b {
        Some(Bound::LastCompaction) if is_end => Err(ctx.invalid(
            key,
            v,
            "an end bound: a turn number, a count from the end or a duration (\"last-compaction\" can only start a range)",
        )),
        Some(b) => Ok(b),
        None => Err(ctx.invalid(key, v, BOUND_EXPECTED)),
    }
}

fn keep(v: &Value, key: &str, ctx: &Ctx) -> Result<Keep, ConfigError> {
    let k = match v {
        Value::Integer(i) => u32::try_from(*i).ok().map(Keep::Count),
        Value::String(s) => s.parse::<Keep>().ok(),
        _ => None,
    };
    k.ok_or_else(|| ctx.invalid(key, v, KEEP_EXPECTED))
}

/// A rule as a config table (the inverse of the reader, for the built-in
/// layer and for showing rules). A supplied summary, which config cannot
/// express, is written as `summary = { text = "…" }`.
pub fn rule_to_toml(rule: &Rule) -> Table {
    let mut t = Table::new();
    let keep = |k: &Keep| match k {
        Keep::Count(n) => Value::Integer(i64::from(*n)),
        Keep::Duration(d) => Value::String(format!("{d:#}")),
    };
    if let Some(b) = &rule.from {
        t.insert("from".into(), Value::String(b.to_string()));
    }
    if let Some(b) = &rule.to {
        t.insert("to".into(), Value::String(b.to_string()));
    }
    if let Some(k) = &rule.keep_first {
        t.insert("keep_first".into(), keep(k));
    }
    if let Some(k) = &rule.keep_last {
        t.insert("keep_last".into(), keep(k));
    }
    if let Some(n) = rule.keep_steps {
        t.insert("keep_steps".into(), Value::Integer(i64::from(n)));
    }
    if let Some(ReasoningPolicy::Strip) = rule.reasoning {
        t.insert("reasoning".into(), Value::String("strip".into()));
    }
    if let Some(p) = rule.tool_calls {
        let s = match p {
            ToolPolicy::Strip => "strip",
            ToolPolicy::StripRequests => "strip-requests",
            ToolPolicy::StripResponses => "strip-responses",
            ToolPolicy::Omit => "omit",
        };
        t.insert("tool_calls".into(), Value::String(s.into()));
    }
    if let Some(n) = rule.keep_diagnostics {
        t.insert("keep_diagnostics".into(), Value::Integer(i64::from(n)));
    }
    match &rule.summary {
        Some(SummaryRequest::Derive {
            model,
            instructions,
        }) => {
            let mut s = Table::new();
            if let Some(m) = model {
                s.insert("model".into(), Value::String(m.clone()));
            }
            if let Some(i) = instructions {
                s.insert("instructions".into(), Value::String(i.clone()));
            }
            t.insert("summary".into(), Value::Table(s));
        }
        Some(SummaryRequest::Supplied { text, .. }) => {
            let mut s = Table::new();
            s.insert("text".into(), Value::String(text.clone()));
            t.insert("summary".into(), Value::Table(s));
        }
        None => {}
    }
    t
}
