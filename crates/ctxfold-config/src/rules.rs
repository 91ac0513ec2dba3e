//! The rules a command asks for, merged with the configured ones (SPEC §5,
//! §11): what `compact FILE`, `conversation compact`, `fork` and `query -k`
//! make of their flags, for any shell that asks the same. The asked values
//! come in parsed; the words of the refusals are the caller's.

use ctxfold_core::planner::{Rule, SummaryRequest};

/// What a command asks for, parsed: one rule of a range, keeps and
/// policies, the rules of `-k` specs, and whether the configured rules are
/// asked for too (a bare `-k`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    /// The range, keeps and policies asked for, each `None` unless asked:
    /// what is not is filled in (see [`merge`]). Its `keep_steps` is also
    /// set on the configured rules when they are what applies.
    pub rule: Rule,
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
    let given = &asked.rule;
    let has_range = given.from.is_some()
        || given.to.is_some()
        || given.keep_first.is_some()
        || given.keep_last.is_some();
    if given.has_policy() || has_range {
        let builtin = Rule::builtin();
        let mut rule = given.clone();
        if !given.has_policy() {
            rule.reasoning = builtin.reasoning;
            rule.tool_calls = builtin.tool_calls;
        }
        if !has_range {
            // Each from the first configured rule that sets it.
            let rules = || configured.iter();
            rule.keep_first = rules().find_map(|r| r.keep_first).or(builtin.keep_first);
            rule.keep_last = rules().find_map(|r| r.keep_last).or(builtin.keep_last);
            rule.keep_steps = given
                .keep_steps
                .or(rules().find_map(|r| r.keep_steps))
                .or(builtin.keep_steps);
        }
        rules.push(rule);
    }
    rules.extend(asked.specs.iter().cloned());
    if asked.configured || rules.is_empty() {
        rules.extend(configured.iter().cloned().map(|mut r| {
            if given.keep_steps.is_some() {
                r.keep_steps = given.keep_steps;
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
    use ctxfold_core::bounds::Keep;
    use ctxfold_core::compaction::ReasoningPolicy;

    use super::*;

    #[test]
    fn policies_alone_keep_what_config_keeps() {
        let configured = [Rule {
            keep_last: Some(Keep::Count(5)),
            ..Rule::default()
        }];
        let asked = Asked {
            rule: Rule {
                reasoning: Some(ReasoningPolicy::Strip),
                ..Rule::default()
            },
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
