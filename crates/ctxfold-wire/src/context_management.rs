//! The providers' own context management, as a request asks for it and an
//! answer reports it (issue 29): Anthropic's `context_management.edits`
//! (`clear_tool_uses_20250919`, `clear_thinking_20251015`,
//! `compact_20260112`), its on-demand `compaction: {"type": "summarize"}`
//! and the `compaction` blocks it returns; OpenAI Responses'
//! `context_management: [{"type": "compaction", …}]`, the `compaction`
//! items it returns, and Codex's `compaction_trigger` input item.
//!
//! Unknown edits and fields are kept (`Other`, `extra`), as everywhere in
//! this crate.

use serde::{Deserialize, Serialize};

use crate::{Object, Value};

/// The type of Anthropic's compaction block and of OpenAI's compaction
/// item.
pub const COMPACTION: &str = "compaction";
/// The type of the input item Codex ends a request with to have the
/// conversation compacted remotely.
pub const COMPACTION_TRIGGER: &str = "compaction_trigger";
/// The edit that clears old tool uses.
pub const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";
/// The edit that clears old thinking.
pub const CLEAR_THINKING: &str = "clear_thinking_20251015";
/// The edit that compacts at a threshold.
pub const COMPACT: &str = "compact_20260112";

/// Anthropic's `context_management` request parameter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextManagement {
    /// The edits, applied in order.
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// Other keys, as sent.
    #[serde(flatten)]
    pub extra: Object,
}

/// One of Anthropic's context edits, by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// `clear_tool_uses_20250919`.
    ClearToolUses(ClearToolUses),
    /// `clear_thinking_20251015`.
    ClearThinking(ClearThinking),
    /// `compact_20260112`.
    Compact(Compact),
    /// An edit of a type not known here, as sent.
    Other(Value),
}

/// A threshold or an amount: `{"type": "input_tokens" | "tool_uses" |
/// "thinking_turns", "value": N}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Amount {
    /// What is counted.
    #[serde(rename = "type")]
    pub kind: String,
    /// How many.
    pub value: u64,
}

/// `clear_tool_uses_20250919`: when the input is over `trigger`, the
/// results of all but the last `keep` tool uses are cleared (their inputs
/// too with `clear_tool_inputs`), at least `clear_at_least` tokens, never
/// those of `exclude_tools`.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClearToolUses {
    /// Default 100,000 input tokens.
    pub trigger: Option<Amount>,
    /// Default 3 tool uses.
    pub keep: Option<Amount>,
    /// The least to clear once triggered, in input tokens.
    pub clear_at_least: Option<Amount>,
    /// Tools whose uses are never cleared.
    pub exclude_tools: Option<Vec<String>>,
    /// Clear the calls' inputs too (`true`), or only their results.
    pub clear_tool_inputs: Option<bool>,
    /// Other keys, as sent.
    #[serde(flatten)]
    pub extra: Object,
}

/// `clear_thinking_20251015`: the thinking of all but the last `keep`
/// assistant turns is cleared; `keep: "all"` keeps it all.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClearThinking {
    /// `{"type": "thinking_turns", "value": N}` or `"all"`; default 1.
    pub keep: Option<Value>,
    /// Other keys, as sent.
    #[serde(flatten)]
    pub extra: Object,
}

impl ClearThinking {
    /// How many of the last assistant turns keep their thinking (`None`:
    /// all of them).
    pub fn keep_turns(&self) -> Option<u64> {
        match &self.keep {
            None => Some(1),
            Some(Value::String(s)) if s == "all" => None,
            Some(v) => Some(v.get("value").and_then(Value::as_u64).unwrap_or(1)),
        }
    }
}

/// `compact_20260112`: when the input is over `trigger`, the conversation
/// is summarized into a `compaction` block that replaces what it covers.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Compact {
    /// Default 150,000 input tokens.
    pub trigger: Option<Amount>,
    /// Answer with the compaction block alone (`stop_reason:
    /// "compaction"`), the client continuing after it.
    pub pause_after_compaction: Option<bool>,
    /// Instructions for the summary.
    pub instructions: Option<String>,
    /// Other keys, as sent.
    #[serde(flatten)]
    pub extra: Object,
}

