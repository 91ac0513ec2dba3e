//! The proxy's conversations: which stored conversation a request belongs
//! to, what of its history is new, what the upstream should see, and where
//! the answer goes. Synchronous (store and compaction work); the server
//! calls it on tokio's blocking pool.
//!
//! A request is keyed by its `x-ctxfold-conversation` header, else by the
//! session its agent names (`agent`), else by a fingerprint of its stable
//! head (shape, system prompt, tool names, first user message). Requests of one key are prepared one at a time; the key
//! remembers its conversations (forks included), the one used last first,
//! and a request goes on in the first whose log it continues. The index is
//! rebuilt from the workspace at start, so a restarted proxy finds its
//! conversations again.
//!
//! Everything kept per conversation is bounded ([`Limits`]): the loaded
//! logs and the readers by count and bytes, the key index and the
//! Responses chain index by count, least recently used dropped first. A
//! dropped log is loaded again at its conversation's next request; a key
//! the index no longer holds is looked up in the store (by the key each
//! conversation's metadata records), so the request goes on where it was.
//! Only the chain index cannot be rebuilt: a request chained to an answer
//! it dropped is recorded as after a restart.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctxfold_compactor::{
    BasicCompactor, Compactor, Context, Conversation, InStore, Moment, Status, Summarizers,
};
use ctxfold_core::materialize::item_record;
use ctxfold_core::planner::ToolHints;
use ctxfold_core::projection::{Item, PREAMBLE, project, summary_preamble};
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_formats::message_reader::MessageReader;
use ctxfold_providers::response::USAGE;
use ctxfold_store::{ConversationMeta, Store, StoreError, create_new};
use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::agent::{self, Agent};
use crate::cache::{Bounded, Limits, record_bytes};
use crate::reconcile::{Alignment, align};
use crate::request;
use crate::shape::{Shape, model};

/// How many of a key's conversations a request is compared with before
/// it is recorded as a new one.
const MAX_FORKS_TRIED: usize = 8;

/// Key of the proxy's entry in a conversation's metadata extras.
pub const META_KEY: &str = "proxy";

/// Makes the summarizers a compaction uses (one set per request: they
/// need not be shared across threads).
pub type SummarizersFactory = Arc<dyn Fn() -> Box<dyn Summarizers> + Send + Sync>;

/// What compaction the proxy applies.
#[derive(Clone)]
pub struct Compaction {
    /// `[compaction.auto]`.
    pub policy: AutoPolicy,
    /// Per-tool policies.
    pub hints: ToolHints,
    /// Summarizers for the rule's summaries.
    pub summarizers: SummarizersFactory,
    /// The window of every request's model (`[proxy] window`); `None`: the
    /// model's own, from the table (an unknown model is not compacted).
    pub window: Option<u32>,
    /// Record only; never change a request.
    pub observe: bool,
}

/// What a request's headers say about its conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Naming<'a> {
    /// The `x-ctxfold-conversation` header, which wins over anything else.
    pub header: Option<&'a str>,
    /// The agent its headers name (for the session fields only that agent
    /// gives a session's meaning).
    pub agent: Option<Agent>,
}

/// A request made ready for the upstream.
#[derive(Debug)]
pub struct Prepared {
    /// The body to send, or `None` to send the client's bytes unchanged
    /// (nothing of the view differs from what the client sent).
    pub body: Option<Vec<u8>>,
    /// The conversation it was recorded in.
    pub conversation: String,
    /// Estimated tokens of the conversation as the client sent it.
    pub tokens_before: usize,
    /// Estimated tokens of what goes upstream.
    pub tokens_after: usize,
    /// Compactions this request recorded.
    pub compactions: usize,
    /// How the request's history related to the log.
    pub history: History,
    /// Where the answer is recorded, when it continues the log.
    pub answer: Option<AnswerSlot>,
}

/// How a request's history related to the stored log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// A conversation was created for it.
    New,
    /// It continued the log (`added` records were new).
    Continued {
        /// Records appended.
        added: usize,
    },
    /// It was an earlier state of the log (a retry): nothing appended.
    Earlier,
    /// It diverged: a new conversation was made from it, naming the old.
    Forked,
    /// A Responses request chained with `previous_response_id`: its input
    /// holds only what is new (the history is the upstream's), so it was
    /// recorded after the answer it names, or as a new conversation naming
    /// that answer when the proxy did not record it, and goes upstream as
    /// sent.
    Chained,
}

/// Where an answer goes: appended only if the log is still as this
/// request left it (a retried request's answer does not double the log).
#[derive(Debug, Clone)]
pub struct AnswerSlot {
    conversation: String,
    len: usize,
    /// ctxfold's estimate of the request sent (fixed part included, not
    /// scaled): the answer's reported usage over it calibrates the next.
    sent: usize,
    /// The request's shape.
    pub shape: Shape,
    /// The request's model.
    pub model: String,
}

