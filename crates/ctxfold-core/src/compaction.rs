//! The overlay records: [`Compaction`] folds a range of the log out of the
//! model's view, [`CompactionReset`] revokes or restores compactions.
//!
//! Both are appended to the log like any event; nothing is ever rewritten.
//! Summaries are stored in the record (they cost money and are not
//! reproducible); mechanical policies are stored as policies and applied by
//! the projection.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A compaction: which events it covers and what it does to them.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// First covered turn, 0-based (people see and type it 1-based).
    pub from_turn: u32,
    /// Last covered turn, 0-based, inclusive.
    pub to_turn: u32,
    /// First covered record, resolved at creation.
    pub from_seq: Option<u64>,
    /// Last covered record, inclusive, resolved at creation. May end inside
    /// a turn at a step boundary.
    pub to_seq: Option<u64>,
    /// Text that replaces every model-visible event in the range.
    pub summary: Option<Summary>,
    /// What happens to reasoning in the range.
    pub reasoning: Option<ReasoningPolicy>,
    /// What happens to tool calls and results in the range.
    pub tool_calls: Option<ToolPolicy>,
    /// Per-tool policies that win over `tool_calls`, baked from config at
    /// creation.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_overrides: BTreeMap<String, ToolOverride>,
    /// Who asked for it.
    #[serde(default)]
    pub source: Source,
    /// One sentence on why (at most [`NOTE_MAX_CHARS`] characters).
    pub note: Option<String>,
    /// Takes effect only once the log's highest turn index reaches this.
    pub deferred_until_turn: Option<u32>,
    /// An automatic firing's budget, sizes and escalation steps.
    pub budget: Option<crate::firing::Firing>,
    /// Tool results and user messages in the range longer than this many
    /// characters are shown as their head and tail with a note saying how
    /// much was left out (the record itself is untouched).
    pub clip_chars: Option<u32>,
    /// Tool results and user messages in the range longer than this many
    /// characters are shown as an excerpt: their head and tail, every
    /// error-like line between them and a count of what was left out
    /// (see [`crate::excerpt`]; the record itself is untouched). What
    /// automatic compaction records for an oversized output when it
    /// arrives, so the text the model sees for it never changes.
    pub excerpt_chars: Option<u32>,
    /// At most this many diagnostics a result stripped by this compaction
    /// keeps in its one line, the rest counted (default
    /// [`KEEP_DIAGNOSTICS`](crate::projection::KEEP_DIAGNOSTICS)); baked
    /// from the rule at creation, so the projection needs no config.
    pub keep_diagnostics: Option<u32>,
    /// Fields this version does not know, kept for the round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Compaction {
    /// What the record says it does, in words: its summary and where it
    /// came from, its reasoning and tool policies, its per-tool overrides.
    pub fn describe(&self) -> Vec<String> {
        let name = |v: &dyn erased::Named| v.name();
        let mut out = Vec::new();
        match self.summary.as_ref().map(|s| &s.provenance) {
            Some(Provenance::Derived { summarizer, .. }) => {
                out.push(format!("summary by {summarizer}"))
            }
            Some(Provenance::Supplied { author }) => {
                out.push(format!("summary written by {}", name(author)))
            }
            None => {}
        }
        if self.reasoning.is_some() {
            out.push("strip reasoning".into());
        }
        if let Some(t) = self.tool_calls {
            out.push(
                match t {
                    ToolPolicy::Strip => "strip tool calls",
                    ToolPolicy::StripRequests => "strip tool requests",
                    ToolPolicy::StripResponses => "strip tool results",
                    ToolPolicy::Omit => "omit tool calls",
                }
                .into(),
            );
        }
        for (tool, o) in &self.tool_overrides {
            out.push(format!("{tool}: {}", name(o)));
        }
        if let Some(n) = self.clip_chars {
            out.push(format!("clip units over {n} characters"));
        }
        if let Some(n) = self.excerpt_chars {
            out.push(format!("excerpt units over {n} characters"));
        }
        if let Some(n) = self.keep_diagnostics {
            out.push(format!("keep {n} diagnostics a stripped result"));
        }
        out
    }
}

mod erased {
    /// The name a value serializes to (`user`, `strip-responses`, …).
    pub trait Named {
        fn name(&self) -> String;
    }
    impl<T: serde::Serialize> Named for T {
        fn name(&self) -> String {
            serde_json::to_value(self)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        }
    }
}

/// Longest note kept; longer notes are truncated, not refused.
pub const NOTE_MAX_CHARS: usize = 200;

/// A summary and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The text the model sees instead of the range.
    pub text: String,
    /// How the text was made.
    pub provenance: Provenance,
}

/// Where a summary came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Provenance {
    /// Made by a summarizer from the raw events; can be made again.
    Derived {
        /// The summarizer: `digest` or `provider/model`.
        summarizer: String,
        /// Summarizer version (the digest's) or instructions' fingerprint.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// Instructions given to a model summarizer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instructions: Option<String>,
        /// How an over-long range was handled (`chunked`, `pruned`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
    },
    /// Typed by a person or written by the assistant; cannot be widened.
    Supplied {
        /// Who wrote it.
        author: Source,
    },
}

/// What to do with reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReasoningPolicy {
    /// Drop reasoning events.
    Strip,
}

/// What to do with tool calls and their results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolPolicy {
    /// Strip long argument values and replace results with one line.
    Strip,
    /// Strip long argument values only.
    StripRequests,
    /// Replace results with one line only.
    StripResponses,
    /// Drop call and result together.
    Omit,
}

