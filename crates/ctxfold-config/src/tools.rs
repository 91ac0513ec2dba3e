//! `[tools.NAME]`: local tools the agent host runs (SPEC §10), and the
//! per-tool compaction hints (SPEC §8).
//!
//! A tool table with a `command` declares a local tool; one with only
//! `compaction` is a hint for a tool ctxfold does not run (the `compact`
//! tool, or tools in an imported transcript). `[tools."*"]` is a hint for
//! every tool and nothing else. `[tools.compact]` takes a hint and `run`
//! (when the assistant's built-in `compact` tool records: `ask` by
//! default).

use std::collections::BTreeMap;
use std::time::Duration;

use ctxfold_core::compaction::ToolOverride;
use ctxfold_core::planner::ToolHints;
use toml::{Table, Value};

use crate::error::ConfigError;
use crate::keys::join;
use crate::reading::{Ctx, positive, table};

/// How long a tool may run when its table does not say (`timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a tool's output reaches the model when its table does not
/// say (`max_output_bytes`).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 100_000;

const TOOL_KEYS: &[&str] = &[
    "command",
    "compaction",
    "description",
    "max_output_bytes",
    "parameters",
    "run",
    "timeout",
];
const TOOL_TABLE: &str =
    "a table (command, description, parameters, run, timeout, max_output_bytes, compaction)";

/// Names that only take a compaction hint: `*` (every tool) and `compact`
/// (ctxfold's own tool, SPEC §9).
const HINT_ONLY: &[(&str, &str)] = &[
    (
        "*",
        "no such key here: [tools.\"*\"] only sets compaction = … for every tool; declare a tool under its own name",
    ),
    (
        "compact",
        "no such key here: compact is ctxfold's own tool; only run = … and compaction = … can be set for it",
    ),
];

/// When ctxfold runs a tool call (`run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunMode {
    /// Ask on the terminal first (the default).
    #[default]
    Ask,
    /// Run without asking.
    Unattended,
    /// Open the arguments in `$EDITOR` first.
    Edit,
}

impl RunMode {
    /// As config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Ask => "ask",
            RunMode::Unattended => "unattended",
            RunMode::Edit => "edit",
        }
    }
}

/// A local tool, as `[tools.NAME]` declares it once every layer is merged.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    /// Its name (the table's key), as the model calls it.
    pub name: String,
    /// The program and its arguments; the call's arguments arrive as JSON
    /// on standard input.
    pub command: Vec<String>,
    /// What it does, for the model (empty when not set).
    pub description: String,
    /// A JSON schema of the arguments: an object schema (`type` is
    /// `"object"`, added when the table leaves it out).
    pub parameters: serde_json::Value,
    /// When it runs.
    pub run: RunMode,
    /// How long it may run before it is killed.
    pub timeout: Duration,
    /// How many bytes of its standard output reach the model; the rest is
    /// cut with a note.
    pub max_output_bytes: usize,
}

/// What one layer (or the merged table) says about one tool; `None` when
/// not set.
#[derive(Debug, Default)]
struct Partial {
    command: Option<Vec<String>>,
    description: Option<String>,
    parameters: Option<serde_json::Value>,
    run: Option<RunMode>,
    timeout: Option<Duration>,
    max_output_bytes: Option<usize>,
}

impl Partial {
    fn declares_a_tool(&self) -> bool {
        self.command.is_some()
            || self.description.is_some()
            || self.parameters.is_some()
            || self.run.is_some()
            || self.timeout.is_some()
            || self.max_output_bytes.is_some()
    }
}

/// What a `[tools]` table says.
#[derive(Debug, Default)]
pub(crate) struct ToolsTable {
    /// The per-tool compaction hints (`compaction = …`).
    pub hints: ToolHints,
    /// The local tools; only filled when reading the merged table.
    pub tools: BTreeMap<String, ToolDecl>,
    /// `[tools.compact] run`.
    pub compact_run: Option<RunMode>,
}

