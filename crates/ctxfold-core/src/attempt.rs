//! Compaction attempts: the `compaction_started` and `compaction_finished`
//! records that bracket a compaction whose summary is slow to make (SPEC
//! §8, seed 002).
//!
//! ```text
//! compaction_started    before the summarizer is called
//! compaction            the overlay itself (absent when the attempt failed)
//! compaction_finished   last; `error` says why when it failed
//! ```
//!
//! Both are bookkeeping: not model-visible, ignored by the projection,
//! never part of a turn's events. A `compaction_started` with no
//! `compaction_finished` (the process died while summarizing) is an orphan:
//! inert, since the overlay never landed, so the view is as if nothing
//! happened and the next attempt simply proceeds. They are kept as
//! [`Body::Other`] records, so older versions keep them verbatim too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compaction::Source;
use crate::log::Log;
use crate::record::{Body, Object, Record};

/// `type` of the record written before a slow compaction.
pub const STARTED: &str = "compaction_started";
/// `type` of the record written after it.
pub const FINISHED: &str = "compaction_finished";

/// What a `compaction_started` record says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Started {
    /// First turn of the range, 0-based.
    pub from_turn: u32,
    /// Last turn of the range, 0-based.
    pub to_turn: u32,
    /// First record of the range.
    pub from_seq: u64,
    /// Last record of the range.
    pub to_seq: u64,
    /// Who asked for it.
    pub source: Source,
    /// The summarizer called (`digest` or `provider/model`).
    pub summarizer: String,
}

/// What a `compaction_finished` record says.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// `seq` of the `compaction_started` it closes.
    pub started: u64,
    /// `seq` of the compaction record, when one was appended.
    pub compaction: Option<u64>,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

fn to_body<T: Serialize>(kind: &str, value: &T) -> Body {
    let fields = match serde_json::to_value(value) {
        Ok(Value::Object(o)) => o,
        _ => Object::new(),
    };
    Body::Other {
        kind: kind.to_owned(),
        fields: Box::new(fields),
    }
}

/// A record body of type `kind` read as `T`, if it is one.
fn from_body<T: serde::de::DeserializeOwned>(kind: &str, body: &Body) -> Option<T> {
    match body {
        Body::Other { kind: k, fields } if k == kind => {
            serde_json::from_value(Value::Object((**fields).clone())).ok()
        }
        _ => None,
    }
}

impl Started {
    /// The record body.
    pub fn body(&self) -> Body {
        to_body(STARTED, self)
    }

    /// Read a record as a `compaction_started`, if it is one.
    pub fn from_record(r: &Record) -> Option<Started> {
        from_body(STARTED, &r.body)
    }
}

impl Finished {
    /// The record body.
    pub fn body(&self) -> Body {
        to_body(FINISHED, self)
    }

    /// Read a record as a `compaction_finished`, if it is one.
    pub fn from_record(r: &Record) -> Option<Finished> {
        from_body(FINISHED, &r.body)
    }
}

/// Whether `r` is one of the two attempt records.
pub fn is_attempt(r: &Record) -> bool {
    matches!(&r.body, Body::Other { kind, .. } if kind == STARTED || kind == FINISHED)
}

/// One attempt as the log tells it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// `seq` of its `compaction_started`.
    pub seq: u64,
    /// What it set out to do.
    pub started: Started,
    /// How it ended: `None` for an orphan (no `compaction_finished`).
    pub finished: Option<Finished>,
}

impl Attempt {
    /// Its state in a word: `done`, `failed` or `orphaned`.
    pub fn state(&self) -> &'static str {
        match &self.finished {
            None => "orphaned",
            Some(f) if f.error.is_some() => "failed",
            Some(_) => "done",
        }
    }
}

/// Every attempt in `log`, in order.
pub fn attempts(log: &Log) -> Vec<Attempt> {
    let mut out: Vec<Attempt> = Vec::new();
    for r in log.records() {
        if let Some(started) = Started::from_record(r) {
            out.push(Attempt {
                seq: r.seq,
                started,
                finished: None,
            });
        } else if let Some(f) = Finished::from_record(r)
            && let Some(a) = out.iter_mut().rev().find(|a| a.seq == f.started)
        {
            a.finished = Some(f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::project;

    #[test]
    fn attempts_read_back_and_orphans_are_inert() {
        let mut log = Log::new();
        let push = |log: &mut Log, b: Body| {
            let seq = log.next_seq();
            log.push(Record::new(seq, "t", b));
        };
        push(&mut log, Body::TurnStart);
        push(
            &mut log,
            Body::User {
                content: "hi".into(),
                author: None,
            },
        );
        let before = project(&log).items.len();
        let started = Started {
            from_turn: 0,
            to_turn: 0,
            from_seq: 0,
            to_seq: 1,
            source: Source::Auto,
            summarizer: "local/m".into(),
        };
        push(&mut log, started.body());
        push(
            &mut log,
            Finished {
                started: 2,
                compaction: None,
                error: Some("timed out".into()),
            }
            .body(),
        );
        push(&mut log, started.body());
        let a = attempts(&log);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].state(), "failed");
        assert_eq!(a[1].state(), "orphaned");
        assert_eq!(a[1].started, started);
        // Bookkeeping: the view and the turns do not change.
        assert_eq!(project(&log).items.len(), before);
        assert_eq!(log.turn_count(), 1);
        // The records survive a round trip as text.
        let line = log.records()[3].to_json_line();
        let (back, _) = Record::from_json_line(&line).unwrap();
        assert_eq!(
            Finished::from_record(&back).unwrap().error.as_deref(),
            Some("timed out")
        );
    }
}
