//! The store: the one a command run here would use, found, writable, and
//! for PostgreSQL its schema version.

use std::path::Path;

use ctxfold_store::postgres::{PgOptions, SCHEMA_VERSION};
use ctxfold_store::{PgStore, Workspace};

use super::{Check, TIMEOUT};
use crate::context::Context;
use crate::settings::Settings;
use crate::store::{STORE_VAR, is_url};

/// The store's line. `settings` is `None` when the config could not be
/// read (its own line says why): `[store] url` is then not known.
pub fn check(ctx: &Context, settings: Option<&Settings>) -> Check {
    let env = std::env::var(STORE_VAR).ok().filter(|v| !v.is_empty());
    let configured = settings.and_then(|s| s.store_url.clone());
    let named = match (&ctx.store, env, configured) {
        (Some(f), _, _) => Some((f.clone(), "--store".to_owned())),
        (None, Some(e), _) => Some((e, STORE_VAR.to_owned())),
        (None, None, Some((u, at))) => Some((u, format!("[store] url ({at})"))),
        (None, None, None) => None,
    };
    match named {
        Some((spec, from)) if is_url(&spec) => postgres(&spec, &from),
        Some((spec, from)) => match crate::store::open(&spec, false) {
            Ok(target) => match target.workspace {
                Some(ws) => workspace(&ws, &format!("named by {from}")),
                None => Check::ok("store", target.store.location()),
            },
            Err(e) => Check::fail(
                "store",
                format!("{e:#}"),
                format!("name a workspace folder or a postgres:// URL in {from}"),
            ),
        },
        None => found(&ctx.cwd),
    }
}

/// The workspace found from `cwd`, else the global one, without creating
/// it (a command would).
fn found(cwd: &Path) -> Check {
    if let Some(ws) = Workspace::discover(cwd) {
        return workspace(&ws, "found from here");
    }
    let Some(global) = Workspace::global_root() else {
        return Check::fail(
            "store",
            format!(
                "no workspace: no .ctxfold/ in {} or above, and no data folder for the global one (HOME is not set)",
                cwd.display()
            ),
            "ctxfold init here, or set HOME",
        );
    };
    if global.join("conversations").is_dir() {
        return workspace(
            &Workspace::at(global),
            &format!("the global one: no .ctxfold/ in {} or above", cwd.display()),
        );
    }
    Check::fail(
        "store",
        format!(
            "no workspace: no .ctxfold/ in {} or above, and no global one at {}",
            cwd.display(),
            global.display()
        ),
        "ctxfold init (a workspace here); else the first command creates the global one",
    )
}

/// A workspace's line: whether a file can be created where conversations
/// and the active conversation are written, and how many it holds.
fn workspace(ws: &Workspace, how: &str) -> Check {
    let root = ws.root();
    let conversations = root.join("conversations");
    if !conversations.is_dir() {
        return Check::fail(
            "store",
            format!(
                "workspace {} ({how}) has no conversations/ folder",
                root.display()
            ),
            format!(
                "ctxfold init in {} (it adds what is missing and keeps the rest)",
                root.parent().unwrap_or(root).display()
            ),
        );
    }
    for dir in [root, conversations.as_path()] {
        // Removed when dropped: doctor leaves nothing behind.
        if let Err(e) = tempfile::Builder::new().prefix(".doctor-").tempfile_in(dir) {
            return Check::fail(
                "store",
                format!(
                    "workspace {} ({how}) is not writable: cannot create a file in {}: {e}",
                    root.display(),
                    dir.display()
                ),
                "make it writable (its owner, its mode, or a read-only mount), or name another store with --store",
            );
        }
    }
    let held = match ws.list() {
        Ok(l) if l.broken.is_empty() => plural(l.conversations.len(), "conversation"),
        Ok(l) => format!(
            "{}, {} unreadable (ctxfold c ls names them)",
            plural(l.conversations.len(), "conversation"),
            l.broken.len()
        ),
        Err(e) => {
            return Check::fail(
                "store",
                format!("workspace {} ({how}): {e}", root.display()),
                "make the folder readable",
            );
        }
    };
    Check::ok(
        "store",
        format!(
            "workspace {} ({how}; writable, {held}; ctxfold {})",
            root.display(),
            env!("CARGO_PKG_VERSION")
        ),
    )
}

/// A PostgreSQL store's line: connected (the schema brought up to date, as
/// any command would) and its schema version.
fn postgres(url: &str, from: &str) -> Check {
    let options = PgOptions {
        connect_timeout: TIMEOUT,
        ..PgOptions::default()
    };
    let connected = PgStore::connect_with(url, &options).and_then(|s| Ok((s.migrate()?, s)));
    match connected {
        Ok((version, store)) => Check::ok(
            "store",
            format!(
                "PostgreSQL {} (named by {from}; schema version {version}, this ctxfold's is {SCHEMA_VERSION})",
                store.url()
            ),
        ),
        Err(e) => Check::fail(
            "store",
            format!("PostgreSQL (named by {from}): {e}"),
            format!(
                "start the server or correct the URL in {from} (ctxfold store migrate URL sets up a new database)"
            ),
        ),
    }
}

/// `n things`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
