//! The built-in `search` tool (SPEC §16): a word or phrase looked for in
//! the whole raw conversation, folded parts included; the answer is one
//! excerpt per record that holds it, newest first, each with the handle
//! `recall` takes ([`ctxfold_core::recall::search`]).
//!
//! `within` narrows it: a range handle (`k3f9q:12-57`, as a summary's lead
//! shows it) searches that range; any other handle of the conversation
//! means the whole of it. The call being answered is never a hit (its own
//! arguments hold the query).

use ctxfold_core::handle::{Tag, Target};
use ctxfold_core::position::position;
use ctxfold_core::recall::{DEFAULT_HITS, RecallError, render_found, search};
use ctxfold_core::{Body, Log};
use ctxfold_providers::ToolSpec;
use serde_json::{Value, json};

use super::recall::{handle, object};
use crate::output::ToolOutput;

/// The tool's name, as the model calls it.
pub const NAME: &str = "search";

/// The tool's description and JSON schema, for the model.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: concat!(
            "Search the whole raw conversation, folded parts included, for a word or phrase ",
            "(ASCII case ignored). Returns an excerpt of each record that holds it, newest first, ",
            "each with the handle recall takes to bring the record back whole."
        )
        .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The text to look for, as it would appear."},
                "within": {"type": "string", "description": "A range handle (such as k3f9q:12-57, from a summary) to search only that range; by default the whole conversation."}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    }
}

/// Answer call `id` with `args` from `log`. Never fails: what is wrong is
/// an error result the model can act on.
pub fn call(log: &Log, id: &str, args: &Value) -> ToolOutput {
    match answer(log, id, args) {
        Ok(text) => ToolOutput::text(text, false),
        Err(e) => ToolOutput::text(e, true),
    }
}

fn answer(log: &Log, id: &str, args: &Value) -> Result<String, String> {
    let obj = object(args, "`query`, and optionally `within`")?;
    if let Some(k) = obj
        .keys()
        .find(|k| !["query", "within"].contains(&k.as_str()))
    {
        return Err(format!(
            "unknown argument `{k}`: search takes `query`, and optionally `within` (a range handle)"
        ));
    }
    let query = match obj.get("query") {
        Some(Value::String(q)) => q.as_str(),
        Some(_) => return Err("`query` must be a string: the text to look for".into()),
        None => return Err("missing `query`: the text to look for".into()),
    };
    if query.trim().is_empty() {
        return Err(RecallError::EmptyQuery.to_string());
    }
    let within = match handle(obj, "within")? {
        None => None,
        Some(h) => {
            let own = Tag::of(log).unwrap_or_default();
            if h.tag != own {
                return Err(RecallError::OtherConversation {
                    handle: h.to_string(),
                    tag: h.tag,
                    own,
                }
                .to_string());
            }
            match h.target {
                Target::Range(a, b) => Some((a, b)),
                Target::Record(_) | Target::Argument(..) => None,
            }
        }
    };
    // Everything before the call being answered (by position, as
    // handles count records).
    let before = log
        .records()
        .iter()
        .rposition(|r| matches!(&r.body, Body::ToolCall { id: i, .. } if i == id))
        .map(|i| position(log, i));
    let bounds = match (within, before) {
        (Some((a, b)), Some(s)) => Some((a, b.min(s.saturating_sub(1)))),
        (None, Some(s)) => Some((0, s.saturating_sub(1))),
        (w, None) => w,
    };
    let found = match bounds {
        // Nothing before the call (or an empty range): nothing found.
        Some((a, b)) if a > b || before == Some(0) => Default::default(),
        _ => search(log, query, bounds, DEFAULT_HITS).map_err(|e| e.to_string())?,
    };
    Ok(render_found(query.trim(), &found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::json_text::JsonText;
    use ctxfold_core::{Body, Record};

    fn log() -> Log {
        let bodies = vec![
            Body::TurnStart,
            Body::User {
                content: "find the needle".into(),
                author: None,
            },
            Body::ToolCall {
                id: "c1".into(),
                name: "grep".into(),
                arguments: JsonText::from(json!({"pattern": "x"})),
            },
            Body::ToolResult {
                id: "c1".into(),
                content: "src/hay.rs:3: a Needle in the hay".into(),
                is_error: false,
            },
            Body::ToolCall {
                id: "c2".into(),
                name: NAME.into(),
                arguments: JsonText::from(json!({"query": "needle"})),
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

    #[test]
    fn hits_carry_handles_and_the_call_itself_is_not_one() {
        let log = log();
        let tag = Tag::of(&log).unwrap_or_default();
        let out = call(&log, "c2", &json!({"query": "needle"}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains(&format!("{tag}:3 ")),
            "{}",
            out.content
        );
        assert!(
            out.content.contains(&format!("{tag}:1 ")),
            "{}",
            out.content
        );
        assert!(
            !out.content.contains(&format!("{tag}:4 ")),
            "{}",
            out.content
        );
        // A range handle narrows it; a record handle means everything.
        let out = call(
            &log,
            "c2",
            &json!({"query": "needle", "within": format!("{tag}:2-3")}),
        );
        assert!(
            !out.content.contains(&format!("{tag}:1 ")),
            "{}",
            out.content
        );
        assert!(
            out.content.contains(&format!("{tag}:3 ")),
            "{}",
            out.content
        );
        let out = call(
            &log,
            "c2",
            &json!({"query": "needle", "within": format!("{tag}:3")}),
        );
        assert!(
            out.content.contains(&format!("{tag}:1 ")),
            "{}",
            out.content
        );
    }

    #[test]
    fn what_is_wrong_is_an_error_result() {
        let log = log();
        let own = Tag::of(&log).unwrap_or_default();
        let other = if own.as_str() == "aaaaa" {
            "bbbbb"
        } else {
            "aaaaa"
        };
        for (args, says) in [
            (json!({"query": "  "}), "empty"),
            (json!({}), "missing `query`"),
            (json!({"query": 3}), "must be a string"),
            (
                json!({"query": "x", "within": "12-57"}),
                "not a recall handle",
            ),
            (
                json!({"query": "x", "within": format!("{other}:1-2")}),
                "another conversation",
            ),
            (json!({"query": "x", "limit": 2}), "unknown argument"),
        ] {
            let out = call(&log, "c2", &args);
            assert!(out.is_error, "{args}: {}", out.content);
            assert!(out.content.contains(says), "{args}: {}", out.content);
        }
    }
}
