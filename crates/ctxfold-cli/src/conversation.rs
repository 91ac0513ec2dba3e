//! `ctxfold conversation …`.

use std::io::BufRead;
use std::path::Path;

use anyhow::{Context, bail};
use ctxfold_core::{Object, Record};
use ctxfold_formats::output::Protect;
use ctxfold_formats::{Format, Transcript};
use ctxfold_store::ImportSource;
use serde_json::{Value, json};

use crate::cli::{
    AppendArgs, CompactConversationArgs, ConversationCommand, ExportArgs, ForkArgs, ImportArgs,
    PrintArgs, RmArgs, UseArgs,
};
use crate::compact;
use crate::listing::compaction_listing;
use crate::outputs::{export_bytes, protect_workspaces};
use crate::render::{self, Printer};
use crate::settings::Settings;
use crate::store::Target;

pub fn run(
    cmd: ConversationCommand,
    target: &Target,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    match cmd {
        ConversationCommand::Ls => ls(target, out),
        ConversationCommand::Show(a) => show(target, a.id.as_deref(), out),
        ConversationCommand::Print(PrintArgs { id, compacted }) => {
            print(target, id.as_deref(), compacted, out)
        }
        ConversationCommand::Compact(CompactConversationArgs {
            id,
            rule,
            dry_run,
            reset,
            restore,
            auto,
            window,
        }) => compact::compact_conversation(
            target,
            id.as_deref(),
            &rule,
            dry_run,
            reset,
            restore,
            auto.map(Into::into),
            window,
            settings,
            out,
        ),
        ConversationCommand::Fork(ForkArgs { id, compact }) => {
            clean_staging(target);
            compact::fork(target, id.as_deref(), &compact, settings, out)
        }
        ConversationCommand::Import(ImportArgs { path, input_format }) => {
            import(target, &path, input_format.format(), out)
        }
        ConversationCommand::Export(ExportArgs {
            id,
            output_format,
            output,
            compacted,
        }) => export(
            target,
            id.as_deref(),
            output_format.into(),
            output.as_deref(),
            compacted,
            out,
        ),
        ConversationCommand::Append(AppendArgs { id, input, window }) => {
            append(target, id.as_deref(), &input, window, settings, out)
        }
        ConversationCommand::Use(UseArgs { id }) => {
            let m = target.store.find(&id)?;
            let id = target.store.set_active(&m.id)?.id;
            out.emit(&json!({"active": id}), || {
                format!("active conversation: {id}")
            })
        }
        ConversationCommand::Rm(RmArgs { id }) => {
            let (id, dest) = match &target.workspace {
                // A folder whose meta.json is broken can go too: only the
                // folder is needed.
                Some(ws) => {
                    let (id, dir) = match ws.get_folder(&id)? {
                        Ok(c) => (c.meta.id, c.dir),
                        Err(b) => (b.id, b.dir),
                    };
                    let dest = ws.remove_folder(&id, &dir)?;
                    (id, dest.display().to_string())
                }
                None => {
                    let id = target.store.find(&id)?.id;
                    let dest = target.store.trash(&id)?;
                    (id, dest)
                }
            };
            out.emit(&json!({"removed": id, "moved_to": dest}), || {
                format!("moved conversation {id} to {dest}")
            })
        }
    }
}

fn ls(target: &Target, out: &Printer) -> anyhow::Result<()> {
    let listing = target.store.list()?;
    // One broken folder must not hide the others: list them, name it, and
    // in JSON list it too (marked), so scripts see it.
    let mut broken = Vec::new();
    for b in listing.broken {
        let error = format!("{:#}", anyhow::Error::from(b.error));
        crate::render::say!(
            "warning: conversation {} left out: {error}; `ctxfold conversation rm {}` moves it to the trash",
            b.id,
            b.id
        );
        broken.push(json!({"id": b.id, "broken": true, "error": error}));
    }
    let list = listing.conversations;
    let active = target.store.active()?;
    let json = Value::Array(
        list.iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "title": c.title,
                    "created_at": c.created_at,
                    "last_used_at": c.last_used_at,
                    "active": active.as_deref() == Some(c.id.as_str()),
                })
            })
            .chain(broken)
            .collect(),
    );
    out.emit(&json, || {
        if list.is_empty() {
            return "no conversations; `ctxfold conversation import FILE` adds one".into();
        }
        let mut s = String::new();
        for c in &list {
            let mark = if active.as_deref() == Some(c.id.as_str()) {
                "*"
            } else {
                " "
            };
            let title = c.title.as_deref().unwrap_or("(untitled)");
            s.push_str(&format!("{mark} {}  {title}\n", c.id));
        }
        s
    })
}

