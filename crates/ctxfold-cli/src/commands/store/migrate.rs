//! `ctxfold store migrate [URL]`: create or bring the schema of a
//! PostgreSQL store up to date.

use anyhow::bail;
use ctxfold_store::PgStore;
use ctxfold_store::postgres::mask_url;
use serde::Serialize;

use crate::cli::MigrateArgs;
use crate::context::Context;
use crate::render::Report;
use crate::store::{STORE_VAR, is_url, selected_spec};

/// The store and the version its schema is at.
#[derive(Serialize)]
pub struct Migrated {
    store: String,
    schema_version: u32,
}

impl Report for Migrated {}

impl std::fmt::Display for Migrated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: ctxfold schema at version {}",
            self.store, self.schema_version
        )
    }
}

pub fn run(ctx: &Context, args: MigrateArgs) -> anyhow::Result<Migrated> {
    let selected = selected_spec(ctx.store.as_deref(), ctx.settings()?);
    let url = args.url.as_deref();
    let Some(url) = url.or(selected.as_deref()) else {
        bail!(
            "no PostgreSQL store to migrate: give its URL (postgres://user[:password]@host[:port]/database), --store, {STORE_VAR} or [store] url"
        );
    };
    if !is_url(url) {
        bail!(
            "`{}` is not a PostgreSQL URL: expected postgres://user[:password]@host[:port]/database (a workspace needs no migration)",
            mask_url(url)
        );
    }
    let store = PgStore::connect(url)?;
    let version = store.migrate()?;
    Ok(Migrated {
        store: store.url().to_owned(),
        schema_version: version,
    })
}
