//! What reading a chat format's messages takes: the table of a format's
//! reading functions ([`Reading`], one defined by each chat format), which
//! side a message was on ([`Side`]), and a whole request read with them.
//!
//! Below the chat formats, whose `from_json` is [`read_messages`], and
//! below the message reader (`message_reader`), which reads through the
//! same table one message at a time: a request read whole and one read
//! message by message give the same records.

use ctxfold_core::{Object, Record};
use serde_json::Value;

use crate::Transcript;
use crate::chat::{Records, describe};
use crate::pairing::pair;
use crate::wire::Wire;

/// Which side of the conversation a message was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// A user message (tool results included).
    User,
    /// An assistant message.
    Assistant,
    /// A message of its own that a format never joins with its neighbours
    /// (an Anthropic `system` message, a message of a role the format does
    /// not know).
    Own,
}

/// How a chat format reads a request: a table of its functions, so the
/// reader calls them without naming the format (the formats are above it).
pub(crate) struct Reading {
    /// The format.
    pub(crate) wire: Wire,
    /// The records the body makes before the first message (Anthropic's
    /// top-level `system`), if the format has any.
    pub(crate) read_head: Option<ReadHead>,
    /// How a message is read.
    pub(crate) read_message: ReadMessage,
}

/// Read the records a request body makes before its first message.
type ReadHead = fn(&mut Records, &Object) -> Result<(), String>;

/// Read message `i` (after one on the assistant's side, if the flag says
/// so) into records and warnings; returns which side it was on. On an
/// error, what it pushed is the caller's to cut back.
type ReadMessage = fn(&mut Records, &mut Vec<String>, usize, &Value, bool) -> Result<Side, String>;

/// A chat transcript (a request body with `messages`, or a bare array of
/// messages) read whole, as `reading`'s format reads it. The error says
/// what was expected and where.
pub(crate) fn read_messages(reading: &Reading, v: &Value) -> Result<Transcript, String> {
    let (messages, body) = split_request(v)?;
    let mut out = Records::default();
    if let (Some(read_head), Some(body)) = (reading.read_head, body) {
        read_head(&mut out, body)?;
    }
    let mut warnings = Vec::new();
    read_all(reading, messages, &mut out, &mut warnings)?;
    Ok(transcript(reading.wire, body, out.records, warnings))
}

/// Read `messages` in order into `out`, each after the side of the one
/// before it (the first after the user's), as the message reader does.
pub(crate) fn read_all(
    reading: &Reading,
    messages: &[Value],
    out: &mut Records,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let mut side = Side::User;
    for (i, m) in messages.iter().enumerate() {
        side = (reading.read_message)(out, warnings, i, m, side == Side::Assistant)?;
    }
    Ok(())
}

/// The transcript of `records` read in `wire`'s format, paired, with what
/// `body` (the request body, if any) keeps besides its messages.
pub(crate) fn transcript(
    wire: Wire,
    body: Option<&Object>,
    records: Vec<Record>,
    warnings: Vec<String>,
) -> Transcript {
    let mut t = Transcript {
        extras: body.map(|b| wire.extras(b)).unwrap_or_default(),
        warnings,
        records,
        title: None,
    };
    pair(&mut t.records, Some(wire.prefix()), &mut t.warnings);
    t
}

/// The `messages` array of a transcript and the body object around it, if
/// any.
fn split_request(v: &Value) -> Result<(&[Value], Option<&Object>), String> {
    const EXPECTED: &str = "expected a request object with `messages` or an array of messages";
    match v {
        Value::Array(a) => Ok((a, None)),
        // The array itself, not a copy: the key, named once, by `Wire`.
        Value::Object(o) => match o.get(Wire::OpenAi.messages_key()) {
            Some(Value::Array(a)) => Ok((a, Some(o))),
            Some(other) => Err(format!(
                "`messages`: expected an array of messages, found {}",
                describe(other)
            )),
            None => Err(format!("{EXPECTED}, found an object without `messages`")),
        },
        other => Err(format!("{EXPECTED}, found {}", describe(other))),
    }
}
