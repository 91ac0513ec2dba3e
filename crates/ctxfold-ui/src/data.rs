//! What the pages know of a conversation besides its log: where it came
//! from, its model and window, when it was last active, and its sizes.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

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
    last_record_time(log).or_else(|| timestamp(&meta.last_used_at))
}

/// The time of the log's last record that reads as one (of its last few).
fn last_record_time(log: &Log) -> Option<jiff::Timestamp> {
    log.records()
        .iter()
        .rev()
        .take(8)
        .find_map(|r| r.ts.timestamp())
}

/// `text` as a point in time: RFC 3339, else a date and time without a zone
/// (read as UTC), as range bounds read record times.
pub fn timestamp(text: &str) -> Option<jiff::Timestamp> {
    ctxfold_core::ts::parse_ts(text)
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

/// What a log gives its conversation's line in the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Its turns.
    pub turns: usize,
    /// Raw tokens.
    pub raw: usize,
    /// Tokens in the model's view.
    pub view: usize,
    /// Compaction records (in force or not).
    pub compactions: usize,
    /// The time of its last record, when it reads as one.
    pub last_record: Option<jiff::Timestamp>,
    /// The cost of the requests the proxy recorded, with ctxfold and
    /// without.
    pub cost: ctxfold_core::cost::CostSum,
}

impl Figures {
    /// The figures of `log` (one projection), its cost priced with
    /// `prices`.
    pub fn of(log: &Log, prices: &ctxfold_core::cost::PriceTable) -> Figures {
        let mut cost = ctxfold_core::cost::CostSum::default();
        cost.add_records(log.records(), prices);
        Figures {
            cost,
            turns: log.turn_count(),
            raw: raw_tokens(log),
            view: view_tokens(&project(log)),
            compactions: log
                .records()
                .iter()
                .filter(|r| matches!(r.body, Body::Compaction(_)))
                .count(),
            last_record: last_record_time(log),
        }
    }
}

/// The figures of each conversation with the log's next `seq` they were
/// counted at. Logs only grow, so a log whose next `seq` is unchanged has
/// the same figures: the list loads again only the logs that grew.
#[derive(Debug, Default)]
pub struct FigureCache {
    counted: Mutex<HashMap<String, (u64, Figures)>>,
    /// What the cost is priced with.
    pub prices: ctxfold_core::cost::PriceTable,
}

impl FigureCache {
    /// The figures of conversation `id` in `store`, from the cache when
    /// its log has not grown.
    pub fn get(&self, store: &dyn Store, id: &str) -> Result<Figures, StoreError> {
        // A store that cannot tell is read every time, as a page reads it.
        let next = store.peek_next_seq(id).ok();
        if let Some((seq, f)) = self.lock().get(id)
            && Some(*seq) == next
        {
            return Ok(f.clone());
        }
        let loaded = store.load(id)?;
        let log = loaded.into_log();
        let f = Figures::of(&log, &self.prices);
        self.lock()
            .insert(id.to_owned(), (log.next_seq(), f.clone()));
        Ok(f)
    }

