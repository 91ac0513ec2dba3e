//! What the proxy keeps in memory between requests, and its bounds
//! (`[proxy] cache_conversations`, `cache_bytes`, `cache_index`): maps
//! that drop their least recently used entries past a count and a byte
//! budget, and what a record counts in bytes.

use std::hash::Hash;

use ctxfold_core::{Body, Record};
use lru::LruCache;

/// How much the proxy keeps of the conversations it served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Loaded conversation logs kept, and as many request readers.
    pub conversations: usize,
    /// Bytes of conversation text kept in all: half for the loaded logs,
    /// half for the readers.
    pub bytes: usize,
    /// Entries of each index: conversation keys (head fingerprints,
    /// sessions, names) and Responses answer ids.
    pub index: usize,
}

/// Loaded logs and readers kept by default.
pub const CONVERSATIONS: usize = 128;
/// Text kept by default: 256 MiB.
pub const BYTES: usize = 256 << 20;
/// Index entries kept by default (each well under 1 KiB).
pub const INDEX: usize = 65_536;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            conversations: CONVERSATIONS,
            bytes: BYTES,
            index: INDEX,
        }
    }
}

impl Limits {
    /// The byte budget of the loaded logs, and that of the readers.
    pub fn half_bytes(&self) -> usize {
        self.bytes / 2
    }
}

/// A map that keeps at most `max_len` entries and `max_bytes` of their
/// measured bytes, dropping the least recently used first; entries the
/// caller says are busy are passed over (and count until they are not).
pub struct Bounded<K: Hash + Eq, V> {
    map: LruCache<K, (V, usize)>,
    bytes: usize,
    max_len: usize,
    max_bytes: usize,
    /// Whether an entry was ever dropped to keep within the bounds.
    dropped: bool,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    /// An empty map with these bounds (a bound of 0 keeps nothing).
    pub fn new(max_len: usize, max_bytes: usize) -> Self {
        Bounded {
            // Evicted by hand: by bytes as well as by count.
            map: LruCache::unbounded(),
            bytes: 0,
            max_len,
            max_bytes,
            dropped: false,
        }
    }

    /// Entry `k`, now the most recently used.
    pub fn get(&mut self, k: &K) -> Option<&V> {
        self.map.get(k).map(|(v, _)| v)
    }

    /// Entry `k`, its place in the order unchanged.
    pub fn peek(&self, k: &K) -> Option<&V> {
        self.map.peek(k).map(|(v, _)| v)
    }

    /// Remove entry `k`.
    pub fn take(&mut self, k: &K) -> Option<V> {
        let (v, b) = self.map.pop(k)?;
        self.bytes -= b;
        Some(v)
    }

    /// Insert `v` of `bytes` as the most recently used entry, then drop
    /// entries past the bounds (never one `busy` says is in use). An entry
    /// larger than the whole byte budget is not kept. Returns what was
    /// dropped.
    pub fn put(&mut self, k: K, v: V, bytes: usize, busy: impl Fn(&V) -> bool) -> Vec<(K, V)> {
        if bytes > self.max_bytes || self.max_len == 0 {
            self.take(&k);
            self.dropped = true;
            return vec![(k, v)];
        }
        self.bytes += bytes;
        if let Some((_, old)) = self.map.put(k, (v, bytes)) {
            self.bytes -= old;
        }
        self.trim(busy)
    }

    /// Measure every entry again (`measure` gives `None` for one it cannot
    /// measure now: its last measure stands), then drop entries past the
    /// bounds as [`put`](Self::put) does.
    pub fn remeasure(
        &mut self,
        mut measure: impl FnMut(&V) -> Option<usize>,
        busy: impl Fn(&V) -> bool,
    ) -> Vec<(K, V)> {
        let mut total = 0;
        for (_, (v, b)) in self.map.iter_mut() {
            if let Some(now) = measure(v) {
                *b = now;
            }
            total += *b;
        }
        self.bytes = total;
        self.trim(busy)
    }

