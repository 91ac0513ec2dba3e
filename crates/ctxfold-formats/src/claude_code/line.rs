//! A Claude Code session line as ctxfold reads it: the envelope fields it
//! uses (ids and links, the prompt a user line answers, titles, the marks
//! of Claude Code's own compaction). Read from the line's parsed JSON,
//! borrowed; every other key stays in that JSON, which is what is written
//! back. The content of a line's `message` is an Anthropic message's,
//! read as `ctxfold_wire::anthropic` blocks.

use ctxfold_core::Object;
use ctxfold_wire::anthropic::Message;
use serde::Deserialize;
use serde_json::Value;

use crate::session_lines::Field;

/// The keys of a line ctxfold sets itself when it writes one.
pub(crate) mod key {
    /// The message of a `user` or `assistant` line.
    pub(crate) const MESSAGE: &str = "message";
    /// The line's id.
    pub(crate) const UUID: &str = "uuid";
    /// The line before it in the chain.
    pub(crate) const PARENT_UUID: &str = "parentUuid";
    /// The session's id.
    pub(crate) const SESSION_ID: &str = "sessionId";
    /// The links to other lines an export renumbers, besides
    /// [`PARENT_UUID`]: those that name a line or nothing, and those left
    /// as they are when the line they name is not written.
    pub(crate) const LINKS: [&str; 2] = ["logicalParentUuid", "leafUuid"];
    /// See [`LINKS`].
    pub(crate) const REFERENCES: [&str; 2] = ["messageId", "sourceToolAssistantUUID"];
    /// Claude Code's own copy of a tool's raw output.
    pub(crate) const TOOL_USE_RESULT: &str = "toolUseResult";
}

/// The envelope of a line: what ctxfold reads of it besides its message.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Envelope<'a> {
    /// `user`, `assistant`, `system`, `summary`, …
    #[serde(rename = "type", borrow)]
    pub(crate) kind: Field<'a>,
    /// A `system` line's kind (`compact_boundary`, …).
    #[serde(borrow)]
    pub(crate) subtype: Field<'a>,
    /// The line's id.
    #[serde(borrow)]
    pub(crate) uuid: Field<'a>,
    /// The line before it.
    #[serde(borrow)]
    pub(crate) parent_uuid: Field<'a>,
    /// The line a compaction boundary follows on from.
    #[serde(borrow)]
    pub(crate) logical_parent_uuid: Field<'a>,
    /// The line a `summary` line names.
    #[serde(borrow)]
    pub(crate) leaf_uuid: Field<'a>,
    /// The message a `file-history-snapshot` line belongs to.
    #[serde(borrow)]
    pub(crate) message_id: Field<'a>,
    /// The assistant line whose tool call a tool result line answers.
    #[serde(rename = "sourceToolAssistantUUID", borrow)]
    pub(crate) source_tool_assistant_uuid: Field<'a>,
    /// The session's id.
    #[serde(borrow)]
    pub(crate) session_id: Field<'a>,
    /// The working folder.
    #[serde(borrow)]
    pub(crate) cwd: Field<'a>,
    /// The prompt a user line belongs to.
    #[serde(borrow)]
    pub(crate) prompt_id: Field<'a>,
    /// A user line holding Claude Code's compaction summary.
    #[serde(borrow)]
    pub(crate) is_compact_summary: Field<'a>,
    /// A subagent's line.
    #[serde(borrow)]
    pub(crate) is_sidechain: Field<'a>,
    /// A `custom-title` line's title.
    #[serde(borrow)]
    pub(crate) custom_title: Field<'a>,
    /// An `ai-title` line's title.
    #[serde(borrow)]
    pub(crate) ai_title: Field<'a>,
    /// A `summary` line's summary.
    #[serde(borrow)]
    pub(crate) summary: Field<'a>,
    /// A compaction boundary's details.
    #[serde(borrow)]
    pub(crate) compact_metadata: Option<CompactMetadata<'a>>,
}

/// A compaction boundary's `compactMetadata`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CompactMetadata<'a> {
    /// The recent messages kept verbatim after the summary.
    #[serde(borrow)]
    pub(crate) preserved_segment: Option<PreservedSegment<'a>>,
}

/// `compactMetadata.preservedSegment`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PreservedSegment<'a> {
    /// The first of them.
    #[serde(borrow)]
    pub(crate) head_uuid: Field<'a>,
}

impl<'a> Envelope<'a> {
    /// The envelope of line `v`; a line of an unexpected shape reads as
    /// one without these fields.
    pub(crate) fn of(v: &'a Value) -> Envelope<'a> {
        Envelope::deserialize(v).unwrap_or_default()
    }

    /// [`Envelope::of`] a line's object.
    pub(crate) fn of_object(o: &'a Object) -> Envelope<'a> {
        Envelope::deserialize(o).unwrap_or_default()
    }

    /// The first message Claude Code kept verbatim after its summary.
    pub(crate) fn preserved_head(&self) -> Option<&'a str> {
        self.compact_metadata
            .as_ref()?
            .preserved_segment
            .as_ref()?
            .head_uuid
            .str()
    }

    /// Whether it is the user line holding Claude Code's compaction
    /// summary.
    pub(crate) fn is_compact_summary(&self) -> bool {
        self.is_compact_summary.bool() == Some(true)
    }
}

/// The content of line `v`'s message, taken out with `null` left in its
/// place (what the records' hints keep of the line), when it is content
/// ctxfold reads: a string, or blocks. Otherwise `None`, `v` unchanged.
pub(crate) fn take_content(v: &mut Value) -> Option<Value> {
    let message = v.as_object_mut()?.get_mut(key::MESSAGE)?.as_object_mut()?;
    let content = Message::content_mut(message)?;
    match content {
        Value::String(_) => {}
        Value::Array(a) if !a.is_empty() => {}
        _ => return None,
    }
    Some(content.take())
}

/// Put `content` back as the content of line `v`'s message.
pub(crate) fn put_content(v: &mut Object, content: Value) {
    if let Some(Value::Object(m)) = v.get_mut(key::MESSAGE)
        && let Some(c) = Message::content_mut(m)
    {
        *c = content;
    }
}

/// The model of line `env`'s message, if it names one (what a line
/// ctxfold makes says).
pub(crate) fn model(env: &Object) -> Option<Value> {
    #[derive(Deserialize)]
    struct Said {
        message: Message,
    }
    #[derive(Deserialize)]
    struct Message {
        model: Value,
    }
    Said::deserialize(env).ok().map(|s| s.message.model)
}