fn show(target: &Target, id: Option<&str>, out: &Printer) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    let log = target.load_once(&meta.id)?;
    let counts = log.counts();
    let (compactions_json, compactions_text) = compaction_listing(log, out.is_json());
    let attempts = ctxfold_core::attempt::attempts(log);
    // An attempt without its end is running when its compaction lock is
    // held, else orphaned (a lock dies with its process).
    let running = attempts.iter().any(|a| a.finished.is_none())
        && matches!(target.store.try_compaction_lock(&meta.id), Ok(None));
    let json = json!({
        "id": meta.id,
        "title": meta.title,
        "created_at": meta.created_at,
        "last_used_at": meta.last_used_at,
        "imported_from": meta.imported_from,
        "path": target.place_of(&meta.id),
        "counts": counts,
        "compactions": compactions_json,
        "attempts": attempts.iter().map(|a| {
            let mut v = serde_json::to_value(a).unwrap_or_default();
            if let Value::Object(m) = &mut v {
                let state = match a.state() {
                    "orphaned" if running => "running",
                    s => s,
                };
                m.insert("state".into(), json!(state));
            }
            v
        }).collect::<Vec<_>>(),
    });
    out.emit(&json, || {
        let m = &meta;
        let mut s = format!(
            "{}  {}\n  created {}, last used {}\n",
            m.id,
            m.title.as_deref().unwrap_or("(untitled)"),
            m.created_at,
            m.last_used_at
        );
        if let Some(src) = &m.imported_from {
            s.push_str(&format!("  imported from {} ({})\n", src.path, src.format));
        }
        s.push_str(&format!(
            "  {} records, {} turns: {} user, {} assistant, {} reasoning, {} tool calls, {} tool results ({} errors)\n",
            counts.records,
            counts.turns,
            counts.user,
            counts.assistant,
            counts.reasoning,
            counts.tool_call,
            counts.tool_result,
            counts.tool_errors
        ));
        s.push_str(&format!(
            "  also {} inquiry events, {} config deltas, {} compactions\n",
            counts.inquiry_request + counts.inquiry_response,
            counts.config_delta,
            counts.compaction
        ));
        if !compactions_text.is_empty() {
            s.push_str("compactions:\n");
            s.push_str(&compactions_text);
        }
        // Attempts that left no compaction: what failed, and what a crash
        // cut short (inert: the view is as if it never started).
        let unfinished: Vec<_> = attempts.iter().filter(|a| a.state() != "done").collect();
        if !unfinished.is_empty() {
            s.push_str("compaction attempts that recorded nothing:\n");
            for a in unfinished {
                let why = match &a.finished {
                    Some(f) => format!("failed: {}", f.error.as_deref().unwrap_or("unknown")),
                    None if running => "running: another process is summarizing now".into(),
                    None => "orphaned: the process stopped while summarizing; inert, nothing to undo".into(),
                };
                s.push_str(&format!(
                    "  record {}: turns {}–{} by {}: {why}\n",
                    a.seq,
                    u64::from(a.started.from_turn) + 1,
                    u64::from(a.started.to_turn) + 1,
                    a.started.summarizer
                ));
            }
        }
        s
    })
}

fn print(target: &Target, id: Option<&str>, compacted: bool, out: &Printer) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    let log = target.load(&meta.id)?;
    if compacted {
        return compact::print_compacted(&log, out);
    }
    if out.is_json() {
        let replaced = ctxfold_core::cut_short::replaced(log.records());
        let records: Vec<Value> = log
            .records()
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut o = r.to_object();
                o.insert("turn".into(), json!(log.turn_of(i) + 1));
                // An answer cut short that the retry's answer replaced.
                if replaced[i] {
                    o.insert("replaced".into(), json!(true));
                }
                Value::Object(o)
            })
            .collect();
        return out.emit(&Value::Array(records), String::new);
    }
    out.emit(&Value::Null, || render::transcript_text(&log))
}

/// Remove what an interrupted import or fork left, saying so. Before a
/// creation: the leftover may be what filled the disk.
fn clean_staging(target: &Target) {
    let Some(ws) = &target.workspace else {
        return;
    };
    for note in ws.clean_staging() {
        crate::render::say!("note: {note}");
    }
}

fn import(
    target: &Target,
    path: &Path,
    format: Option<Format>,
    out: &Printer,
) -> anyhow::Result<()> {
    clean_staging(target);
    let (format, t) = ctxfold_formats::import_detected(path, format)?;
    render::warn_all(&t.warnings);
    let source = ImportSource {
        format: format.name().to_owned(),
        path: std::path::absolute(path)
            .unwrap_or_else(|_| path.to_owned())
            .display()
            .to_string(),
    };
    let n = t.records.len();
    let m = ctxfold_store::create_new(&*target.store, t.title, Some(source), t.extras, t.records)?;
    let id = target.store.set_active(&m.id)?.id;
    out.emit(
        &json!({"id": id, "records": n, "format": format.name()}),
        || id.clone(),
    )
}

