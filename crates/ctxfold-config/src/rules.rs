//! The rules a command asks for, merged with the configured ones (SPEC §5,
//! §11): what `compact FILE`, `conversation compact`, `fork` and `query -k`
//! make of their flags, for any shell that asks the same. The asked values
//! come in parsed; the words of the refusals are the caller's.

use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, ToolPolicy};
use ctxfold_core::planner::{Rule, SummaryRequest};

/// What a command asks for, parsed: the parts of one rule (range, keeps,
/// policies), the rules of `-k` specs, and whether the configured rules
/// are asked for too (a bare `-k`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    /// Start bound.
    pub from: Option<Bound>,
    /// End bound.
    pub to: Option<Bound>,
    /// Turns kept at the start.
    pub keep_first: Option<Keep>,
    /// Turns kept at the end.
    pub keep_last: Option<Keep>,
    /// Steps kept of the kept turns; also set on the configured rules when
    /// they are what applies.
    pub keep_steps: Option<u32>,
    /// Reasoning policy.
    pub reasoning: Option<ReasoningPolicy>,
    /// Tool-call policy.
    pub tool_calls: Option<ToolPolicy>,
    /// The summary.
    pub summary: Option<SummaryRequest>,
    /// The summarizer of every rule that summarizes, configured ones
    /// included.
    pub model: Option<String>,
    /// Whole rules (`-k SPEC`), in order, after the one rule above.
    pub specs: Vec<Rule>,
    /// The configured rules as well (a bare `-k`).
    pub configured: bool,
}

/// A summarizer was named but no rule summarizes: the name would go
/// unused, which is almost certainly a mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a summarizer is named, but no rule summarizes")]
pub struct NothingSummarizes;

/// The rules `asked` makes, `configured` being the configured rules (or
/// the built-in one):
/// - a range or policies make one rule; a range alone uses the built-in
///   policies (strip reasoning and tools), and policies alone the
///   configured keep (`keep_first`/`keep_last` of the first configured
///   rule that has each, and `keep_steps`), else the built-in one (keep the
///   first turn and the last three, and of those kept turns together only
///   the last four steps): a bare summary must not fold the turn in hand;
/// - each spec adds its rule;
/// - [`Asked::configured`], or nothing at all, adds the configured rules.
pub fn merge(asked: &Asked, configured: &[Rule]) -> Result<Vec<Rule>, NothingSummarizes> {
    let mut rules = Vec::new();
    let has_range = asked.from.is_some()
        || asked.to.is_some()
        || asked.keep_first.is_some()
        || asked.keep_last.is_some();
    let has_policy =
        asked.reasoning.is_some() || asked.tool_calls.is_some() || asked.summary.is_some();
    if has_policy || has_range {
        let builtin = Rule::builtin();
        let mut rule = Rule {
            from: asked.from,
            to: asked.to,
            keep_first: asked.keep_first,
            keep_last: asked.keep_last,
            keep_steps: asked.keep_steps,
            ..Rule::default()
        };
        if has_policy {
            rule.reasoning = asked.reasoning;
            rule.tool_calls = asked.tool_calls;
            rule.summary = asked.summary.clone();
        } else {
            rule.reasoning = builtin.reasoning;
            rule.tool_calls = builtin.tool_calls;
        }
        if !has_range {
            // Each from the first configured rule that sets it.
            let rules = || configured.iter();
            rule.keep_first = rules().find_map(|r| r.keep_first).or(builtin.keep_first);
            rule.keep_last = rules().find_map(|r| r.keep_last).or(builtin.keep_last);
            rule.keep_steps = asked
                .keep_steps
                .or(rules().find_map(|r| r.keep_steps))
                .or(builtin.keep_steps);
        }
        rules.push(rule);
    }
    rules.extend(asked.specs.iter().cloned());
    if asked.configured || rules.is_empty() {
        rules.extend(configured.iter().cloned().map(|mut r| {
            if asked.keep_steps.is_some() {
                r.keep_steps = asked.keep_steps;
            }
            r
        }));
    }
    let mut summarizes = false;
    for rule in &mut rules {
        if let Some(SummaryRequest::Derive { model, .. }) = &mut rule.summary {
            summarizes = true;
            if let Some(m) = &asked.model {
                *model = Some(m.clone());
            }
        }
    }
    if asked.model.is_some() && !summarizes {
        return Err(NothingSummarizes);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_alone_keep_what_config_keeps() {
        let configured = [Rule {
            keep_last: Some(Keep::Count(5)),
            ..Rule::default()
        }];
        let asked = Asked {
            reasoning: Some(ReasoningPolicy::Strip),
            ..Asked::default()
        };
        let rules = merge(&asked, &configured).unwrap();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].keep_last, Some(Keep::Count(5)));
        assert_eq!(rules[0].keep_first, Rule::builtin().keep_first);
        assert_eq!(rules[0].tool_calls, None);
    }

    #[test]
    fn nothing_asked_is_the_configured_rules_and_a_model_needs_a_summary() {
        let configured = [Rule::builtin()];
        assert_eq!(
            merge(&Asked::default(), &configured),
            Ok(vec![Rule::builtin()])
        );
        let asked = Asked {
            model: Some("digest".into()),
            ..Asked::default()
        };
        assert_eq!(merge(&asked, &configured), Err(NothingSummarizes));
    }
}
