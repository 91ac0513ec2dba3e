//! What the pages know of a conversation besides its log: where it came
//! from, its model and window, when it was last active, and its sizes.

use ctxfold_core::estimate::{record_tokens, view_tokens};
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log};
use ctxfold_store::{ConversationMeta, Store, StoreError};

/// Where a conversation came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `conversation import` (its metadata names the file).
    Imported,
    /// `ctxfold query` (its metadata holds the `ctxfold` entry).
    Query,
    /// Recorded by `ctxfold proxy` (its metadata holds the `proxy` entry).
    Proxy,
    /// Made some other way (`conversation new`, `append`).
    Other,
}

impl Origin {
    /// The word the pages show.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Imported => "imported",
            Origin::Query => "query",
            Origin::Proxy => "proxy",
            Origin::Other => "other",
        }
    }
}

/// Where `meta`'s conversation came from: the proxy's and the query's
/// entries in the extras say so (a fork keeps them), else an import source.
pub fn origin(meta: &ConversationMeta) -> Origin {
    if meta.extras.contains_key("proxy") {
        Origin::Proxy
    } else if meta
        .extras
        .get("ctxfold")
        .is_some_and(|v| v.get("model").is_some())
    {
        Origin::Query
    } else if meta.imported_from.is_some() {
        Origin::Imported
    } else {
        Origin::Other
    }
}

/// The model the conversation talks to, as the proxy or `query` recorded it.
pub fn model(meta: &ConversationMeta) -> Option<&str> {
    ["proxy", "ctxfold"]
        .iter()
        .find_map(|k| meta.extras.get(*k)?.get("model")?.as_str())
}

/// The window the view is measured against: the configured one (`[proxy]
/// window`), else the model's from the table.
pub fn window(meta: &ConversationMeta, configured: Option<u32>) -> Option<u32> {
    configured.or_else(|| model(meta).and_then(ctxfold_tokens::context_window))
}

/// When the conversation was last active: the time of its last record
/// that reads as one (imported transcripts carry their own; a time without
/// a zone, as JP writes them, is read as UTC), else when it was last used.
pub fn last_activity(meta: &ConversationMeta, log: &Log) -> Option<jiff::Timestamp> {
    log.records()
        .iter()
        .rev()
        .take(8)
        .find_map(|r| timestamp(&r.ts))
        .or_else(|| timestamp(&meta.last_used_at))
}

/// `text` as a point in time: RFC 3339, else a date and time without a zone
/// (read as UTC).
pub fn timestamp(text: &str) -> Option<jiff::Timestamp> {
    text.parse::<jiff::Timestamp>().ok().or_else(|| {
        text.parse::<jiff::civil::DateTime>()
            .ok()
            .and_then(|dt| jiff::tz::TimeZone::UTC.to_timestamp(dt).ok())
    })
}

/// Raw tokens of a log, counted as the timeline counts them (model-visible
/// records and system prompts).
pub fn raw_tokens(log: &Log) -> usize {
    log.records()
        .iter()
        .filter(|r| r.body.is_model_visible() || matches!(r.body, Body::System { .. }))
        .map(record_tokens)
        .sum()
}

/// One line of the conversation list.
#[derive(Debug, Clone)]
pub struct Row {
    /// The conversation's id.
    pub id: String,
    /// Its title, if it has one.
    pub title: Option<String>,
    /// Where it came from.
    pub origin: Origin,
    /// Its turns.
    pub turns: usize,
    /// Raw tokens.
    pub raw: usize,
    /// Tokens in the model's view.
    pub view: usize,
    /// The window the view is measured against, when known.
    pub window: Option<u32>,
    /// Compaction records (in force or not).
    pub compactions: usize,
    /// When it was last active.
    pub last_activity: Option<jiff::Timestamp>,
}

impl Row {
    /// A row for `meta`'s conversation, whose log is `log`.
    pub fn new(meta: &ConversationMeta, log: &Log, configured_window: Option<u32>) -> Row {
        Row {
            id: meta.id.clone(),
            title: meta.title.clone(),
            origin: origin(meta),
            turns: log.turn_count(),
            raw: raw_tokens(log),
            view: view_tokens(&project(log)),
            window: window(meta, configured_window),
            compactions: log
                .records()
                .iter()
                .filter(|r| matches!(r.body, Body::Compaction(_)))
                .count(),
            last_activity: last_activity(meta, log),
        }
    }

    /// The share of the window the view uses, when the window is known.
    pub fn share(&self) -> Option<f64> {
        self.window.map(|w| self.view as f64 / f64::from(w.max(1)))
    }
}

/// Conversations that could not be read: id and why.
pub type Broken = Vec<(String, String)>;

/// Every readable conversation of `store` as a row, newest activity first,
/// and the ids (with why) of those that could not be read: one broken
/// conversation hides no other.
pub fn rows(
    store: &dyn Store,
    configured_window: Option<u32>,
) -> Result<(Vec<Row>, Broken), StoreError> {
    let listing = store.list()?;
    let mut broken: Broken = listing
        .broken
        .iter()
        .map(|b| (b.id.clone(), b.error.to_string()))
        .collect();
    let mut rows = Vec::new();
    for meta in &listing.conversations {
        match store.load(&meta.id) {
            Ok(loaded) => rows.push(Row::new(
                meta,
                &Log::from_records(loaded.records),
                configured_window,
            )),
            Err(e) => broken.push((meta.id.clone(), e.to_string())),
        }
    }
    rows.sort_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| b.id.cmp(&a.id))
    });
    Ok((rows, broken))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_and_without_a_zone() {
        let utc = timestamp("2025-12-17T14:02:48Z").unwrap();
        assert_eq!(timestamp("2025-12-17 14:02:48"), Some(utc));
        assert_eq!(timestamp("2025-12-17T16:02:48+02:00"), Some(utc));
        assert!(timestamp("t").is_none());
        assert!(timestamp("").is_none());
    }
}