fn export(
    target: &Target,
    id: Option<&str>,
    format: Format,
    output: Option<&Path>,
    compacted: bool,
    out: &Printer,
) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    let log = target.load(&meta.id)?;
    let records = if compacted {
        let view = ctxfold_core::projection::project(&log);
        ctxfold_core::materialize::materialize(&log, &view)
    } else {
        log.into_records()
    };
    let t = Transcript {
        records,
        title: meta.title.clone(),
        extras: meta.extras.clone(),
        warnings: Vec::new(),
    };
    match output {
        Some(path) => {
            let base = match &target.workspace {
                Some(ws) => Protect::none().and_folder(ws.root(), "a ctxfold workspace folder"),
                None => Protect::none(),
            };
            let protect = protect_workspaces(base)?;
            ctxfold_formats::export_protected(&t, format, path, &protect)?;
            let p = path.display().to_string();
            out.emit(
                &json!({"id": meta.id, "format": format.name(), "path": p}),
                || format!("wrote {p} ({format})"),
            )
        }
        None if format == Format::Jp => {
            bail!("a JP conversation is a folder: name it with -o PATH")
        }
        None => {
            let bytes = export_bytes(&t, format)?;
            render::to_stdout(&bytes)
        }
    }
}

fn append(
    target: &Target,
    id: Option<&str>,
    input: &Path,
    window: Option<u32>,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
    let reader: Box<dyn BufRead> = if input == Path::new("-") {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(input).with_context(|| input.display().to_string())?;
        Box::new(std::io::BufReader::new(f))
    };
    let name = input.display().to_string();
    // Read and parse everything first, then append under the lock: a slow
    // or interactive input must not hold the conversation locked.
    let mut error = None;
    let mut warnings = Vec::new();
    let mut records = Vec::new();
    // Bounded like every input: an endless one (`/dev/zero`) must not
    // exhaust memory, in total or in one line.
    let limit = ctxfold_formats::max_input_bytes()?;
    let mut reader = std::io::Read::take(reader, limit.saturating_add(1));
    let mut buf = Vec::new();
    for i in 0.. {
        buf.clear();
        let parsed = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) if reader.limit() == 0 => Err(anyhow::anyhow!(
                "more than {limit} bytes, the input limit; set {} to raise it",
                ctxfold_formats::MAX_INPUT_VAR
            )),
            Ok(_) => std::str::from_utf8(&buf)
                .map_err(|e| anyhow::anyhow!("not valid UTF-8 ({e})"))
                .and_then(|l| parse_append_line(l).map_err(anyhow::Error::msg)),
            Err(e) => Err(e.into()),
        };
        match parsed {
            Ok(Some((rec, w))) => {
                if let Some(w) = w {
                    warnings.push(format!("{name}:{}: {w}", i + 1));
                }
                records.push(rec);
            }
            Ok(None) => {}
            Err(e) => {
                error = Some(anyhow::anyhow!("{name}:{}: {e}", i + 1));
                break;
            }
        }
    }
    let range = target.store.append(&meta.id, records)?;
    render::warn_all(&warnings);
    let n = range.end - range.start;
    if let Some(e) = error {
        return Err(e.context(format!(
            "stopped there; the {n} records before it were appended"
        )));
    }
    // A completed turn runs the between-turn trigger (SPEC §8).
    let auto = if settings.auto.enabled && n > 0 {
        let journal = target.journal(&meta.id);
        let mut conv = ctxfold_compactor::Conversation::new(target.load(&meta.id)?, &journal);
        crate::auto::Auto::after_append(settings, &mut conv, window)?
    } else {
        None
    };
    let mut json = json!({"id": meta.id, "appended": n, "first_seq": range.start});
    if let (Some(o), Value::Object(m)) = (&auto, &mut json) {
        m.insert("auto".into(), serde_json::to_value(o)?);
    }
    out.emit(&json, || {
        let mut text = format!("appended {n} records to {}\n", meta.id);
        if let Some(o) = auto.as_ref().filter(|o| o.compacted()) {
            text.push_str(&crate::auto::describe(o));
        }
        text
    })
}

/// One input line for `append`: a ctxfold record whose `seq` may be left
/// out (the log assigns it). Blank lines are skipped.
fn parse_append_line(
    line: &str,
) -> Result<Option<(Record, Option<ctxfold_core::RecordWarning>)>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let mut obj: Object = match serde_json::from_str(line) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return Err("expected a JSON object (one ctxfold record)".into()),
        Err(e) => return Err(format!("invalid JSON: {e}")),
    };
    if !obj.contains_key("seq") {
        obj.insert("seq".into(), json!(0));
    }
    if !obj.contains_key("ts") {
        obj.insert("ts".into(), json!(ctxfold_store::now()));
    }
    Record::from_object(obj)
        .map(Some)
        .map_err(|e| e.to_string())
}
