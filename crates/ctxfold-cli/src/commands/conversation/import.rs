//! `conversation import PATH`: a transcript as a new conversation, made
//! the active one; prints its id. `conversation import --from AGENT
//! [PROJECT]`: the agent's sessions of a project, each as a conversation
//! of its own, found again by its session id: a session not imported yet
//! becomes a new conversation, one that grew since gets what it gained.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ctxfold_core::{Body, Record};
use ctxfold_formats::{Format, Opened, Transcript};
use ctxfold_store::{ImportSource, Store};
use serde::Serialize;
use serde_json::Value;

use crate::cli::{ImportArgs, SessionsOf};
use crate::context::Context;
use crate::render::{self, Report};

/// What was imported.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Imported {
    /// One transcript, a new conversation.
    One(One),
    /// An agent's sessions.
    Sessions(Sessions),
}

/// A new conversation.
#[derive(Serialize)]
pub struct One {
    id: String,
    records: usize,
    format: &'static str,
}

/// The sessions of a project, each with what became of it.
#[derive(Serialize)]
pub struct Sessions {
    agent: &'static str,
    folder: String,
    sessions: Vec<Session>,
}

/// One session and its conversation.
#[derive(Serialize)]
pub struct Session {
    session_id: String,
    file: String,
    conversation: String,
    /// `imported`, `grew`, `unchanged`, or `changed` (the file is no longer
    /// what was imported, beyond growing: imported anew).
    status: &'static str,
    /// Records appended (all of them for a new conversation).
    records: usize,
}

impl Report for Imported {}

impl std::fmt::Display for Imported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Imported::One(one) => f.write_str(&one.id),
            Imported::Sessions(s) => {
                if s.sessions.is_empty() {
                    return write!(f, "no {} sessions in {}", s.agent, s.folder);
                }
                let lines: Vec<String> = s
                    .sessions
                    .iter()
                    .map(|x| match x.status {
                        "unchanged" => format!("{}: {} is up to date", x.session_id, x.conversation),
                        "grew" => format!(
                            "{}: {} grew by {} records",
                            x.session_id, x.conversation, x.records
                        ),
                        "changed" => format!(
                            "{}: the session changed beyond growing; imported anew as {} ({} records)",
                            x.session_id, x.conversation, x.records
                        ),
                        _ => format!(
                            "{}: imported as {} ({} records)",
                            x.session_id, x.conversation, x.records
                        ),
                    })
                    .collect();
                f.write_str(&lines.join("\n"))
            }
        }
    }
}

pub fn run(ctx: &Context, args: ImportArgs) -> anyhow::Result<Imported> {
    let target = ctx.target()?;
    target.clean_staging();
    if let Some(agent) = args.from {
        let project = args.path.clone().unwrap_or_else(|| ctx.cwd.clone());
        let project = std::path::absolute(&project).unwrap_or(project);
        return sessions(&*target.store, agent, &project).map(Imported::Sessions);
    }
    let path = args
        .path
        .as_ref()
        .context("name the transcript to import")?;
    let (format, m, n) = match ctxfold_formats::open_detected(path, args.input_format.format())? {
        Opened::Whole(format, t) => {
            render::warn_all(&t.warnings);
            let n = t.records.len();
            let m = ctxfold_store::create_new(
                &*target.store,
                t.title,
                Some(source(format, path)),
                t.extras,
                t.records,
            )?;
            (format, m, n)
        }
        Opened::Records(format, records) => {
            let (m, n) = create_streamed(&*target.store, format, path, records)?;
            (format, m, n)
        }
    };
    let id = target.store.set_active(&m.id)?.id;
    Ok(Imported::One(One {
        id,
        records: n,
        format: format.name(),
    }))
}

/// Records of an agent's session stored per batch, so a long session is
/// never whole in memory (its records' hints are JSON trees several times
/// the size of their lines): the first batch creates the conversation, the
/// others are appended as they are read, and the title and the format's
/// extras, known once the file is read, are written last. Should an append
/// fail, the conversation is moved to the trash: an import is whole or
/// not listed.
fn create_streamed(
    store: &dyn Store,
    format: Format,
    path: &Path,
    mut records: ctxfold_formats::SessionRecords,
) -> anyhow::Result<(ctxfold_store::ConversationMeta, usize)> {
    /// Records a batch: enough that appends are few, few enough that their
    /// JSON stays small beside the file.
    const BATCH: usize = 4096;
    let first: Vec<Record> = records.by_ref().take(BATCH).collect();
    let mut n = first.len();
    let mut meta = ctxfold_store::create_new(
        store,
        None,
        Some(source(format, path)),
        Default::default(),
        first,
    )?;
    let rest = (|| -> anyhow::Result<ctxfold_formats::Transcript> {
        loop {
            let batch: Vec<Record> = records.by_ref().take(BATCH).collect();
            if batch.is_empty() {
                break;
            }
            n += batch.len();
            store.append(&meta.id, batch)?;
        }
        let t = records.finish();
        meta.title = t.title.clone();
        meta.extras = t.extras.clone();
        store.write_meta(&meta)?;
        Ok(t)
    })();
    match rest {
        Ok(t) => {
            render::warn_all(&t.warnings);
            Ok((meta, n))
        }
        Err(e) => {
            let _ = store.trash(&meta.id);
            Err(e)
        }
    }
}

fn source(format: Format, path: &Path) -> ImportSource {
    ImportSource {
        format: format.name().to_owned(),
        path: std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .display()
            .to_string(),
    }
}

