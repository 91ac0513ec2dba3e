//! A conversation's records: appended in one transaction under the row
//! lock (gapless seqs), inserted in chunks, loaded from one snapshot
//! through the file store's line reader.

use std::ops::Range;

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::types::ToSql;
use ::postgres::{IsolationLevel, Transaction};
use ctxfold_core::Record;
use ctxfold_core::log::LineReader;

use super::PgStore;
use crate::StoreError;
use crate::event_log::Loaded;

/// Records inserted per statement: one round trip for a typical batch,
/// bounded parameter size for an import.
const INSERT_CHUNK: usize = 1000;

impl PgStore {
    /// Append records to conversation `id`, giving them the next `seq`
    /// numbers (whatever `seq` they carry). Returns the `seq` of the first
    /// and one past the last.
    ///
    /// One transaction: the whole batch is written, or nothing. Appenders
    /// of one conversation take turns on its row lock, so seqs are gapless
    /// and unique across processes. A conversation in the trash or missing
    /// is an error ([`StoreError::Gone`]), and nothing is written.
    pub fn append(
        &self,
        id: &str,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Range<u64>, StoreError> {
        match self.append_if(id, None, records)? {
            Ok(range) => Ok(range),
            // Without an expected seq every next seq is accepted.
            Err(next) => Ok(next..next),
        }
    }

    /// The `seq` the next record appended to conversation `id` gets.
    pub fn next_seq(&self, id: &str) -> Result<u64, StoreError> {
        let row = self.conversation_row(id, "next_seq")?;
        let next: i64 = row
            .try_get(0)
            .map_err(|e| self.db(format!("read conversation `{id}`"), e))?;
        Ok(u64::try_from(next).unwrap_or(0))
    }

    /// Append as [`PgStore::append`] does, but when `expected` is given only
    /// if the conversation's next `seq` is that one (checked under the row
    /// lock); `Ok(Err(next))` means it is `next`, and nothing was written.
    pub fn append_if(
        &self,
        id: &str,
        expected: Option<u64>,
        records: impl IntoIterator<Item = Record>,
    ) -> Result<Result<Range<u64>, u64>, StoreError> {
        // Collected before the transaction: the row lock is held only while
        // writing.
        let records: Vec<Record> = records.into_iter().collect();
        let what = || format!("append to conversation `{id}`");
        let mut conn = self.conn()?;
        let mut tx = conn.transaction().map_err(|e| self.db(what(), e))?;
        let row = tx
            .query_opt(
                "SELECT next_seq FROM ctxfold_conversations
                 WHERE id = $1 AND trashed_at IS NULL FOR UPDATE",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?
            .ok_or_else(|| self.gone(id))?;
        let next: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
        let next = u64::try_from(next).unwrap_or(0);
        if expected.is_some_and(|e| e != next) {
            // Dropping the transaction rolls it back and frees the row.
            return Ok(Err(next));
        }
        let range = self.write_batch(&mut tx, id, next, records)?;
        tx.commit().map_err(|e| self.db(what(), e))?;
        Ok(Ok(range))
    }

    /// Number `records` from `next`, insert them and advance the counter.
    /// The caller holds the conversation's row (created or locked in `tx`).
    pub(super) fn write_batch(
        &self,
        tx: &mut Transaction<'_>,
        id: &str,
        next: u64,
        records: Vec<Record>,
    ) -> Result<Range<u64>, StoreError> {
        let what = || format!("append to conversation `{id}`");
        let mut seq = next;
        let mut chunk = Chunk::default();
        for mut r in records {
            // Room for "one past the last" in a bigint column.
            if seq >= i64::MAX as u64 {
                return Err(StoreError::Database {
                    what: format!(
                        "{}: seq {seq} is the last a database store holds; nothing was written",
                        what()
                    ),
                    source: None,
                });
            }
            r.seq = seq;
            // The one serialization the file store uses: byte-identical lines.
            chunk.push(seq as i64, r.body.type_name().to_owned(), r.to_json_line());
            seq += 1;
            if chunk.len() == INSERT_CHUNK {
                chunk.insert(tx, id).map_err(|e| self.db(what(), e))?;
            }
        }
        if !chunk.is_empty() {
            chunk.insert(tx, id).map_err(|e| self.db(what(), e))?;
        }
        if seq != next {
            tx.execute(
                "UPDATE ctxfold_conversations SET next_seq = $2 WHERE id = $1",
                &[&id, &(seq as i64)],
            )
            .map_err(|e| self.db(what(), e))?;
        }
        Ok(next..seq)
    }

    /// Load every record of conversation `id`. A row that is not a record
    /// is skipped with a warning (and stays in the database), as the file
    /// store skips such a line.
    pub fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        self.load_from(id, 0)
    }

    /// Load the records of conversation `id` whose `seq` is `from_seq` or
    /// more: what was appended since a log whose `next_seq()` is
    /// `from_seq` was loaded.
    pub fn load_from(&self, id: &str, from_seq: u64) -> Result<Loaded, StoreError> {
        let what = || format!("read conversation `{id}`");
        let mut conn = self.conn()?;
        // One snapshot: the rows read are those of committed batches only.
        let mut tx = conn
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(|e| self.db(what(), e))?;
        self.require_live(&mut tx, id)?;
        let from = i64::try_from(from_seq).unwrap_or(i64::MAX);
        let params: [&(dyn ToSql + Sync); 2] = [&id, &from];
        let mut rows = tx
            .query_raw(
                "SELECT seq, line FROM ctxfold_events
                 WHERE conversation_id = $1 AND seq >= $2 ORDER BY seq",
                params,
            )
            .map_err(|e| self.db(what(), e))?;
        let mut reader = LineReader::new();
        let mut seqs = Vec::new();
        let mut buf = String::new();
        while let Some(row) = rows.next().map_err(|e| self.db(what(), e))? {
            let seq: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
            let line: &str = row.try_get(1).map_err(|e| self.db(what(), e))?;
            // The reader's line policy, as for a file: every row is a
            // complete line.
            buf.clear();
            buf.push_str(line);
            buf.push('\n');
            reader.push(buf.as_bytes());
            seqs.push(seq);
        }
        drop(rows);
        tx.commit().map_err(|e| self.db(what(), e))?;
        let read = reader.finish();
        let warnings = read
            .notes
            .into_iter()
            .map(|n| {
                let seq = n
                    .line
                    .checked_sub(1)
                    .and_then(|i| seqs.get(i))
                    .map_or_else(|| "?".to_owned(), |s| s.to_string());
                let kept = if n.skipped {
                    "; the row stays in the database"
                } else {
                    ""
                };
                format!(
                    "{}: conversation `{id}`, seq {seq}: {}{kept}",
                    self.target.store, n.message
                )
            })
            .collect();
        Ok(Loaded {
            records: read.records,
            warnings,
            ..Loaded::default()
        })
    }

    /// How many records conversation `id` holds.
    pub fn len(&self, id: &str) -> Result<u64, StoreError> {
        self.counts(id).map(|(len, _)| len)
    }

    /// The `seq` of the last record of conversation `id`, if it has any.
    pub fn last_seq(&self, id: &str) -> Result<Option<u64>, StoreError> {
        self.counts(id).map(|(_, last)| last)
    }

    fn counts(&self, id: &str) -> Result<(u64, Option<u64>), StoreError> {
        let what = || format!("count the records of `{id}`");
        let mut conn = self.conn()?;
        let row = conn
            .query_opt(
                "SELECT count(e.seq), max(e.seq) FROM ctxfold_conversations c
                 LEFT JOIN ctxfold_events e ON e.conversation_id = c.id
                 WHERE c.id = $1 AND c.trashed_at IS NULL GROUP BY c.id",
                &[&id],
            )
            .map_err(|e| self.db(what(), e))?
            .ok_or_else(|| self.no_conversation(id))?;
        let len: i64 = row.try_get(0).map_err(|e| self.db(what(), e))?;
        let last: Option<i64> = row.try_get(1).map_err(|e| self.db(what(), e))?;
        Ok((
            u64::try_from(len).unwrap_or(0),
            last.and_then(|s| u64::try_from(s).ok()),
        ))
    }
}

/// One multi-row insert's worth of records, as column arrays.
#[derive(Default)]
struct Chunk {
    seqs: Vec<i64>,
    types: Vec<String>,
    lines: Vec<String>,
}

impl Chunk {
    fn push(&mut self, seq: i64, kind: String, line: String) {
        self.seqs.push(seq);
        self.types.push(kind);
        self.lines.push(line);
    }

    fn len(&self) -> usize {
        self.seqs.len()
    }

    fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Insert and empty: one statement, one round trip.
    fn insert(&mut self, tx: &mut Transaction<'_>, id: &str) -> Result<(), ::postgres::Error> {
        tx.execute(
            "INSERT INTO ctxfold_events (conversation_id, seq, type, line)
             SELECT $1, s, t, l FROM unnest($2::bigint[], $3::text[], $4::text[]) AS u (s, t, l)",
            &[&id, &self.seqs, &self.types, &self.lines],
        )?;
        self.seqs.clear();
        self.types.clear();
        self.lines.clear();
        Ok(())
    }
}
