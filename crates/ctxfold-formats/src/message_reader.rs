//! A chat request's messages read one at a time, and cut back to an
//! earlier message.
//!
//! The reader reads each message with the reading functions its chat
//! format defines (`reading::Reading`), the ones the three formats'
//! `from_json` read a whole request with, so a request read whole and one
//! read message by message give the same records. It sits above the
//! formats, which sit above `reading` and `wire` (whose [`Wire`] is
//! re-exported here), so none of them imports another in a cycle.
//!
//! The proxy keeps a reader per conversation between requests: an agent's
//! next request repeats the last one and adds a message or two, so it cuts
//! the reader back to the messages that are unchanged and reads only the
//! rest.
//!
//! Records are final as they are read, with one exception: pairing (see
//! `pairing`) renames a repeated tool-call id across the whole transcript.
//! [`MessageReader::needs_pairing`] says when that would change something;
//! [`MessageReader::into_transcript`] always pairs.

use std::collections::HashMap;
use std::ops::Range;

use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

use crate::Transcript;
use crate::chat::Records;
use crate::reading::{Reading, Side, transcript};
use crate::{anthropic, openai, responses};

pub use crate::wire::Wire;

/// The reading functions of `wire`'s format.
fn reading(wire: Wire) -> &'static Reading {
    match wire {
        Wire::OpenAi => &openai::READING,
        Wire::Anthropic => &anthropic::READING,
        Wire::Responses => &responses::READING,
    }
}

/// Where one message's reading ended.
#[derive(Clone, Copy)]
struct End {
    records: usize,
    warnings: usize,
    side: Side,
}

/// Reads a request's messages one at a time (see the module docs).
pub struct MessageReader {
    reading: &'static Reading,
    out: Records,
    /// Records the body made before the first message (Anthropic's
    /// `system`).
    head: usize,
    ends: Vec<End>,
    warnings: Vec<String>,
    /// Tool calls of each id read so far, and how many ids have more than
    /// one.
    calls: HashMap<String, u32>,
    repeated: usize,
}

impl MessageReader {
    /// A reader of messages of `wire`, after the records `body` makes
    /// itself (Anthropic's top-level `system`; `body` is the request body
    /// or `None` for a bare array of messages).
    pub fn new(wire: Wire, body: Option<&Object>) -> Result<MessageReader, String> {
        let reading = reading(wire);
        let mut out = Records::default();
        if let (Some(read_head), Some(body)) = (reading.read_head, body) {
            read_head(&mut out, body)?;
        }
        Ok(MessageReader {
            reading,
            head: out.records.len(),
            out,
            ends: Vec::new(),
            warnings: Vec::new(),
            calls: HashMap::new(),
            repeated: 0,
        })
    }

    /// Read the next message. An error names the message and what was
    /// expected, and leaves the reader as it was.
    pub fn read(&mut self, m: &Value) -> Result<(), String> {
        let i = self.ends.len();
        let before = self.end();
        let prev_assistant = self.ends.last().is_some_and(|e| e.side == Side::Assistant);
        let read =
            (self.reading.read_message)(&mut self.out, &mut self.warnings, i, m, prev_assistant);
        match read {
            Ok(side) => {
                for r in &self.out.records[before.records..] {
                    if let Body::ToolCall { id, .. } = &r.body {
                        let n = self.calls.entry(id.clone()).or_default();
                        *n += 1;
                        if *n == 2 {
                            self.repeated += 1;
                        }
                    }
                }
                self.ends.push(End {
                    records: self.out.records.len(),
                    warnings: self.warnings.len(),
                    side,
                });
                Ok(())
            }
            Err(e) => {
                self.out.truncate(before.records);
                self.warnings.truncate(before.warnings);
                Err(e)
            }
        }
    }

    /// Where the last message read ended (the head, before any).
    fn end(&self) -> End {
        self.ends.last().copied().unwrap_or(End {
            records: self.head,
            warnings: 0,
            side: Side::User,
        })
    }

    /// How many messages have been read.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no message has been read.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Forget every message after the first `n`, as if only those had been
    /// read.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.ends.len() {
            return;
        }
        self.ends.truncate(n);
        let end = self.end();
        for r in &self.out.records[end.records..] {
            if let Body::ToolCall { id, .. } = &r.body
                && let Some(c) = self.calls.get_mut(id)
            {
                *c -= 1;
                if *c == 1 {
                    self.repeated -= 1;
                }
                if *c == 0 {
                    self.calls.remove(id);
                }
            }
        }
        self.out.truncate(end.records);
        self.warnings.truncate(end.warnings);
    }

    /// The records read so far (the head's first), before pairing.
    pub fn records(&self) -> &[Record] {
        &self.out.records
    }

    /// The records made from message `i`.
    pub fn message_records(&self, i: usize) -> Range<usize> {
        let start = if i == 0 {
            self.head
        } else {
            self.ends[i - 1].records
        };
        start..self.ends[i].records
    }

    /// Whether message `i` was an assistant message (a chat format's
    /// `role`; never for a Responses item).
    pub fn is_assistant(&self, i: usize) -> bool {
        self.ends[i].side == Side::Assistant
    }

    /// Whether message `i` stands on its own: the format writes it as one
    /// message and never joins it with a neighbour of the same role (an
    /// Anthropic `system` message, a message of a role the format does not
    /// know, kept as it came).
    pub fn is_own(&self, i: usize) -> bool {
        self.ends[i].side == Side::Own
    }

    /// Whether pairing would change the records read so far: a tool-call
    /// id is used by more than one call.
    pub fn needs_pairing(&self) -> bool {
        self.repeated > 0
    }

    /// The transcript of the messages read, paired, with what `body`
    /// (the request body, if any) keeps besides its messages.
    pub fn into_transcript(self, body: Option<&Object>) -> Transcript {
        transcript(self.reading.wire, body, self.out.records, self.warnings)
    }
}
