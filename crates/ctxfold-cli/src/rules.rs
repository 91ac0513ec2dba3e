//! Flags into compaction rules (SPEC §5, §11), with config merging: what
//! `compact FILE`, `conversation compact`, `fork` and `query -k` ask for.

use anyhow::{Context as _, bail};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, Source};
use ctxfold_core::dsl;
use ctxfold_core::planner::{PlanContext, Rule, SummaryRequest};

use crate::cli::RuleFlags;
use crate::settings::Settings;

/// The rules a command's flags ask for (SPEC §5, §11):
/// - `-r`, `-t`, `-s` with the range flags make one rule; range flags alone
///   use the built-in policies (strip reasoning and tools), and policy flags
///   alone the configured keep (`keep_first`/`keep_last` of the first
///   configured rule that has each, and `keep_steps`), else the built-in
///   one (keep the first turn and the last three, and of those kept turns
///   together only the last four steps);
/// - each `-k SPEC` adds one rule; a bare `-k` adds the configured rules;
/// - nothing at all applies the configured rules (or the built-in one).
pub fn rules_from_flags(flags: &RuleFlags, settings: &Settings) -> anyhow::Result<Vec<Rule>> {
    let mut rules = Vec::new();
    let has_range = flags.from.is_some()
        || flags.to.is_some()
        || flags.keep_first.is_some()
        || flags.keep_last.is_some();
    let has_policy =
        flags.reasoning || flags.tools.is_some() || flags.summarize || flags.summary_text.is_some();
    if has_policy || has_range {
        let mut rule = Rule::default();
        if has_policy {
            rule.reasoning = flags.reasoning.then_some(ReasoningPolicy::Strip);
            if let Some(mode) = &flags.tools {
                rule.tool_calls = Some(dsl::parse_tool_mode(mode).with_context(|| {
                    format!("--tools={mode}: expected strip, strip-requests (sreq), strip-responses (sres) or omit")
                })?);
            }
            if flags.summarize {
                rule.summary = Some(SummaryRequest::Derive {
                    model: flags.model.clone(),
                    instructions: None,
                });
            }
            if let Some(text) = &flags.summary_text {
                rule.summary = Some(SummaryRequest::Supplied {
                    text: text.clone(),
                    author: Source::User,
                });
            }
        } else {
            let builtin = Rule::builtin();
            rule.reasoning = builtin.reasoning;
            rule.tool_calls = builtin.tool_calls;
        }
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
        rule.from = bound("from", &flags.from)?;
        rule.to = bound("to", &flags.to)?;
        if rule.to == Some(Bound::LastCompaction) {
            bail!("--to last-compaction: `last-compaction` can only start a range");
        }
        rule.keep_first = keep("keep-first", &flags.keep_first)?;
        rule.keep_last = keep("keep-last", &flags.keep_last)?;
        rule.keep_steps = flags.keep_steps;
        if !has_range {
            // Policy flags alone keep what config keeps (each from the first
            // rule that sets it), else the built-in rule: the opening turn
            // and the latest ones stay verbatim unless a range says
            // otherwise (a bare -s must not summarize the turn in hand).
            let builtin = Rule::builtin();
            let rules = || settings.rules.iter();
            rule.keep_first = rules().find_map(|r| r.keep_first).or(builtin.keep_first);
            rule.keep_last = rules().find_map(|r| r.keep_last).or(builtin.keep_last);
            rule.keep_steps = flags
                .keep_steps
                .or(rules().find_map(|r| r.keep_steps))
                .or(builtin.keep_steps);
        }
        rules.push(rule);
    }
    let mut bare = false;
    for spec in &flags.compact {
        if spec.is_empty() {
            bare = true;
        } else {
            rules.push(dsl::parse(spec)?);
        }
    }
    if bare || rules.is_empty() {
        // `--keep-steps N` alone: the configured rules, N steps kept.
        let configured = settings.rules.iter().cloned().map(|mut r| {
            if flags.keep_steps.is_some() {
                r.keep_steps = flags.keep_steps;
            }
            r
        });
        rules.extend(configured);
    }
    // -m names the summarizer of every rule that summarizes, configured
    // ones included.
    let mut summarizes = false;
    for rule in &mut rules {
        if let Some(SummaryRequest::Derive { model, .. }) = &mut rule.summary {
            summarizes = true;
            if let Some(m) = &flags.model {
                *model = Some(m.clone());
            }
        }
    }
    if flags.model.is_some() && !summarizes {
        bail!(
            "-m/--model picks the summarizer, but no rule summarizes: add -s, or `s` to a -k spec"
        );
    }
    Ok(rules)
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
