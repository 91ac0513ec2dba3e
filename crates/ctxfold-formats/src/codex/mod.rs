//! Codex sessions ("rollouts"): `$CODEX_HOME/sessions/YYYY/MM/DD/
//! rollout-<time>-<session id>.jsonl`, one `{timestamp, type, payload}`
//! object a line, as Codex writes them (0.171).
//!
//! | Codex line | ctxfold records |
//! | --- | --- |
//! | `response_item` `message`, role `user` / `assistant` | `user` / `assistant` (the `input_text` / `output_text` parts joined with "\n") |
//! | `response_item` `message`, role `developer` / `system` | `system` |
//! | `response_item` `reasoning` | `reasoning` (its `summary_text` parts joined with "\n\n", else its `reasoning_text` parts); the line kept whole, `encrypted_content` and all |
//! | `response_item` `function_call` | `tool_call` (`call_id`, `name`, `arguments` parsed; text that is not JSON kept as a JSON string) |
//! | `response_item` `custom_tool_call` | `tool_call` with the `input` text as a JSON string |
//! | `response_item` `local_shell_call` | `tool_call` named `local_shell`, its `action` the arguments |
//! | `response_item` `function_call_output`, `custom_tool_call_output`, `local_shell_call_output` | `tool_result` (a string `output`, or its text parts joined with "\n") |
//! | `compacted` (`message`, `replacement_history`), `response_item` `compaction` (`encrypted_content`) | a `compaction` record, source `agent` (see below) |
//! | `session_meta`, `turn_context`, `event_msg`, `world_state`, `token_usage_record`, other `response_item`s (`additional_tools`, `web_search_call`, …), types this version does not know | `codex`, the line whole in field `line` |
//! | a line that is not JSON (a torn last line) | `codex` with its text in field `text`, and a warning naming the line |
//!
//! Codex records turns as `turn_context` and `task_started` lines, but
//! between them the user's message opens the turn ctxfold counts: a
//! synthesized `turn_start` (never written back) goes before each `user`
//! message that follows the assistant's or a tool's records.
//!
//! Each record keeps, in `extra["codex"]`, its line with the fields the
//! record holds set to `null` (`line`), so export fills them in place, and
//! a fingerprint of its text (`fnv`) where the line holds the text in a
//! form export cannot rebuild (several parts, a reasoning item): while the
//! text is unchanged the line is written as it was. `arguments` text that
//! serde_json would write otherwise is kept (`arguments`). An unchanged
//! session exports byte-identical to the file.
//!
//! # Codex's own compaction
//!
//! A `compacted` line (Codex's `/compact`, or its automatic compaction at
//! `model_auto_compact_token_limit`) replaces the history before it with
//! its `replacement_history`: it becomes a `compaction` record at its
//! place, `source: "agent"`, over every record before it, with its
//! `message` as the summary (provenance `supplied` by `agent`). A
//! `compaction` response item (the Responses API's encrypted compaction)
//! does the same, with a summary saying that its content is encrypted.
//! The raw history stays in the log; `--reset` brings it back into the
//! view. Both are written back from the record.
//!
//! # A new session
//!
//! A compacted view is written as a new session ([`new_session`]): the new
//! id replaces the old wherever a line names it (`session_meta`'s `id`,
//! `session_id`, `thread_id`, …), `ordinal`s count the lines written, and
//! the file is named as Codex names its rollouts ([`file_name`]), beside
//! the original. `codex resume ID` (`codex exec resume ID "…"`) goes on
//! from it.

mod export;
mod import;
mod line;
mod rollout;

pub(crate) use export::export_records;
pub use export::{export_bytes, export_to};
pub(crate) use import::Reader;
pub use import::{import, import_bytes, looks_like};
pub use rollout::Rollout;

/// Key of the hints in a record's `extra`, of the format's extras, and the
/// kind of the records that keep a line whole.
pub const KEY: &str = "codex";

/// Extras key: the session's id, as read.
pub(crate) const SESSION_ID: &str = "session_id";
/// Extras key: the id of the new session an export writes.
pub(crate) const NEW_SESSION: &str = "new_session_id";
/// Extras key: `false` when the file's last line had no newline.
pub(crate) const FINAL_NEWLINE: &str = "final_newline";
/// Extras key: `true` when the file started with a UTF-8 byte-order mark.
pub(crate) const BOM: &str = "bom";

/// Set a transcript's `extras` up to be written as a new session: a
/// fresh session id, which is returned.
pub fn new_session(extras: &mut ctxfold_core::Object) -> String {
    let id = crate::session_lines::uuid_v7();
    if let serde_json::Value::Object(o) = extras
        .entry(KEY.to_owned())
        .or_insert_with(|| serde_json::Value::Object(Default::default()))
    {
        o.insert(NEW_SESSION.into(), serde_json::Value::String(id.clone()));
    }
    id
}

/// The name Codex gives the rollout of session `id` started now:
/// `rollout-YYYY-MM-DDTHH-MM-SS-ID.jsonl`.
pub fn file_name(id: &str) -> String {
    let now = jiff::Timestamp::now();
    format!("rollout-{}-{id}.jsonl", now.strftime("%Y-%m-%dT%H-%M-%S"))
}

pub(crate) fn extra<'a>(t: &'a crate::Transcript, key: &str) -> Option<&'a serde_json::Value> {
    t.extras.get(KEY)?.get(key)
}

/// The rollouts under `codex_home/sessions` whose `session_meta` names
/// `project` as the working folder, with their session ids, sorted; a
/// rollout that is not a regular file (a link, a pipe) is passed over, and
/// a linked folder is not entered.
pub fn sessions_of(
    codex_home: &std::path::Path,
    project: &std::path::Path,
) -> std::io::Result<crate::Found> {
    use std::io::BufRead;
    let mut out = crate::Found::default();
    let mut stack = vec![codex_home.join("sessions")];
    let same = |cwd: &str| {
        let a = std::path::Path::new(cwd);
        a == project
            || std::fs::canonicalize(a).ok() == std::fs::canonicalize(project).ok()
                && std::fs::canonicalize(a).is_ok()
    };
    while let Some(dir) = stack.pop() {
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for e in rd {
            let e = e?;
            let p = e.path();
            // The entry's own type: a link is not followed.
            let kind = e.file_type()?;
            if kind.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !(name.starts_with("rollout-") && name.ends_with(".jsonl")) {
                continue;
            }
            if let Some(why) = crate::session_lines::not_a_session_file(&kind) {
                out.skipped.push((p, why));
                continue;
            }
            let mut first = String::new();
            let f = std::fs::File::open(&p)?;
            std::io::BufReader::new(f).read_line(&mut first)?;
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&first) else {
                continue;
            };
            let payload = &v["payload"];
            if v["type"] == "session_meta"
                && payload["cwd"].as_str().is_some_and(same)
                && let Some(id) = payload["id"].as_str()
            {
                out.sessions.push((p.clone(), id.to_owned()));
            }
        }
    }
    out.sessions.sort();
    out.skipped.sort();
    Ok(out)
}
