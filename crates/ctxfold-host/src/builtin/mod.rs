//! The built-in tools: the ones ctxfold answers itself, against the
//! conversation's own log, rather than running a `[tools.NAME]` command.
//! One module per tool; [`BUILTINS`] is the one list of them and when each
//! is offered, and [`Builtins`] the ones of a query.
//!
//! | tool | offered | what it does |
//! | --- | --- | --- |
//! | [`compact`] | when named (`-t compact`) | proposes compactions the user approves; recorded from the next turn |
//! | [`recall`] | while a compaction is in force, unless switched off | what a handle stands for, byte for byte, in pages |
//! | [`search`] | with `recall` | excerpts of the raw log, folded parts included, with handles |
//!
//! `recall` and `search` only read, so they run without approval. A local
//! tool declared under the same name as a built-in one takes its place.

pub mod compact;
pub mod recall;
pub mod search;

use std::cell::Cell;
use std::collections::BTreeSet;

use ctxfold_core::Log;
use ctxfold_core::projection::compaction_status;
use ctxfold_providers::ToolSpec;
use serde_json::Value;

use crate::output::ToolOutput;
use compact::{CompactTool, Decide};

/// When a built-in tool is offered to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Only in a query that names it (`-t NAME`): it changes the
    /// conversation, with the user's approval.
    WhenNamed,
    /// Whenever the view has a compaction in force, unless switched off
    /// (`[query] recall_tools`): it only reads.
    WhileFolded,
}

/// A built-in tool, as the command line and the docs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// Its name, as the model calls it.
    pub name: &'static str,
    /// When it is offered.
    pub offered: Offered,
}

/// Every built-in tool.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: compact::NAME,
        offered: Offered::WhenNamed,
    },
    Builtin {
        name: recall::NAME,
        offered: Offered::WhileFolded,
    },
    Builtin {
        name: search::NAME,
        offered: Offered::WhileFolded,
    },
];

/// The built-in tool named `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// The names of the built-in tools offered `when`.
pub fn names(when: Offered) -> Vec<&'static str> {
    BUILTINS
        .iter()
        .filter(|b| b.offered == when)
        .map(|b| b.name)
        .collect()
}

/// The built-in tools of one query.
#[derive(Default)]
pub struct Builtins {
    /// The `compact` tool, when named.
    compact: Option<CompactTool>,
    /// `recall` and `search` offered while a compaction is in force.
    recall: bool,
    /// Names of local tools: a built-in tool of such a name is not offered.
    taken: BTreeSet<String>,
    /// Whether the log of this length had a compaction in force.
    folded: Cell<Option<(usize, bool)>>,
}

impl Builtins {
    /// The built-in tools: `recall` and `search` while a compaction is in
    /// force when `recall` is true, `compact` once [`Builtins::compact`]
    /// gives it; none under a name in `taken` (the local tools').
    pub fn new(recall: bool, taken: impl IntoIterator<Item = String>) -> Self {
        Builtins {
            compact: None,
            recall,
            taken: taken.into_iter().collect(),
            folded: Cell::new(None),
        }
    }

    /// Offer the `compact` tool.
    pub fn compact(&mut self, tool: CompactTool) {
        self.compact = Some(tool);
    }

    /// Whether the view of `log` has a compaction in force (a scan of
    /// the records, no projection; once per length of the log).
    pub fn folded(&self, log: &Log) -> bool {
        if let Some((len, folded)) = self.folded.get()
            && len == log.len()
        {
            return folded;
        }
        let folded = !compaction_status(log).0.is_empty();
        self.folded.set(Some((log.len(), folded)));
        folded
    }

    /// Whether the tool `name` answers calls (offered or not: `recall`
    /// and `search` answer also before anything is folded).
    fn enabled(&self, name: &str) -> bool {
        if self.taken.contains(name) {
            return false;
        }
        match name {
            compact::NAME => self.compact.is_some(),
            recall::NAME | search::NAME => self.recall,
            _ => false,
        }
    }

    /// The specs of the built-in tools offered for a request from `log`.
    pub fn specs(&self, log: &Log) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        if self.enabled(compact::NAME) {
            specs.push(compact::spec());
        }
        if self.recall && self.folded(log) {
            for (name, spec) in [
                (recall::NAME, recall::spec as fn() -> ToolSpec),
                (search::NAME, search::spec),
            ] {
                if self.enabled(name) {
                    specs.push(spec());
                }
            }
        }
        specs
    }

    /// Answer call `id` of the tool `name` with `args` against `log` (the
    /// log as it stands, the call included), `decide` putting a `compact`
    /// call to the user; `None` when `name` is no built-in tool of this
    /// query.
    pub fn run(
        &self,
        id: &str,
        name: &str,
        args: &Value,
        log: &Log,
        decide: &mut Decide<'_>,
    ) -> Option<ToolOutput> {
        if !self.enabled(name) {
            return None;
        }
        match name {
            compact::NAME => Some(self.compact.as_ref()?.call(log, args, decide)),
            recall::NAME => Some(recall::call(log, args)),
            search::NAME => Some(search::call(log, id, args)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::compaction::{Compaction, ToolPolicy};
    use ctxfold_core::{Body, Record};

    fn log(compacted: bool) -> Log {
        let mut bodies = vec![
            Body::TurnStart,
            Body::User {
                content: "hello".into(),
                author: None,
            },
            Body::Assistant {
                content: "hi".into(),
            },
        ];
        if compacted {
            let mut c = Compaction::new(0, 0, ctxfold_core::compaction::Source::User);
            c.tool_calls = Some(ToolPolicy::Strip);
            bodies.push(Body::Compaction(Box::new(c)));
        }
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(k, b)| Record::new(k as u64, "2026-12-06T10:00:00Z", b))
                .collect(),
        )
    }

    fn names(specs: &[ToolSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn recall_and_search_are_offered_while_a_compaction_is_in_force() {
        let b = Builtins::new(true, []);
        assert!(b.specs(&log(false)).is_empty());
        assert_eq!(names(&b.specs(&log(true))), ["recall", "search"]);
        // Switched off, or a local tool of the name.
        assert!(Builtins::new(false, []).specs(&log(true)).is_empty());
        let b = Builtins::new(true, ["search".to_owned()]);
        assert_eq!(names(&b.specs(&log(true))), ["recall"]);
        let mut decide = |_: ctxfold_config::RunMode,
                          _: &Value,
                          _: bool,
                          _: &mut dyn crate::approval::Presenter| {
            Ok(crate::approval::Decision::Decline { reason: None })
        };
        assert!(
            b.run("c", "search", &Value::Null, &log(true), &mut decide)
                .is_none()
        );
        assert!(
            b.run("c", "compact", &Value::Null, &log(true), &mut decide)
                .is_none()
        );
        let out = b.run("c", "recall", &Value::Null, &log(true), &mut decide);
        assert!(out.is_some_and(|o| o.is_error));
    }

    #[test]
    fn the_registry_says_when_each_is_offered() {
        assert_eq!(names_of(Offered::WhenNamed), ["compact"]);
        assert_eq!(names_of(Offered::WhileFolded), ["recall", "search"]);
        assert!(find("recall").is_some() && find("grep").is_none());
    }

    fn names_of(when: Offered) -> Vec<&'static str> {
        super::names(when)
    }
}
