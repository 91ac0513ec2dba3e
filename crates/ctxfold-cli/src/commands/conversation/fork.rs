//! `conversation fork`: a copy of a conversation as a new one (made the
//! active one), compacted by `-k` rules if given; the original is not
//! touched.

use ctxfold_compactor::Conversation;
use serde::Serialize;

use crate::cli::ForkArgs;
use crate::compacting::run_rules;
use crate::context::Context;
use crate::render::Report;
use crate::rules::{plan_context, rules_from_flags, spec_flags};

/// The new conversation, the one it copies, and the compactions the copy
/// got.
#[derive(Serialize)]
pub struct Forked {
    id: String,
    from: String,
    compactions: usize,
}

impl Report for Forked {}

impl std::fmt::Display for Forked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.compactions > 0 {
            write!(
                f,
                "{}\n(fork of {} with {} compaction(s))",
                self.id, self.from, self.compactions
            )
        } else {
            f.write_str(&self.id)
        }
    }
}

pub fn run(ctx: &Context, args: ForkArgs) -> anyhow::Result<Forked> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    target.clean_staging();
    let specs = &args.compact;
    let meta = target.resolve(args.conversation.id.as_deref())?;
    let log = target.load(&meta.id)?;
    let mut compactions = Vec::new();
    if !specs.is_empty() {
        let rules = rules_from_flags(&spec_flags(specs), settings)?;
        let ctx = plan_context(settings, Some("fork"));
        // Planned on a copy in memory: the original is not touched.
        let journal = ctxfold_compactor::Memory;
        let mut conv = Conversation::new(log.clone(), &journal);
        compactions = run_rules(&mut conv, &rules, &ctx, settings, false)?.compactions;
    }
    let folded = compactions.len();
    let new = ctxfold_compactor::fork::fork(
        &*target.store,
        &meta,
        &log,
        compactions,
        &ctxfold_store::now(),
    )?;
    let id = target.store.set_active(&new.id)?.id;
    Ok(Forked {
        id,
        from: meta.id,
        compactions: folded,
    })
}