impl Serialize for Edit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ty, mut o) = match self {
            Edit::ClearToolUses(e) => (CLEAR_TOOL_USES, crate::object(e)),
            Edit::ClearThinking(e) => (CLEAR_THINKING, crate::object(e)),
            Edit::Compact(e) => (COMPACT, crate::object(e)),
            Edit::Other(v) => return v.serialize(s),
        };
        let mut typed = Object::new();
        typed.insert("type".into(), ty.into());
        typed.append(&mut o);
        typed.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Edit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let typed = |v: &Value| {
            let mut o = v.as_object().cloned().unwrap_or_default();
            o.remove("type");
            Value::Object(o)
        };
        // An edit whose fields do not read as documented is kept as sent.
        let edit = match v.get("type").and_then(Value::as_str) {
            Some(CLEAR_TOOL_USES) => serde_json::from_value(typed(&v))
                .ok()
                .map(Edit::ClearToolUses),
            Some(CLEAR_THINKING) => serde_json::from_value(typed(&v))
                .ok()
                .map(Edit::ClearThinking),
            Some(COMPACT) => serde_json::from_value(typed(&v)).ok().map(Edit::Compact),
            _ => None,
        };
        Ok(edit.unwrap_or(Edit::Other(v)))
    }
}

/// What a request body asks of the provider's context management.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asks {
    /// Anthropic's edits (`context_management.edits`).
    pub edits: Vec<Edit>,
    /// Anthropic's on-demand compaction (`compaction: {"type":
    /// "summarize", "instructions"?}`), as sent.
    pub summarize: Option<Value>,
    /// OpenAI Responses' `context_management` entries, as sent.
    pub responses: Vec<Value>,
    /// The input ends with Codex's `compaction_trigger` item.
    pub trigger: bool,
}

impl Asks {
    /// What an Anthropic Messages body asks.
    pub fn of_messages(body: &Object) -> Asks {
        let edits = body
            .get("context_management")
            .and_then(|c| serde_json::from_value::<ContextManagement>(c.clone()).ok())
            .map(|c| c.edits)
            .unwrap_or_default();
        Asks {
            edits,
            summarize: body.get(COMPACTION).filter(|v| !v.is_null()).cloned(),
            ..Asks::default()
        }
    }

    /// What an OpenAI Responses body asks.
    pub fn of_responses(body: &Object) -> Asks {
        let responses = match body.get("context_management") {
            Some(Value::Array(a)) => a.clone(),
            Some(v @ Value::Object(_)) => vec![v.clone()],
            _ => Vec::new(),
        };
        let trigger = match body.get("input") {
            Some(Value::Array(items)) => items.last().is_some_and(is_trigger),
            _ => false,
        };
        Asks {
            responses,
            trigger,
            ..Asks::default()
        }
    }

    /// Whether anything is asked.
    pub fn any(&self) -> bool {
        !self.edits.is_empty()
            || self.summarize.is_some()
            || !self.responses.is_empty()
            || self.trigger
    }

    /// Whether a compaction is asked for (at a threshold or now): the
    /// provider replaces history with a summary, which a compaction of
    /// ctxfold's in the same request would fight.
    pub fn compaction(&self) -> bool {
        self.summarize.is_some()
            || self.trigger
            || self.edits.iter().any(|e| matches!(e, Edit::Compact(_)))
            || (self.responses.iter())
                .any(|e| e.get("type").and_then(Value::as_str) == Some(COMPACTION))
    }
}

/// Whether `v` (a content block or an input item) is a compaction.
pub fn is_compaction(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some(COMPACTION)
}

/// Whether `v` (an input item) is Codex's `compaction_trigger`.
pub fn is_trigger(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some(COMPACTION_TRIGGER)
}

