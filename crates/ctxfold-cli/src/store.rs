//! Which store a command uses (`--store`, `CTXFOLD_STORE`, `[store] url`,
//! else the workspace), and opening one by name.
//! The compaction service reaches the store through
//! [`ctxfold_compactor::InStore`].

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use ctxfold_core::Log;
use ctxfold_formats::output::Protect;
use ctxfold_store::postgres::mask_url;
use ctxfold_store::{ConversationMeta, PgStore, Store, StoreError, Workspace};

use crate::render;
use crate::settings::Settings;

/// The variable that names the store when `--store` does not.
pub const STORE_VAR: &str = "CTXFOLD_STORE";

/// `base` and every workspace folder a command run here could use
/// ([`Workspace::known_roots`]): an output written there could replace a
/// conversation's log, so none goes there.
pub fn protect_workspaces(base: Protect) -> anyhow::Result<Protect> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(base.and_workspaces(&Workspace::known_roots(&cwd)))
}

/// The store a command works on.
pub struct Target {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The same store as a workspace, when it is one: what commands not
    /// yet moved to the interface need.
    pub workspace: Option<Workspace>,
}

impl Target {
    /// The conversation `id` (a prefix will do), else the active one.
    pub fn resolve(&self, id: Option<&str>) -> anyhow::Result<ConversationMeta> {
        match id {
            Some(id) => Ok(self.store.find(id)?),
            None => match self.store.active()? {
                Some(id) => Ok(self.store.read_meta(&id)?),
                None => Err(StoreError::NoActive.into()),
            },
        }
    }

    /// The compaction service's journal of conversation `id`: appends and
    /// the compaction lock go to the store.
    pub fn journal(&self, id: &str) -> ctxfold_compactor::InStore {
        ctxfold_compactor::InStore::new(Arc::clone(&self.store), id)
    }

    /// Load a conversation's log, printing warnings (torn tail, …).
    pub fn load(&self, id: &str) -> anyhow::Result<Log> {
        let loaded = self.store.load(id)?;
        render::warn_all(&loaded.warnings);
        Ok(loaded.into_log())
    }

    /// Load a conversation's log for a command that reads it and then
    /// ends: the log is left for the process's exit to free (see
    /// [`free_at_exit`]).
    /// A snapshot its load would write is written after the command, in
    /// the background (see [`crate::snapshot_later`]).
    pub fn load_once(&self, id: &str) -> anyhow::Result<&'static Log> {
        let loaded = self.store.load_leaving_snapshot(id)?;
        render::warn_all(&loaded.warnings);
        if loaded.snapshot_due
            && let Some(ws) = &self.workspace
        {
            crate::snapshot_later::due(ws.root().join("conversations").join(id));
        }
        Ok(free_at_exit(loaded.into_log()))
    }

    /// Remove what an interrupted import or fork left, saying so. Before a
    /// creation: the leftover may be what filled the disk.
    pub fn clean_staging(&self) {
        let Some(ws) = &self.workspace else {
            return;
        };
        for note in ws.clean_staging() {
            crate::render::say!("note: {note}");
        }
    }

    /// Where a conversation is, for `show`: its folder in a workspace,
    /// else the store.
    pub fn place_of(&self, id: &str) -> String {
        match &self.workspace {
            Some(ws) => ws
                .root()
                .join("conversations")
                .join(id)
                .display()
                .to_string(),
            None => self.store.location(),
        }
    }
}

/// The store for a command: `--store`, else `CTXFOLD_STORE`, else
/// `[store] url`, else the workspace found from `cwd` (the nearest
/// `.ctxfold/`, else the global one).
pub fn select(flag: Option<&str>, settings: &Settings, cwd: &Path) -> anyhow::Result<Target> {
    let env = std::env::var(STORE_VAR).ok().filter(|v| !v.is_empty());
    let (spec, from) = match (flag, env, &settings.store_url) {
        (Some(f), _, _) => (f.to_owned(), "--store".to_owned()),
        (None, Some(e), _) => (e, STORE_VAR.to_owned()),
        (None, None, Some((u, at))) => (u.clone(), format!("[store] url ({at})")),
        (None, None, None) => {
            let ws = Workspace::find(cwd)?;
            return Ok(Target {
                store: Arc::new(ws.clone()),
                workspace: Some(ws),
            });
        }
    };
    open(&spec, false).with_context(|| format!("the store named by {from}"))
}

/// Whether `spec` names a PostgreSQL store.
pub fn is_url(spec: &str) -> bool {
    spec.starts_with("postgres://") || spec.starts_with("postgresql://")
}

/// Open `spec`: a `postgres://` URL, or a workspace folder (a folder
/// holding `.ctxfold/`, or a `.ctxfold/` folder itself). With `create`,
/// an existing folder that is not a workspace gets a `.ctxfold/`.
pub fn open(spec: &str, create: bool) -> anyhow::Result<Target> {
    if is_url(spec) {
        let store = PgStore::connect(spec)?;
        return Ok(Target {
            store: Arc::new(store),
            workspace: None,
        });
    }
    if spec.contains("://") {
        bail!(
            "unknown store `{}`: expected postgres://user[:password]@host[:port]/database or a workspace folder",
            mask_url(spec)
        );
    }
    let ws = workspace_at(Path::new(spec), create)?;
    Ok(Target {
        store: Arc::new(ws.clone()),
        workspace: Some(ws),
    })
}

/// `dir` for a message: what was given may be a mistyped URL
/// (`postgresql:/user:pw@host/db`) or a libpq keyword string
/// (`password=…`), which the one masker finds too.
fn shown(dir: &Path) -> String {
    mask_url(&dir.display().to_string())
}

/// The workspace in folder `dir`.
fn workspace_at(dir: &Path, create: bool) -> anyhow::Result<Workspace> {
    if !dir.is_dir() {
        bail!(
            "no such folder {}: expected a workspace folder (one holding .ctxfold/) or a postgres:// URL",
            shown(dir)
        );
    }
    let inner = dir.join(ctxfold_store::workspace::WORKSPACE_DIR);
    if inner.is_dir() {
        return Ok(Workspace::at(inner));
    }
    let is_root = dir.join("conversations").is_dir()
        && dir
            .file_name()
            .is_some_and(|n| n == ctxfold_store::workspace::WORKSPACE_DIR);
    if is_root {
        return Ok(Workspace::at(dir));
    }
    if create {
        return Ok(Workspace::init(dir)?.0);
    }
    bail!(
        "{} is not a ctxfold workspace (no .ctxfold/ in it): expected a workspace folder or a postgres:// URL",
        shown(dir)
    )
}

/// The store named for a command without opening it: for `store migrate`,
/// which needs the URL, not a connection.
pub fn selected_spec(flag: Option<&str>, settings: &Settings) -> Option<String> {
    flag.map(str::to_owned)
        .or_else(|| std::env::var(STORE_VAR).ok().filter(|v| !v.is_empty()))
        .or_else(|| settings.store_url.as_ref().map(|(u, _)| u.clone()))
}

/// Leave `log` for the process's exit to free. Freeing a long log one
/// allocation at a time costs a command that is about to end a tenth of
/// its run at a million records (profiled on `c show`); the exit gives the
/// memory back at once. Only for commands that load one conversation and
/// end: a command that loads many would hold them all.
fn free_at_exit(log: Log) -> &'static Log {
    Box::leak(Box::new(log))
}
