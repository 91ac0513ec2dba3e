//! Claude Code sessions: `~/.claude/projects/<working folder, each `/` a
//! `-`>/<session id>.jsonl`, one JSON object a line, as Claude Code writes
//! them (2.1.x).
//!
//! | Claude Code line | ctxfold records |
//! | --- | --- |
//! | `user` / `assistant` with `message.content` a string | one `user` / `assistant` record |
//! | `user` / `assistant` with content blocks | one record a block: `text` → `user` / `assistant`; `thinking` → `reasoning` (signature in metadata `anthropic_thinking_signature`); `redacted_thinking` → an empty `reasoning`; `tool_use` → `tool_call`; `tool_result` → `tool_result` (text blocks joined with "\n"); any other block (`image`, `document`, …) → a `user` / `assistant` text `[TYPE block]` standing for it |
//! | `system` with `subtype: "compact_boundary"`, and the `isCompactSummary` user line right after it | one `compaction` record, source `agent` (see below) |
//! | anything else: `attachment`, `system` (`turn_duration`, …), `summary`, `custom-title`, `ai-title`, `file-history-snapshot`, `queue-operation`, `last-prompt`, `api-request…`, a type this version does not know | `claude_code`, the line whole in field `line` |
//! | a line that is not JSON (a torn last line) | `claude_code` with the line's text in field `text`, and a warning naming the line |
//!
//! Claude Code records no turns: a `turn_start` (hint `synthesized`,
//! never written back) opens a turn before a user line of text (not tool
//! results, not a compact summary) whose `promptId` differs from the one
//! that opened the current turn, or, without `promptId`s, that follows the
//! assistant's or a tool's records; never between a call and its result.
//!
//! # Written back byte for byte
//!
//! Each message record keeps, in `extra["claude_code"]`, the line it came
//! from with `message.content` set to `null` (`line`, on the line's first
//! record; the others say `more`) and its block with the fields the record
//! holds set to `null` (`block`), so export fills them in place: every
//! other key, and the key order, come back as they were. A tool result
//! keeps a fingerprint of its text (`fnv`): when a compacted view changed
//! the text, the line's `toolUseResult` (Claude Code's own copy of the raw
//! output, which it does not send to the model) is left out. A line that
//! serde_json would write with other bytes (number spellings, escapes)
//! keeps its text (`raw`), written back while the records still make the
//! same JSON. Whether the file ended with a newline is kept in the
//! transcript's extras. An unchanged session exports byte-identical to the
//! file it was read from, also after a trip through ctxfold's log.
//!
//! # Claude Code's own compaction
//!
//! `/compact` (or the automatic compaction) writes a `compact_boundary`
//! line (`parentUuid: null`, `compactMetadata`) and a user line with
//! `isCompactSummary: true` holding the summary. Both become one
//! `compaction` record at the boundary's place, `source: "agent"`, with
//! the summary (provenance `supplied` by `agent`), over the records before
//! the boundary, up to the first message of `compactMetadata`'s
//! `preservedSegment` (the recent messages Claude Code keeps verbatim after
//! the summary). The raw history stays in the log: `c print` shows it, and
//! `c compact --reset` takes the agent's compaction out of the view like
//! any other. Both lines are written back from the record.
//!
//! # A new session
//!
//! A compacted view is written as a new session ([`new_session`]): every
//! line's `sessionId` is the new id; every line's `uuid` is new, and
//! `parentUuid`, `logicalParentUuid`, `leafUuid` and a snapshot's
//! `messageId` follow; a parent left out of the view is replaced by the
//! line written before (so the chain Claude Code walks back from the last
//! message holds what the view holds, in order). Records without a line of
//! their own (a summary ctxfold made) get one modelled on the lines around
//! them. Thinking without a signature is not written (the API would refuse
//! it). `claude --resume ID`, run in the session's working folder, goes on
//! from it.

mod export;
mod import;
mod line;

pub(crate) use export::export_records;
pub use export::{export_bytes, export_to};
pub(crate) use import::Reader;
pub use import::{import, import_bytes, looks_like};

/// Key of the hints in a record's `extra`, of the format's extras, and the
/// kind of the records that keep a line whole.
pub const KEY: &str = "claude_code";

/// Extras key: the session's id, as read.
pub(crate) const SESSION_ID: &str = "session_id";
/// Extras key: the id of the new session an export writes.
pub(crate) const NEW_SESSION: &str = "new_session_id";
/// Extras key: `false` when the file's last line had no newline.
pub(crate) const FINAL_NEWLINE: &str = "final_newline";
/// Extras key: `true` when the file started with a UTF-8 byte-order mark.
pub(crate) const BOM: &str = "bom";
/// Extras key: the session's working folder (the first line's `cwd`).
pub(crate) const CWD: &str = "cwd";

/// The metadata key of a thinking block's signature (the Anthropic
/// format's).
pub(crate) const SIGNATURE: &str = "anthropic_thinking_signature";

/// Set a transcript's `extras` up to be written as a new session: a
/// fresh session id, which is returned.
pub fn new_session(extras: &mut ctxfold_core::Object) -> String {
    let id = crate::session_lines::uuid_v4();
    set_extra(extras, NEW_SESSION, serde_json::Value::String(id.clone()));
    id
}

pub(crate) fn set_extra(extras: &mut ctxfold_core::Object, key: &str, v: serde_json::Value) {
    let entry = extras
        .entry(KEY.to_owned())
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(o) = entry.as_object_mut() {
        o.insert(key.to_owned(), v);
    }
}

pub(crate) fn extra<'a>(t: &'a crate::Transcript, key: &str) -> Option<&'a serde_json::Value> {
    t.extras.get(KEY)?.get(key)
}

/// The folder Claude Code keeps the sessions of working folder `project`
/// in, under `projects` (`~/.claude/projects`, or `$CLAUDE_CONFIG_DIR/
/// projects`): the folder's absolute path with every character other than
/// an ASCII letter or digit made `-`.
pub fn project_folder(projects: &std::path::Path, project: &std::path::Path) -> std::path::PathBuf {
    let name: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    projects.join(name)
}

/// The sessions in `folder` (a project's folder of Claude Code): its
/// `*.jsonl` files (subagents' files, in subfolders, are not sessions of
/// their own), with their session ids (the file names), sorted; a
/// `*.jsonl` that is not a regular file (a link, a pipe) is passed over.
pub fn sessions_in(folder: &std::path::Path) -> std::io::Result<crate::Found> {
    let mut out = crate::Found::default();
    for e in std::fs::read_dir(folder)? {
        let e = e?;
        let p = e.path();
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        // The entry's own type: a link is not followed.
        let kind = e.file_type()?;
        if let Some(why) = crate::session_lines::not_a_session_file(&kind) {
            out.skipped.push((p, why));
        } else if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
            out.sessions.push((p.clone(), stem.to_owned()));
        }
    }
    out.sessions.sort();
    out.skipped.sort();
    Ok(out)
}
