//! Which compactions are in force: the record range each one covers, and
//! whether it is revoked, deferred or out of bounds. Read by the sweep and
//! by anyone who lists compactions.

use crate::compaction::{Compaction, revoked_seqs};
use crate::log::Log;
use crate::record::{Body, Record};

use super::Inactive;

/// The first index whose record has `seq >= seq`.
fn index_of_seq(records: &[Record], seq: u64) -> usize {
    records.partition_point(|r| r.seq < seq)
}

/// The inclusive index range a compaction covers, if any.
pub fn covered_indices(log: &Log, c: &Compaction) -> Option<(usize, usize)> {
    let records = log.records();
    let lo = match c.from_seq {
        Some(s) => index_of_seq(records, s),
        None => log.turn_range(c.from_turn)?.start,
    };
    let hi = match c.to_seq {
        Some(s) => index_of_seq(records, s.saturating_add(1)).checked_sub(1)?,
        None => {
            let last = (log.turn_count() as u32).checked_sub(1)?;
            log.turn_range(c.to_turn.min(last))?.end.checked_sub(1)?
        }
    };
    (lo <= hi && lo < records.len()).then_some((lo, hi))
}

/// Which compaction records are in force, and which are not and why.
pub fn compaction_status(log: &Log) -> (Vec<usize>, Vec<(usize, Inactive)>) {
    compaction_status_as_of(log, highest_turn(log))
}

/// The compaction records in force and then those deferred (they will be
/// soon), each with the record indices it covers: what a new compaction
/// must not overlap or shadow.
pub fn active_or_deferred(log: &Log) -> Vec<(usize, &Compaction, (usize, usize))> {
    let (active, inactive) = compaction_status(log);
    let deferred = inactive
        .iter()
        .filter(|(_, why)| *why == Inactive::Deferred)
        .map(|(i, _)| i);
    active
        .iter()
        .chain(deferred)
        .filter_map(|&i| match &log.records()[i].body {
            Body::Compaction(c) => covered_indices(log, c).map(|range| (i, c.as_ref(), range)),
            _ => None,
        })
        .collect()
}

/// Where a compaction record stands, as the listings and pages show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// In force.
    Active,
    /// Revoked by a reset.
    Revoked,
    /// Deferred until this (0-based) turn.
    Deferred(u32),
    /// Its range lies outside the log.
    OutOfBounds,
}

/// `active`, `revoked`, `deferred until turn N` (1-based), `out of bounds`.
impl std::fmt::Display for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Standing::Active => f.write_str("active"),
            Standing::Revoked => f.write_str("revoked"),
            Standing::Deferred(t) => write!(f, "deferred until turn {}", u64::from(*t) + 1),
            Standing::OutOfBounds => f.write_str("out of bounds"),
        }
    }
}

/// Where each compaction record of `log` stands, by record index.
pub fn standings(log: &Log) -> std::collections::HashMap<usize, Standing> {
    let (active, inactive) = compaction_status(log);
    let mut out = std::collections::HashMap::with_capacity(active.len() + inactive.len());
    for i in active {
        out.insert(i, Standing::Active);
    }
    for (i, why) in inactive {
        let s = match (why, &log.records()[i].body) {
            (Inactive::Revoked, _) => Standing::Revoked,
            (Inactive::Deferred, Body::Compaction(c)) => {
                Standing::Deferred(c.deferred_until_turn.unwrap_or_default())
            }
            (Inactive::Deferred, _) => Standing::Deferred(0),
            (Inactive::OutOfBounds, _) => Standing::OutOfBounds,
        };
        out.insert(i, s);
    }
    out
}

/// The log's highest turn index (0 for a log without turns).
pub(super) fn highest_turn(log: &Log) -> u32 {
    (log.turn_count() as u32).saturating_sub(1)
}

/// [`compaction_status`] as it will be once the log's highest turn index
/// reaches `turn`: deferred compactions due by then count as in force.
pub fn compaction_status_as_of(log: &Log, turn: u32) -> (Vec<usize>, Vec<(usize, Inactive)>) {
    let records = log.records();
    let revoked = revoked_seqs(records);
    let highest_turn = turn;
    let mut active = Vec::new();
    let mut inactive = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let Body::Compaction(c) = &r.body else {
            continue;
        };
        if revoked.contains(&r.seq) {
            inactive.push((i, Inactive::Revoked));
        } else if c.deferred_until_turn.is_some_and(|t| highest_turn < t) {
            inactive.push((i, Inactive::Deferred));
        } else if covered_indices(log, c).is_none() {
            inactive.push((i, Inactive::OutOfBounds));
        } else {
            active.push(i);
        }
    }
    (active, inactive)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{ReasoningPolicy, Source};
    use crate::projection::fixtures::{compaction, log_of, turn};
    use crate::projection::{project, project_as_of};

    #[test]
    fn deferred_compaction_waits_for_its_turn() {
        let mut bodies = turn(0, "body", false);
        let mut c = Compaction::new(0, 0, Source::Assistant);
        c.reasoning = Some(ReasoningPolicy::Strip);
        c.deferred_until_turn = Some(1);
        bodies.push(compaction(c));
        let log = log_of(bodies.clone());
        assert_eq!(project(&log).inactive, vec![(6, Inactive::Deferred)]);
        assert!(project(&log).dropped.is_empty());
        // As of the next turn it applies, before that turn exists.
        assert_eq!(project_as_of(&log, 1).dropped.len(), 1);
        assert_eq!(project_as_of(&log, 0).dropped.len(), 0);
        // The next turn starts: now it applies.
        bodies.extend(turn(1, "body", false));
        let log = log_of(bodies);
        let view = project(&log);
        assert!(view.inactive.is_empty());
        assert_eq!(view.dropped.len(), 1);
    }
}