/// Read `[tools]`. Each layer is read on its own (a layer may set only
/// `run` for a tool another layer declares); the merged table must give
/// every declared tool a `command`, and yields the declarations.
pub(crate) fn parse_tools(v: &Value, ctx: &Ctx) -> Result<ToolsTable, ConfigError> {
    let mut out = ToolsTable::default();
    let t = table(v, "tools", ctx, "a table of tools ([tools.NAME])")?;
    for (name, v) in t {
        let key = join("tools", name);
        let tool = table(v, &key, ctx, TOOL_TABLE)?;
        let mut p = Partial::default();
        for (k, v) in tool {
            let key = join(&key, k);
            if k == "compaction" {
                let o = hint(v, &key, ctx)?;
                if name == "*" {
                    out.hints.default = Some(o);
                } else {
                    out.hints.per_tool.insert(name.clone(), o);
                }
                continue;
            }
            if !TOOL_KEYS.contains(&k.as_str()) {
                return Err(ctx.unknown(&key, k, TOOL_KEYS));
            }
            if name == "compact" && k == "run" {
                out.compact_run = Some(run_mode(v, &key, ctx)?);
                continue;
            }
            if let Some((_, why)) = HINT_ONLY.iter().find(|(n, _)| n == name) {
                return Err(ctx.invalid(&key, v, *why));
            }
            match k.as_str() {
                "command" => p.command = Some(command(v, &key, ctx)?),
                "description" => {
                    let d = v.as_str().ok_or_else(|| ctx.invalid(&key, v, "a string"))?;
                    p.description = Some(d.to_owned());
                }
                "parameters" => p.parameters = Some(parameters(v, &key, ctx)?),
                "run" => p.run = Some(run_mode(v, &key, ctx)?),
                "timeout" => p.timeout = Some(timeout(v, &key, ctx)?),
                "max_output_bytes" => {
                    let expected = "a whole number of bytes >= 1";
                    p.max_output_bytes = Some(positive(v, &key, ctx, expected)?);
                }
                _ => return Err(ctx.unknown(&key, k, TOOL_KEYS)),
            }
        }
        if !p.declares_a_tool() {
            continue;
        }
        if !valid_name(name) {
            return Err(ctx.invalid(
                &key,
                v,
                "a tool name of letters, digits, _ and - (1 to 64 characters), as models accept",
            ));
        }
        // Only the merged table is whole: one layer may leave `command` to
        // another.
        if matches!(ctx, Ctx::Merged { .. }) {
            let Some(command) = p.command else {
                return Err(ctx.invalid(
                    &key,
                    v,
                    "command = [\"program\", \"argument\", …] for this tool (a table with only compaction = … is a hint for a tool ctxfold does not run)",
                ));
            };
            out.tools.insert(
                name.clone(),
                ToolDecl {
                    name: name.clone(),
                    command,
                    description: p.description.unwrap_or_default(),
                    parameters: p
                        .parameters
                        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
                    run: p.run.unwrap_or_default(),
                    timeout: p.timeout.unwrap_or(DEFAULT_TIMEOUT),
                    max_output_bytes: p.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
                },
            );
        }
    }
    Ok(out)
}

fn run_mode(v: &Value, key: &str, ctx: &Ctx) -> Result<RunMode, ConfigError> {
    Ok(match v.as_str() {
        Some("ask") => RunMode::Ask,
        Some("unattended") => RunMode::Unattended,
        Some("edit") => RunMode::Edit,
        _ => return Err(ctx.invalid(key, v, "one of ask, unattended, edit")),
    })
}

fn hint(v: &Value, key: &str, ctx: &Ctx) -> Result<ToolOverride, ConfigError> {
    Ok(match v.as_str() {
        Some("keep") => ToolOverride::Keep,
        Some("strip") => ToolOverride::Strip,
        Some("strip-requests") => ToolOverride::StripRequests,
        Some("strip-responses") => ToolOverride::StripResponses,
        Some("omit") => ToolOverride::Omit,
        _ => {
            return Err(ctx.invalid(
                key,
                v,
                "one of keep, strip, strip-requests, strip-responses, omit",
            ));
        }
    })
}

/// OpenAI and Anthropic both take `^[a-zA-Z0-9_-]{1,64}$`.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn command(v: &Value, key: &str, ctx: &Ctx) -> Result<Vec<String>, ConfigError> {
    let expected = "an array of strings: the program, then its arguments ([\"sh\", \"-c\", \"…\"])";
    let words = v
        .as_array()
        .and_then(|a| {
            a.iter()
                .map(|w| w.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| ctx.invalid(key, v, expected))?;
    match words.first() {
        Some(program) if !program.is_empty() => Ok(words),
        _ => Err(ctx.invalid(key, v, expected)),
    }
}

fn timeout(v: &Value, key: &str, ctx: &Ctx) -> Result<Duration, ConfigError> {
    let secs = match v {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    };
    // Whole days at most: a bound, and what `Duration` surely holds.
    if secs > 0.0 && secs <= 86_400.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(ctx.invalid(key, v, "a number of seconds > 0 (such as 60 or 0.5)"))
    }
}

/// The schema of the arguments, as JSON. Models are given object schemas
/// only, so `type` must be `"object"`; it is added when left out.
fn parameters(v: &Value, key: &str, ctx: &Ctx) -> Result<serde_json::Value, ConfigError> {
    let t = table(
        v,
        key,
        ctx,
        "a JSON schema of the arguments, as a table (type = \"object\", properties = { … }, required = [ … ])",
    )?;
    if let Some(ty) = t.get("type")
        && ty.as_str() != Some("object")
    {
        return Err(ctx.invalid(
            &join(key, "type"),
            ty,
            "\"object\": a tool's arguments are a JSON object",
        ));
    }
    if let Some(p) = t.get("properties")
        && !p.is_table()
    {
        return Err(ctx.invalid(
            &join(key, "properties"),
            p,
            "a table of the arguments' schemas ({ path = { type = \"string\" } })",
        ));
    }
    if let Some(r) = t.get("required")
        && !r.as_array().is_some_and(|a| a.iter().all(Value::is_str))
    {
        return Err(ctx.invalid(
            &join(key, "required"),
            r,
            "an array of argument names ([\"path\"])",
        ));
    }
    let mut schema = Table::new();
    schema.insert("type".into(), Value::String("object".into()));
    schema.extend(t.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(crate::to_json(&Value::Table(schema)))
}

/// The declarations as `config show --format json` lists them, by name.
pub(crate) fn to_json(tools: &BTreeMap<String, ToolDecl>) -> serde_json::Value {
    tools
        .iter()
        .map(|(name, d)| {
            let v = serde_json::json!({
                "command": d.command,
                "description": d.description,
                "parameters": d.parameters,
                "run": d.run.as_str(),
                "timeout": d.timeout.as_secs_f64(),
                "max_output_bytes": d.max_output_bytes,
            });
            (name.clone(), v)
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}
