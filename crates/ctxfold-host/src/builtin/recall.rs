//! The built-in `recall` tool (SPEC §16): the model gives the handle a
//! placeholder or a summary's lead shows (`k3f9q:41`, `k3f9q:12-57`,
//! `k3f9q:41/content`) and gets back, byte for byte and in pages, what it
//! stands for ([`ctxfold_core::recall`]).
//!
//! It only reads the host's own log of the conversation: a handle of
//! another conversation, a handle that cannot be read, an offset past the
//! end, are error results saying what to do instead.

use ctxfold_core::Log;
use ctxfold_core::handle::Handle;
use ctxfold_core::recall::{DEFAULT_PAGE_CHARS, page, recall, render_page};
use ctxfold_providers::ToolSpec;
use serde_json::{Map, Value, json};

use crate::output::ToolOutput;

/// The tool's name, as the model calls it.
pub const NAME: &str = "recall";

/// The most characters one call returns, whatever `limit` asks: a page is
/// a share of the window, never the window.
pub const MAX_PAGE_CHARS: usize = 4 * DEFAULT_PAGE_CHARS;

/// The tool's description and JSON schema, for the model.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: concat!(
            "Bring back, byte for byte, what a compaction placeholder or summary stands for: ",
            "give the handle it shows (such as k3f9q:41). A long text comes in pages; the last ",
            "line says what is left and the offset to ask for."
        )
        .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "handle": {"type": "string", "description": "The handle, as the placeholder or summary shows it (k3f9q:41, k3f9q:12-57, k3f9q:41/content)."},
                "offset": {"type": "integer", "minimum": 0, "description": "Where to start, in characters (default 0)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_CHARS, "description": format!("Characters to return (default {DEFAULT_PAGE_CHARS}, at most {MAX_PAGE_CHARS}).")}
            },
            "required": ["handle"],
            "additionalProperties": false
        }),
    }
}

/// Answer one call with `args` from `log`. Never fails: what is wrong is
/// an error result the model can act on.
pub fn call(log: &Log, args: &Value) -> ToolOutput {
    match answer(log, args) {
        Ok(text) => ToolOutput::text(text, false),
        Err(e) => ToolOutput::text(e, true),
    }
}

fn answer(log: &Log, args: &Value) -> Result<String, String> {
    let obj = object(args, "`handle`, and optionally `offset` and `limit`")?;
    if let Some(k) = obj
        .keys()
        .find(|k| !["handle", "offset", "limit"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown argument `{k}`: recall takes `handle`, and optionally `offset` and `limit`"
        ));
    }
    let handle = handle(obj, "handle")?
        .ok_or("missing `handle`: the handle a placeholder or summary shows, such as k3f9q:41")?;
    let offset = count(obj, "offset")?.unwrap_or(0);
    let limit = match count(obj, "limit")? {
        Some(0) => return Err("`limit` must be at least 1 character".into()),
        Some(n) => n.min(MAX_PAGE_CHARS),
        None => DEFAULT_PAGE_CHARS,
    };
    let recalled = recall(log, &handle).map_err(|e| e.to_string())?;
    let p = page(&handle, &recalled, offset, limit).map_err(|e| e.to_string())?;
    Ok(render_page(&handle, &recalled, &p))
}

/// The arguments as an object; `expected` says what it should hold.
pub(super) fn object<'a>(
    args: &'a Value,
    expected: &str,
) -> Result<&'a Map<String, Value>, String> {
    args.as_object()
        .ok_or_else(|| format!("the arguments must be a JSON object with {expected}"))
}

/// The handle at `key`, if given.
pub(super) fn handle(obj: &Map<String, Value>, key: &str) -> Result<Option<Handle>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s
            .parse::<Handle>()
            .map(Some)
            .map_err(|e| format!("`{key}`: {e}")),
        Some(_) => Err(format!(
            "`{key}` must be a string: the handle as shown, such as k3f9q:41"
        )),
    }
}

/// A count of characters at `key`, if given.
fn count(obj: &Map<String, Value>, key: &str) -> Result<Option<usize>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("`{key}` must be a whole number of characters, 0 or more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::handle::Tag;
    use ctxfold_core::{Body, Record};

    fn log() -> Log {
        let bodies = vec![
            Body::TurnStart,
            Body::User {
                content: "read the file".into(),
                author: None,
            },
            Body::Assistant {
                content: "the whole text of the file, ünïcode included".into(),
            },
        ];
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(k, b)| Record::new(k as u64, "2026-12-06T10:00:00Z", b))
                .collect(),
        )
    }

    fn tag(log: &Log) -> Tag {
        Tag::of(log).unwrap_or_default()
    }

    #[test]
    fn a_record_comes_back_whole_and_in_pages() {
        let log = log();
        let h = format!("{}:2", tag(&log));
        let out = call(&log, &json!({"handle": h}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .starts_with("the whole text of the file, ünïcode included\n"),
            "{}",
            out.content
        );
        let out = call(&log, &json!({"handle": h, "offset": 4, "limit": 5}));
        assert!(out.content.starts_with("whole\n"), "{}", out.content);
        assert!(out.content.contains("offset 9"), "{}", out.content);
    }

    #[test]
    fn what_is_wrong_is_an_error_result() {
        let log = log();
        let own = tag(&log);
        let other = if own.as_str() == "aaaaa" {
            "bbbbb"
        } else {
            "aaaaa"
        };
        for (args, says) in [
            (json!({"handle": "nonsense"}), "not a recall handle"),
            (
                json!({"handle": format!("{other}:2")}),
                "another conversation",
            ),
            (json!({"handle": format!("{own}:99")}), "no record 99"),
            (
                json!({"handle": format!("{own}:2"), "offset": 1000}),
                "past the end",
            ),
            (
                json!({"handle": format!("{own}:2"), "offset": -1}),
                "whole number",
            ),
            (
                json!({"handle": format!("{own}:2"), "limit": 0}),
                "at least 1",
            ),
            (json!({"offset": 3}), "missing `handle`"),
            (
                json!({"handle": format!("{own}:2"), "page": 2}),
                "unknown argument",
            ),
            (json!("k3f9q:2"), "JSON object"),
        ] {
            let out = call(&log, &args);
            assert!(out.is_error, "{args}: {}", out.content);
            assert!(out.content.contains(says), "{args}: {}", out.content);
        }
    }
}
