//! `conversation print`: a conversation's events, or with `--compacted`
//! the view the model gets.

use ctxfold_core::Log;
use ctxfold_core::projection::{Item, project};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::PrintArgs;
use crate::context::Context;
use crate::render::Report;
use crate::transcript::{transcript_text, turns_text};

/// A conversation to print, as records or as the model's view; each way
/// made when printed, for the format printed.
pub struct Printed {
    log: Log,
    compacted: bool,
}

impl Report for Printed {}

impl Serialize for Printed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.compacted {
            return compacted_json(&self.log).serialize(s);
        }
        let log = &self.log;
        let replaced = ctxfold_core::cut_short::replaced(log.records());
        let records: Vec<Value> = log
            .records()
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut o = r.to_object();
                o.insert("turn".into(), json!(log.turn_of(i) + 1));
                // An answer cut short that the retry's answer replaced.
                if replaced[i] {
                    o.insert("replaced".into(), json!(true));
                }
                Value::Object(o)
            })
            .collect();
        records.serialize(s)
    }
}

impl std::fmt::Display for Printed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.compacted {
            return f.write_str(&transcript_text(&self.log));
        }
        // Turns are numbered as the conversation numbers them, not as the
        // compacted copy would.
        let log = &self.log;
        let view = project(log);
        let entries = ctxfold_core::materialize::materialize_with_turns(log, &view);
        f.write_str(&turns_text(
            entries.iter().map(|(turn, r)| (*turn, r)),
            &Default::default(),
        ))
    }
}

/// `print --compacted` as JSON: the view's items, each with the records
/// and turns it stands for, and what the view leaves out and why.
fn compacted_json(log: &Log) -> Value {
    let view = project(log);
    let items: Vec<Value> = view
        .items
        .iter()
        .map(|item| {
            let origin = item.origin();
            let (first, last) = (*origin.start(), *origin.end());
            let mut o = match *item {
                Item::Summary {
                    turns,
                    compaction,
                    text,
                    ..
                } => json!({
                    "kind": "summary",
                    "turns": [turns.0 + 1, turns.1 + 1],
                    "compaction_seq": log.records()[compaction].seq,
                    "text": text,
                }),
                Item::Preamble => {
                    json!({"kind": "preamble", "content": ctxfold_core::projection::PREAMBLE})
                }
                _ => {
                    let rec = ctxfold_core::materialize::item_record(item);
                    let mut v = Value::Object(rec.map(|r| r.to_object()).unwrap_or_default());
                    if let Value::Object(m) = &mut v {
                        m.shift_remove("seq");
                        let kind = match item {
                            Item::StrippedCall { .. } => "stripped_call",
                            Item::StrippedResult { .. } => "stripped_result",
                            Item::Clipped { .. } => "clipped",
                            _ => "event",
                        };
                        m.insert("kind".into(), json!(kind));
                    }
                    v
                }
            };
            if let (Value::Object(m), false) = (&mut o, matches!(item, Item::Preamble)) {
                m.insert(
                    "origin".into(),
                    json!({
                        "seq": [log.records()[first].seq, log.records()[last].seq],
                        "turns": [log.turn_of(first) + 1, log.turn_of(last) + 1],
                    }),
                );
            }
            o
        })
        .collect();
    let dropped: Vec<Value> = view
        .dropped
        .iter()
        .map(|d| {
            let mut reason = serde_json::to_value(d.reason).unwrap_or_default();
            // Name the compaction by its seq, as summaries do.
            if let Some(k) = reason.get_mut("compaction")
                && let Some(i) = k.as_u64()
            {
                *k = json!(log.records()[i as usize].seq);
            }
            json!({
                "seq": log.records()[d.index].seq,
                "turn": log.turn_of(d.index) + 1,
                "reason": reason,
            })
        })
        .collect();
    json!({"items": items, "dropped": dropped})
}

pub fn run(ctx: &Context, args: PrintArgs) -> anyhow::Result<Printed> {
    let target = ctx.target()?;
    let meta = target.resolve(args.conversation.id.as_deref())?;
    let log = target.load(&meta.id)?;
    Ok(Printed {
        log,
        compacted: args.compacted,
    })
}
