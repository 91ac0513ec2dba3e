//! The schema: the migrations, and bringing a database to the newest one
//! under an advisory lock (a newer schema is refused).

use ::postgres::Client;

use super::locks::LOCK_MIGRATE;
use super::target::Target;
use crate::StoreError;

/// The schema migrations, oldest first: `(version, SQL)`. Each runs once,
/// in the transaction that records its version. Never edit one that has
/// shipped: add the next.
const MIGRATIONS: &[(u32, &str)] = &[(
    1,
    r#"
CREATE TABLE ctxfold_conversations (
    id          text PRIMARY KEY,
    -- The conversation's meta.json, as the file store writes it (text, not
    -- jsonb: jsonb would reorder the keys of `extras`).
    meta        text NOT NULL,
    created_at  text NOT NULL,
    -- The next record's seq: taken and advanced under the row's lock.
    next_seq    bigint NOT NULL DEFAULT 0 CHECK (next_seq >= 0),
    trashed_at  timestamptz,
    inserted_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE ctxfold_events (
    conversation_id text NOT NULL REFERENCES ctxfold_conversations (id),
    seq             bigint NOT NULL CHECK (seq >= 0),
    type            text NOT NULL,
    -- The record's JSON line, byte for byte as the file store writes it.
    line            text NOT NULL,
    appended_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, seq)
);
CREATE TABLE ctxfold_settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
"#,
)];

/// The newest schema version this binary knows.
pub const SCHEMA_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

// The versions count 1, 2, 3, … without a gap or a repeat, so the newest
// is the last and a database's version names the migrations it has had:
// checked when compiling (a unit test comparing SCHEMA_VERSION with the
// last migration could not fail, as one is defined by the other).
const _: () = {
    let mut i = 0;
    while i < MIGRATIONS.len() {
        assert!(
            MIGRATIONS[i].0 as usize == i + 1,
            "migration versions must count up from 1"
        );
        i += 1;
    }
};

/// Bring the schema to [`SCHEMA_VERSION`] over `client`.
pub(super) fn migrate_client(client: &mut Client, target: &Target) -> Result<u32, StoreError> {
    let db = |what: &str, e: ::postgres::Error| StoreError::Database {
        what: format!("{what} in {}", target.store),
        source: Some(Box::new(e)),
    };
    let too_new = |found: u32| StoreError::SchemaTooNew {
        store: target.store.clone(),
        found,
        supported: SCHEMA_VERSION,
    };
    // Without DDL or a lock when it is up to date: every connect checks,
    // and a role that may not create tables can still use the store.
    if let Some(found) = schema_version(client).map_err(|e| db("read the schema version", e))? {
        if found == SCHEMA_VERSION {
            return Ok(found);
        }
        if found > SCHEMA_VERSION {
            return Err(too_new(found));
        }
    }
    let what = "create or migrate the ctxfold tables";
    let mut tx = client.transaction().map_err(|e| db(what, e))?;
    // Concurrent first users queue here; the lock ends with the transaction.
    tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_MIGRATE])
        .map_err(|e| db(what, e))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS ctxfold_schema_version (
             version    integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .map_err(|e| db(what, e))?;
    let found: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM ctxfold_schema_version",
            &[],
        )
        .and_then(|row| row.try_get(0))
        .map_err(|e| db(what, e))?;
    let found = u32::try_from(found).unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(too_new(found));
    }
    for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        let step = format!("migrate the ctxfold tables to version {version}");
        tx.batch_execute(sql).map_err(|e| db(&step, e))?;
        tx.execute(
            "INSERT INTO ctxfold_schema_version (version) VALUES ($1)",
            &[&(version as i32)],
        )
        .map_err(|e| db(&step, e))?;
    }
    tx.commit().map_err(|e| db(what, e))?;
    Ok(SCHEMA_VERSION)
}

/// The schema version recorded in the database; `None` when there is no
/// version table yet.
fn schema_version(client: &mut Client) -> Result<Option<u32>, ::postgres::Error> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('ctxfold_schema_version') IS NOT NULL",
            &[],
        )?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let v: i32 = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM ctxfold_schema_version",
            &[],
        )?
        .try_get(0)?;
    Ok(Some(u32::try_from(v).unwrap_or(0)))
}