    /// Forget the conversations not in `ids` (removed, moved to the trash).
    fn keep_only(&self, ids: &HashSet<&str>) {
        self.lock().retain(|id, _| ids.contains(id.as_str()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, Figures)>> {
        // The map holds no invariant a panic could break.
        self.counted.lock().unwrap_or_else(|e| e.into_inner())
    }
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
    /// What its log gives: turns, raw tokens, tokens in the model's view,
    /// compaction records.
    pub figures: Figures,
    /// The system prompt and tools every request carries besides the
    /// view, where the proxy or `query` recorded them.
    pub fixed: Option<usize>,
    /// The window the view is measured against, when known.
    pub window: Option<u32>,
    /// When it was last active.
    pub last_activity: Option<jiff::Timestamp>,
}

impl Row {
    /// A row for `meta`'s conversation, whose log gave `figures`.
    pub fn new(meta: &ConversationMeta, figures: Figures, configured_window: Option<u32>) -> Row {
        Row {
            id: meta.id.clone(),
            title: meta.title.clone(),
            origin: origin(meta),
            last_activity: figures
                .last_record
                .or_else(|| timestamp(&meta.last_used_at)),
            figures,
            fixed: meta.fixed_tokens(),
            window: window(meta, configured_window),
        }
    }

    /// The share of the window a request uses (the view and the fixed
    /// part), when the window is known.
    pub fn share(&self) -> Option<f64> {
        let request = self.figures.view + self.fixed.unwrap_or(0);
        self.window.map(|w| request as f64 / f64::from(w.max(1)))
    }
}

/// Conversations that could not be read: id and why.
pub type Broken = Vec<(String, String)>;

/// Every readable conversation of `store` as a row, newest activity first,
/// and the ids (with why) of those that could not be read: one broken
/// conversation hides no other. Figures come from `cache` for logs that
/// have not grown.
pub fn rows(
    store: &dyn Store,
    configured_window: Option<u32>,
    cache: &FigureCache,
) -> Result<(Vec<Row>, Broken), StoreError> {
    let listing = store.list()?;
    let mut broken: Broken = listing
        .broken
        .iter()
        .map(|b| (b.id.clone(), b.error.to_string()))
        .collect();
    let mut rows = Vec::new();
    for meta in &listing.conversations {
        match cache.get(store, &meta.id) {
            Ok(f) => rows.push(Row::new(meta, f, configured_window)),
            Err(e) => broken.push((meta.id.clone(), e.to_string())),
        }
    }
    cache.keep_only(
        &listing
            .conversations
            .iter()
            .map(|m| m.id.as_str())
            .collect(),
    );
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
    fn the_list_counts_again_only_logs_that_grew() {
        use ctxfold_core::Record;
        let dir = tempfile::tempdir().unwrap();
        let (ws, _) = ctxfold_store::Workspace::init(dir.path()).unwrap();
        let turn = |k: usize| {
            vec![
                Record::new(0, "2026-12-01T00:00:00Z", Body::TurnStart),
                Record::new(
                    0,
                    format!("2026-12-01T00:0{k}:00Z"),
                    Body::User {
                        content: format!("question {k}"),
                        author: None,
                    },
                ),
            ]
        };
        let a = ctxfold_store::create_new(&ws, Some("a".into()), None, Default::default(), turn(1))
            .unwrap();
        let b = ctxfold_store::create_new(&ws, Some("b".into()), None, Default::default(), turn(2))
            .unwrap();
        let cache = FigureCache::default();
        let (rows1, broken) = rows(&ws, None, &cache).unwrap();
        assert!(broken.is_empty());
        let ids: Vec<&str> = rows1.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, [b.id.as_str(), a.id.as_str()], "newest activity first");
        assert_eq!(cache.lock().len(), 2);

        // A grows: counted again, and it is the newest now; B is not read.
        ws.append(&a.id, turn(3)).unwrap();
        let (rows2, _) = rows(&ws, None, &cache).unwrap();
        assert_eq!(rows2[0].id, a.id);
        assert_eq!(rows2[0].figures.turns, 2);
        assert_eq!(cache.lock()[&a.id].0, 4);
        // What a fresh count gives.
        let fresh = Figures::of(
            &Log::from_records(ws.load(&a.id).unwrap().records),
            &cache.prices,
        );
        assert_eq!(cache.lock()[&a.id].1, fresh);

        ws.trash(&b.id).unwrap();
        let (rows3, _) = rows(&ws, None, &cache).unwrap();
        assert_eq!(rows3.len(), 1);
        assert_eq!(cache.lock().len(), 1, "a trashed conversation is forgotten");
    }

    #[test]
    fn times_with_and_without_a_zone() {
        let utc = timestamp("2025-12-17T14:02:48Z").unwrap();
        assert_eq!(timestamp("2025-12-17 14:02:48"), Some(utc));
        assert_eq!(timestamp("2025-12-17T16:02:48+02:00"), Some(utc));
        assert!(timestamp("t").is_none());
        assert!(timestamp("").is_none());
    }
}
