//! The two tools, as the model sees them (name, a few words, the input
//! schema) and as they run: arguments read leniently, every failure a
//! message for the model. Synchronous: the server runs [`call`] on the
//! blocking pool.

use std::sync::Arc;

use ctxfold_recall::Recaller;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// The recall tool's name.
pub const RECALL: &str = "recall";
/// The search tool's name.
pub const SEARCH: &str = "search";

/// What a handle is, in the words every description uses.
const HANDLE_IS: &str = "the TAG:N a compaction placeholder or summary lead shows, such as k3f9q:41 (or a range such as k3f9q:12-57)";

/// The tools a server offers; `scoped` when it serves one conversation
/// (search then defaults to it).
pub fn list(scoped: bool) -> Vec<Tool> {
    let read_only = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false);
    let within = if scoped {
        "a handle of the conversation to search, such as k3f9q:41; a range handle (k3f9q:12-57) searches only its records. Default: this conversation"
    } else {
        "a handle of the conversation to search, such as k3f9q:41 (any placeholder or summary lead of it shows one); a range handle (k3f9q:12-57) searches only its records"
    };
    vec![
        Tool::new(
            RECALL,
            format!(
                "Bring back, exactly and in pages, what compaction folded out of this conversation. The handle is {HANDLE_IS}."
            ),
            schema(json!({
                "type": "object",
                "properties": {
                    "handle": {
                        "type": "string",
                        "description": HANDLE_IS,
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "the character to start at, for the next page (the last line of a page gives it); default 0",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "characters in the page; default 12000",
                    },
                },
                "required": ["handle"],
            })),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            SEARCH,
            "Find a word or phrase in the conversation's full history, folded parts included (case ignored); each hit comes with its handle (such as k3f9q:41) for recall.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "the word or phrase to look for",
                    },
                    "within": {
                        "type": "string",
                        "description": within,
                    },
                },
                "required": ["query"],
            })),
        )
        .with_annotations(read_only),
    ]
}

/// A schema written as a JSON object literal.
fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        // Every schema above is an object literal.
        _ => Arc::new(JsonObject::new()),
    }
}

/// Run tool `name` with `args` on `recaller`: the text for the model, or
/// the message saying what went wrong and what to do instead.
pub fn call(recaller: &Recaller, name: &str, args: &JsonObject) -> Result<String, String> {
    match name {
        RECALL => {
            let handle = text(args, "handle")?
                .ok_or_else(|| format!("recall needs `handle`: {HANDLE_IS}"))?;
            let offset = count(args, "offset")?.unwrap_or(0);
            let limit = count(args, "limit")?.unwrap_or(0);
            let (_, page) = recaller
                .recall(&handle, offset, limit)
                .map_err(|e| e.to_string())?;
            Ok(page)
        }
        SEARCH => {
            let query = text(args, "query")?
                .ok_or("search needs `query`: the word or phrase to look for")?;
            let within = text(args, "within")?;
            let (_, found) = recaller
                .search(&query, within.as_deref(), 0)
                .map_err(|e| e.to_string())?;
            Ok(found)
        }
        other => Err(format!(
            "there is no tool `{other}` here: the tools are `{RECALL}` and `{SEARCH}`"
        )),
    }
}

/// A string argument; absent, null or empty is `None`.
fn text(args: &JsonObject, key: &str) -> Result<Option<String>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        // A handle sent as a number (`41`) has lost its tag.
        Some(other) => Err(format!(
            "`{key}` must be a string, not {other}: {}",
            if key == "query" {
                "the word or phrase to look for"
            } else {
                HANDLE_IS
            }
        )),
    }
}

/// A count argument: a whole number of zero or more, or one written as a
/// string (models quote numbers); absent or null is `None`.
fn count(args: &JsonObject, key: &str) -> Result<Option<usize>, String> {
    let bad =
        |v: &Value| format!("`{key}` must be a whole number of characters, 0 or more, not {v}");
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(n)) => match n.as_u64() {
            Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            None => match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= usize::MAX as f64 => {
                    Ok(Some(f as usize))
                }
                _ => Err(bad(v)),
            },
        },
        Some(v @ Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad(v)),
        Some(v) => Err(bad(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn counts_are_read_leniently_and_refused_clearly() {
        let a = args(json!({"a": 5, "b": "7", "c": 3.0, "d": -1, "e": "x", "f": null, "g": 2.5}));
        assert_eq!(count(&a, "a"), Ok(Some(5)));
        assert_eq!(count(&a, "b"), Ok(Some(7)));
        assert_eq!(count(&a, "c"), Ok(Some(3)));
        assert_eq!(count(&a, "f"), Ok(None));
        assert_eq!(count(&a, "missing"), Ok(None));
        for k in ["d", "e", "g"] {
            let e = count(&a, k).unwrap_err();
            assert!(e.contains("must be a whole number"), "{e}");
        }
        let e = text(&args(json!({"handle": 41})), "handle").unwrap_err();
        assert!(e.contains("TAG:N"), "{e}");
    }

    #[test]
    fn both_tools_are_listed_with_their_schemas() {
        let tools = list(false);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, [RECALL, SEARCH]);
        assert_eq!(tools[0].input_schema["required"], json!(["handle"]));
        assert_eq!(
            tools[0].input_schema["properties"]["offset"]["type"],
            json!("integer")
        );
        assert_eq!(tools[1].input_schema["required"], json!(["query"]));
        for t in &tools {
            assert!(t.description.as_deref().unwrap_or("").contains("k3f9q:"));
        }
    }
}