/// A Messages request body without what an upstream lacking the
/// providers' context management must not get: `context_management`,
/// `compaction`, and compaction blocks wherever a client put them (a
/// message's content, a tool result's inside it, the system prompt's
/// blocks), with messages and a system prompt left empty by that.
pub fn strip_messages_request(o: &mut Object) {
    o.remove("context_management");
    o.remove(COMPACTION);
    if let Some(Value::Array(system)) = o.get_mut("system") {
        strip_blocks(system);
        if system.is_empty() {
            o.remove("system");
        }
    }
    if let Some(Value::Array(msgs)) = o.get_mut("messages") {
        for m in msgs.iter_mut() {
            if let Some(Value::Array(blocks)) = m.get_mut("content") {
                strip_blocks(blocks);
            }
        }
        msgs.retain(|m| !matches!(m.get("content"), Some(Value::Array(b)) if b.is_empty()));
    }
}

/// A Responses request body without what an upstream lacking the
/// providers' context management must not get: `context_management`,
/// compaction items and Codex's trigger, and compaction blocks inside an
/// item's `content` or `output`.
pub fn strip_responses_request(o: &mut Object) {
    o.remove("context_management");
    if let Some(Value::Array(items)) = o.get_mut("input") {
        items.retain(|i| !is_compaction(i) && !is_trigger(i));
        for i in items.iter_mut() {
            for k in ["content", "output"] {
                if let Some(Value::Array(parts)) = i.get_mut(k) {
                    strip_blocks(parts);
                }
            }
        }
    }
}

/// `blocks` without compaction blocks, at any depth of a block's own
/// `content` (a tool result's).
pub fn strip_blocks(blocks: &mut Vec<Value>) {
    blocks.retain(|b| !is_compaction(b));
    for b in blocks.iter_mut() {
        if let Some(Value::Array(inner)) = b.get_mut("content") {
            strip_blocks(inner);
        }
    }
}

/// An answer's `context_management.applied_edits` (Anthropic), as sent.
pub fn applied_edits(answer: &Value) -> Option<&Value> {
    answer
        .get("context_management")?
        .get("applied_edits")
        .filter(|v| v.is_array())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_read_as_documented_and_write_back_as_sent() {
        let sent = json!({"edits": [
            {"type": "clear_thinking_20251015", "keep": "all"},
            {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 30000},
             "keep": {"type": "tool_uses", "value": 2}, "exclude_tools": ["web_search"]},
            {"type": "compact_20260112", "pause_after_compaction": true, "instructions": "Keep paths."},
            {"type": "future_edit_20270101", "x": 1}
        ]});
        let c: ContextManagement = serde_json::from_value(sent.clone()).unwrap();
        assert!(matches!(&c.edits[0], Edit::ClearThinking(t) if t.keep_turns().is_none()));
        let Edit::ClearToolUses(t) = &c.edits[1] else {
            panic!("{:?}", c.edits[1])
        };
        assert_eq!(t.keep.as_ref().map(|k| k.value), Some(2));
        assert!(matches!(&c.edits[2], Edit::Compact(k) if k.pause_after_compaction == Some(true)));
        assert!(matches!(&c.edits[3], Edit::Other(_)));
        assert_eq!(serde_json::to_value(&c).unwrap(), sent);
    }

    #[test]
    fn a_request_asks_for_compaction_only_when_it_names_one() {
        let o = |v: Value| v.as_object().cloned().unwrap();
        // Claude Code's every request: an edit, not a compaction.
        let cc = Asks::of_messages(&o(json!({"context_management": {"edits": [
            {"type": "clear_thinking_20251015", "keep": "all"}]}})));
        assert!(cc.any() && !cc.compaction());
        let auto = Asks::of_messages(&o(json!({"context_management": {"edits": [
            {"type": "compact_20260112"}]}})));
        assert!(auto.compaction());
        assert!(Asks::of_messages(&o(json!({"compaction": {"type": "summarize"}}))).compaction());
        let r = Asks::of_responses(&o(json!({"context_management": [
            {"type": "compaction", "compact_threshold": 1000}]})));
        assert!(r.compaction());
        let codex = Asks::of_responses(&o(json!({"input": [
            {"type": "message", "role": "user", "content": "x"}, {"type": "compaction_trigger"}]})));
        assert!(codex.trigger && codex.compaction());
        assert!(!Asks::of_responses(&o(json!({"input": "hi"}))).any());
    }
}