    fn trim(&mut self, busy: impl Fn(&V) -> bool) -> Vec<(K, V)> {
        let mut out = Vec::new();
        while self.map.len() > self.max_len || self.bytes > self.max_bytes {
            // Oldest first.
            let Some(k) = self
                .map
                .iter()
                .rev()
                .find(|(_, (v, _))| !busy(v))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(v) = self.take(&k) {
                out.push((k, v));
            }
        }
        self.dropped |= !out.is_empty();
        out
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes held, as last measured.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether an entry was ever dropped to keep within the bounds (so a
    /// key not held may still have been seen).
    pub fn dropped(&self) -> bool {
        self.dropped
    }

    /// Say entries were dropped before this map held them (an index
    /// filled from a store larger than its bound).
    pub fn mark_dropped(&mut self) {
        self.dropped = true;
    }
}

/// What a record takes in memory, about: its text and JSON, and the
/// record and the log's bookkeeping around it.
pub fn record_bytes(r: &Record) -> usize {
    // The record itself, and what a log and the view's size keep per
    // record (turn, scan, token count).
    const OVERHEAD: usize = std::mem::size_of::<Record>() + 64;
    let body = match &r.body {
        Body::TurnStart => 0,
        Body::User { content, author } => content.len() + author.as_ref().map_or(0, String::len),
        Body::Assistant { content } | Body::Reasoning { content } | Body::System { content } => {
            content.len()
        }
        Body::ToolCall {
            id,
            name,
            arguments,
        } => id.len() + name.len() + arguments.text().len(),
        Body::ToolResult { id, content, .. } => id.len() + content.len(),
        Body::Structured { data } => data.text().len(),
        // Rare: counted as written.
        Body::Compaction(_) | Body::CompactionReset(_) | Body::Other { .. } => {
            r.to_json_line().len()
        }
    };
    let metadata = r.metadata.as_deref().map_or(0, json_len);
    let extra: usize = (&r.extra)
        .into_iter()
        .map(|(k, v)| k.len() + json_len(v))
        .sum();
    OVERHEAD + body + metadata + extra
}

/// The length of `v` as compact JSON, counted without writing it out.
fn json_len<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Counting never fails, and JSON values always serialize.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_go_first_by_count_and_by_bytes() {
        let mut m: Bounded<u32, &str> = Bounded::new(3, 100);
        for k in 0..3 {
            assert!(m.put(k, "v", 10, |_| false).is_empty());
        }
        // 0 used again: 1 is the oldest now.
        assert!(m.get(&0).is_some());
        let out = m.put(3, "v", 10, |_| false);
        assert_eq!(out.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [1]);
        assert!(m.dropped());
        // Bytes: a large entry pushes out as many as it needs.
        let out = m.put(4, "big", 80, |_| false);
        assert_eq!(out.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [2]);
        assert_eq!((m.len(), m.bytes()), (3, 100));
        let out = m.put(6, "big", 80, |_| false);
        assert_eq!(out.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [0, 3, 4]);
        assert_eq!((m.len(), m.bytes()), (1, 80));
        // One larger than the whole budget is not kept.
        let out = m.put(5, "huge", 101, |_| false);
        assert_eq!(out.len(), 1);
        assert!(m.peek(&5).is_none());
        // A busy entry is passed over, and counts until it is not.
        let mut m: Bounded<u32, bool> = Bounded::new(1, 100);
        m.put(0, true, 10, |b| *b);
        let out = m.put(1, true, 10, |b| *b);
        assert!(out.is_empty());
        assert_eq!(m.len(), 2);
        let out = m.remeasure(|_| Some(5), |_| false);
        assert_eq!(out.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [0]);
        assert_eq!((m.len(), m.bytes()), (1, 5));
        assert_eq!(m.take(&1), Some(true));
        assert!(m.is_empty() && m.bytes() == 0);
    }

    #[test]
    fn a_record_counts_its_text() {
        let r = Record::new(
            0,
            "",
            Body::User {
                content: "x".repeat(1000),
                author: None,
            },
        );
        let b = record_bytes(&r);
        assert!((1000..1300).contains(&b), "{b}");
    }
}
