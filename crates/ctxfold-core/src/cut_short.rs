//! Answers that broke off before their end: the `cut_short` mark a
//! recorder (the proxy) puts on what it kept of one, and which of them a
//! later answer replaced.
//!
//! A client whose answer broke off (the upstream stalled or hung up, the
//! client hung up) retries the same request, and the retried answer is
//! recorded right after what was kept of the broken one. Both stay in the
//! log; transcripts and printouts ask [`replaced`] which one the
//! conversation went on from.

use std::borrow::Borrow;

use serde_json::Value;

use crate::{Body, Record};

/// Metadata key marking the records of an answer that broke off before
/// its end (what arrived of it), `true`.
pub const CUT_SHORT: &str = "cut_short";

/// Whether `r` is part of an answer that was cut short.
pub fn is_cut_short(r: &Record) -> bool {
    r.metadata
        .as_ref()
        .and_then(|m| m.get(CUT_SHORT))
        .is_some_and(|v| *v == Value::Bool(true))
}

/// For each of `records`, whether it belongs to an answer cut short that
/// a later answer replaced.
///
/// The rule: a cut-short record is replaced when, after it and before the
/// conversation goes on (the next user message, tool result or turn
/// start), there is another answer: a model-output record (text,
/// reasoning, tool call, structured answer) written at another time. The
/// records of one answer are appended together with one `ts`, so a record
/// of the same `ts` is the same answer, not a later one. Of several
/// answers cut short in a row, all but the last are replaced; an answer
/// cut short that nothing followed (the client went on without retrying)
/// is not. Records that are not part of the conversation (compactions and
/// other bookkeeping, system prompts) neither end the stretch nor answer.
pub fn replaced<R: Borrow<Record>>(records: &[R]) -> Vec<bool> {
    let mut out = vec![false; records.len()];
    // Walking back: the `ts` of an answer later in the stretch, and
    // whether the later ones were written at more than one time.
    let mut later: Option<&crate::Ts> = None;
    let mut several = false;
    for (i, r) in records.iter().enumerate().rev() {
        let r = r.borrow();
        if matches!(r.body, Body::TurnStart)
            || (r.body.is_model_visible() && !r.body.is_assistant_side())
        {
            later = None;
            several = false;
            continue;
        }
        if !r.body.is_assistant_side() {
            continue;
        }
        let other_later = several || later.is_some_and(|ts| *ts != r.ts);
        if is_cut_short(r) && other_later {
            out[i] = true;
        }
        several = other_later;
        later = Some(&r.ts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: &str, body: Body, cut: bool) -> Record {
        let mut r = Record::new(0, ts, body);
        if cut {
            r.metadata
                .get_or_insert_default()
                .insert(CUT_SHORT.into(), true.into());
        }
        r
    }
    fn text(t: &str) -> Body {
        Body::Assistant { content: t.into() }
    }
    fn user(t: &str) -> Body {
        Body::User {
            content: t.into(),
            author: None,
        }
    }

    #[test]
    fn a_retried_answer_replaces_the_one_cut_short() {
        let recs = vec![
            rec("t0", Body::TurnStart, false),
            rec("t0", user("go"), false),
            rec("t1", text("partial "), true),
            rec("t2", text("answer 3"), false),
        ];
        assert_eq!(replaced(&recs), [false, false, true, false]);
    }

    #[test]
    fn of_answers_cut_short_in_a_row_the_last_stays() {
        let call = Body::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({}).into(),
        };
        let recs = vec![
            rec("t0", user("go"), false),
            // One answer of two records, cut short: both replaced.
            rec("t1", text("plan"), true),
            rec("t1", call, true),
            rec("t2", text(""), true),
            // A compaction between them ends nothing.
            rec(
                "t3",
                Body::Other {
                    kind: "compaction_started".into(),
                    fields: Default::default(),
                },
                false,
            ),
            rec("t4", text("half"), true),
        ];
        assert_eq!(replaced(&recs), [false, true, true, true, false, false]);
    }

    #[test]
    fn an_answer_cut_short_that_the_conversation_went_on_from_stays() {
        let recs = vec![
            rec("t0", user("go"), false),
            rec("t1", text("partial"), true),
            rec("t2", Body::TurnStart, false),
            rec("t2", user("and?"), false),
            rec("t3", text("whole"), false),
        ];
        assert_eq!(replaced(&recs), [false; 5]);
    }
}
