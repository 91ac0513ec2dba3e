//! The compaction listing of `conversation show`: one line per compaction
//! (and what it kept of its range's facts), and the same as JSON.

use ctxfold_compactor::reset::numbered_compactions;
use ctxfold_core::compaction::Source;
use ctxfold_core::projection::{Standing, project, standings};
use ctxfold_core::{Body, Log};
use serde_json::{Value, json};

/// One line per compaction for `conversation show`, and the same as JSON;
/// with `lost`, the JSON lists what each compaction lost (with ranges
/// nested from the first record, those lists grow with the square of the
/// conversation: the text needs only the counts).
pub fn compaction_listing(log: &Log, lost: bool) -> (Vec<Value>, String) {
    let statuses = standings(log);
    let mut json = Vec::new();
    let mut text = String::new();
    // What each compaction in force leaves visible of its range's facts,
    // in the view as it is now; a deferred one, in the view it will come
    // into force in (each made only when needed). A revoked one folds
    // nothing.
    let next = log.turn_count() as u32;
    let numbered = numbered_compactions(log);
    // Which view each compaction's report is made in (`Some(true)`: now,
    // `Some(false)`: once the deferred come into force), and then the
    // reports of each view's ranges all at once, one pass over the view.
    let in_view: Vec<Option<(bool, (usize, usize))>> = numbered
        .iter()
        .map(|&(_, i)| {
            let Body::Compaction(c) = &log.records()[i].body else {
                return None;
            };
            let now = match statuses.get(&i) {
                Some(Standing::Active) => true,
                Some(Standing::Deferred(_)) if c.deferred_until_turn.is_some_and(|t| t <= next) => {
                    false
                }
                _ => return None,
            };
            ctxfold_core::projection::covered_indices(log, c).map(|range| (now, range))
        })
        .collect();
    let reports = |now: bool| -> Vec<ctxfold_core::kept::Kept> {
        let ranges: Vec<(usize, usize)> = in_view
            .iter()
            .flatten()
            .filter(|(n, _)| *n == now)
            .map(|&(_, r)| r)
            .collect();
        if ranges.is_empty() {
            return Vec::new();
        }
        let view = if now {
            project(log)
        } else {
            ctxfold_core::projection::project_as_of(log, next)
        };
        ctxfold_core::kept::Retentions::new(log, &view).of(&ranges, lost)
    };
    let (mut now_kept, mut later_kept) = (
        reports(true).into_iter(),
        if statuses
            .values()
            .any(|s| matches!(s, Standing::Deferred(_)))
        {
            reports(false)
        } else {
            Vec::new()
        }
        .into_iter(),
    );
    for ((n, i), in_view) in numbered.into_iter().zip(in_view) {
        let Body::Compaction(c) = &log.records()[i].body else {
            continue;
        };
        let standing = statuses.get(&i).copied();
        let status = standing.map(|s| s.to_string()).unwrap_or_default();
        let policies = c.describe();
        let note = c
            .note
            .as_deref()
            .map(|n| format!(" — {n}"))
            .unwrap_or_default();
        text.push_str(&format!(
            "  #{n} turns {}–{}: {} [{}, by {}]{note}\n",
            u64::from(c.from_turn) + 1,
            u64::from(c.to_turn) + 1,
            policies.join(", "),
            status,
            source_name(c.source)
        ));
        let kept = match in_view {
            Some((true, _)) => now_kept.next(),
            Some((false, _)) => later_kept.next(),
            None => None,
        };
        if let Some(k) = &kept {
            text.push_str(&format!("      {}\n", k.line()));
        }
        // In force but deciding nothing: say so rather than a figure of
        // what is in view of its range, which another compaction made.
        match standing {
            Some(Standing::Superseded { by, more }) => {
                let (who, until) = if more > 0 {
                    (format!("#{by} and {more} more decide"), "they are")
                } else {
                    (format!("#{by} decides"), "it is")
                };
                text.push_str(&format!(
                    "      superseded: {who} everything it covers; revoking #{n} changes nothing in the view until {until} revoked\n"
                ));
            }
            Some(Standing::NoEffect) => text.push_str(
                "      no effect: the view is the same without it (nothing in its range it acts on, or what it does is done under it too)\n",
            ),
            _ => {}
        }
        if let Some(f) = &c.budget {
            text.push_str(&format!("      {}\n", f.line()));
        }
        let mut v = serde_json::to_value(c.as_ref()).unwrap_or_default();
        if let Value::Object(m) = &mut v {
            m.insert("number".into(), json!(n));
            m.insert("seq".into(), json!(log.records()[i].seq));
            m.insert("status".into(), json!(status));
            m.insert(
                "changes_view".into(),
                json!(standing.is_some_and(Standing::changes_view)),
            );
            if let Some(Standing::Superseded { by, .. }) = standing {
                m.insert("superseded_by".into(), json!(by));
            }
            if let Some(k) = kept {
                m.insert("kept".into(), json!(k));
            }
        }
        json.push(v);
    }
    (json, text)
}

fn enum_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn source_name(s: Source) -> String {
    enum_name(&s)
}
