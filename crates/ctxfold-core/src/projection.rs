//! The projection: `project(log) -> View`, the model's view of a log with
//! every active compaction applied (SPEC §4).
//!
//! It is a pure function of the log. For each model-visible event and each
//! content kind (reasoning, tool calls, summary) the winning compaction is
//! the latest-appended active one whose range covers the event and that has
//! an opinion on that kind. Summaries beat mechanical policies. Tool calls
//! and their results are decided together, at the call.
//!
//! Cost: one pass over the records with a sweep line. Compactions enter a
//! max-heap (by append order) when the pass reaches their first record and
//! are dropped lazily once it passes their last, so the cost is
//! O(events + compactions × log compactions), with no scan of all
//! compactions per event. The view borrows records from the log; stripped
//! arguments and one-line results are computed only when rendered, a
//! one-line result from what the log found in the result the first time
//! (see [`crate::diagnostics::ScanCell`]): rendering it again does not read
//! the result again.
//!
//! The code is laid out by job: `status` says which compactions are in
//! force and what each covers, `supersede` which of them revoking would
//! change the view, `sweep` makes the view, `strip` makes the
//! stripped calls and result lines; the view's types are here.

#[cfg(test)]
mod fixtures;
mod status;
mod strip;
mod supersede;
mod sweep;

use serde::Serialize;

use crate::diagnostics::ScanCell;
use crate::handle::{Handle, Tag, recall_hint};
use crate::json_text::JsonText;
use crate::record::{Body, Record};

pub use status::{
    Standing, active_or_deferred, compaction_status, compaction_status_as_of, covered_indices,
    standings,
};
pub use strip::{KEEP_ARGUMENT_CHARS, KEEP_DIAGNOSTICS, strip_arguments, stripped_result_line};
pub use sweep::{KEEP_RESULT_CHARS, for_each_item, project, project_as_of, project_with};

use strip::render_stripped;

pub use crate::text::clip_text;
use crate::text::clip_text_with;

/// The model's view of a log.
#[derive(Debug)]
pub struct View<'a> {
    /// The log's recall tag: the conversation part of every handle its
    /// folds carry (see [`crate::handle`]); `None` for an empty log.
    pub tag: Option<Tag>,
    /// What the model sees, in order.
    pub items: Vec<Item<'a>>,
    /// Model-visible events that are not in the view, and why.
    pub dropped: Vec<Dropped>,
    /// The compactions in force, by index of their record in the log.
    pub active: Vec<usize>,
    /// Compactions present but not in force, and why.
    pub inactive: Vec<(usize, Inactive)>,
}

/// Why a compaction is not in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inactive {
    /// A `compaction_reset` revoked it.
    Revoked,
    /// Its `deferred_until_turn` has not been reached.
    Deferred,
    /// Its range lies outside the log.
    OutOfBounds,
}

/// One element of the view.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A raw event, unchanged.
    Event {
        /// Index of the record in the log.
        index: usize,
        /// The record.
        record: &'a Record,
    },
    /// A tool call whose long argument values are replaced by placeholders
    /// (see [`strip_arguments`]).
    StrippedCall {
        /// Index of the record in the log.
        index: usize,
        /// The call.
        record: &'a Record,
        /// The log's recall tag (see [`crate::handle`]).
        tag: Tag,
        /// The record's position, the number its handle gives (see
        /// [`crate::handle`]).
        at: u32,
    },
    /// A tool result replaced by one line (see [`stripped_result_line`]).
    StrippedResult {
        /// Index of the record in the log.
        index: usize,
        /// The result.
        record: &'a Record,
        /// The tool's name, from its call.
        tool: &'a String,
        /// The log's cache of what the recognizer found in `record` (see
        /// [`Item::stripped_line`]).
        scan: &'a ScanCell,
        /// At most this many diagnostics shown (the compaction's
        /// `keep_diagnostics`, else [`KEEP_DIAGNOSTICS`]).
        keep_diagnostics: usize,
        /// The log's recall tag (see [`crate::handle`]).
        tag: Tag,
        /// The record's position, the number its handle gives (see
        /// [`crate::handle`]).
        at: u32,
    },
    /// A tool result or user message longer than its compaction's
    /// `clip_chars`, shown as its head and tail with a note (see
    /// [`clip_text`]); or longer than its `excerpt_chars`, shown as an
    /// excerpt (see [`crate::excerpt`]).
    Clipped {
        /// Index of the record in the log.
        index: usize,
        /// The record.
        record: &'a Record,
        /// The compaction's `clip_chars` (or `excerpt_chars`).
        keep_chars: usize,
        /// An excerpt (`excerpt_chars`), not a clip.
        excerpt: bool,
        /// The log's cache of the record's error-like lines (what an
        /// excerpt keeps, found once).
        scan: &'a ScanCell,
        /// The log's recall tag (see [`crate::handle`]).
        tag: Tag,
        /// The record's position, the number its handle gives (see
        /// [`crate::handle`]).
        at: u32,
    },
    /// A summary standing for a run of events: rendered as a user message
    /// naming the turns, then an assistant message with the text.
    Summary {
        /// Index of the first event it stands for.
        first: usize,
        /// Index of the last event it stands for.
        last: usize,
        /// First and last turn (0-based) the summary covers: the whole range
        /// of its compaction, also when a nested summary splits it.
        turns: (u32, u32),
        /// Index of the compaction record that holds the text.
        compaction: usize,
        /// The summary text.
        text: &'a String,
        /// The positions of the first and last records it stands for (its
        /// recall handle's range, see [`crate::handle`]).
        at: (u32, u32),
        /// The log's recall tag (see [`crate::handle`]).
        tag: Tag,
    },
    /// A user message put first because the view would otherwise start with
    /// the assistant. Stands for no event.
    Preamble,
}