/// A per-tool policy: a [`ToolPolicy`] or `keep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolOverride {
    /// Leave this tool's calls untouched.
    Keep,
    /// See [`ToolPolicy::Strip`].
    Strip,
    /// See [`ToolPolicy::StripRequests`].
    StripRequests,
    /// See [`ToolPolicy::StripResponses`].
    StripResponses,
    /// See [`ToolPolicy::Omit`].
    Omit,
}

/// Who made a compaction or wrote a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A person, through a command or config.
    #[default]
    User,
    /// The assistant, through the `compact` tool.
    Assistant,
    /// The automatic trigger.
    Auto,
    /// The agent that wrote an imported session, compacting its own
    /// history (Claude Code's `/compact`, Codex's `compacted` line).
    Agent,
    /// The model provider, on its own servers (Anthropic's `compaction`
    /// block, OpenAI's `compaction` item): recorded as it said, since
    /// only it can undo it.
    Provider,
    /// A client asking for the providers' context management of an
    /// upstream that has none, which ctxfold emulated (undoable).
    Client,
}

/// Revokes or restores compactions. Undo is an append too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionReset {
    /// The compactions (by `seq`) this record acts on.
    pub targets: ResetTargets,
    /// `false` revokes, `true` restores what an earlier reset revoked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restore: bool,
    /// Fields this version does not know, kept for the round trip.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Which compactions a [`CompactionReset`] names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResetTargets {
    /// Every compaction appended before the reset.
    All(AllMarker),
    /// These compactions, by `seq`.
    Some(Vec<u64>),
}

/// The literal string `"all"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllMarker {
    /// `"all"`
    All,
}

impl From<ToolPolicy> for ToolOverride {
    fn from(p: ToolPolicy) -> ToolOverride {
        match p {
            ToolPolicy::Strip => ToolOverride::Strip,
            ToolPolicy::StripRequests => ToolOverride::StripRequests,
            ToolPolicy::StripResponses => ToolOverride::StripResponses,
            ToolPolicy::Omit => ToolOverride::Omit,
        }
    }
}

impl Compaction {
    /// A compaction over turns `from_turn..=to_turn` (0-based) with no
    /// policies yet.
    pub fn new(from_turn: u32, to_turn: u32, source: Source) -> Self {
        Compaction {
            from_turn,
            to_turn,
            from_seq: None,
            to_seq: None,
            summary: None,
            reasoning: None,
            tool_calls: None,
            tool_overrides: BTreeMap::new(),
            source,
            note: None,
            deferred_until_turn: None,
            budget: None,
            clip_chars: None,
            excerpt_chars: None,
            keep_diagnostics: None,
            extra: Map::new(),
        }
    }

    /// Whether it only excerpts (`excerpt_chars` and no other policy):
    /// it changes how an output that just arrived is shown, and folds no
    /// band of history, so where the next band of automatic compaction
    /// starts does not depend on it.
    pub fn is_excerpt(&self) -> bool {
        self.excerpt_chars.is_some()
            && self.summary.is_none()
            && self.reasoning.is_none()
            && self.tool_calls.is_none()
            && self.tool_overrides.is_empty()
            && self.clip_chars.is_none()
    }

    /// Set the note, truncated to [`NOTE_MAX_CHARS`] characters.
    pub fn with_note(mut self, note: &str) -> Self {
        self.note = Some(truncate_note(note));
        self
    }
}

/// Truncate a note to [`NOTE_MAX_CHARS`] characters, marking the cut.
pub fn truncate_note(note: &str) -> String {
    crate::text::cut_chars(note, NOTE_MAX_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Body, Record};
    use serde_json::json;

    #[test]
    fn compaction_record_round_trips() {
        let mut c = Compaction::new(1, 4, Source::Assistant).with_note("old tool output");
        c.reasoning = Some(ReasoningPolicy::Strip);
        c.tool_calls = Some(ToolPolicy::StripResponses);
        c.tool_overrides.insert("search".into(), ToolOverride::Keep);
        c.summary = Some(Summary {
            text: "We did things.".into(),
            provenance: Provenance::Supplied {
                author: Source::Assistant,
            },
        });
        c.deferred_until_turn = Some(5);
        let rec = Record::new(9, "2026-11-30T00:00:00Z", Body::Compaction(Box::new(c)));
        let obj = rec.to_object();
        assert_eq!(obj["tool_calls"], json!("strip-responses"));
        assert_eq!(
            obj["summary"]["provenance"],
            json!({"kind": "supplied", "author": "assistant"})
        );
        let (back, warn) = Record::from_object(obj).unwrap();
        assert!(warn.is_none());
        assert_eq!(back, rec);
    }

    #[test]
    fn reset_targets_all_or_list() {
        for targets in [json!("all"), json!([3, 7])] {
            let input =
                json!({"seq": 10, "ts": "t", "type": "compaction_reset", "targets": targets});
            let Value::Object(obj) = input.clone() else {
                unreachable!()
            };
            let (rec, warn) = Record::from_object(obj).unwrap();
            assert!(warn.is_none(), "{warn:?}");
            assert!(matches!(rec.body, Body::CompactionReset(_)));
            assert_eq!(Value::Object(rec.to_object()), input);
        }
    }

    #[test]
    fn long_note_is_truncated_not_refused() {
        let c = Compaction::new(0, 0, Source::User).with_note(&"x".repeat(500));
        assert_eq!(c.note.unwrap().chars().count(), NOTE_MAX_CHARS);
    }
}
