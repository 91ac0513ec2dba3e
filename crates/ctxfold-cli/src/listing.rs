//! The compaction listing of `conversation show`: one line per compaction
//! (and what it kept of its range's facts), and the same as JSON.

use ctxfold_core::compaction::Source;
use ctxfold_core::kept::listing;
use ctxfold_core::projection::Standing;
use ctxfold_core::{Body, Log};
use serde_json::{Value, json};

/// One line per compaction for `conversation show`, with what it kept of
/// its range's facts, counted.
pub fn listing_text(log: &Log) -> String {
    let mut text = String::new();
    for listed in listing(log, false) {
        let (n, standing) = (listed.number, listed.standing);
        let Body::Compaction(c) = &log.records()[listed.index].body else {
            continue;
        };
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
        if let Some(k) = &listed.kept {
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
    }
    text
}

/// The listing as JSON, each compaction's report listing what it lost
/// (made apart from the text: ten thousand compactions' JSON was a twentieth
/// of a text `show`, made and thrown away).
pub fn listing_json(log: &Log) -> Vec<Value> {
    let mut json = Vec::new();
    for listed in listing(log, true) {
        let (n, i, standing) = (listed.number, listed.index, listed.standing);
        let Body::Compaction(c) = &log.records()[i].body else {
            continue;
        };
        let status = standing.map(|s| s.to_string()).unwrap_or_default();
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
            if let Some(k) = listed.kept {
                m.insert("kept".into(), json!(k));
            }
        }
        json.push(v);
    }
    json
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
