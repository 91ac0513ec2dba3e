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
//!
//! The jobs, one module each under `book/`:
//! - `identity`: a request's key (header, agent session, head
//!   fingerprint) and the key a conversation was recorded under.
//! - `index`: the key index (each key's conversations) and the
//!   conversations that can no longer be read.
//! - `session`: the loaded logs (a cache), refreshed from the store, and
//!   their `last_used_at`.
//! - `readers`: the kept readers (a cache): a head's last request as read.
//! - `chains`: Responses requests chained with `previous_response_id`.
//! - `prepare`: a request from its bytes to the body the upstream gets.
//! - `append`: going on in a key's conversation, or forking it, with
//!   retries when another writer appended.
//! - `create`: new conversations, their id, title and metadata.
//! - `compact`: automatic compaction, and once more on an overflow.
//! - `counting`: tokens counted as the upstream counts them.
//! - `render`: the view rendered back into the client's wire shape.
//! - `sent`: the client's messages written back as their own bytes.
//! - `cache_markers`: Anthropic prompt-cache markers kept on what is sent.
//! - `preview`: the body `count_tokens` is asked about, recording nothing.
//! - `answers`: recording the upstream's answer.

mod answers;
mod append;
mod cache_markers;
mod chains;
mod compact;
mod counting;
mod create;
mod emulate;
mod identity;
mod index;
mod pending;
mod prepare;
mod preview;
mod readers;
mod render;
mod sent;
mod session;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ctxfold_compactor::Summarizers;
use ctxfold_core::Record;
use ctxfold_core::planner::ToolHints;
use ctxfold_core::trigger::AutoPolicy;
use ctxfold_store::{Store, StoreError};

use crate::agent::Agent;
use crate::cache::Limits;
use crate::protocol::Shape;

use chains::Chains;
pub use emulate::Emulated;
use identity::recorded_key;
use index::KeyIndex;
use readers::Readers;
use session::Sessions;

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
    /// The upstreams whose context management ctxfold emulates.
    pub emulate: crate::config::Emulate,
}

/// What a request's headers say about its conversation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Naming<'a> {
    /// The `x-ctxfold-conversation` header, which wins over anything else.
    pub header: Option<&'a str>,
    /// The agent its headers name (for the session fields only that agent
    /// gives a session's meaning).
    pub agent: Option<Agent>,
    /// The endpoint itself compacts (`/v1/responses/compact`): the
    /// request is the provider's to manage.
    pub compacts: bool,
    /// The model the path names (Gemini's); `None`: the body's.
    pub model: Option<&'a str>,
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
    /// The providers' context management ctxfold emulated for it (issue
    /// 29): the body goes upstream without it
    /// ([`strip_for_upstream`](crate::protocol::strip_for_upstream)),
    /// and the answer says what was done.
    pub emulated: Option<Emulated>,
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
    /// The provider manages the request's context itself (issue 29): an
    /// overflow is not compacted and retried.
    pub managed: bool,
    /// Held while an answer that may hold a compaction is in flight.
    pub in_flight: Option<Arc<pending::InFlight>>,
    /// The request's tokens with ctxfold and without, and their parts
    /// shared with the previous request, as estimated when it was sent.
    pub estimate: ctxfold_core::cost::Estimate,
}

impl AnswerSlot {
    /// Keep the request's cost figures ([`ctxfold_core::cost::Request`]:
    /// the upstream's usage where the answer reports it, else the
    /// estimate) on the answer's last record, and return them.
    pub fn annotate(&self, records: &mut [Record]) -> Option<ctxfold_core::cost::Request> {
        let output = records
            .iter()
            .map(|r| ctxfold_core::estimate::record_tokens(r) as u64)
            .sum();
        let last = records.last_mut()?;
        let usage = last
            .metadata
            .as_ref()
            .and_then(|m| m.get(ctxfold_providers::response::USAGE));
        let request = self.estimate.request(&self.model, output, usage);
        last.metadata
            .get_or_insert_default()
            .insert(ctxfold_core::cost::REQUEST_META.into(), request.to_value());
        Some(request)
    }
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
    /// The request asks the emulated context management for what ctxfold
    /// cannot do as asked (a compaction with nothing to fold, of an
    /// earlier state of the log): the client is told why, nothing is sent
    /// upstream.
    #[error("{0}")]
    Unservable(String),
}

/// The proxy's conversations.
pub struct Book {
    store: Arc<dyn Store>,
    compaction: Compaction,
    limits: Limits,
    /// Key (its hash: a header's is as long as the client makes it) → its
    /// conversations, the one used last first, at most
    /// [`MAX_FORKS_TRIED`]; and the conversations that could no longer be
    /// read. Each key's lock serializes its requests' preparation; a key
    /// whose lock is held is never dropped.
    index: KeyIndex,
    /// The loaded logs; one a request holds is never dropped (it is the
    /// request's until it ends).
    sessions: Sessions,
    /// Responses API answer ids and the conversations that recorded them,
    /// for requests chained with `previous_response_id`: this run's
    /// answers, the latest of each conversation.
    chains: Mutex<Chains>,
    /// What was read of each conversation head's last request, counted as
    /// twice its text (its records hold about as much again).
    readers: Readers,
    /// Answers in flight that may hold a compaction.
    pending: Arc<pending::Pending>,
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
        let dropped = order.len() > limits.index;
        // Used last, put last: the most recently used.
        let skip = order.len().saturating_sub(limits.index);
        let keys = (order.into_iter().skip(skip))
            .map(|(k, (ids, _))| (k, ids))
            .collect();
        Ok(Book {
            store,
            compaction,
            index: KeyIndex::new(&limits, keys, dropped),
            sessions: Sessions::new(&limits),
            chains: Mutex::new(Chains::new(&limits)),
            readers: Readers::new(&limits),
            pending: Arc::default(),
            limits,
        })
    }

    /// What this book keeps at most.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// What it holds now.
    pub fn held(&self) -> Held {
        Held {
            conversations: self.sessions.held(),
            readers: self.readers.held(),
            keys: self.index.len(),
            chains: lock(&self.chains).latest.len(),
        }
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

/// Lock, taking over a lock a panicking thread left: the data behind it
/// is a cache the next request checks against the store.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
