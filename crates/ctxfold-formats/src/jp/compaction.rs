//! JP's `compaction` record and ctxfold's compaction, both ways.

use ctxfold_core::Object;
use ctxfold_core::compaction::{
    Compaction, Provenance, ReasoningPolicy, Source, Summary, ToolPolicy,
};
use serde_json::Value;

use super::import::take_str;

pub(super) fn compaction_from_jp(obj: &mut Object) -> Result<Compaction, String> {
    let turn = |v: Option<Value>, key: &str| -> Result<u32, String> {
        v.as_ref()
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("has no `{key}` turn number"))
    };
    let from = turn(obj.shift_remove("from_turn"), "from_turn")?;
    let to = turn(obj.shift_remove("to_turn"), "to_turn")?;
    let mut c = Compaction::new(from, to, Source::User);
    match obj.shift_remove("summary") {
        None | Some(Value::Null) => {}
        Some(Value::Object(mut s)) => {
            let text = take_str(&mut s, "summary")?;
            c.summary = Some(Summary {
                text,
                provenance: Provenance::Derived {
                    summarizer: "jp".into(),
                    version: None,
                    instructions: None,
                    method: None,
                },
            });
        }
        Some(_) => return Err("has a `summary` that is not {\"summary\": text}".into()),
    }
    match obj.shift_remove("reasoning") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "strip" => c.reasoning = Some(ReasoningPolicy::Strip),
        Some(_) => return Err("has a `reasoning` other than \"strip\"".into()),
    }
    match obj.shift_remove("tool_calls") {
        None | Some(Value::Null) => {}
        // JP's own tool policy, free-form flags read as JP reads them.
        Some(Value::Object(t)) => {
            let on = |k: &str| {
                t.get(k)
                    .is_some_and(|v| !matches!(v, Value::Null | Value::Bool(false)))
            };
            c.tool_calls = match t.get("policy").and_then(Value::as_str) {
                Some("omit") => Some(ToolPolicy::Omit),
                Some("strip") => match (on("request"), on("response")) {
                    (true, false) => Some(ToolPolicy::StripRequests),
                    (false, true) => Some(ToolPolicy::StripResponses),
                    _ => Some(ToolPolicy::Strip),
                },
                _ => return Err("has a `tool_calls.policy` other than strip or omit".into()),
            };
        }
        Some(_) => return Err("has a `tool_calls` that is not an object".into()),
    }
    Ok(c)
}

pub(super) fn compaction_to_jp(c: &Compaction) -> Object {
    let mut o = Object::new();
    o.insert("from_turn".into(), Value::from(c.from_turn));
    o.insert("to_turn".into(), Value::from(c.to_turn));
    if let Some(s) = &c.summary {
        let mut inner = Object::new();
        inner.insert("summary".into(), Value::String(s.text.clone()));
        o.insert("summary".into(), Value::Object(inner));
    }
    if c.reasoning.is_some() {
        o.insert("reasoning".into(), Value::String("strip".into()));
    }
    if let Some(p) = c.tool_calls {
        let mut t = Object::new();
        let (policy, req, resp) = match p {
            ToolPolicy::Omit => ("omit", None, None),
            ToolPolicy::Strip => ("strip", Some(true), Some(true)),
            ToolPolicy::StripRequests => ("strip", Some(true), Some(false)),
            ToolPolicy::StripResponses => ("strip", Some(false), Some(true)),
        };
        t.insert("policy".into(), Value::String(policy.into()));
        if let (Some(a), Some(b)) = (req, resp) {
            t.insert("request".into(), Value::Bool(a));
            t.insert("response".into(), Value::Bool(b));
        }
        o.insert("tool_calls".into(), Value::Object(t));
    }
    o
}
