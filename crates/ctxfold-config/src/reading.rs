//! Reading a TOML table's values, what every part of the schema shares:
//! where the values came from ([`Ctx`], to word errors with the file and
//! line), a value as an error shows it, and the readers of a table and of
//! whole numbers. Below `schema` and `tools`, which both read with them.

use std::collections::BTreeMap;

use toml::{Table, Value};

use crate::Source;
use crate::error::ConfigError;
use crate::keys::join;

/// Where the values being read came from, to word errors.
pub(crate) enum Ctx<'a> {
    /// One layer: a file (with the line of each key), the environment or a
    /// flag.
    Layer {
        source: &'a Source,
        lines: &'a BTreeMap<String, usize>,
    },
    /// The merged table: each key's source is in the origins.
    Merged {
        origins: &'a BTreeMap<String, Source>,
    },
}

impl Ctx<'_> {
    fn locate(&self, key: &str) -> (Source, Option<usize>) {
        match self {
            Ctx::Layer { source, lines } => ((*source).clone(), lines.get(key).copied()),
            Ctx::Merged { origins } => {
                let found = origins.get(key).or_else(|| {
                    origins
                        .iter()
                        .find(|(k, _)| crate::keys::is_under(k, key))
                        .map(|(_, s)| s)
                });
                (found.cloned().unwrap_or(Source::Builtin), None)
            }
        }
    }

    pub(crate) fn invalid(
        &self,
        key: &str,
        value: &Value,
        expected: impl Into<String>,
    ) -> ConfigError {
        let (origin, line) = self.locate(key);
        ConfigError::Invalid {
            origin,
            line,
            key: key.to_owned(),
            // An error is pasted into bug reports: a bad token is not shown.
            value: match key.rsplit('.').next() {
                Some(leaf) if crate::secret::is_secret_key(leaf) => "\"***\"".to_owned(),
                _ => render(value),
            },
            expected: expected.into(),
        }
    }

    /// `key` (a dotted path ending in `name`) is not one of `expected`.
    pub(crate) fn unknown(&self, key: &str, name: &str, expected: &[&'static str]) -> ConfigError {
        let (origin, line) = self.locate(key);
        ConfigError::UnknownKey {
            origin,
            line,
            key: key.to_owned(),
            expected: expected.to_vec(),
            nearest: crate::error::nearest(name, expected),
        }
    }
}

/// A value as TOML, for messages.
pub(crate) fn render(v: &Value) -> String {
    match v {
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Table(t) => {
            let inner: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", join("", k), render(v)))
                .collect();
            if inner.is_empty() {
                "{}".to_owned()
            } else {
                format!("{{ {} }}", inner.join(", "))
            }
        }
        Value::Array(a) => {
            let inner: Vec<String> = a.iter().map(render).collect();
            format!("[{}]", inner.join(", "))
        }
        other => other.to_string(),
    }
}

/// `v` as a table, else an error saying `what` was expected at `key`.
pub(crate) fn table<'v>(
    v: &'v Value,
    key: &str,
    ctx: &Ctx,
    what: &str,
) -> Result<&'v Table, ConfigError> {
    v.as_table().ok_or_else(|| ctx.invalid(key, v, what))
}

/// A non-negative integer up to `max`.
pub(crate) fn int<T: TryFrom<i64>>(
    v: &Value,
    key: &str,
    ctx: &Ctx,
    max: i64,
    expected: &str,
) -> Result<T, ConfigError> {
    match v {
        Value::Integer(i) if (0..=max).contains(i) => {
            T::try_from(*i).map_err(|_| ctx.invalid(key, v, expected))
        }
        _ => Err(ctx.invalid(key, v, expected)),
    }
}

/// A whole number >= 1 that fits `T` (a count of something that must be
/// there at all).
pub(crate) fn positive<T: TryFrom<i64>>(
    v: &Value,
    key: &str,
    ctx: &Ctx,
    expected: &str,
) -> Result<T, ConfigError> {
    match v {
        Value::Integer(0) => Err(ctx.invalid(key, v, expected)),
        _ => int(v, key, ctx, i64::MAX, expected),
    }
}
