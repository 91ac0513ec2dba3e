//! The loaded logs: a conversation as this process last read or wrote it,
//! kept between requests (bounded, least recently used dropped first) so
//! a request need not read its log again; read again when another writer
//! appended. And `last_used_at`, written at most every minute.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctxfold_compactor::{Conversation, InStore};
use ctxfold_store::{Store, StoreError};

use super::{Book, MAX_FORKS_TRIED, META_KEY, PrepareError, lock};
use crate::cache::{Bounded, Limits, record_bytes};

/// A conversation the proxy has read: its log as of this process's last
/// read or write.
pub(super) struct Session {
    pub(super) conv: Conversation<'static>,
    store: Arc<dyn Store>,
    id: String,
    /// Tokens the upstream counted per token ctxfold estimated, from the
    /// usage its last answer reported (1 until one did).
    pub(super) scale: f64,
    /// When this process last wrote the conversation's `last_used_at`,
    /// and the fixed part it wrote.
    touched: Option<(Instant, Option<usize>)>,
    /// What the conversation's previous request sent, for the next one's
    /// prefix read from the prompt cache (see [`ctxfold_core::cost`]).
    pub(super) last_sent: Option<ctxfold_core::cost::Sent>,
    /// The records [`bytes`](Self::bytes) counts, from the first.
    measured: usize,
    /// What those records take in memory.
    bytes: usize,
}

impl Session {
    /// The conversation's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    fn open(store: &Arc<dyn Store>, id: &str) -> Result<Session, StoreError> {
        let loaded = store.load(id)?;
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        let journal = InStore::new(store.clone(), id);
        Ok(Session {
            conv: Conversation::owning(loaded.into_log(), Box::new(journal)),
            store: store.clone(),
            id: id.to_owned(),
            scale: 1.0,
            touched: None,
            last_sent: None,
            measured: 0,
            bytes: 0,
        })
    }

    /// What the loaded log takes in memory, counting only the records
    /// added since the last measure (a log read again that is shorter is
    /// counted afresh).
    fn measure(&mut self) -> usize {
        let records = self.conv.log().records();
        if records.len() < self.measured {
            self.measured = 0;
            self.bytes = 0;
        }
        self.bytes += records[self.measured..]
            .iter()
            .map(record_bytes)
            .sum::<usize>();
        self.measured = records.len();
        self.bytes
    }

    /// Read the log again if another process appended to it since (a
    /// `compact --reset`, another replica): every append raises the
    /// store's next `seq`. A peek, without the log's lock: an append this
    /// misses is caught by the conditional append that follows.
    pub(super) fn refresh(&mut self) -> Result<(), StoreError> {
        if self.store.peek_next_seq(&self.id)? != self.conv.log().next_seq() {
            self.reload()?;
        }
        Ok(())
    }

    pub(super) fn reload(&mut self) -> Result<(), StoreError> {
        let fresh = Session::open(&self.store, &self.id)?;
        *self = Session {
            scale: self.scale,
            touched: self.touched,
            // The log only grew: what the last request sent still names
            // its records by their places.
            last_sent: self.last_sent.take(),
            ..fresh
        };
        Ok(())
    }
}

/// How often a conversation's `last_used_at` is written while the proxy
/// appends to it: its metadata is rewritten whole (a file rename, or a
/// database row), which every request of an agent's tool loop would pay
/// for; the list's "last used" needs no finer grain than this.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// The loaded logs, by conversation, bounded by count and bytes (least
/// recently used dropped first; one a request holds never).
pub(super) struct Sessions(Mutex<Bounded<String, Arc<Mutex<Session>>>>);

impl Sessions {
    pub(super) fn new(limits: &Limits) -> Sessions {
        Sessions(Mutex::new(Bounded::new(
            limits.conversations,
            limits.half_bytes(),
        )))
    }