/// A model-visible event left out of the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Index of the record in the log.
    pub index: usize,
    /// Why.
    pub reason: DropReason,
}

/// Why an event was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DropReason {
    /// `reasoning = strip` of the compaction at this index.
    ReasoningStripped {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// `omit` of the compaction at this index (call and result together).
    Omitted {
        /// Index of the compaction record.
        compaction: usize,
    },
    /// A call without its result or a result without its call (in the raw
    /// log, or because its partner was folded away).
    Unpaired,
}

/// The user message that introduces a summary (its lead): the turns it
/// stands for and, given one, the handle that recalls them.
pub fn summary_preamble(turns: (u32, u32), handle: Option<&Handle>) -> String {
    let hint = match handle {
        Some(h) => format!("; {} brings back their full text", recall_hint(h)),
        None => String::new(),
    };
    if turns.0 == turns.1 {
        format!(
            "[The text that follows summarizes turn {} of this conversation, which was compacted{hint}.]",
            turns.0 + 1
        )
    } else {
        format!(
            "[The text that follows summarizes turns {}–{} of this conversation, which were compacted{hint}.]",
            turns.0 + 1,
            turns.1 + 1
        )
    }
}

/// The user message put first when the view would start with the assistant.
pub const PREAMBLE: &str = "[The conversation continues.]";

impl Item<'_> {
    /// The indices of the raw events this item stands for.
    pub fn origin(&self) -> std::ops::RangeInclusive<usize> {
        match *self {
            Item::Event { index, .. }
            | Item::StrippedCall { index, .. }
            | Item::StrippedResult { index, .. }
            | Item::Clipped { index, .. } => index..=index,
            Item::Summary { first, last, .. } => first..=last,
            #[allow(clippy::reversed_empty_ranges)]
            Item::Preamble => 1..=0,
        }
    }

    /// The one line a stripped result shows ([`stripped_result_line`]),
    /// made from what the log found in the result: the result is read once
    /// per loaded log, however often its view is rendered or counted.
    /// `None` for any other item.
    pub fn stripped_line(&self) -> Option<String> {
        let Item::StrippedResult {
            record,
            tool,
            scan,
            keep_diagnostics,
            ..
        } = *self
        else {
            return None;
        };
        let Body::ToolResult {
            content, is_error, ..
        } = &record.body
        else {
            return None;
        };
        let found = scan.get_or_scan(content, *is_error);
        Some(render_stripped(
            tool,
            *is_error,
            found.chars,
            &found.diagnostics,
            keep_diagnostics,
            self.handle().as_ref(),
        ))
    }

    /// The recall handle of what this item folds (see [`crate::handle`]):
    /// the record a stripped or clipped item replaces, the records a
    /// summary stands for. `None` for an item shown as it is.
    pub fn handle(&self) -> Option<Handle> {
        match *self {
            Item::StrippedCall { tag, at, .. }
            | Item::StrippedResult { tag, at, .. }
            | Item::Clipped { tag, at, .. } => Some(Handle::record(tag, u64::from(at))),
            Item::Summary { at, tag, .. } => {
                Some(Handle::range(tag, u64::from(at.0), u64::from(at.1)))
            }
            Item::Event { .. } | Item::Preamble => None,
        }
    }

    /// The arguments a stripped call shows ([`strip_arguments`]), each
    /// placeholder with the handle of the value it replaced; `None` for
    /// any other item.
    pub fn stripped_arguments(&self) -> Option<JsonText> {
        let Item::StrippedCall {
            record, tag, at, ..
        } = *self
        else {
            return None;
        };
        let Body::ToolCall { arguments, .. } = &record.body else {
            return None;
        };
        Some(strip_arguments(arguments, Some((tag, u64::from(at)))))
    }

    /// The user message that leads a summary ([`summary_preamble`], with
    /// its handle); `None` for any other item.
    pub fn summary_lead(&self) -> Option<String> {
        let Item::Summary { turns, .. } = *self else {
            return None;
        };
        Some(summary_preamble(turns, self.handle().as_ref()))
    }
}

impl Item<'_> {
    /// The text a clipped item shows ([`clip_text`], or the excerpt
    /// [`crate::excerpt::excerpt_text`]); `None` for any other item.
    pub fn clipped_text(&self) -> Option<String> {
        let Item::Clipped {
            record,
            keep_chars,
            excerpt,
            scan,
            tag,
            at,
            ..
        } = *self
        else {
            return None;
        };
        let hint = recall_hint(&Handle::record(tag, u64::from(at)));
        match &record.body {
            Body::ToolResult { content, .. } | Body::User { content, .. } if excerpt => {
                let marks = scan.error_like_lines(content);
                Some(crate::excerpt::excerpt_text(
                    content,
                    keep_chars,
                    marks,
                    Some(&hint),
                ))
            }
            Body::ToolResult { content, .. } | Body::User { content, .. } => {
                Some(clip_text_with(content, keep_chars, Some(&hint)))
            }
            _ => None,
        }
    }
}