/// An agent's home folder: the environment's, else under HOME.
fn agent_home(var: &str, under_home: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let home =
        std::env::var_os("HOME").context("HOME is not set: cannot find the agent's sessions")?;
    Ok(Path::new(&home).join(under_home))
}

fn sessions(store: &dyn Store, agent: SessionsOf, project: &Path) -> anyhow::Result<Sessions> {
    let (format, folder, found) = match agent {
        SessionsOf::ClaudeCode => {
            // A folder of sessions named as it is, or a project's folder.
            let folder = if has_jsonl(project) {
                project.to_owned()
            } else {
                let projects = agent_home("CLAUDE_CONFIG_DIR", ".claude")?.join("projects");
                ctxfold_formats::claude_code::project_folder(&projects, project)
            };
            let found = match ctxfold_formats::claude_code::sessions_in(&folder) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Default::default(),
                Err(e) => return Err(e).with_context(|| folder.display().to_string()),
            };
            (Format::ClaudeCode, folder, found)
        }
        SessionsOf::Codex => {
            let home = agent_home("CODEX_HOME", ".codex")?;
            let found = ctxfold_formats::codex::sessions_of(&home, project)
                .with_context(|| home.display().to_string())?;
            (Format::Codex, home.join("sessions"), found)
        }
    };
    for (file, why) in &found.skipped {
        render::say!("warning: {}: not read as a session: {why}", file.display());
    }
    let key = format!("/{}/session_id", extras_key(format));
    let mut out = Vec::new();
    for (file, session_id) in found.sessions {
        let t = ctxfold_formats::import(&file, Some(format))?;
        render::warn_all(&t.warnings);
        let existing = store.find_by_extra(&key, &Value::String(session_id.clone()))?;
        let (conversation, status, records) = match existing.last() {
            None => {
                let (id, n) = create(store, format, &file, t)?;
                (id, "imported", n)
            }
            Some(meta) => match grow(store, &meta.id, extras_key(format), t)? {
                Grew::By(0) => (meta.id.clone(), "unchanged", 0),
                Grew::By(n) => (meta.id.clone(), "grew", n),
                Grew::Not(t) => {
                    let (id, n) = create(store, format, &file, *t)?;
                    (id, "changed", n)
                }
            },
        };
        out.push(Session {
            session_id,
            file: file.display().to_string(),
            conversation,
            status,
            records,
        });
    }
    Ok(Sessions {
        agent: format.name(),
        folder: folder.display().to_string(),
        sessions: out,
    })
}

fn has_jsonl(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
    })
}

fn extras_key(format: Format) -> &'static str {
    match format {
        Format::Codex => ctxfold_formats::codex::KEY,
        _ => ctxfold_formats::claude_code::KEY,
    }
}

fn create(
    store: &dyn Store,
    format: Format,
    file: &Path,
    t: Transcript,
) -> anyhow::Result<(String, usize)> {
    let n = t.records.len();
    let m = ctxfold_store::create_new(
        store,
        t.title,
        Some(source(format, file)),
        t.extras,
        t.records,
    )?;
    Ok((m.id, n))
}

enum Grew {
    /// Appended this many records.
    By(usize),
    /// The file is not the imported session and more: here it is.
    Not(Box<Transcript>),
}

/// Whether a record came from the session file (the rest of a log are
/// ctxfold's own: its compactions, resets, attempts).
fn from_file(r: &Record, key: &str) -> bool {
    match &r.body {
        Body::Other { kind, .. } if kind == key => true,
        Body::Compaction(c) => r.extra.contains_key(key) || c.extra.contains_key(key),
        _ => r.extra.contains_key(key),
    }
}

/// Append what the session gained since conversation `id` imported it.
fn grow(store: &dyn Store, id: &str, key: &str, t: Transcript) -> anyhow::Result<Grew> {
    let loaded = store.load(id)?.records;
    let imported: Vec<&Record> = loaded.iter().filter(|r| from_file(r, key)).collect();
    let n = imported.len();
    // As the log holds them (a compaction's hints are its own fields
    // there): the same line, but for `seq`.
    let same = |a: &Record, b: &Record| {
        let mut a = a.clone();
        a.seq = b.seq;
        a.to_json_line() == b.to_json_line()
    };
    let prefix = t.records.len() >= n && t.records.iter().zip(&imported).all(|(a, b)| same(a, b));
    if !prefix {
        return Ok(Grew::Not(Box::new(t)));
    }
    if t.records.len() == n {
        return Ok(Grew::By(0));
    }
    // The file's record k is the log's: its k-th imported record, and past
    // them, what is appended now.
    let next = store.next_seq(id)?;
    let seq_of = |k: u64| -> u64 {
        match imported.get(k as usize) {
            Some(r) => r.seq,
            None => next + (k - n as u64),
        }
    };
    let mut new: Vec<Record> = t.records[n..].to_vec();
    for (i, r) in new.iter_mut().enumerate() {
        r.seq = next + i as u64;
        if let Body::Compaction(c) = &mut r.body {
            c.from_seq = c.from_seq.map(seq_of);
            c.to_seq = c.to_seq.map(seq_of);
        }
    }
    let added = new.len();
    store.append(id, new)?;
    let mut meta = store.read_meta(id)?;
    meta.extras = t.extras;
    if meta.title.is_none() {
        meta.title = t.title;
    }
    store.write_meta(&meta)?;
    Ok(Grew::By(added))
}
