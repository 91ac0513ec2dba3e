//! The compaction and turn locks: session-level advisory locks on a
//! connection of their own, so a process that dies never wedges a
//! conversation.

use std::fmt;

use super::PgStore;
use super::store::Conn;
use crate::StoreError;

/// Advisory lock key spaces (the first of the two `int4` keys), so that
/// ctxfold's locks never meet each other's: "cxf" and a number.
pub(super) const LOCK_MIGRATE: i32 = 0x6378_6600;
const LOCK_COMPACTION: i32 = 0x6378_6601;
const LOCK_TURN: i32 = 0x6378_6602;

/// A compaction or turn lock on one conversation, held until dropped.
///
/// It is a session-level advisory lock on a pooled connection that this
/// guard keeps: dropping it unlocks and gives the connection back, and
/// when the process dies the server ends the session and the lock with it.
/// The key is the conversation id's `hashtext`: two ids that hash alike
/// share a lock, which can only make one wait (report busy), never let two
/// in.
pub struct PgLock {
    conn: Option<Conn>,
    space: i32,
    id: String,
}

impl fmt::Debug for PgLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.space == LOCK_TURN {
            "turn"
        } else {
            "compaction"
        };
        f.debug_struct("PgLock")
            .field("kind", &kind)
            .field("id", &self.id)
            .finish()
    }
}

impl PgLock {
    /// Whether the lock is still held. A lost connection (a network cut, a
    /// server restart) loses the lock with it: a holder about to act on
    /// the lock after a long wait (a slow summary) can check here first.
    pub fn is_held(&mut self) -> bool {
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        // Two-key advisory locks show as classid, objid and objsubid 2.
        conn.query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_locks
                            WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                              AND classid = $1::int4::oid AND objid = hashtext($2)::oid
                              AND objsubid = 2)",
            &[&self.space, &self.id],
        )
        .ok()
        .and_then(|row| row.try_get::<_, bool>(0).ok())
        .unwrap_or(false)
    }
}

impl Drop for PgLock {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let released = conn
            .query_one(
                "SELECT pg_advisory_unlock($1, hashtext($2))",
                &[&self.space, &self.id],
            )
            .ok()
            .and_then(|row| row.try_get::<_, bool>(0).ok());
        if released != Some(true) {
            // The pool must not lend out a connection still holding it. A
            // lost connection (the usual cause) is dropped by the pool.
            let _ = conn.batch_execute("SELECT pg_advisory_unlock_all()");
        }
    }
}

impl PgStore {
    /// Take the compaction lock of conversation `id` without waiting:
    /// `Ok(None)` means another process (on any machine) is compacting it
    /// now. A conversation in the trash or missing is an error.
    pub fn try_compaction_lock(&self, id: &str) -> Result<Option<PgLock>, StoreError> {
        self.try_lock(LOCK_COMPACTION, id)
    }

    /// Take the turn lock of conversation `id` without waiting: one agent
    /// turn at a time. `Ok(None)` means another process runs a turn in it.
    pub fn try_turn_lock(&self, id: &str) -> Result<Option<PgLock>, StoreError> {
        self.try_lock(LOCK_TURN, id)
    }

    fn try_lock(&self, space: i32, id: &str) -> Result<Option<PgLock>, StoreError> {
        let what = || format!("lock conversation `{id}`");
        let mut conn = self.conn()?;
        // NULL when the conversation is not there: no lock taken then.
        let row = conn
            .query_one(
                "SELECT CASE WHEN EXISTS (SELECT 1 FROM ctxfold_conversations
                                          WHERE id = $2 AND trashed_at IS NULL)
                        THEN pg_try_advisory_lock($1, hashtext($2)) END",
                &[&space, &id],
            )
            .map_err(|e| self.db(what(), e))?;
        let got: Option<bool> = row.try_get(0).map_err(|e| self.db(what(), e))?;
        match got {
            None => Err(self.gone(id)),
            Some(false) => Ok(None),
            Some(true) => Ok(Some(PgLock {
                conn: Some(conn),
                space,
                id: id.to_owned(),
            })),
        }
    }
}
