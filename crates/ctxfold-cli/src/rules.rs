//! Flags into compaction rules (SPEC §5, §11): what `compact FILE`,
//! `conversation compact`, `fork` and `query -k` ask for, read from their
//! flags; the merging with config is `ctxfold_config::rules`'.

use anyhow::{Context as _, anyhow, bail};
use ctxfold_config::rules::{self, Asked};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, Source};
use ctxfold_core::dsl;
use ctxfold_core::planner::{PlanContext, Rule, SummaryRequest};

use crate::cli::RuleFlags;
use crate::settings::Settings;

/// The rules a command's flags ask for (SPEC §5, §11), merged with the
/// configured ones by [`ctxfold_config::rules::merge`]: `-r`, `-t`, `-s`
/// and the range flags make one rule, each `-k SPEC` adds one, a bare `-k`
/// adds the configured rules, and nothing at all applies them (or the
/// built-in one). Here: the flags read, in order, and refused in their
/// own words.
pub fn rules_from_flags(flags: &RuleFlags, settings: &Settings) -> anyhow::Result<Vec<Rule>> {
    let tool_calls = match &flags.tools {
        Some(mode) => Some(dsl::parse_tool_mode(mode).with_context(|| {
            format!("--tools={mode}: expected strip, strip-requests (sreq), strip-responses (sres) or omit")
        })?),
        None => None,
    };
    let bound = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Bound>> {
        v.as_deref()
            .map(|s| s.parse::<Bound>().with_context(|| format!("--{flag} {s}")))
            .transpose()
    };
    let keep = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Keep>> {
        v.as_deref()
            .map(|s| s.parse::<Keep>().with_context(|| format!("--{flag} {s}")))
            .transpose()
    };
    let from = bound("from", &flags.from)?;
    let to = bound("to", &flags.to)?;
    if to == Some(Bound::LastCompaction) {
        bail!("--to last-compaction: `last-compaction` can only start a range");
    }
    let keep_first = keep("keep-first", &flags.keep_first)?;
    let keep_last = keep("keep-last", &flags.keep_last)?;
    let summary = match (&flags.summary_text, flags.summarize) {
        (Some(text), _) => Some(SummaryRequest::Supplied {
            text: text.clone(),
            author: Source::User,
        }),
        (None, true) => Some(SummaryRequest::Derive {
            model: flags.model.clone(),
            instructions: None,
        }),
        (None, false) => None,
    };
    let mut asked = Asked {
        rule: Rule {
            from,
            to,
            keep_first,
            keep_last,
            keep_steps: flags.keep_steps,
            reasoning: flags.reasoning.then_some(ReasoningPolicy::Strip),
            tool_calls,
            summary,
            ..Rule::default()
        },
        model: flags.model.clone(),
        ..Asked::default()
    };
    for spec in &flags.compact {
        if spec.is_empty() {
            asked.configured = true;
        } else {
            asked.specs.push(dsl::parse(spec)?);
        }
    }
    rules::merge(&asked, &settings.rules).map_err(|_| {
        anyhow!(
            "-m/--model picks the summarizer, but no rule summarizes: add -s, or `s` to a -k spec"
        )
    })
}

/// Whether the rules of a compact command are the built-in rule alone,
/// the user having asked for none: no rule flag, no `-k`, and no
/// configured rule other than it.
pub fn builtin_only(flags: &RuleFlags, rules: &[Rule]) -> bool {
    let asked = flags.keep_first.is_some()
        || flags.keep_last.is_some()
        || flags.keep_steps.is_some()
        || flags.from.is_some()
        || flags.to.is_some()
        || flags.reasoning
        || flags.tools.is_some()
        || flags.summarize
        || flags.summary_text.is_some()
        || !flags.compact.is_empty();
    !asked && rules == [Rule::builtin()]
}

/// `-k SPEC…` alone (`query -k`, `fork -k`): the flags that stand for them.
pub fn spec_flags(specs: &[String]) -> RuleFlags {
    RuleFlags {
        compact: specs.to_vec(),
        ..RuleFlags::default()
    }
}

/// What the planner is told besides the rules: now, the tool hints, who
/// asks (the user) and why (`note`).
pub fn plan_context(settings: &Settings, note: Option<&str>) -> PlanContext {
    PlanContext {
        now: Some(jiff::Timestamp::now()),
        hints: settings.hints.clone(),
        source: Source::User,
        note: note.map(str::to_owned),
        deferred_until_turn: None,
    }
}
