//! Layers: reading files and the environment into tables, and merging them.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::{Spanned, Table, Value};

use crate::error::ConfigError;
use crate::keys::{index, is_under, join, leaves};
use crate::{ENV_VARS, Source};

/// Key paths below which a higher layer replaces the whole value instead
/// of merging into it: a rule is a unit (defining it replaces it, and
/// there is no value that turns `reasoning = "strip"` back off).
const REPLACE_WHOLE: &[&str] = &["compaction.auto.rule"];

/// Whether a table at `prefix`.`key` is replaced whole: [`REPLACE_WHOLE`],
/// and a tool's `parameters`, a schema that two layers would otherwise
/// blend into one that neither wrote.
fn replaces_whole(prefix: &str, key: &str) -> bool {
    let path = join(prefix, key);
    REPLACE_WHOLE.contains(&path.as_str())
        || (key == "parameters"
            && crate::keys::split(prefix).is_some_and(|s| s.len() == 2 && s[0] == "tools"))
}

/// One layer: its table, and the line of each key when it is a file.
#[derive(Debug)]
pub(crate) struct Layer {
    pub source: Source,
    pub table: Table,
    pub lines: BTreeMap<String, usize>,
}

/// Read a config file. `Ok(None)` when it does not exist and `required`
/// is false.
pub(crate) fn read_file(
    path: &Path,
    source: Source,
    required: bool,
) -> Result<Option<Layer>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return if required {
                Err(ConfigError::Missing {
                    path: path.to_owned(),
                })
            } else {
                Ok(None)
            };
        }
        Err(e) => {
            return Err(ConfigError::Read {
                path: path.to_owned(),
                source: e,
            });
        }
    };
    let syntax = |e: toml::de::Error| ConfigError::Syntax {
        path: path.to_owned(),
        line: e.span().map(|s| line_at(&text, s.start)),
        message: e.to_string().trim_end().to_owned(),
    };
    let doc = DeTable::parse(&text).map_err(syntax)?;
    let mut lines = BTreeMap::new();
    walk_table(doc.get_ref(), "", &text, &mut lines);
    let table: Table = text.parse().map_err(syntax)?;
    Ok(Some(Layer {
        source,
        table,
        lines,
    }))
}

/// The 1-based line holding byte `pos`.
fn line_at(text: &str, pos: usize) -> usize {
    let end = pos.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn walk_table(t: &DeTable, prefix: &str, text: &str, out: &mut BTreeMap<String, usize>) {
    for (k, v) in t.iter() {
        let path = join(prefix, k.get_ref());
        out.entry(path.clone())
            .or_insert_with(|| line_at(text, k.span().start));
        walk_value(v, &path, text, out);
    }
}

fn walk_value(v: &Spanned<DeValue>, path: &str, text: &str, out: &mut BTreeMap<String, usize>) {
    match v.get_ref() {
        DeValue::Table(t) => walk_table(t, path, text, out),
        DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                let p = index(path, i);
                out.entry(p.clone())
                    .or_insert_with(|| line_at(text, e.span().start));
                walk_value(e, &p, text, out);
            }
        }
        _ => {}
    }
}

/// One layer per `CTXFOLD_COMPACTION_…` variable, in the order given.
/// Other `CTXFOLD_…` variables belong to other parts of ctxfold and are
/// ignored; an unknown one in the `CTXFOLD_COMPACTION_` namespace is an
/// error (a typo must not be silent). An empty value counts as unset.
pub(crate) fn env_layers(env: &[(String, String)]) -> Result<Vec<Layer>, ConfigError> {
    let mut out = Vec::new();
    for (name, raw) in env {
        if !name.starts_with("CTXFOLD_COMPACTION_") {
            continue;
        }
        let Some(&(_, key)) = ENV_VARS.iter().find(|(n, _)| n == name) else {
            let expected: Vec<&'static str> = ENV_VARS.iter().map(|(n, _)| *n).collect();
            return Err(ConfigError::UnknownEnv {
                name: name.clone(),
                nearest: crate::error::nearest(name, &expected),
                expected,
            });
        };
        let raw = raw.trim();
        if raw.is_empty() {
            continue;
        }
        // Type the text as the key wants it; text that does not fit stays a
        // string and the schema says what was expected.
        let value = match key {
            "compaction.auto.enabled" => match raw.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Value::Boolean(true),
                "false" | "0" | "no" | "off" => Value::Boolean(false),
                _ => Value::String(raw.to_owned()),
            },
            "compaction.auto.trigger_ratio"
            | "compaction.auto.target_ratio"
            | "compaction.auto.summary_share"
            | "compaction.auto.excerpt_share" => raw
                .parse::<f64>()
                .map_or_else(|_| Value::String(raw.to_owned()), Value::Float),
            _ => raw
                .parse::<i64>()
                .map_or_else(|_| Value::String(raw.to_owned()), Value::Integer),
        };
        out.push(Layer {
            source: Source::Env(name.clone()),
            table: nest(key.split('.'), value),
            lines: BTreeMap::new(),
        });
    }
    Ok(out)
}

/// `a.b.c = v` as nested tables.
pub(crate) fn nest<S: Into<String>>(
    path: impl DoubleEndedIterator<Item = S>,
    value: Value,
) -> Table {
    let mut v = value;
    for seg in path.rev() {
        let mut t = Table::new();
        t.insert(seg.into(), v);
        v = Value::Table(t);
    }
    match v {
        Value::Table(t) => t,
        _ => Table::new(),
    }
}

/// Merge `src` into `dst` by key path, recording the source of every leaf
/// that `src` sets. Tables merge recursively (except [`replaces_whole`]);
/// everything else, arrays included, replaces what was there.
pub(crate) fn merge(
    dst: &mut Table,
    src: &Table,
    prefix: &str,
    source: &Source,
    origins: &mut BTreeMap<String, Source>,
) {
    for (k, v) in src {
        let path = join(prefix, k);
        match (dst.get_mut(k), v) {
            (Some(Value::Table(d)), Value::Table(s)) if !replaces_whole(prefix, k) => {
                if !s.is_empty() {
                    // It was perhaps an empty table, itself a leaf.
                    origins.remove(&path);
                }
                merge(d, s, &path, source, origins);
            }
            _ => {
                origins.retain(|key, _| !is_under(key, &path));
                leaves(v, &path, &mut |p, _| {
                    origins.insert(p.to_owned(), source.clone());
                });
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}
