//! Metadata and records the store tests write, and a conversation's
//! records read back as `ctxfold c print --format json` prints them: one
//! copy for all of them.

use ctxfold_core::{Body, Object, Record};
use ctxfold_store::ConversationMeta;
use serde_json::json;

/// Metadata of conversation `id`, made at `created`, with extras out of
/// alphabetical order (they must be kept as written).
pub fn meta_at(id: &str, created: &str) -> ConversationMeta {
    let mut extras = Object::new();
    extras.insert("zeta".into(), json!({"y": 2, "b": [3, "é"]}));
    extras.insert("alpha".into(), json!(1));
    ConversationMeta {
        id: id.to_owned(),
        title: Some(format!("title of {id}")),
        created_at: created.to_owned(),
        last_used_at: created.to_owned(),
        imported_from: None,
        extras,
    }
}

/// A user message record saying `text`.
pub fn user(text: &str) -> Record {
    Record::new(
        0,
        "2026-01-02T03:04:05Z",
        Body::User {
            content: text.into(),
            author: None,
        },
    )
}

/// The records of conversation `id` in `store` as `ctxfold c print
/// --format json` prints them: each record's JSON with its turn (from 1),
/// and `replaced` on an answer cut short that a retry's answer replaced.
pub fn printed(store: &dyn ctxfold_store::Store, id: &str) -> Vec<serde_json::Value> {
    let log = store.load(id).unwrap().into_log();
    let replaced = ctxfold_core::cut_short::replaced(log.records());
    log.records()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut o = r.to_object();
            o.insert("turn".into(), json!(log.turn_of(i) + 1));
            if replaced[i] {
                o.insert("replaced".into(), json!(true));
            }
            serde_json::Value::Object(o)
        })
        .collect()
}

/// [`printed`] once `done` holds of the records (an answer is recorded
/// after its last byte went to the client, so a test that looks at once
/// may be early), or as they are after five seconds.
pub fn printed_when(
    store: &dyn ctxfold_store::Store,
    id: &str,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    for _ in 0..100 {
        let r = printed(store, id);
        if done(&r) {
            return r;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    printed(store, id)
}

/// How many of `recs` (as [`printed`] gives them) are of type `kind`.
pub fn count(recs: &[serde_json::Value], kind: &str) -> usize {
    recs.iter().filter(|r| r["type"] == kind).count()
}

/// The records of `recs` of type `kind`.
pub fn of_type<'a>(recs: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    recs.iter().filter(|r| r["type"] == kind).collect()
}
