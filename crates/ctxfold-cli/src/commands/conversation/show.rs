//! `conversation show`: a conversation's metadata, what it holds, its
//! compactions and the compaction attempts that recorded nothing.

use ctxfold_core::Log;
use ctxfold_core::attempt::Attempt;
use ctxfold_store::ConversationMeta;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::IdArg;
use crate::context::Context;
use crate::listing::{listing_json, listing_text};
use crate::render::Report;

/// A conversation as `show` shows it. The compaction listing is made when
/// printed, for the format printed: its JSON lists what each compaction
/// lost, which the text needs only the counts of.
pub struct Shown {
    meta: ConversationMeta,
    path: String,
    log: &'static Log,
    attempts: Vec<Attempt>,
    /// An attempt without its end is running (its compaction lock is
    /// held), not orphaned.
    running: bool,
}

impl Report for Shown {}

impl Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let meta = &self.meta;
        let compactions = listing_json(self.log);
        let running = self.running;
        json!({
            "id": meta.id,
            "title": meta.title,
            "created_at": meta.created_at,
            "last_used_at": meta.last_used_at,
            "imported_from": meta.imported_from,
            "path": self.path,
            "counts": self.log.counts(),
            "compactions": compactions,
            "attempts": self.attempts.iter().map(|a| {
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
        })
        .serialize(s)
    }
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = &self.meta;
        let counts = self.log.counts();
        let compactions_text = listing_text(self.log);
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
        let unfinished: Vec<_> = self
            .attempts
            .iter()
            .filter(|a| a.state() != "done")
            .collect();
        if !unfinished.is_empty() {
            s.push_str("compaction attempts that recorded nothing:\n");
            for a in unfinished {
                let why = match &a.finished {
                    Some(f) => format!("failed: {}", f.error.as_deref().unwrap_or("unknown")),
                    None if self.running => "running: another process is summarizing now".into(),
                    None => {
                        "orphaned: the process stopped while summarizing; inert, nothing to undo"
                            .into()
                    }
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
        f.write_str(&s)
    }
}

pub fn run(ctx: &Context, args: IdArg) -> anyhow::Result<Shown> {
    let target = ctx.target()?;
    let meta = target.resolve(args.id.as_deref())?;
    let log = target.load_once(&meta.id)?;
    let attempts = ctxfold_core::attempt::attempts(log);
    // An attempt without its end is running when its compaction lock is
    // held, else orphaned (a lock dies with its process).
    let running = attempts.iter().any(|a| a.finished.is_none())
        && matches!(target.store.try_compaction_lock(&meta.id), Ok(None));
    Ok(Shown {
        path: target.place_of(&meta.id),
        meta,
        log,
        attempts,
        running,
    })
}