/// Why a request could not be prepared (the server fails open on it).
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The body is not the shape's request.
    #[error("the request body could not be read: {0}")]
    Body(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Compaction failed.
    #[error(transparent)]
    Compact(#[from] ctxfold_compactor::CompactError),
}

/// A conversation the proxy has read: its log as of this process's last
/// read or write.
struct Session {
    conv: Conversation<'static>,
    store: Arc<dyn Store>,
    id: String,
    /// Tokens the upstream counted per token ctxfold estimated, from the
    /// usage its last answer reported (1 until one did).
    scale: f64,
    /// When this process last wrote the conversation's `last_used_at`,
    /// and the fixed part it wrote.
    touched: Option<(Instant, Option<usize>)>,
    /// The records [`bytes`](Self::bytes) counts, from the first.
    measured: usize,
    /// What those records take in memory.
    bytes: usize,
}

impl Session {
    fn open(store: &Arc<dyn Store>, id: &str) -> Result<Session, StoreError> {
        let loaded = store.load(id)?;
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        let journal = InStore::new(store.clone(), id);
        Ok(Session {
            conv: Conversation::owning(Log::from_records(loaded.records), Box::new(journal)),
            store: store.clone(),
            id: id.to_owned(),
            scale: 1.0,
            touched: None,
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
    fn refresh(&mut self) -> Result<(), StoreError> {
        if self.store.peek_next_seq(&self.id)? != self.conv.log().next_seq() {
            self.reload()?;
        }
        Ok(())
    }

    fn reload(&mut self) -> Result<(), StoreError> {
        let fresh = Session::open(&self.store, &self.id)?;
        *self = Session {
            scale: self.scale,
            touched: self.touched,
            ..fresh
        };
        Ok(())
    }
}

/// How many times a request re-reads a log that another writer appended to
/// between its read and its append before it records a conversation of
/// its own.
const APPEND_TRIES: usize = 4;

/// The latest Responses answer id of each conversation, both ways
/// (answer ids as hashes: their length is the upstream's), each way
/// bounded by count.
struct Chains {
    by_response: Bounded<u128, String>,
    latest: Bounded<String, u128>,
}

impl Chains {
    fn new(limits: &Limits) -> Chains {
        Chains {
            by_response: Bounded::new(limits.index, usize::MAX),
            latest: Bounded::new(limits.index, usize::MAX),
        }
    }

    fn record(&mut self, response: &str, conversation: &str) {
        let h = hash128(response);
        if let Some(old) = self.latest.take(&conversation.to_owned()) {
            self.by_response.take(&old);
        }
        self.latest.put(conversation.to_owned(), h, 0, |_| false);
        self.by_response
            .put(h, conversation.to_owned(), 0, |_| false);
    }

    /// The conversation whose latest answer is `response`. Either way may
    /// have dropped its entry: only one that both still hold counts.
    fn find(&mut self, response: &str) -> Option<String> {
        let h = hash128(response);
        let id = self.by_response.get(&h)?.clone();
        (self.latest.get(&id) == Some(&h)).then_some(id)
    }
}

/// The proxy's conversations.
pub struct Book {
    store: Arc<dyn Store>,
    compaction: Compaction,
    limits: Limits,
    /// Key (its hash: a header's is as long as the client makes it) → its
    /// conversations, the one used last first, at most
    /// [`MAX_FORKS_TRIED`]. Each key's lock serializes its requests'
    /// preparation; a key whose lock is held is never dropped.
    keys: Mutex<Bounded<u128, Arc<Mutex<Vec<String>>>>>,
    /// The loaded logs; one a request holds is never dropped (it is the
    /// request's until it ends).
    sessions: Mutex<Bounded<String, Arc<Mutex<Session>>>>,
    /// Conversations that could no longer be read.
    gone: Mutex<Bounded<String, ()>>,
    /// Responses API answer ids and the conversations that recorded them,
    /// for requests chained with `previous_response_id`: this run's
    /// answers, the latest of each conversation.
    chains: Mutex<Chains>,
    /// What was read of each conversation head's last request, counted as
    /// twice its text (its records hold about as much again).
    readers: Mutex<Bounded<u64, Kept>>,
}

/// What the proxy holds in memory (`/metrics`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    /// Loaded conversation logs, and their bytes.
    pub conversations: (usize, usize),
    /// Kept readers, and their bytes.
    pub readers: (usize, usize),
    /// Conversation keys indexed.
    pub keys: usize,
    /// Responses answer ids indexed.
    pub chains: usize,
}

/// How often a conversation's `last_used_at` is written while the proxy
/// appends to it: its metadata is rewritten whole (a file rename, or a
/// database row), which every request of an agent's tool loop would pay
/// for; the list's "last used" needs no finer grain than this.
const TOUCH_EVERY: Duration = Duration::from_secs(60);

/// A conversation head's last request, as read: each message's raw text
/// and the reader that read them.
struct Kept {
    shape: Shape,
    /// Anthropic's top-level `system` (the reader's head records).
    system: Option<Value>,
    raw: Vec<Box<str>>,
    /// The text of `raw`.
    bytes: usize,
    reader: MessageReader,
}

impl Book {
    /// The store the conversations are recorded in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The conversations of `store`, indexed by the keys the proxy
    /// recorded, with the default [`Limits`].
    pub fn open(store: Arc<dyn Store>, compaction: Compaction) -> Result<Book, StoreError> {
        Book::open_with(store, compaction, Limits::default())
    }

    /// [`open`](Self::open), keeping at most what `limits` says. The index
    /// starts with the keys of the conversations used last.
    pub fn open_with(
        store: Arc<dyn Store>,
        compaction: Compaction,
        limits: Limits,
    ) -> Result<Book, StoreError> {
        let mut by_key: HashMap<&str, (Vec<String>, &str)> = HashMap::new();
        let listed = store.list()?.conversations;
        // Oldest first: a later conversation of a key (a fork) goes first.
        for c in &listed {
            if let Some(k) = recorded_key(c) {
                let (ids, used) = by_key.entry(k).or_default();
                ids.insert(0, c.id.clone());
                ids.truncate(MAX_FORKS_TRIED);
                *used = (*used).max(c.last_used_at.as_str());
            }
        }
        let mut order: Vec<(&str, (Vec<String>, &str))> = by_key.into_iter().collect();
        order.sort_by(|a, b| (a.1.1, a.0).cmp(&(b.1.1, b.0)));
        let mut keys = Bounded::new(limits.index, usize::MAX);
        if order.len() > limits.index {
            keys.mark_dropped();
        }
        // Used last, put last: the most recently used.
        let skip = order.len().saturating_sub(limits.index);
        for (k, (ids, _)) in order.into_iter().skip(skip) {
            keys.put(hash128(k), Arc::new(Mutex::new(ids)), 0, |_| false);
        }
        let half = limits.half_bytes();
        Ok(Book {
            store,
            compaction,
            limits,
            keys: Mutex::new(keys),
            sessions: Mutex::new(Bounded::new(limits.conversations, half)),
            gone: Mutex::new(Bounded::new(limits.index, usize::MAX)),
            chains: Mutex::new(Chains::new(&limits)),
            readers: Mutex::new(Bounded::new(limits.conversations, half)),
        })
    }

    /// What this book keeps at most.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What it holds now.
    pub fn held(&self) -> Held {
        let (conversations, readers) = {
            let s = lock(&self.sessions);
            let r = lock(&self.readers);
            ((s.len(), s.bytes()), (r.len(), r.bytes()))
        };
        Held {
            conversations,
            readers,
            keys: lock(&self.keys).len(),
            chains: lock(&self.chains).latest.len(),
        }
    }

    /// The conversations of `key`, and whether the index may have dropped
    /// them (then an empty list is looked up in the store).
    fn slot(&self, key: &str) -> (Arc<Mutex<Vec<String>>>, bool) {
        let h = hash128(key);
        let mut keys = lock(&self.keys);
        if let Some(s) = keys.get(&h) {
            return (s.clone(), false);
        }
        let s = Arc::new(Mutex::new(Vec::new()));
        // A key being prepared is never dropped: a second slot for it
        // would let two of its requests record a conversation each.
        keys.put(h, s.clone(), 0, |s| Arc::strong_count(s) > 1);
        (s, keys.dropped())
    }

    fn session(&self, id: &str) -> Result<Arc<Mutex<Session>>, StoreError> {
        if let Some(s) = lock(&self.sessions).get(&id.to_owned()) {
            return Ok(s.clone());
        }
        let mut s = Session::open(&self.store, id)?;
        let bytes = s.measure();
        let s = Arc::new(Mutex::new(s));
        let mut sessions = lock(&self.sessions);
        // Another request may have loaded it meanwhile: one copy.
        if let Some(held) = sessions.get(&id.to_owned()) {
            return Ok(held.clone());
        }
        sessions.put(id.to_owned(), s.clone(), bytes, in_use);
        Ok(s)
    }

    /// Count the loaded logs again (they grow as requests append) and drop
    /// the least recently used past the bounds: at the end of every call
    /// that may have grown one, when its request no longer holds it.
    fn trim(&self) {
        lock(&self.sessions).remeasure(|s| s.try_lock().ok().map(|mut s| s.measure()), in_use);
    }

    /// The proxy appended to conversation `s`: its `last_used_at` is now
    /// (written at most every [`TOUCH_EVERY`]; a failure is only logged,
    /// the records are what matter).
    fn touch(&self, s: &mut Session) {
        self.touch_with(s, None);
    }

    /// [`touch`](Self::touch), and the fixed part (system prompt and tool
    /// definitions) the request carried, written at once when it changed,
    /// so `stats` and the pages count what the upstream counts. A log
    /// loaded again (its session dropped) writes them at its first append.
    fn touch_with(&self, s: &mut Session, fixed: Option<usize>) {
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

    /// A conversation of a key that is no longer there (removed with
    /// `c rm`, its metadata broken) is forgotten: the key's requests go on
    /// in the others, or in a new one. Any other error (a database that
    /// does not answer for a while) is the request's: it fails open, and
    /// the conversation is used again by the next request.
    fn forget(&self, id: &str, e: StoreError) -> Result<(), StoreError> {
        if !gone_for_good(&e) {
            return Err(e);
        }
        tracing::warn!("conversation {id} can no longer be read ({e}); the proxy stops using it");
        lock(&self.sessions).take(&id.to_owned());
        lock(&self.gone).put(id.to_owned(), (), 0, |_| false);
        Ok(())
    }

    /// The key of a request: its `x-ctxfold-conversation` header, else the
    /// session its agent names (`session:AGENT:ID`, see [`agent`]), else
    /// the fingerprint of its head. A header naming a conversation the
    /// proxy recorded (the id its answers carry in that header) stands for
    /// that conversation's key, so a client echoing it goes on there.
    fn key(
        &self,
        shape: Shape,
        body: &Value,
        client: &[Record],
        naming: &Naming<'_>,
    ) -> Result<String, StoreError> {
        let Some(h) = naming.header else {
            if let Some(session) = agent::session_of(shape, body, naming.agent) {
                return Ok(session.key());
            }
            return Ok(fingerprint(shape, body, client));
        };
        // Only an exact id: a prefix lookup would read every conversation's
        // metadata on every request.
        let recorded = if h.starts_with('.') || h.contains(['/', '\\']) {
            None
        } else {
            match self.store.read_meta(h) {
                Ok(m) => recorded_key(&m).map(str::to_owned),
                Err(e) if gone_for_good(&e) || matches!(e, StoreError::InvalidId { .. }) => None,
                Err(e) => return Err(e),
            }
        };
        Ok(recorded.unwrap_or_else(|| format!("header:{h}")))
    }

    /// Record the history of the request body `bytes` and make the body
    /// the upstream gets. Same as [`prepare`](Self::prepare) on the parsed
    /// body, but the messages a conversation's last request already had
    /// are neither parsed nor read again.
    pub fn prepare_bytes(
        &self,
        shape: Shape,
        bytes: &[u8],
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let prepared = self.prepare_split(shape, bytes, naming);
        self.trim();
        prepared
    }

    /// Head `h`'s reader, kept for its next request (counted as twice its
    /// text: its records hold about as much again).
    fn keep_reader(&self, h: u64, kept: Kept) {
        let bytes = 2 * kept.bytes;
        lock(&self.readers).put(h, kept, bytes, |_| false);
    }

    fn prepare_split(
        &self,
        shape: Shape,
        bytes: &[u8],
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let wire = shape.wire();
        let split = match request::split(bytes, wire.messages_key()) {
            Ok(Some(s)) if !s.messages.is_empty() => s,
            Ok(_) => {
                let body: Value = serde_json::from_slice(bytes)
                    .map_err(|e| PrepareError::Body(format!("not JSON ({e})")))?;
                return self.prepare_parsed(shape, &body, naming);
            }
            Err(e) => return Err(PrepareError::Body(e)),
        };
        let request::Split {
            head,
            head_text,
            messages,
        } = split;
        let system = match shape {
            Shape::Messages => head.get("system").cloned(),
            _ => None,
        };
        let h = head_hash(shape, messages[0].get());
        // Taken while in use: a request of the same head running at the
        // same time reads its body whole instead.
        let taken = lock(&self.readers)
            .take(&h)
            .filter(|k| k.shape == shape && k.system == system);
        let mut kept = match taken {
            Some(k) => k,
            None => Kept {
                shape,
                reader: MessageReader::new(wire, Some(&head)).map_err(PrepareError::Body)?,
                system,
                raw: Vec::new(),
                bytes: 0,
            },
        };
        let same = kept
            .raw
            .iter()
            .zip(&messages)
            .take_while(|(a, b)| ***a == *b.get())
            .count();
        kept.reader.truncate(same);
        for r in kept.raw.drain(same..) {
            kept.bytes -= r.len();
        }
        for m in &messages[same..] {
            let read = serde_json::from_str::<Value>(m.get())
                .map_err(|e| e.to_string())
                .and_then(|v| kept.reader.read(&v));
            if let Err(e) = read {
                self.keep_reader(h, kept);
                return Err(PrepareError::Body(e));
            }
            kept.bytes += m.get().len();
            kept.raw.push(m.get().into());
        }
        if kept.reader.needs_pairing() {
            // Pairing renames ids across the whole history: read it whole.
            self.keep_reader(h, kept);
            let body: Value = serde_json::from_slice(bytes)
                .map_err(|e| PrepareError::Body(format!("not JSON ({e})")))?;
            return self.prepare_parsed(shape, &body, naming);
        }
        let extras = wire.extras(&head);
        let head = Value::Object(head);
        let sent = Sent {
            texts: &kept.raw,
            reader: &kept.reader,
            head: head.as_object().expect("the head is an object"),
            head_text: &head_text,
        };
        let prepared = self.prepare_read(
            shape,
            &head,
            kept.reader.records(),
            &extras,
            Some(sent),
            naming,
        );
        self.keep_reader(h, kept);
        prepared
    }

    /// Record `body`'s history and make the body the upstream gets.
    pub fn prepare(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let prepared = self.prepare_parsed(shape, body, naming);
        self.trim();
        prepared
    }

    fn prepare_parsed(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        self.prepare_read(
            shape,
            body,
            &transcript.records,
            &transcript.extras,
            None,
            naming,
        )
    }

    /// [`prepare`](Self::prepare) of a body read into `client` records and
    /// `extras`; `body` need hold only the keys besides the messages.
    fn prepare_read(
        &self,
        shape: Shape,
        body: &Value,
        client: &[Record],
        extras: &Object,
        sent: Option<Sent>,
        naming: &Naming<'_>,
    ) -> Result<Prepared, PrepareError> {
        let model = model(body).to_owned();
        if let Some(previous) = chained(shape, body) {
            return self.chain(shape, previous, &model, client);
        }
        let key = self.key(shape, body, client, naming)?;
        let (slot, maybe_dropped) = self.slot(&key);
        // Held to the end: one request of a key at a time (in this
        // process; replicas sharing a store append conditionally).
        let mut named = lock(&slot);
        if named.is_empty() && (self.store.is_shared() || maybe_dropped) {
            // Another replica may have recorded this key's conversations,
            // or the index dropped the key since this process saw it.
            let found = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.clone()))?;
            named.extend(found.into_iter().rev().map(|m| m.id));
        }
        let first = if named.is_empty() {
            self.create_first(shape, &key, &model, client)?
        } else {
            None
        };
        if named.is_empty() && first.is_none() {
            // Another replica started this key's conversation meanwhile.
            let found = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.clone()))?;
            named.extend(found.into_iter().rev().map(|m| m.id));
        }
        let (id, history, new_turn) = match first {
            Some(id) => (id, History::New, true),
            // The key's first conversation is taken but not found (moved to
            // the trash): a new one with an id of its own.
            None if named.is_empty() => (
                self.create(shape, &key, &model, client, None)?,
                History::New,
                true,
            ),
            None => self.continue_or_fork(shape, &key, &model, client, &mut named)?,
        };
        // The conversation used goes first; those that can no longer be
        // read go.
        let gone = lock(&self.gone);
        named.retain(|x| *x != id && gone.peek(x).is_none());
        drop(gone);
        named.insert(0, id.clone());
        // Only the first are ever tried (the store has the others).
        named.truncate(MAX_FORKS_TRIED);
        self.finish(
            shape, &id, history, body, extras, client, sent, &model, new_turn,
        )
    }

    /// Record a chained Responses request after the answer it names (or as
    /// a new conversation naming it); it goes upstream as sent.
    fn chain(
        &self,
        shape: Shape,
        previous: &str,
        model: &str,
        client: &[Record],
    ) -> Result<Prepared, PrepareError> {
        let est = Heuristic::default();
        let tokens: usize = client.iter().map(|r| est.record_tokens(r)).sum();
        let known = lock(&self.chains).find(previous);
        let mut id = None;
        if let Some(known) = known {
            match self.session(&known) {
                Ok(session) => {
                    let mut s = lock(&session);
                    s.refresh()?;
                    s.conv.append(stamp(client))?;
                    self.touch(&mut s);
                    id = Some((known, s.conv.log().len()));
                }
                Err(e) => self.forget(&known, e)?,
            }
        }
        let (id, len) = match id {
            Some(found) => found,
            None => {
                let key = format!("chain:{previous}");
                let meta = json!({"key": key, "shape": shape.name(), "model": model,
                    "previous_response_id": previous});
                let title = title_from(client);
                let mut extras = Object::new();
                extras.insert(META_KEY.into(), meta);
                let c = create_new(&*self.store, title, None, extras, stamp(client))?;
                let len = client.len();
                (c.id, len)
            }
        };
        Ok(Prepared {
            body: None,
            conversation: id.clone(),
            tokens_before: tokens,
            tokens_after: tokens,
            compactions: 0,
            history: History::Chained,
            answer: Some(AnswerSlot {
                conversation: id,
                len,
                sent: tokens,
                shape,
                model: model.to_owned(),
            }),
        })
    }

    /// Append what is new in `client` to conversation `id`, or record it
    /// as a new conversation when it diverges. Returns the conversation,
    /// what happened, and whether a user message was added (a new turn).
    fn continue_or_fork(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
        named: &mut Vec<String>,
    ) -> Result<(String, History, bool), PrepareError> {
        // The key's conversations, newest first: two clients sharing a
        // key each find their own again instead of forking every time.
        let mut from = None;
        let ids = named.clone();
        if let Some(found) = self.go_on_in(client, &ids, &mut from)? {
            return Ok(found);
        }
        if self.store.is_shared() {
            // Another replica may have forked this key's conversation: go
            // on there rather than fork it again here.
            let more: Vec<String> = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key.to_owned()))?
                .into_iter()
                .rev()
                .map(|m| m.id)
                .filter(|id| !named.contains(id))
                .collect();
            named.extend(more.iter().cloned());
            if let Some(found) = self.go_on_in(client, &more, &mut from)? {
                return Ok(found);
            }
        }
        let Some(from) = from else {
            // None of them can be read: start afresh.
            let new = self.create(shape, key, model, client, None)?;
            return Ok((new, History::New, true));
        };
        tracing::info!(
            "conversation {from}: the request's history differs from the log; recording it as a new conversation"
        );
        let new = self.create(shape, key, model, client, Some(&from))?;
        Ok((new, History::Forked, true))
    }

    /// Go on in the first of `ids` whose log `client` continues (or is an
    /// earlier state of); `from` becomes the first that could be read.
    fn go_on_in(
        &self,
        client: &[Record],
        ids: &[String],
        from: &mut Option<String>,
    ) -> Result<Option<(String, History, bool)>, PrepareError> {
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
            from.get_or_insert_with(|| id.clone());
            for _ in 0..APPEND_TRIES {
                match align(s.conv.log().records(), client) {
                    Alignment::Extends { tail, .. } => {
                        let new = stamp(&client[tail..]);
                        let added = new.len();
                        let user = new.iter().any(|r| matches!(r.body, Body::User { .. }));
                        if s.conv.append_at(new)?.is_some() {
                            if added > 0 {
                                self.touch(&mut s);
                            }
                            return Ok(Some((id.clone(), History::Continued { added }, user)));
                        }
                        // Another writer appended since the log was read:
                        // compare with what it holds now.
                        s.reload()?;
                    }
                    Alignment::Earlier { .. } => {
                        return Ok(Some((id.clone(), History::Earlier, false)));
                    }
                    Alignment::Diverges { .. } => break,
                }
            }
        }
        Ok(None)
    }

    /// Compact (unless the request is an earlier state), render, and say
    /// where the answer goes.
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        shape: Shape,
        id: &str,
        history: History,
        body: &Value,
        extras: &Object,
        client: &[Record],
        sent: Option<Sent>,
        model: &str,
        new_turn: bool,
    ) -> Result<Prepared, PrepareError> {
        let session = self.session(id)?;
        let mut s = lock(&session);
        let mut compactions = 0;
        if history != History::Earlier && !self.compaction.observe {
            compactions = self.compact(&mut s, model, body, new_turn)?;
        }
        let stored = s.conv.log().records();
        let est = Heuristic::default();
        let pairs = match align(stored, client) {
            Alignment::Extends { pairs, .. } | Alignment::Earlier { pairs } => pairs,
            Alignment::Diverges { at } => {
                // The log was just made from, or extended with, this
                // history: another process must have changed it since.
                // Send the client's request as it is.
                tracing::warn!(
                    "conversation {id} changed under the request (at record {at}); sending it unchanged"
                );
                let t = client.iter().map(|r| est.record_tokens(r)).sum();
                return Ok(Prepared {
                    body: None,
                    conversation: id.to_owned(),
                    tokens_before: t,
                    tokens_after: t,
                    compactions,
                    history,
                    answer: None,
                });
            }
        };
        let r = render_stored(shape, s.conv.log(), client, &pairs, extras, sent);
        // The fixed part counts as the trigger counts it, and everything
        // as the upstream counted the last answer's request.
        let fixed = fixed_tokens(body);
        if history != History::Earlier {
            self.touch_with(&mut s, Some(fixed));
        }
        let up = |t: usize| scaled(fixed + t, s.scale);
        let (body, tokens_before, tokens_after, sent_est) = if self.compaction.observe {
            (None, up(r.before), up(r.before), fixed + r.before)
        } else {
            (r.body, up(r.before), up(r.after), fixed + r.after)
        };
        let answer = (history != History::Earlier).then(|| AnswerSlot {
            conversation: id.to_owned(),
            len: s.conv.log().len(),
            sent: sent_est,
            shape,
            model: model.to_owned(),
        });
        Ok(Prepared {
            body,
            conversation: id.to_owned(),
            tokens_before,
            tokens_after,
            compactions,
            history,
            answer,
        })
    }

    /// The compactor and its context for a request of `model`, counting
    /// as the upstream did (`scale`).
    fn compactor(
        &self,
        model: &str,
        body: &Value,
        moment: Moment,
        scale: f64,
    ) -> (BasicCompactor, Context) {
        let c = &self.compaction;
        let window = c.window.or_else(|| ctxfold_tokens::context_window(model));
        let compactor = BasicCompactor::new(
            c.policy.clone(),
            c.hints.clone(),
            Box::new(Heuristic::default()),
            (c.summarizers)(),
        );
        let mut ctx = Context::new(moment, window);
        ctx.extra_tokens = fixed_tokens(body);
        ctx.max_tokens = ["max_tokens", "max_output_tokens", "max_completion_tokens"]
            .iter()
            .find_map(|k| body.get(*k)?.as_u64())
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        ctx.scale = scale;
        ctx.now = Some(jiff::Timestamp::now());
        (compactor, ctx)
    }

    fn compact(
        &self,
        s: &mut Session,
        model: &str,
        body: &Value,
        new_turn: bool,
    ) -> Result<usize, PrepareError> {
        if !self.compaction.policy.enabled {
            return Ok(0);
        }
        let (compactor, mut ctx) = self.compactor(model, body, Moment::BetweenTurns, s.scale);
        if ctx.window.is_none() {
            tracing::debug!("the window of `{model}` is not known: no automatic compaction");
            return Ok(0);
        }
        let mut n = 0;
        if new_turn {
            s.conv.begin_turn();
            let o = compactor.compact_if_needed(&mut s.conv, &ctx)?;
            n += o.committed.len();
            note(&o.status);
        }
        ctx.moment = Moment::BeforeStep;
        let o = compactor.compact_if_needed(&mut s.conv, &ctx)?;
        n += o.committed.len();
        note(&o.status);
        Ok(n)
    }

    fn create(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
        forked_from: Option<&str>,
    ) -> Result<String, PrepareError> {
        let (title, extras) = new_meta(shape, key, model, client, forked_from);
        Ok(create_new(&*self.store, title, None, extras, stamp(client))?.id)
    }

    /// Record `client` as the first conversation of `key`. In a shared
    /// store it gets an id made from the key, so two replicas that see the
    /// same first request at once cannot each start one: `None` when
    /// another made it first (look it up then).
    fn create_first(
        &self,
        shape: Shape,
        key: &str,
        model: &str,
        client: &[Record],
    ) -> Result<Option<String>, PrepareError> {
        if !self.store.is_shared() {
            return Ok(Some(self.create(shape, key, model, client, None)?));
        }
        let (title, extras) = new_meta(shape, key, model, client, None);
        let digest = Sha256::digest(key.as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let now = ctxfold_store::now();
        let meta = ConversationMeta {
            id: format!("proxy-{hex}"),
            title,
            created_at: now.clone(),
            last_used_at: now,
            imported_from: None,
            extras,
        };
        match self.store.create(&meta, stamp(client)) {
            Ok(_) => Ok(Some(meta.id)),
            Err(StoreError::ConversationExists { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The body the upstream would get for `body`, recording nothing and
    /// compacting nothing (for `count_tokens`): the view of the stored
    /// conversation with what is new in the request at its end. `None`:
    /// the request's own body (no conversation, or nothing folded).
    pub fn preview(
        &self,
        shape: Shape,
        body: &Value,
        naming: &Naming<'_>,
    ) -> Result<Option<Vec<u8>>, PrepareError> {
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        let client = transcript.records;
        let key = self.key(shape, body, &client, naming)?;
        let (slot, maybe_dropped) = self.slot(&key);
        let mut ids = lock(&slot).clone();
        drop(slot);
        if ids.is_empty() && (self.store.is_shared() || maybe_dropped) {
            ids = self
                .store
                .find_by_extra(&format!("/{META_KEY}/key"), &Value::String(key))?
                .into_iter()
                .rev()
                .map(|m| m.id)
                .collect();
        }
        let gone = lock(&self.gone);
        ids.retain(|id| gone.peek(id).is_none());
        drop(gone);
        for id in ids.iter().take(MAX_FORKS_TRIED) {
            // One that is no longer there is forgotten, as in prepare.
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
            let stored = s.conv.log().records();
            let pairs = match align(stored, &client) {
                // What is new in the request is not in the log: it goes as
                // sent, after the view of what is.
                Alignment::Extends { pairs, .. } | Alignment::Earlier { pairs } => pairs,
                Alignment::Diverges { .. } => continue,
            };
            let r = render_stored(
                shape,
                s.conv.log(),
                &client,
                &pairs,
                &transcript.extras,
                None,
            );
            return Ok(r.body);
        }
        Ok(None)
    }

    /// The upstream answered that `body` (prepared into `slot`) is over
    /// the model's context: compact conversation `slot` once, whatever the
    /// estimate says, and make the body to retry with. `None`: nothing
    /// could be folded (or the log moved on meanwhile), so a retry would
    /// fail the same way.
    pub fn overflowed(
        &self,
        body: &Value,
        slot: &AnswerSlot,
        error: &[u8],
    ) -> Result<Option<Prepared>, PrepareError> {
        let prepared = self.compact_overflowed(body, slot, error);
        self.trim();
        prepared
    }

    fn compact_overflowed(
        &self,
        body: &Value,
        slot: &AnswerSlot,
        error: &[u8],
    ) -> Result<Option<Prepared>, PrepareError> {
        // A chained request holds no history to fold.
        if self.compaction.observe || chained(slot.shape, body).is_some() {
            return Ok(None);
        }
        let shape = slot.shape;
        let transcript = shape.read(body).map_err(PrepareError::Body)?;
        let session = self.session(&slot.conversation)?;
        let mut s = lock(&session);
        s.refresh()?;
        if s.conv.log().len() != slot.len {
            return Ok(None);
        }
        // The error may say what the upstream counted ("45123 tokens >
        // 40000 maximum"): count as it does from now on.
        if let Some(counted) = counted_tokens(error)
            && slot.sent > 0
        {
            s.scale = calibrated(counted, slot.sent);
        }
        let (compactor, ctx) = self.compactor(&slot.model, body, Moment::BeforeStep, s.scale);
        let outcome = compactor.compact_for_overflow(&mut s.conv, &ctx)?;
        note(&outcome.status);
        if !outcome.compacted() {
            return Ok(None);
        }
        let pairs = match align(s.conv.log().records(), &transcript.records) {
            Alignment::Extends { pairs, .. } | Alignment::Earlier { pairs } => pairs,
            Alignment::Diverges { .. } => return Ok(None),
        };
        let r = render_stored(
            shape,
            s.conv.log(),
            &transcript.records,
            &pairs,
            &transcript.extras,
            None,
        );
        let Some(out) = r.body else { return Ok(None) };
        let fixed = fixed_tokens(body);
        Ok(Some(Prepared {
            body: Some(out),
            conversation: slot.conversation.clone(),
            tokens_before: scaled(fixed + r.before, s.scale),
            tokens_after: scaled(fixed + r.after, s.scale),
            compactions: outcome.committed.len(),
            history: History::Continued { added: 0 },
            answer: Some(AnswerSlot {
                len: s.conv.log().len(),
                sent: fixed + r.after,
                ..slot.clone()
            }),
        }))
    }

    /// Record an answer where `slot` says, if the log is still as its
    /// request left it. Returns whether it was recorded.
    pub fn record_answer(
        &self,
        slot: &AnswerSlot,
        records: Vec<Record>,
    ) -> Result<bool, PrepareError> {
        let recorded = self.append_answer(slot, records);
        self.trim();
        recorded
    }

    fn append_answer(&self, slot: &AnswerSlot, records: Vec<Record>) -> Result<bool, PrepareError> {
        let session = self.session(&slot.conversation)?;
        let mut s = lock(&session);
        s.refresh()?;
        if s.conv.log().len() != slot.len || records.is_empty() {
            return Ok(false);
        }
        let response = records.iter().rev().find_map(|r| {
            r.metadata
                .as_ref()?
                .get(crate::shape::RESPONSE_ID)?
                .as_str()
                .map(str::to_owned)
        });
        let counted = records
            .iter()
            .rev()
            .find_map(|r| reported_input(r.metadata.as_ref()?.get(USAGE)?));
        // Only right after the request: another replica may have recorded
        // an answer to the same request first.
        if s.conv.append_at(stamp(&records))?.is_none() {
            return Ok(false);
        }
        if let Some(counted) = counted
            && slot.sent > 0
        {
            s.scale = calibrated(counted, slot.sent);
        }
        if let Some(response) = response {
            lock(&self.chains).record(&response, &slot.conversation);
        }
        // After the chain index: a chained request may follow at once.
        self.touch(&mut s);
        Ok(true)
    }
}

/// Tokens of what every request carries besides its messages: the system
/// prompt (Anthropic's `system`, Responses' `instructions`) and the tool
/// definitions, counted on their JSON text as the upstream reads it.
fn fixed_tokens(body: &Value) -> usize {
    let est = Heuristic::default();
    ["system", "instructions", "tools"]
        .iter()
        .filter_map(|k| body.get(*k))
        .map(|v| match v {
            Value::String(s) => est.count_text(s),
            other => est.count_text(&other.to_string()),
        })
        .sum()
}

/// Upstream tokens per estimated token, from what the upstream counted
/// for a request ctxfold estimated at `sent`. Never below 1: a usage
/// figure smaller than the estimate (a cached prefix left out, a server
/// that reports nothing useful) must not make ctxfold send more.
fn calibrated(counted: u64, sent: usize) -> f64 {
    (counted as f64 / sent as f64).clamp(1.0, 8.0)
}

fn scaled(tokens: usize, scale: f64) -> usize {
    (tokens as f64 * scale).ceil() as usize
}

/// The prompt tokens a provider reported in `usage`: Anthropic's input
/// with its cached parts, OpenAI's input or prompt tokens.
fn reported_input(usage: &Value) -> Option<u64> {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    if let Some(input) = n("input_tokens") {
        let cached = n("cache_read_input_tokens").unwrap_or(0)
            + n("cache_creation_input_tokens").unwrap_or(0);
        return Some(input + cached).filter(|&t| t > 0);
    }
    n("prompt_tokens").filter(|&t| t > 0)
}

/// The size an overflow error says the request had: the first number
/// before "tokens" in its message, the largest (`prompt is too long: 45123 tokens >
/// 40000 maximum`, `… resulted in 45123 tokens`).
fn counted_tokens(error: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(error);
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    // The largest: OpenAI names the maximum first ("maximum context
    // length is 128000 tokens. However, your messages resulted in 130000
    // tokens").
    words
        .windows(2)
        .filter(|w| w[1] == "tokens")
        .filter_map(|w| w[0].parse().ok())
        .max()
}

fn note(status: &Status) {
    match status {
        Status::Failed { error } => tracing::warn!("automatic compaction failed: {error}"),
        Status::Compacted | Status::StillOver { .. } => {
            tracing::info!("automatic compaction: {status:?}")
        }
        other => tracing::debug!("automatic compaction: {other:?}"),
    }
}

/// A request body rendered from a view.
struct Rendered {
    /// The body, or `None` when no compaction is in force (the client's
    /// bytes go on).
    body: Option<Vec<u8>>,
    /// Estimated tokens of the client's conversation.
    before: usize,
    /// Estimated tokens of the view.
    after: usize,
}

/// What the view does with one stored record.
#[derive(Clone)]
enum Fate {
    /// Not in the view (stripped reasoning, omitted, or the client never
    /// sent it).
    Dropped,
    /// In the view as it is.
    Kept,
    /// In the view changed (a stripped call or result): this body.
    Changed(Body),
    /// Inside the summary at this view item.
    Summarized(usize),
}

/// The body the upstream gets. The stored log is projected as it is, so
/// what the log caches (the diagnostics of stripped results) serves every
/// request; the body is then the client's own records, in the client's
/// order, each as the view has it: kept (the client's copy, its wire fields too), changed (the view's
/// body on the client's copy), folded into a summary (which takes the
/// place of the first of them), or left out. What the client sent that the
/// log does not compare (system messages, image and other blocks) goes as
/// the client sent it, unless a summary folded the records around it; so
/// does what the request adds to the log (a retry's earlier state, or the
/// new messages `count_tokens` is asked about), after the view of the
/// rest.
fn render_stored(
    shape: Shape,
    log: &Log,
    client: &[Record],
    pairs: &[(usize, usize)],
    extras: &Object,
    sent: Option<Sent>,
) -> Rendered {
    let est = Heuristic::default();
    // Each client record is estimated once: most of them go as sent.
    let tokens: Vec<usize> = client.iter().map(|r| est.record_tokens(r)).collect();
    let before = tokens.iter().sum();
    let view = project(log);
    if view.active.is_empty() {
        return Rendered {
            body: None,
            before,
            after: before,
        };
    }
    let mut fate = vec![Fate::Dropped; log.len()];
    let mut preamble = false;
    for (n, item) in view.items.iter().enumerate() {
        match *item {
            Item::Event { index, .. } => fate[index] = Fate::Kept,
            Item::StrippedCall { index, .. }
            | Item::StrippedResult { index, .. }
            | Item::Clipped { index, .. } => {
                if let Some(r) = item_record(item) {
                    fate[index] = Fate::Changed(r.body);
                }
            }
            Item::Summary { first, last, .. } => {
                for f in &mut fate[first..=last] {
                    *f = Fate::Summarized(n);
                }
            }
            Item::Preamble => preamble = true,
        }
    }
    let mut stored_of = vec![None; client.len()];
    for &(si, cj) in pairs {
        stored_of[cj] = Some(si);
    }
    // For a record the log does not compare: the summary folding both the
    // compared records around it, if one does.
    let mut prev_summary = vec![None; client.len()];
    let mut last = None;
    for j in 0..client.len() {
        if let Some(si) = stored_of[j] {
            last = match fate[si] {
                Fate::Summarized(n) => Some(n),
                _ => None,
            };
        }
        prev_summary[j] = last;
    }
    let mut next_summary = vec![None; client.len()];
    let mut next = None;
    for j in (0..client.len()).rev() {
        if let Some(si) = stored_of[j] {
            next = match fate[si] {
                Fate::Summarized(n) => Some(n),
                _ => None,
            };
        }
        next_summary[j] = next;
    }
    // The client's own records are borrowed, not copied: most of a long
    // conversation goes as sent.
    let mut records: Vec<Cow<Record>> = Vec::with_capacity(client.len() + 3);
    // The client record each one was, for its estimate.
    let mut sent_as: Vec<Option<usize>> = Vec::with_capacity(client.len() + 3);
    // The client record each one stands for, changed or not (a stripped
    // call or result is still that call or result, where the format
    // groups records into messages).
    let mut from: Vec<Option<usize>> = Vec::with_capacity(client.len() + 3);
    if preamble {
        records.push(Cow::Owned(Record::new(
            0,
            "",
            Body::User {
                content: PREAMBLE.into(),
                author: Some("ctxfold".into()),
            },
        )));
    }
    let mut summarized = std::collections::HashSet::new();
    // A prompt-cache marker on a record that is folded away moves back to
    // the nearest block still sent, so the cached prefix keeps a boundary
    // where the folded part ends (markers only move or merge: never more
    // than the client sent).
    let folded = |records: &mut Vec<Cow<Record>>, c: &Record| {
        if shape == Shape::Messages
            && let Some(m) = cache_marker(c)
        {
            let m = m.clone();
            if let Some(r) = records.iter_mut().rev().find(|r| carries_marker(r)) {
                set_cache_marker(r.to_mut(), m);
            }
        }
    };
    for (j, c) in client.iter().enumerate() {
        let Some(si) = stored_of[j] else {
            let inside = prev_summary[j].is_some() && prev_summary[j] == next_summary[j];
            if inside {
                folded(&mut records, c);
            } else {
                records.push(Cow::Borrowed(c));
                sent_as.resize(records.len() - 1, None);
                sent_as.push(Some(j));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            continue;
        };
        match &fate[si] {
            Fate::Dropped => folded(&mut records, c),
            Fate::Kept => {
                records.push(Cow::Borrowed(c));
                sent_as.resize(records.len() - 1, None);
                sent_as.push(Some(j));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            Fate::Changed(body) => {
                records.push(Cow::Owned(Record {
                    seq: c.seq,
                    ts: c.ts.clone(),
                    body: body.clone(),
                    metadata: c.metadata.clone(),
                    extra: c.extra.clone(),
                }));
                from.resize(records.len() - 1, None);
                from.push(Some(j));
            }
            Fate::Summarized(n) => {
                if summarized.insert(*n)
                    && let Item::Summary { turns, text, .. } = view.items[*n]
                {
                    records.push(Cow::Owned(Record::new(
                        0,
                        "",
                        Body::User {
                            content: summary_preamble(turns),
                            author: Some("ctxfold".into()),
                        },
                    )));
                    records.push(Cow::Owned(Record::new(
                        0,
                        "",
                        Body::Assistant {
                            content: text.to_owned(),
                        },
                    )));
                }
                folded(&mut records, c);
            }
        }
    }
    sent_as.resize(records.len(), None);
    from.resize(records.len(), None);
    let after = records
        .iter()
        .zip(&sent_as)
        .map(|(r, j)| j.map_or_else(|| est.record_tokens(r), |j| tokens[j]))
        .sum();
    let bytes = sent
        .and_then(|sent| {
            write_with_sent(shape, &records, &sent_as, &from, client.len(), sent, extras)
        })
        .unwrap_or_else(|| {
            let out = shape.write(&records, extras);
            let mut bytes = Vec::with_capacity(64 * 1024);
            serde_json::to_writer(&mut bytes, &out).expect("a JSON value serializes");
            bytes
        });
    Rendered {
        body: Some(bytes),
        before,
        after,
    }
}

/// The client's messages as sent, beside the records a kept reader read
/// from them, and the rest of its body as read and as sent.
#[derive(Clone, Copy)]
struct Sent<'a> {
    texts: &'a [Box<str>],
    reader: &'a MessageReader,
    head: &'a Object,
    head_text: &'a HashMap<String, &'a serde_json::value::RawValue>,
}

/// The body of `records` (the view, in the client's order; `sent_as[p]`:
/// the client record `records[p]` is, when it goes as sent; `from[p]`: the
/// client record it stands for, changed or not) with every client message
/// that goes whole and as sent written as the client's own text rather
/// than rendered again: most of a long conversation. A message goes as its
/// text only when its records go in order, unchanged, between the records
/// that stood beside it in the request, so the format groups them into
/// the same message; the rest is written in runs by the format. `None`:
/// no message goes as sent (the format writes it all).
fn write_with_sent(
    shape: Shape,
    records: &[Cow<Record>],
    sent_as: &[Option<usize>],
    from: &[Option<usize>],
    client_len: usize,
    sent: Sent,
    extras: &Object,
) -> Option<Vec<u8>> {
    let reader = sent.reader;
    // The message starting at each client record.
    let mut starts = vec![None; client_len];
    for i in 0..reader.len() {
        let r = reader.message_records(i);
        if !r.is_empty() {
            starts[r.start] = Some(i);
        }
    }
    // Anthropic joins messages of one role that follow each other, so a
    // message goes as sent only between messages of the other role (or
    // messages that stand on their own: `system` messages, unknown roles).
    let apart = |n: usize, i: usize| {
        !reader.message_records(n).is_empty()
            && (reader.is_own(n)
                || reader.is_own(i)
                || reader.is_assistant(n) != reader.is_assistant(i))
    };
    let alternates = |i: usize| {
        shape != Shape::Messages
            || ((i == 0 || apart(i - 1, i)) && (i + 1 == reader.len() || apart(i + 1, i)))
    };
    let whole = |p: usize, i: usize| {
        let r = reader.message_records(i);
        let end = p + r.len();
        alternates(i)
            && end <= records.len()
            && (0..r.len()).all(|d| {
                // Borrowed: a moved cache marker changes a record in place.
                sent_as[p + d] == Some(r.start + d) && matches!(records[p + d], Cow::Borrowed(_))
            })
            && (if r.start == 0 {
                p == 0
            } else {
                p > 0 && from[p - 1] == Some(r.start - 1)
            })
            && (if end == records.len() {
                r.end == client_len
            } else {
                from[end] == Some(r.end)
            })
    };
    // Anthropic's system records go to the body's `system`, not a message
    // (but those read from a `system` message go back among the messages).
    let top_level = |r: &Record| {
        shape == Shape::Messages
            && matches!(r.body, Body::System { .. })
            && !ctxfold_formats::anthropic::is_system_message(r)
    };
    let key = shape.wire().messages_key();
    let mut messages: Vec<u8> = Vec::with_capacity(sent.texts.iter().map(|t| t.len() + 1).sum());
    messages.push(b'[');
    let mut any = false;
    let mut run = 0;
    let flush = |messages: &mut Vec<u8>, run: &[Cow<Record>]| -> Option<()> {
        let run: Vec<&Record> = run
            .iter()
            .map(|r| r.as_ref())
            .filter(|r| !top_level(r))
            .collect();
        if run.is_empty() {
            return Some(());
        }
        let v = shape.write(&run, &Object::new());
        for m in v.get(key)?.as_array()? {
            if messages.len() > 1 {
                messages.push(b',');
            }
            serde_json::to_writer(&mut *messages, m).ok()?;
        }
        Some(())
    };
    let mut p = 0;
    while p < records.len() {
        if let Some(i) = sent_as[p].and_then(|j| starts[j])
            && whole(p, i)
        {
            flush(&mut messages, &records[run..p])?;
            if messages.len() > 1 {
                messages.push(b',');
            }
            messages.extend_from_slice(sent.texts[i].as_bytes());
            any = true;
            p += reader.message_records(i).len();
            run = p;
        } else {
            p += 1;
        }
    }
    if !any {
        return None;
    }
    flush(&mut messages, &records[run..])?;
    messages.push(b']');
    // The rest of the body as the format writes it (with Anthropic's
    // `system`), the messages spliced in at their key.
    let system: Vec<&Record> = records
        .iter()
        .map(|r| r.as_ref())
        .filter(|r| top_level(r))
        .collect();
    let skeleton = shape.write(&system, extras);
    let body = skeleton.as_object()?;
    if !body.contains_key(key) {
        return None;
    }
    let mut out = Vec::with_capacity(messages.len() + 1024);
    out.push(b'{');
    for (n, (k, v)) in body.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, k).ok()?;
        out.push(b':');
        if k == key {
            out.extend_from_slice(&messages);
        } else if let Some(text) = sent.head_text.get(k)
            && sent.head.get(k) == Some(v)
        {
            // A field ctxfold does not change (all but Anthropic's
            // `system` when something of it was folded): the client's own
            // bytes, spacing and number spelling too.
            out.extend_from_slice(text.get().as_bytes());
        } else {
            serde_json::to_writer(&mut out, v).ok()?;
        }
    }
    out.push(b'}');
    Some(out)
}

/// Where the Anthropic format keeps a block's unmapped fields.
const BLOCK_FIELDS: &str = "anthropic_block_fields";

/// A record's Anthropic prompt-cache marker (`cache_control`), if any.
fn cache_marker(r: &Record) -> Option<&Value> {
    match &r.body {
        Body::Other { kind, fields } if kind == "anthropic_block" => {
            fields.get("block")?.get("cache_control")
        }
        _ => r.metadata.as_ref()?.get(BLOCK_FIELDS)?.get("cache_control"),
    }
}

/// Whether the block `r` is written as may carry a prompt-cache marker
/// (thinking blocks may not; system records go to the top-level prompt).
fn carries_marker(r: &Record) -> bool {
    match &r.body {
        Body::User { .. }
        | Body::Assistant { .. }
        | Body::ToolCall { .. }
        | Body::ToolResult { .. }
        | Body::Structured { .. } => r
            .metadata
            .as_ref()
            .and_then(|m| m.get(BLOCK_FIELDS))
            .is_none_or(Value::is_object),
        Body::Other { kind, fields } if kind == "anthropic_block" => {
            fields.get("block").is_some_and(Value::is_object)
        }
        _ => false,
    }
}

/// Put prompt-cache marker `m` on the block `r` is written as (one that
/// [`carries_marker`]).
fn set_cache_marker(r: &mut Record, m: Value) {
    let fields = match &mut r.body {
        Body::Other { fields, .. } => fields.get_mut("block"),
        _ => Some(
            r.metadata
                .get_or_insert_default()
                .entry(BLOCK_FIELDS)
                .or_insert_with(|| json!({})),
        ),
    };
    if let Some(Value::Object(f)) = fields {
        f.insert("cache_control".into(), m);
    }
}

/// Records as the log keeps them: stamped now.
fn stamp(records: &[Record]) -> Vec<Record> {
    let ts = ctxfold_core::Ts::from(ctxfold_store::now());
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.ts = ts.clone();
            r
        })
        .collect()
}

/// A new conversation's title: the user's first own words, skipping the
/// wrappers agents put around what they add (Claude Code's
/// `<system-reminder>` blocks and `<command-…>` tags, Codex's
/// `<environment_context>`, `<user_instructions>` and AGENTS.md message);
/// the first user message whatever it holds when nothing else is there.
fn title_from(client: &[Record]) -> Option<String> {
    let mut users = client.iter().filter_map(|r| match &r.body {
        Body::User { content, .. } => Some(content.as_str()),
        _ => None,
    });
    let first = users.clone().next();
    users.find_map(own_words).or(first).map(title_of)
}

/// `text` after the wrappers it starts with (elements `<tag …>…</tag>`, as
/// agents add them), or `None` when nothing else is there.
fn own_words(text: &str) -> Option<&str> {
    // Codex's AGENTS.md instructions (codex-rs `USER_INSTRUCTIONS_PREFIX`).
    if text.starts_with("# AGENTS.md instructions for ") {
        return None;
    }
    let mut rest = text.trim_start();
    while let Some(after) = rest.strip_prefix('<') {
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let opens = after[name_len..].starts_with(|c: char| c == '>' || c.is_whitespace());
        if name.is_empty() || !opens {
            break;
        }
        let close = format!("</{name}>");
        match rest.find(&close) {
            Some(at) => rest = rest[at + close.len()..].trim_start(),
            // Not an element: the user's own `<`.
            None => break,
        }
    }
    (!rest.trim().is_empty()).then_some(rest)
}

fn title_of(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let t: String = line.trim().chars().take(60).collect();
    if t.len() < line.trim().len() {
        format!("{t}…")
    } else {
        t
    }
}

/// The stable head of a request: its shape, system prompt, tool names and
/// first user message.
/// The `previous_response_id` a Responses request is chained with.
fn chained(shape: Shape, body: &Value) -> Option<&str> {
    if shape != Shape::Responses {
        return None;
    }
    body.get("previous_response_id").and_then(Value::as_str)
}

fn fingerprint(shape: Shape, body: &Value, client: &[Record]) -> String {
    let mut h = Sha256::new();
    h.update(shape.name());
    // The Responses API's system prompt is a body key, not an item.
    if let Some(i) = body.get("instructions").and_then(Value::as_str) {
        h.update([0]);
        h.update(i);
    }
    for r in client {
        match &r.body {
            Body::System { content } => {
                h.update([0]);
                h.update(content);
            }
            Body::User { content, .. } => {
                h.update([1]);
                h.update(content);
                break;
            }
            _ => {}
        }
    }
    let mut tools: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.get("name")
                .or_else(|| t.get("function").and_then(|f| f.get("name")))
                .and_then(Value::as_str)
        })
        .collect();
    tools.sort_unstable();
    for t in tools {
        h.update([2]);
        h.update(t);
    }
    let d = h.finalize();
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("head:{hex}")
}

