//! The workspace: a `.ctxfold/` folder found by walking up from the current
//! directory (like `.git`), or a global one under the XDG data directory
//! when there is none.
//!
//! ```text
//! .ctxfold/
//!   config.toml                  workspace config (optional)
//!   active                       id of the active conversation
//!   conversations/<id>/
//!     events.jsonl               the append-only log
//!     meta.json                  title, created, last used, import source
//!     lock                       advisory lock file
//!   trash/<id>/                  conversations removed with `rm`
//! ```

use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use ctxfold_core::{Object, Record};

use crate::event_log::EventLog;
use crate::meta::{self, ConversationMeta, ImportSource};
use crate::{StoreError, now};

/// Name of the workspace folder.
pub const WORKSPACE_DIR: &str = ".ctxfold";

/// An opened workspace.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// A conversation in a workspace.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Its folder.
    pub dir: PathBuf,
    /// Its metadata.
    pub meta: ConversationMeta,
}

impl Conversation {
    /// Its event log.
    pub fn log(&self) -> EventLog {
        EventLog::new(&self.dir)
    }
}

impl Workspace {
    /// Create `.ctxfold/` in `dir`. Returns the workspace and whether it was
    /// created (`false`: it already existed, nothing was changed).
    pub fn init(dir: &Path) -> Result<(Workspace, bool), StoreError> {
        let root = dir.join(WORKSPACE_DIR);
        let existed = root.is_dir();
        std::fs::create_dir_all(root.join("conversations"))
            .map_err(|e| StoreError::io(&root, e))?;
        Ok((Workspace { root }, !existed))
    }

    /// The nearest `.ctxfold/` at or above `start`.
    pub fn discover(start: &Path) -> Option<Workspace> {
        start
            .ancestors()
            .map(|d| d.join(WORKSPACE_DIR))
            .find(|p| p.is_dir())
            .map(|root| Workspace { root })
    }

    /// The global workspace under the XDG data directory, created if needed.
    pub fn global() -> Result<Workspace, StoreError> {
        let base = dirs::data_dir().ok_or(StoreError::NoDataDir)?;
        let root = base.join("ctxfold");
        std::fs::create_dir_all(root.join("conversations"))
            .map_err(|e| StoreError::io(&root, e))?;
        Ok(Workspace { root })
    }

    /// The workspace for `start`: the nearest `.ctxfold/`, else the global one.
    pub fn find(start: &Path) -> Result<Workspace, StoreError> {
        match Self::discover(start) {
            Some(w) => Ok(w),
            None => Self::global(),
        }
    }

    /// Open the workspace folder `root` (a `.ctxfold/` or the global one).
    pub fn at(root: impl Into<PathBuf>) -> Workspace {
        Workspace { root: root.into() }
    }

    /// The workspace folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace config file (which may not exist).
    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    fn conversations_dir(&self) -> PathBuf {
        self.root.join("conversations")
    }

    /// Every conversation, oldest first.
    pub fn list(&self) -> Result<Vec<Conversation>, StoreError> {
        let dir = self.conversations_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let path = entry.path();
            if path.join(meta::META_FILE).is_file() {
                let meta = meta::read(&path)?;
                out.push(Conversation { dir: path, meta });
            }
        }
        out.sort_by(|a, b| (&a.meta.created_at, &a.meta.id).cmp(&(&b.meta.created_at, &b.meta.id)));
        Ok(out)
    }

    /// Create a conversation holding `records`.
    pub fn create(
        &self,
        title: Option<String>,
        imported_from: Option<ImportSource>,
        extras: Object,
        records: Vec<Record>,
    ) -> Result<Conversation, StoreError> {
        let conversations = self.conversations_dir();
        std::fs::create_dir_all(&conversations).map_err(|e| StoreError::io(&conversations, e))?;
        let (id, dir) = loop {
            let id = new_id();
            let dir = conversations.join(&id);
            // create_dir fails if it exists: no two conversations share an id.
            match std::fs::create_dir(&dir) {
                Ok(()) => break (id, dir),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io(&dir, e)),
            }
        };
        let ts = now();
        let meta = ConversationMeta {
            id,
            title,
            created_at: ts.clone(),
            last_used_at: ts,
            imported_from,
            extras,
        };
        // The log numbers records 0, 1, 2, …: references to seqs must follow.
        EventLog::new(&dir).append(ctxfold_core::log::renumber(records))?;
        meta::write(&dir, &meta)?;
        Ok(Conversation { dir, meta })
    }

    /// The conversation whose id is `id` or starts with it.
    pub fn get(&self, id: &str) -> Result<Conversation, StoreError> {
        let exact = self.conversations_dir().join(id);
        if !id.is_empty() && !id.contains(['/', '\\']) && exact.join(meta::META_FILE).is_file() {
            let meta = meta::read(&exact)?;
            return Ok(Conversation { dir: exact, meta });
        }
        let mut found: Vec<Conversation> = self
            .list()?
            .into_iter()
            .filter(|c| c.meta.id.starts_with(id))
            .collect();
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(StoreError::NotFound {
                id: id.to_owned(),
                workspace: self.root.clone(),
            }),
            _ => Err(StoreError::Ambiguous {
                id: id.to_owned(),
                matches: found.into_iter().map(|c| c.meta.id).collect(),
            }),
        }
    }

    /// The conversation `id` if given, else the active one.
    pub fn resolve(&self, id: Option<&str>) -> Result<Conversation, StoreError> {
        match id {
            Some(id) => self.get(id),
            None => match self.active() {
                Some(id) => self.get(&id),
                None => Err(StoreError::NoActive),
            },
        }
    }

    /// The id of the active conversation.
    pub fn active(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.root.join("active")).ok()?;
        let id = text.trim();
        (!id.is_empty()).then(|| id.to_owned())
    }

    /// Make `conversation` the active one and note that it was used.
    pub fn set_active(&self, conversation: &mut Conversation) -> Result<(), StoreError> {
        meta::write_atomic(
            &self.root.join("active"),
            format!("{}\n", conversation.meta.id).as_bytes(),
        )?;
        conversation.meta.last_used_at = now();
        meta::write(&conversation.dir, &conversation.meta)
    }

    /// Move a conversation to the workspace's `trash/` folder. Nothing is
    /// deleted: the folder can be moved back by hand. Returns where it went.
    pub fn remove(&self, conversation: &Conversation) -> Result<PathBuf, StoreError> {
        let trash = self.root.join("trash");
        std::fs::create_dir_all(&trash).map_err(|e| StoreError::io(&trash, e))?;
        let mut dest = trash.join(&conversation.meta.id);
        let mut n = 1;
        while dest.exists() {
            dest = trash.join(format!("{}.{n}", conversation.meta.id));
            n += 1;
        }
        std::fs::rename(&conversation.dir, &dest)
            .map_err(|e| StoreError::io(&conversation.dir, e))?;
        if self.active().as_deref() == Some(conversation.meta.id.as_str()) {
            let active = self.root.join("active");
            std::fs::remove_file(&active).map_err(|e| StoreError::io(&active, e))?;
        }
        Ok(dest)
    }
}

/// A new conversation id: the UTC time it was made, sortable, and four hex
/// digits so two made in the same second differ.
fn new_id() -> String {
    let ts = jiff::Timestamp::now();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i128(ts.as_nanosecond());
    let suffix = h.finish() & 0xffff;
    format!("{}-{suffix:04x}", ts.strftime("%Y%m%d-%H%M%S"))
}
