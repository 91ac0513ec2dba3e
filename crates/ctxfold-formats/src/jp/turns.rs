//! Turns for JP files written before JP recorded them: a synthesized
//! `turn_start` before each request that follows a conversation event.

use std::collections::{HashMap, VecDeque};

use ctxfold_core::{Body, Kind, Object, Record};
use serde_json::Value;

use super::{HINTS, SYNTHESIZED};

/// Whether `events` were written before JP recorded turns: no
/// `turn_start` at all, each `chat_request` having been its own `jp
/// query`. A file with a JP `compaction` record is not read so: JP numbered
/// its turns by the `turn_start`s the file has, and turns made up here
/// would move them.
pub(super) fn has_no_turns(events: &[Value]) -> bool {
    !events.iter().any(|ev| {
        matches!(
            ev.as_object().and_then(crate::session_lines::type_tag),
            Some("turn_start" | "compaction")
        )
    })
}

/// The records of a file without `turn_start`, with a synthesized
/// `turn_start` before every user request that follows a conversation
/// event, so that each request opens a turn as it did in JP. A request between a tool call
/// and its result (an interrupt reply) opens none: a turn never parts a
/// call from its result. The synthesized records are marked, and export
/// leaves them out.
pub(super) fn with_turn_per_request(records: Vec<Record>) -> Vec<Record> {
    // Records inside a call–result pair: a diff array over the spans from
    // each call to the first later result with its id.
    let mut inside = vec![0i64; records.len() + 1];
    let mut pending: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match &r.body {
            Body::ToolCall { id, .. } => pending.entry(id).or_default().push_back(i),
            Body::ToolResult { id, .. } => {
                if let Some(call) = pending.get_mut(id.as_str()).and_then(|q| q.pop_front()) {
                    inside[call + 1] += 1;
                    inside[i] -= 1;
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(records.len() + records.len() / 4);
    let (mut depth, mut after_event) = (0i64, false);
    for (i, r) in records.into_iter().enumerate() {
        depth += inside[i];
        if matches!(r.body, Body::User { .. }) && after_event && depth == 0 {
            let mut start = Record::new(0, r.ts.clone(), Body::TurnStart);
            let mut hints = Object::new();
            hints.insert(SYNTHESIZED.into(), Value::Bool(true));
            start.extra.insert(HINTS.into(), Value::Object(hints));
            out.push(start);
        }
        // What makes a turn "hold an event" (SPEC §2): model-visible
        // records and inquiry events; a config delta does not.
        after_event |= r.body.is_model_visible()
            || matches!(r.kind(), Kind::InquiryRequest | Kind::InquiryResponse);
        out.push(r);
    }
    out
}
