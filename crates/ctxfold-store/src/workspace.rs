//! The workspace: a `.ctxfold/` folder found by walking up from the current
//! directory (like `.git`), or a global one under the XDG data directory
//! when there is none.
//!
//! ```text
//! .ctxfold/
//!   config.toml                  workspace config (optional)
//!   active                       id of the active conversation
//!   active.lock                  held while `active` is set or cleared
//!   conversations/<id>/
//!     events.jsonl               the append-only log
//!     meta.json                  title, created, last used, import source
//!     lock                       advisory lock file
//!   conversations/.staging/      conversations being created (imports, forks)
//!     <id>/                      written whole here, then renamed into place
//!     <id>.lock                  held by the creating process while it runs
//!     lock                       held while a creation starts or a cleanup runs
//!   trash/<id>/                  conversations removed with `rm`
//! ```
//!
//! A conversation appears in `conversations/` only once complete. What a
//! killed creation leaves in `.staging/` is removed by
//! [`Workspace::clean_staging`], which knows a live one by its lock.

use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};

use ctxfold_core::{Object, Record};

use crate::event_log::{EventLog, Lock};
use crate::meta::{self, ConversationMeta, ImportSource};
use crate::{StoreError, now};

/// Name of the workspace folder.
pub const WORKSPACE_DIR: &str = ".ctxfold";
/// Folder inside `conversations/` where conversations are created.
pub const STAGING_DIR: &str = ".staging";

/// What a listing of conversations found: [`Workspace::list`] the
/// conversations with their folders (the defaults), [`Store::list`] their
/// metadata ([`StoreListing`]).
///
/// [`Store::list`]: crate::Store::list
/// [`StoreListing`]: crate::StoreListing
#[derive(Debug)]
pub struct Listing<C = Conversation, B = Broken> {
    /// The conversations whose metadata could be read, oldest first.
    pub conversations: Vec<C>,
    /// The conversations whose metadata could not be read (a corrupt or
    /// missing `meta.json`), by id: one broken conversation hides no
    /// other.
    pub broken: Vec<B>,
}

impl<C, B> Default for Listing<C, B> {
    fn default() -> Self {
        Listing {
            conversations: Vec::new(),
            broken: Vec::new(),
        }
    }
}

