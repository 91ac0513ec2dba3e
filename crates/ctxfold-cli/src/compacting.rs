//! Rules run through the compaction service (`ctxfold_compactor`), as the
//! compact commands and `fork` run them (the words for a default run that
//! fell back to the digest are the service's: `Fallback::line`).

use ctxfold_compactor::{Conversation, Run};
use ctxfold_core::planner::{PlanContext, Rule};

use crate::cli::RuleFlags;
use crate::rules::builtin_only;
use crate::settings::Settings;
use crate::summarizers::CliSummarizers;

/// The rules the compact commands were given, run: the default run (the
/// built-in rule, or the digest where it folds nothing) when the user
/// asked for no rule, else [`run_rules`]. `ctxfold compact FILE` and
/// `conversation compact` (and its `--dry-run`) both plan by this.
pub fn run_asked(
    conv: &mut Conversation<'_>,
    flags: &RuleFlags,
    rules: &[Rule],
    ctx: &PlanContext,
    settings: &Settings,
    dry_run: bool,
) -> anyhow::Result<Run> {
    if !builtin_only(flags, rules) {
        return run_rules(conv, rules, ctx, settings, dry_run);
    }
    Ok(ctxfold_compactor::compact_by_default(
        conv,
        ctx,
        &CliSummarizers::new(settings.clone()),
        dry_run,
    )?)
}

/// Run `rules` on the conversation through the compaction service: plan,
/// summarize, check, leave out what would change nothing, and append
/// (unless `dry_run`).
pub fn run_rules(
    conv: &mut Conversation<'_>,
    rules: &[Rule],
    ctx: &PlanContext,
    settings: &Settings,
    dry_run: bool,
) -> anyhow::Result<Run> {
    Ok(ctxfold_compactor::compact_with_rules(
        conv,
        rules,
        ctx,
        &CliSummarizers::new(settings.clone()),
        dry_run,
    )?)
}
