//! A conversation's metadata file, `meta.json`: small, rewritten whole, and
//! always atomically (written to a temporary file, synced, renamed), so a
//! crash leaves either the old or the new file, never half of one.

use std::io::Write;
use std::path::Path;

use ctxfold_core::Object;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// File name of the metadata file inside a conversation folder.
pub const META_FILE: &str = "meta.json";

/// What ctxfold knows about a conversation besides its events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationMeta {
    /// The conversation's id (its folder name).
    pub id: String,
    /// A title, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was last used (RFC 3339).
    pub last_used_at: String,
    /// Where it was imported from, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<ImportSource>,
    /// Format data that is not a record (JP's metadata file, a request's
    /// `model`), kept so export gives it back.
    #[serde(default, skip_serializing_if = "Object::is_empty")]
    pub extras: Object,
}

/// Keys of the extras entries that may record a conversation's fixed part:
/// the proxy's and `ctxfold query`'s.
const FIXED_FROM: [&str; 2] = ["proxy", "ctxfold"];

impl ConversationMeta {
    /// Tokens every request of the conversation carries besides its
    /// messages (the system prompt and the tool definitions), as the proxy
    /// or `ctxfold query` last sent them (`extras.<proxy|ctxfold>.fixed_tokens`);
    /// `None` where nothing sent it (an imported transcript).
    pub fn fixed_tokens(&self) -> Option<usize> {
        FIXED_FROM.iter().find_map(|k| {
            let n = self.extras.get(*k)?.get("fixed_tokens")?.as_u64()?;
            usize::try_from(n).ok()
        })
    }

    /// Record `tokens` as the fixed part under the extras entry `key`;
    /// whether that changed anything (so the caller knows to write).
    pub fn set_fixed_tokens(&mut self, key: &str, tokens: usize) -> bool {
        let entry = self
            .extras
            .entry(key.to_owned())
            .or_insert_with(|| serde_json::Value::Object(Object::new()));
        let Some(entry) = entry.as_object_mut() else {
            return false;
        };
        if entry
            .get("fixed_tokens")
            .and_then(serde_json::Value::as_u64)
            == Some(tokens as u64)
        {
            return false;
        }
        entry.insert("fixed_tokens".into(), tokens.into());
        true
    }
}

/// Where an imported conversation came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportSource {
    /// The transcript format.
    pub format: String,
    /// The path it was read from.
    pub path: String,
}

/// Read `meta.json` from a conversation folder.
pub fn read(dir: &Path) -> Result<ConversationMeta, StoreError> {
    let path = dir.join(META_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| StoreError::BadLine {
        path,
        line: Some(e.line()),
        detail: format!("expected a ctxfold metadata object: {e}"),
    })
}

/// Write `meta.json` atomically.
pub fn write(dir: &Path, meta: &ConversationMeta) -> Result<(), StoreError> {
    let path = dir.join(META_FILE);
    let mut bytes = serde_json::to_vec_pretty(meta).map_err(|e| StoreError::BadLine {
        path: path.clone(),
        line: None,
        detail: e.to_string(),
    })?;
    bytes.push(b'\n');
    write_atomic(&path, &bytes)
}

/// Replace `path` with `bytes`: temporary file, sync, rename.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| StoreError::io(dir, e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| StoreError::io(path, e))?;
    tmp.persist(path)
        .map_err(|e| StoreError::io(path, e.error))?;
    Ok(())
}