    /// Conversation `id`, loaded from `store` unless it is held.
    pub(super) fn get(
        &self,
        store: &Arc<dyn Store>,
        id: &str,
    ) -> Result<Arc<Mutex<Session>>, StoreError> {
        if let Some(s) = lock(&self.0).get(&id.to_owned()) {
            return Ok(s.clone());
        }
        let mut s = Session::open(store, id)?;
        let bytes = s.measure();
        let s = Arc::new(Mutex::new(s));
        let mut sessions = lock(&self.0);
        // Another request may have loaded it meanwhile: one copy.
        if let Some(held) = sessions.get(&id.to_owned()) {
            return Ok(held.clone());
        }
        sessions.put(id.to_owned(), s.clone(), bytes, in_use);
        Ok(s)
    }

    /// Forget conversation `id`'s log.
    pub(super) fn remove(&self, id: &str) {
        lock(&self.0).take(&id.to_owned());
    }

    /// Count the logs again and drop the least recently used past the
    /// bounds (those in use stay).
    pub(super) fn trim(&self) {
        lock(&self.0).remeasure(|s| s.try_lock().ok().map(|mut s| s.measure()), in_use);
    }

    /// How many are held, and their bytes.
    pub(super) fn held(&self) -> (usize, usize) {
        let s = lock(&self.0);
        (s.len(), s.bytes())
    }
}

impl Book {
    pub(super) fn session(&self, id: &str) -> Result<Arc<Mutex<Session>>, StoreError> {
        self.sessions.get(&self.store, id)
    }

    /// The first answer `f` gives of the conversations `ids` (the first
    /// [`MAX_FORKS_TRIED`] of them), each read up to date and locked: one
    /// that can no longer be read is forgotten and passed over.
    pub(super) fn first_readable<T>(
        &self,
        ids: &[String],
        mut f: impl FnMut(&String, &mut Session) -> Result<Option<T>, PrepareError>,
    ) -> Result<Option<T>, PrepareError> {
        for id in ids.iter().take(MAX_FORKS_TRIED) {
            let session = match self.session(id) {
                Ok(s) => s,
                Err(e) => {
                    self.forget(id, e)?;
                    continue;
                }
            };
            let mut s = lock(&session);
            if let Err(e) = s.refresh() {
                drop(s);
                self.forget(id, e)?;
                continue;
            }
            if let Some(answer) = f(id, &mut s)? {
                return Ok(Some(answer));
            }
        }
        Ok(None)
    }

    /// Count the loaded logs again (they grow as requests append) and drop
    /// the least recently used past the bounds: at the end of every call
    /// that may have grown one, when its request no longer holds it.
    pub(super) fn trim(&self) {
        self.sessions.trim();
    }

    /// The proxy appended to conversation `s`: its `last_used_at` is now
    /// (written at most every [`TOUCH_EVERY`]; a failure is only logged,
    /// the records are what matter).
    pub(super) fn touch(&self, s: &mut Session) {
        self.touch_with(s, None);
    }

    /// [`touch`](Self::touch), and the fixed part (system prompt and tool
    /// definitions) the request carried, written at once when it changed,
    /// so `stats` and the pages count what the upstream counts. A log
    /// loaded again (its session dropped) writes them at its first append.
    pub(super) fn touch_with(&self, s: &mut Session, fixed: Option<usize>) {
        let now = Instant::now();
        let last = s.touched;
        let recent = last.is_some_and(|(t, _)| now.duration_since(t) < TOUCH_EVERY);
        let same = fixed.is_none() || last.is_some_and(|(_, f)| f == fixed);
        if recent && same {
            return;
        }
        s.touched = Some((now, fixed.or(last.and_then(|(_, f)| f))));
        let id = &s.id;
        let written = self.store.read_meta(id).and_then(|mut m| {
            m.last_used_at = ctxfold_store::now();
            if let Some(f) = fixed {
                m.set_fixed_tokens(META_KEY, f);
            }
            self.store.write_meta(&m)
        });
        if let Err(e) = written {
            tracing::debug!("conversation {id}: metadata not written: {e}");
        }
    }
}

/// Whether a request holds this loaded log (the map's is the one other
/// reference): it is not dropped then.
fn in_use(s: &Arc<Mutex<Session>>) -> bool {
    Arc::strong_count(s) > 1
}