/// A conversation folder whose metadata could not be read.
#[derive(Debug)]
pub struct Broken {
    /// Its id (the folder name).
    pub id: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Why it could not be read.
    pub error: StoreError,
}

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
        let root = Self::global_root().ok_or(StoreError::NoDataDir)?;
        std::fs::create_dir_all(root.join("conversations"))
            .map_err(|e| StoreError::io(&root, e))?;
        Ok(Workspace { root })
    }

    /// Where the global workspace is (whether or not it exists yet).
    pub fn global_root() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("ctxfold"))
    }

    /// The workspace folders a command run in `start` could use, those that
    /// exist: the nearest `.ctxfold/` and the global one. Exports and
    /// compacted outputs never go into them.
    pub fn known_roots(start: &Path) -> Vec<PathBuf> {
        let local = Self::discover(start).map(|w| w.root);
        let global = Self::global_root().filter(|g| g.is_dir());
        local.into_iter().chain(global).collect()
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

    /// Every conversation, oldest first, and apart from them the folders
    /// that could not be read: one broken `meta.json` hides no other
    /// conversation. Hidden entries (`.staging`) are not conversations.
    pub fn list(&self) -> Result<Listing, StoreError> {
        let dir = self.conversations_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Listing::default()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut out = Listing::default();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            let path = entry.path();
            let id = entry.file_name().to_string_lossy().into_owned();
            if id.starts_with('.') || !path.is_dir() {
                continue;
            }
            match meta::read(&path) {
                Ok(meta) => out.conversations.push(Conversation { dir: path, meta }),
                Err(error) => out.broken.push(Broken {
                    id,
                    dir: path,
                    error,
                }),
            }
        }
        out.conversations.sort_by(|a, b| {
            (&a.meta.created_at, &a.meta.id).cmp(&(&b.meta.created_at, &b.meta.id))
        });
        out.broken.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn staging_dir(&self) -> PathBuf {
        self.conversations_dir().join(STAGING_DIR)
    }

    /// Create a conversation holding `records`.
    ///
    /// It is written whole in `conversations/.staging/<id>/` and renamed
    /// into place, so a failed or killed creation never leaves a
    /// half-written conversation: a failure removes what it wrote, and
    /// what a killed process left is removed by [`Workspace::clean_staging`].
    pub fn create(
        &self,
        title: Option<String>,
        imported_from: Option<ImportSource>,
        extras: Object,
        records: Vec<Record>,
    ) -> Result<Conversation, StoreError> {
        self.create_staged(None, records, |id| {
            let ts = now();
            ConversationMeta {
                id: id.to_owned(),
                title,
                created_at: ts.clone(),
                last_used_at: ts,
                imported_from,
                extras,
            }
        })
    }

    /// Create conversation `meta.id` with exactly that metadata, holding
    /// `records` (numbered from 0), as [`Workspace::create`] does: whole or
    /// not at all. An id already taken (or being created) is an error
    /// ([`StoreError::ConversationExists`]) and nothing is written. For
    /// copies between stores, which keep ids and metadata.
    pub fn create_as(
        &self,
        meta: &ConversationMeta,
        records: Vec<Record>,
    ) -> Result<Conversation, StoreError> {
        check_id(&meta.id)?;
        self.create_staged(Some(&meta.id), records, |_| meta.clone())
    }

    /// Stage a conversation under a new id (`want` `None`) or `want`, write
    /// it and rename it into place.
    fn create_staged(
        &self,
        want: Option<&str>,
        records: Vec<Record>,
        make_meta: impl FnOnce(&str) -> ConversationMeta,
    ) -> Result<Conversation, StoreError> {
        let conversations = self.conversations_dir();
        let staging = self.staging_dir();
        std::fs::create_dir_all(&staging).map_err(|e| StoreError::io(&staging, e))?;
        let exists = |id: &str| StoreError::ConversationExists {
            id: id.to_owned(),
            store: self.root.display().to_string(),
        };
        let (id, dir, claim) = {
            // A cleanup cannot run between claiming a name and locking it.
            let _starting = lock_file(&staging.join(STAGING_LOCK))?;
            loop {
                let id = want.map_or_else(new_id, str::to_owned);
                let dir = staging.join(&id);
                // create_dir fails if it exists: no two creations share an
                // id; and none takes the id of a conversation in place.
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        if want.is_some() {
                            return Err(exists(&id));
                        }
                        continue;
                    }
                    Err(e) => return Err(StoreError::io(&dir, e)),
                }
                if conversations.join(&id).exists() {
                    let _ = std::fs::remove_dir(&dir);
                    if want.is_some() {
                        return Err(exists(&id));
                    }
                    continue;
                }
                match lock_file(&claim_path(&staging, &id)) {
                    Ok(claim) => break (id, dir, claim),
                    Err(e) => {
                        let _ = std::fs::remove_dir(&dir);
                        return Err(e);
                    }
                }
            }
        };
        let meta = make_meta(&id);
        let dest = conversations.join(&id);
        let written = (|| {
            // The log numbers records 0, 1, 2, …: references to seqs must follow.
            EventLog::new(&dir).append(ctxfold_core::log::renumber(records))?;
            meta::write(&dir, &meta)?;
            std::fs::rename(&dir, &dest).map_err(|e| StoreError::io(&dest, e))?;
            // The rename is what makes it exist: make it durable.
            if let Ok(d) = std::fs::File::open(&conversations) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if written.is_err() {
            // Free the space now (a full disk is a likely cause).
            let _ = std::fs::remove_dir_all(&dir);
        }
        let _ = std::fs::remove_file(claim_path(&staging, &id));
        drop(claim);
        written?;
        Ok(Conversation { dir: dest, meta })
    }

    /// Remove what creations that were killed left in
    /// `conversations/.staging/`, and say what was removed. A creation
    /// still running (in any process) holds its lock and is left alone.
    /// Failures are reported in the notes, not returned: cleaning up is
    /// never a reason to stop.
    pub fn clean_staging(&self) -> Vec<String> {
        let staging = self.staging_dir();
        let mut notes = Vec::new();
        let entries = match std::fs::read_dir(&staging) {
            Ok(e) => e,
            Err(_) => return notes,
        };
        let _cleaning = match lock_file(&staging.join(STAGING_LOCK)) {
            Ok(l) => l,
            Err(e) => {
                notes.push(format!(
                    "could not check {} for leftovers: {e}",
                    staging.display()
                ));
                return notes;
            }
        };
        let mut ids = std::collections::BTreeSet::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == STAGING_LOCK {
                continue;
            }
            let id = name.strip_suffix(".lock").unwrap_or(&name).to_owned();
            ids.insert(id);
        }
        for id in ids {
            let claim = claim_path(&staging, &id);
            if let Ok(f) = std::fs::File::open(&claim) {
                match f.try_lock() {
                    Ok(()) => {}
                    // Its creator is alive.
                    Err(std::fs::TryLockError::WouldBlock) => continue,
                    Err(std::fs::TryLockError::Error(e)) => {
                        notes.push(format!("could not check {}: {e}", claim.display()));
                        continue;
                    }
                }
            }
            let dir = staging.join(&id);
            if dir.exists() {
                let size = size_of(&dir);
                match std::fs::remove_dir_all(&dir) {
                    Ok(()) => notes.push(format!(
                        "removed {} ({size} bytes), left by an import or fork that was interrupted",
                        dir.display()
                    )),
                    Err(e) => {
                        notes.push(format!(
                            "could not remove {}, left by an interrupted import or fork: {e}",
                            dir.display()
                        ));
                        continue;
                    }
                }
            }
            let _ = std::fs::remove_file(&claim);
        }
        notes
    }

    /// The conversation whose id is `id` or starts with it. A folder whose
    /// metadata cannot be read counts as a match, and its error is the
    /// answer when it is the only one.
    pub fn get(&self, id: &str) -> Result<Conversation, StoreError> {
        self.get_folder(id)?.map_err(|b| b.error)
    }

    /// The conversation folder whose id is `id` or starts with it, as
    /// [`Workspace::get`] finds it, but one whose metadata cannot be read
    /// is returned as [`Broken`] (`Ok(Err(_))`): enough to remove it.
    pub fn get_folder(&self, id: &str) -> Result<Result<Conversation, Broken>, StoreError> {
        // An empty prefix would match every conversation.
        if id.is_empty() {
            return Err(StoreError::EmptyId);
        }
        let exact = self.conversations_dir().join(id);
        if !id.starts_with('.') && !id.contains(['/', '\\']) && exact.is_dir() {
            return Ok(match meta::read(&exact) {
                Ok(meta) => Ok(Conversation { dir: exact, meta }),
                Err(error) => Err(Broken {
                    id: id.to_owned(),
                    dir: exact,
                    error,
                }),
            });
        }
        let listing = self.list()?;
        let mut found: Vec<Conversation> = listing
            .conversations
            .into_iter()
            .filter(|c| c.meta.id.starts_with(id))
            .collect();
        let mut broken: Vec<Broken> = listing
            .broken
            .into_iter()
            .filter(|b| b.id.starts_with(id))
            .collect();
        match (found.len(), broken.len()) {
            (1, 0) => Ok(Ok(found.remove(0))),
            (0, 1) => Ok(Err(broken.remove(0))),
            (0, 0) => Err(StoreError::NotFound {
                id: id.to_owned(),
                workspace: self.root.clone(),
            }),
            _ => Err(StoreError::Ambiguous {
                id: id.to_owned(),
                matches: found
                    .into_iter()
                    .map(|c| c.meta.id)
                    .chain(broken.into_iter().map(|b| b.id))
                    .collect(),
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

    /// Lock the `active` file against other processes' `use` and `rm`.
    fn lock_active(&self) -> Result<Lock, StoreError> {
        lock_file(&self.root.join(ACTIVE_LOCK))
    }

    /// Make `conversation` the active one and note that it was used.
    ///
    /// Under the workspace's `active.lock`, which [`Workspace::remove`]
    /// holds too: a conversation moved to the trash meanwhile is an error
    /// ([`StoreError::Vanished`]) and `active` is left as it was.
    pub fn set_active(&self, conversation: &mut Conversation) -> Result<(), StoreError> {
        let _lock = self.lock_active()?;
        let vanished = || StoreError::Vanished {
            dir: conversation.dir.clone(),
        };
        if !conversation.dir.is_dir() {
            return Err(vanished());
        }
        let path = self.root.join("active");
        let before = std::fs::read(&path).ok();
        meta::write_atomic(&path, format!("{}\n", conversation.meta.id).as_bytes())?;
        // Checked again after writing: a folder moved away by hand (no
        // lock) must not stay named as active.
        if !conversation.dir.is_dir() {
            let _ = match before {
                Some(b) => meta::write_atomic(&path, &b),
                None => std::fs::remove_file(&path).map_err(|e| StoreError::io(&path, e)),
            };
            return Err(vanished());
        }
        conversation.meta.last_used_at = now();
        meta::write(&conversation.dir, &conversation.meta)
    }

    /// Move a conversation to the workspace's `trash/` folder. Nothing is
    /// deleted: the folder can be moved back by hand. Returns where it went.
    pub fn remove(&self, conversation: &Conversation) -> Result<PathBuf, StoreError> {
        self.remove_folder(&conversation.meta.id, &conversation.dir)
    }

    /// [`Workspace::remove`] for a conversation folder by its id alone: one
    /// whose `meta.json` is corrupt or missing can be removed too.
    pub fn remove_folder(&self, id: &str, dir: &Path) -> Result<PathBuf, StoreError> {
        let trash = self.root.join("trash");
        std::fs::create_dir_all(&trash).map_err(|e| StoreError::io(&trash, e))?;
        let mut dest = trash.join(id);
        let mut n = 1;
        while dest.exists() {
            dest = trash.join(format!("{id}.{n}"));
            n += 1;
        }
        // Held to the end: a `use` of this conversation waits and then
        // finds it gone, and one of another is not undone below.
        let _active = self.lock_active()?;
        {
            // Wait for an append in progress; appends that come after find
            // the folder gone and write nothing.
            let _writing = EventLog::new(dir).lock(true)?;
            std::fs::rename(dir, &dest).map_err(|e| StoreError::io(dir, e))?;
        }
        if self.active().as_deref() == Some(id) {
            let active = self.root.join("active");
            std::fs::remove_file(&active).map_err(|e| StoreError::io(&active, e))?;
        }
        Ok(dest)
    }
}

/// Refuse an id that cannot be a conversation folder's name.
pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::EmptyId);
    }
    if id.starts_with('.') || id.contains(['/', '\\', '\0']) {
        return Err(StoreError::InvalidId {
            id: id.to_owned(),
            detail: "expected a name without `/`, `\\` or a leading `.`".to_owned(),
        });
    }
    Ok(())
}

/// A new conversation id: the UTC time it was made, sortable, and four hex
/// digits so two made in the same second differ.
pub(crate) fn new_id() -> String {
    let ts = jiff::Timestamp::now();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i128(ts.as_nanosecond());
    let suffix = h.finish() & 0xffff;
    format!("{}-{suffix:04x}", ts.strftime("%Y%m%d-%H%M%S"))
}

/// Name of the lock file that guards `active` (in the workspace folder).
const ACTIVE_LOCK: &str = "active.lock";

/// Name of the lock file that guards starting a creation and cleaning up.
const STAGING_LOCK: &str = "lock";

fn claim_path(staging: &Path, id: &str) -> PathBuf {
    staging.join(format!("{id}.lock"))
}

/// Open (creating if needed) and lock `path` exclusively, waiting for it.
fn lock_file(path: &Path) -> Result<Lock, StoreError> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io(path, e))?;
    f.lock().map_err(|e| StoreError::io(path, e))?;
    Ok(Lock::new(f))
}

/// Bytes in the files under `dir`, for the note that says what was freed.
fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => size_of(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}