/// A new conversation's title (its first user message) and the proxy's
/// entry in its metadata.
fn new_meta(
    shape: Shape,
    key: &str,
    model: &str,
    client: &[Record],
    forked_from: Option<&str>,
) -> (Option<String>, Object) {
    let title = title_from(client);
    let mut meta = json!({"key": key, "shape": shape.name(), "model": model});
    // The session the agent named, when that is what keyed it.
    if let Some(rest) = key.strip_prefix("session:")
        && let Some((agent, id)) = rest.split_once(':')
    {
        meta["session"] = json!({"agent": agent, "id": id});
    }
    if let Some(f) = forked_from {
        meta["forked_from"] = json!(f);
    }
    let mut extras = Object::new();
    extras.insert(META_KEY.into(), meta);
    (title, extras)
}

/// Whether `e` says the conversation is no longer there (removed, moved to
/// the trash, its metadata broken), not that the store failed for now.
fn gone_for_good(e: &StoreError) -> bool {
    match e {
        StoreError::NotFound { .. }
        | StoreError::NoConversation { .. }
        | StoreError::Gone { .. }
        | StoreError::Vanished { .. }
        | StoreError::BadMeta { .. } => true,
        StoreError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// The key the proxy recorded a conversation under.
fn recorded_key(meta: &ConversationMeta) -> Option<&str> {
    meta.extras
        .get(META_KEY)
        .and_then(|p| p.get("key"))
        .and_then(Value::as_str)
}

/// The key of a kept reader: the shape and the first message's text.
fn head_hash(shape: Shape, first: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    shape.name().hash(&mut h);
    first.hash(&mut h);
    h.finish()
}

/// A 128-bit hash of `text` (a key, an answer id): what the indexes keep
/// in its place, so an entry's size does not depend on the client.
fn hash128(text: &str) -> u128 {
    let d = Sha256::digest(text.as_bytes());
    u128::from_le_bytes(d[..16].try_into().expect("16 of 32 bytes"))
}

/// Whether a request holds this loaded log (the map's is the one other
/// reference): it is not dropped then.
fn in_use(s: &Arc<Mutex<Session>>) -> bool {
    Arc::strong_count(s) > 1
}

/// Lock, taking over a lock a panicking thread left: the data behind it
/// is a cache the next request checks against the store.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_users_first_own_words_not_the_agents_wrappers() {
        let user = |t: &str| {
            Record::new(
                0,
                "",
                Body::User {
                    content: t.into(),
                    author: None,
                },
            )
        };
        let claude = [
            user("<system-reminder>\nContext: today is Tuesday.\n</system-reminder>"),
            user("<command-name>/review</command-name>\n<command-args></command-args>"),
            user("Fix the failing test\nin src/lib.rs"),
        ];
        assert_eq!(title_from(&claude).as_deref(), Some("Fix the failing test"));
        let codex = [
            user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>be kind</INSTRUCTIONS>"),
            user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
            user("<user_instructions>x</user_instructions>\n\nRename the crate"),
        ];
        assert_eq!(title_from(&codex).as_deref(), Some("Rename the crate"));
        // The user's own `<`, and a message that is only wrappers.
        assert_eq!(
            title_from(&[user("<div> is not centred")]).as_deref(),
            Some("<div> is not centred")
        );
        assert_eq!(
            title_from(&[user("<task>only this</task>")]).as_deref(),
            Some("<task>only this</task>"),
            "nothing else: the first message as before"
        );
        assert_eq!(title_from(&[]), None);
    }
}
