//! `conversation compact`: compaction records appended by the rules the
//! flags make (nothing is deleted), automatic compaction's trigger run
//! once (`--auto`), or compactions revoked and restored (`--reset`,
//! `--restore`).

use ctxfold_compactor::{Conversation, Fallback};
use ctxfold_core::{Compaction, Log};
use serde::Serialize;
use serde_json::json;

use crate::auto::{Auto, Fired};
use crate::cli::CompactConversationArgs;
use crate::compacting::run_asked;
use crate::context::Context;
use crate::render::{self, Report};
use crate::rules::{plan_context, rules_from_flags};
use crate::store::Target;
use crate::timeline::{self, Timeline};

/// What `conversation compact` did, by the way it was asked.
pub enum Compacted {
    /// By rules: the timeline.
    Rules(ByRules),
    /// By automatic compaction's trigger.
    Auto(Fired),
    /// Compactions revoked or restored.
    Reset(Reset),
}

impl Report for Compacted {}

impl Serialize for Compacted {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Compacted::Rules(r) => r.serialize(s),
            Compacted::Auto(r) => r.serialize(s),
            Compacted::Reset(r) => r.serialize(s),
        }
    }
}

impl std::fmt::Display for Compacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Compacted::Rules(r) => r.fmt(f),
            Compacted::Auto(r) => r.fmt(f),
            Compacted::Reset(r) => r.fmt(f),
        }
    }
}

/// The timeline of a run of rules on a conversation.
pub struct ByRules {
    timeline: Timeline,
    id: String,
    dry_run: bool,
    fallback: Option<Fallback>,
    /// The compactions made (or that would be).
    compactions: Vec<Compaction>,
    /// Records appended.
    appended: usize,
}

impl Serialize for ByRules {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = [
            ("dry_run", json!(self.dry_run)),
            ("id", json!(self.id)),
            ("fallback", json!(self.fallback)),
        ];
        crate::render::with_fields(self.timeline.json(), fields).serialize(s)
    }
}

impl std::fmt::Display for ByRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.timeline.text();
        if let Some(fallback) = self.fallback {
            text.push_str(&fallback.line(&self.compactions));
        }
        if self.compactions.is_empty() {
            text.push_str("nothing to compact; nothing was written\n");
        } else if self.dry_run {
            text.push_str("dry run: nothing was written\n");
        } else {
            text.push_str(&format!(
                "appended {} compaction record(s) to {}; `ctxfold conversation compact --reset` undoes\n",
                self.appended, self.id
            ));
        }
        f.write_str(&text)
    }
}

/// Compactions revoked or restored (or, with `--dry-run`, that would be).
pub struct Reset {
    id: String,
    verb: &'static str,
    count: usize,
    restoring: bool,
    dry_run: bool,
    /// Whether what the model sees changes.
    view_changes: bool,
    /// Why it does not, for the one compaction named.
    unchanged: Option<String>,
}

impl Serialize for Reset {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (id, verb, count) = (&self.id, self.verb, self.count);
        if count == 0 {
            return json!({"id": id, verb: 0}).serialize(s);
        }
        let mut v = json!({"id": id, verb: count, "dry_run": self.dry_run, "view_changes": self.view_changes});
        if let Some(why) = &self.unchanged {
            v["unchanged_because"] = json!(why);
        }
        v.serialize(s)
    }
}

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.count == 0 {
            let what = if self.restoring {
                "revoked compactions to restore"
            } else {
                "compactions to revoke"
            };
            return write!(f, "no {what}");
        }
        write!(
            f,
            "{} {} compaction(s) of {}; nothing was deleted",
            self.verb, self.count, self.id
        )?;
        // Said whenever the model's view stays as it was: the record is
        // kept (it matters once what overrides it is revoked), but the
        // reader must not think the view changed.
        if !self.view_changes {
            let would = if self.dry_run {
                "would not"
            } else {
                "does not"
            };
            match &self.unchanged {
                Some(why) => write!(f, "\nthe view {would} change: {why}")?,
                None => write!(f, "\nthe view {would} change")?,
            }
        }
        Ok(())
    }
}

pub fn run(ctx: &Context, args: CompactConversationArgs) -> anyhow::Result<Compacted> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let (flags, dry_run) = (&*args.rule, args.dry_run);
    let meta = target.resolve(args.conversation.id.as_deref())?;
    if args.reset.is_some() || args.restore.is_some() {
        return reset_or_restore(&target, &meta.id, args.reset, args.restore, dry_run)
            .map(Compacted::Reset);
    }
    let log = target.load(&meta.id)?;
    let store = target.journal(&meta.id);
    let mut conv = Conversation::new(log, &store);
    if let Some(when) = args.auto {
        let auto = Auto::from_flags(settings, args.window, flags.model.as_deref())?;
        return auto
            .once(&mut conv, when.into(), dry_run, &meta.id)
            .map(Compacted::Auto);
    }
    let rules = rules_from_flags(flags, settings)?;
    let ctx = plan_context(settings, flags.note.as_deref());
    let run = run_asked(&mut conv, flags, &rules, &ctx, settings, dry_run).map_err(|e| {
        match e.downcast_ref::<ctxfold_compactor::CompactError>() {
            Some(ctxfold_compactor::CompactError::Busy) => anyhow::anyhow!(
                "conversation {} is being compacted by another process; try again when it is done",
                meta.id
            ),
            _ => e,
        }
    })?;
    let before = Log::from_records(conv.log().records()[..run.planned_on].to_vec());
    let after = ctxfold_compactor::effect::with_compactions(&before, &run.compactions, "");
    let verb = if dry_run {
        "would compact"
    } else {
        "compacted"
    };
    let timeline = timeline::report(
        timeline::Before::of(&before),
        &after,
        &run.plan,
        &run.compactions,
        &run.effects,
        verb,
    );
    Ok(Compacted::Rules(ByRules {
        timeline,
        id: meta.id,
        dry_run,
        fallback: run.fallback,
        compactions: run.compactions,
        appended: run.seqs.len(),
    }))
}

/// `--reset [N]` / `--restore [N]`: the reset record the browser pages
/// append too, made and appended by `ctxfold_compactor::reset`.
fn reset_or_restore(
    target: &Target,
    id: &str,
    reset: Option<Option<usize>>,
    restore: Option<Option<usize>>,
    dry_run: bool,
) -> anyhow::Result<Reset> {
    let (restoring, which) = match (reset, restore) {
        (Some(n), _) => (false, n),
        (None, Some(n)) => (true, n),
        (None, None) => unreachable!("called for --reset or --restore"),
    };
    let done = ctxfold_compactor::reset::reset(&*target.store, id, restoring, which, dry_run)?;
    render::warn_all(&done.warnings);
    let verb = match (restoring, dry_run) {
        (false, false) => "revoked",
        (false, true) => "would revoke",
        (true, false) => "restored",
        (true, true) => "would restore",
    };
    let unchanged = done
        .reset
        .named
        .and_then(|(n, s)| ctxfold_compactor::reset::unchanged_because(n, s, restoring));
    Ok(Reset {
        id: id.to_owned(),
        verb,
        count: done.reset.count,
        restoring,
        dry_run,
        view_changes: done.reset.view_changes,
        unchanged,
    })
}
