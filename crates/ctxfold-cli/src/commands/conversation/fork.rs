//! `conversation fork`: a copy of a conversation as a new one (made the
//! active one), compacted by `-k` rules if given; the original is not
//! touched.

use anyhow::Context as _;
use ctxfold_compactor::Conversation;
use ctxfold_core::{Body, Record};
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
    let meta = target.resolve(args.id.as_deref())?;
    let log = target.load(&meta.id)?;
    let mut records = log.records().to_vec();
    let mut folded = 0;
    if !specs.is_empty() {
        let rules = rules_from_flags(&spec_flags(specs), settings)?;
        let ctx = plan_context(settings, Some("fork"));
        // Planned on a copy in memory: the original is not touched.
        let journal = ctxfold_compactor::Memory;
        let mut conv = Conversation::new(log.clone(), &journal);
        let compactions = run_rules(&mut conv, &rules, &ctx, settings, false)?.compactions;
        folded = compactions.len();
        let ts = ctxfold_store::now();
        for comp in compactions {
            // After the log's own seqs, so renumbering the copy keeps order.
            let seq = match records.last() {
                None => 0,
                Some(r) => r.seq.checked_add(1).with_context(|| {
                    format!(
                        "conversation {}: its last record has seq {}, the largest there is; no record can follow it",
                        meta.id, r.seq
                    )
                })?,
            };
            records.push(Record::new(
                seq,
                ts.clone(),
                Body::Compaction(Box::new(comp)),
            ));
        }
    }
    let title = Some(format!(
        "fork of {}",
        meta.title.as_deref().unwrap_or(&meta.id)
    ));
    let new = ctxfold_store::create_new(
        &*target.store,
        title,
        meta.imported_from.clone(),
        meta.extras.clone(),
        records,
    )?;
    let id = target.store.set_active(&new.id)?.id;
    Ok(Forked {
        id,
        from: meta.id,
        compactions: folded,
    })
}
