//! The client's messages written back as their own bytes: every message
//! that goes whole and unchanged is copied from the request as sent
//! (most of a long conversation) rather than rendered again.

use std::borrow::Cow;
use std::collections::HashMap;

use ctxfold_core::{Object, Record};
use ctxfold_formats::message_reader::MessageReader;

use crate::protocol::Shape;

/// The client's messages as sent, beside the records a kept reader read
/// from them, and the rest of its body as read and as sent.
#[derive(Clone, Copy)]
pub(super) struct Sent<'a> {
    pub(super) texts: &'a [Box<str>],
    pub(super) reader: &'a MessageReader,
    pub(super) head: &'a Object,
    pub(super) head_text: &'a HashMap<String, &'a serde_json::value::RawValue>,
}

/// The body of `records` (the view, in the client's order; `sent_as[p]`:
/// the client record `records[p]` is, when it goes as sent; `from[p]`: the
/// client record it stands for, changed or not) with every client message
/// that goes whole and as sent written as the client's own text rather
/// than rendered again: most of a long conversation. A message goes as its
/// text only when its records go in order, unchanged, between the records
/// that stood beside it in the request, so the format groups them into
/// the same message; the rest is written in runs by the format. `None`:
/// no message goes as sent (the format writes it all).
pub(super) fn write_with_sent(
    shape: Shape,
    records: &[Cow<Record>],
    sent_as: &[Option<usize>],
    from: &[Option<usize>],
    client_len: usize,
    sent: Sent,
    extras: &Object,
) -> Option<Vec<u8>> {
    let reader = sent.reader;
    let inc = shape.incremental()?;
    // The message starting at each client record.
    let mut starts = vec![None; client_len];
    for i in 0..reader.len() {
        let r = reader.message_records(i);
        if !r.is_empty() {
            starts[r.start] = Some(i);
        }
    }
    // Anthropic joins messages of one role that follow each other, so a
    // message goes as sent only between messages of the other role (or
    // messages that stand on their own: `system` messages, unknown roles).
    let apart = |n: usize, i: usize| {
        !reader.message_records(n).is_empty()
            && (reader.is_own(n)
                || reader.is_own(i)
                || reader.is_assistant(n) != reader.is_assistant(i))
    };
    let alternates = |i: usize| {
        !inc.joins_roles()
            || ((i == 0 || apart(i - 1, i)) && (i + 1 == reader.len() || apart(i + 1, i)))
    };
    let whole = |p: usize, i: usize| {
        let r = reader.message_records(i);
        let end = p + r.len();
        alternates(i)
            && end <= records.len()
            && (0..r.len()).all(|d| {
                // Borrowed: a moved cache marker changes a record in place.
                sent_as[p + d] == Some(r.start + d) && matches!(records[p + d], Cow::Borrowed(_))
            })
            && (if r.start == 0 {
                p == 0
            } else {
                p > 0 && from[p - 1] == Some(r.start - 1)
            })
            && (if end == records.len() {
                r.end == client_len
            } else {
                from[end] == Some(r.end)
            })
    };
    // Anthropic's system records go to the body's `system`, not a message
    // (but those read from a `system` message go back among the messages).
    let top_level = |r: &Record| inc.top_level(r);
    let key = shape.history_key();
    let mut messages: Vec<u8> = Vec::with_capacity(sent.texts.iter().map(|t| t.len() + 1).sum());
    messages.push(b'[');
    let mut any = false;
    let mut run = 0;
    let flush = |messages: &mut Vec<u8>, run: &[Cow<Record>]| -> Option<()> {
        let run: Vec<&Record> = run
            .iter()
            .map(|r| r.as_ref())
            .filter(|r| !top_level(r))
            .collect();
        if run.is_empty() {
            return Some(());
        }
        inc.write_messages(&run, messages)
    };
    let mut p = 0;
    while p < records.len() {
        if let Some(i) = sent_as[p].and_then(|j| starts[j])
            && whole(p, i)
        {
            flush(&mut messages, &records[run..p])?;
            if messages.len() > 1 {
                messages.push(b',');
            }
            messages.extend_from_slice(sent.texts[i].as_bytes());
            any = true;
            p += reader.message_records(i).len();
            run = p;
        } else {
            p += 1;
        }
    }
    if !any {
        return None;
    }
    flush(&mut messages, &records[run..])?;
    messages.push(b']');
    // The rest of the body as the format writes it (with Anthropic's
    // `system`), the messages spliced in at their key.
    let system: Vec<&Record> = records
        .iter()
        .map(|r| r.as_ref())
        .filter(|r| top_level(r))
        .collect();
    let skeleton = shape.write(&system, extras);
    let body = skeleton.as_object()?;
    if !body.contains_key(key) {
        return None;
    }
    let mut out = Vec::with_capacity(messages.len() + 1024);
    out.push(b'{');
    for (n, (k, v)) in body.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, k).ok()?;
        out.push(b':');
        if k == key {
            out.extend_from_slice(&messages);
        } else if let Some(text) = sent.head_text.get(k)
            && sent.head.get(k) == Some(v)
        {
            // A field ctxfold does not change (all but Anthropic's
            // `system` when something of it was folded): the client's own
            // bytes, spacing and number spelling too.
            out.extend_from_slice(text.get().as_bytes());
        } else {
            serde_json::to_writer(&mut out, v).ok()?;
        }
    }
    out.push(b'}');
    Some(out)
}
