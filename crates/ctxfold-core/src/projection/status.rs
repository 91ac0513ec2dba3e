//! Which compactions are in force: the record range each one covers, and
//! whether it is revoked, deferred or out of bounds. Read by the sweep and
//! by anyone who lists compactions.

use crate::compaction::Compaction;
use crate::log::Log;
use crate::record::{Body, Record};

use super::Inactive;
use super::supersede::IfRevoked;

/// The first index whose record has `seq >= seq`.
fn index_of_seq(records: &[Record], seq: u64) -> usize {
    // Seqs rise from the first record's, nearly always one a record: look
    // where that puts `seq` first. The binary search's twenty reads of
    // records far apart, for each end of each of ten thousand compactions,
    // several times a listing, were its largest single cost.
    let guess = (records.first())
        .and_then(|r| seq.checked_sub(r.seq))
        .and_then(|k| usize::try_from(k).ok());
    // The first record at or past `seq`, as the search below finds it.
    if let Some(k) = guess
        && k <= records.len()
        && records.get(k).is_none_or(|r| r.seq >= seq)
        && (k == 0 || records[k - 1].seq < seq)
    {
        return k;
    }
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
    /// In force, and revoking it changes what the model sees.
    Active,
    /// In force, but later compactions decide every record it acts on (a
    /// summary over its range, or later policies of the same kind):
    /// revoking it changes nothing in the view until they are revoked.
    Superseded {
        /// The number (from 1, as the listings count) of the compaction
        /// that decides the most of its records.
        by: usize,
        /// How many other compactions decide the rest.
        more: usize,
    },
    /// In force, but it leaves the view as it would be without it: nothing
    /// in its range is of a kind it acts on, or the compactions under it
    /// do the same.
    NoEffect,
    /// Revoked by a reset.
    Revoked,
    /// Deferred until this (0-based) turn.
    Deferred(u32),
    /// Its range lies outside the log.
    OutOfBounds,
}

impl Standing {
    /// Whether revoking it changes the view: only an active one's does.
    pub fn changes_view(self) -> bool {
        self == Standing::Active
    }
}

/// `active`, `superseded by #N` (`and K more`), `no effect`, `revoked`,
/// `deferred until turn N` (1-based), `out of bounds`.
impl std::fmt::Display for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Standing::Active => f.write_str("active"),
            Standing::Superseded { by, more: 0 } => write!(f, "superseded by #{by}"),
            Standing::Superseded { by, more } => write!(f, "superseded by #{by} and {more} more"),
            Standing::NoEffect => f.write_str("no effect"),
            Standing::Revoked => f.write_str("revoked"),
            Standing::Deferred(t) => write!(f, "deferred until turn {}", u64::from(*t) + 1),
            Standing::OutOfBounds => f.write_str("out of bounds"),
        }
    }
}

/// Where each compaction record of `log` stands, by record index. Of the
/// compactions in force, those whose revocation would leave the view as
/// it is are superseded or of no effect (see [`Standing`]).
pub fn standings(log: &Log) -> foldhash::HashMap<usize, Standing> {
    use foldhash::HashMapExt;
    let (active, inactive) = compaction_status(log);
    let mut out = foldhash::HashMap::with_capacity(active.len() + inactive.len());
    let numbers: foldhash::HashMap<usize, usize> = (log.overlays().iter())
        .filter(|&&i| matches!(log.records()[i].body, Body::Compaction(_)))
        .enumerate()
        .map(|(n, &i)| (i, n + 1))
        .collect();
    let effects = super::supersede::effects(log, &active);
    for i in active {
        let s = match effects.get(&i) {
            Some(IfRevoked::Superseded { by, more }) => Standing::Superseded {
                by: numbers.get(by).copied().unwrap_or_default(),
                more: *more,
            },
            Some(IfRevoked::NoEffect) => Standing::NoEffect,
            Some(IfRevoked::Changes) | None => Standing::Active,
        };
        out.insert(i, s);
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
    let revoked = log.revoked();
    let highest_turn = turn;
    let mut active = Vec::new();
    let mut inactive = Vec::new();
    for &i in log.overlays() {
        let r = &records[i];
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
    fn a_seq_is_found_where_the_search_finds_it_dense_or_with_gaps() {
        // Seqs from 0, from 5, with gaps, repeated (a log read as it is),
        // and none.
        let shapes: [&[u64]; 6] = [
            &[0, 1, 2, 3, 4],
            &[5, 6, 7, 8],
            &[0, 1, 4, 5, 9, 10, 11],
            &[2, 3, 3, 4, 7],
            &[7],
            &[],
        ];
        for seqs in shapes {
            let records: Vec<Record> = (seqs.iter())
                .map(|&s| Record::new(s, "", Body::TurnStart))
                .collect();
            for seq in 0..14 {
                assert_eq!(
                    index_of_seq(&records, seq),
                    records.partition_point(|r| r.seq < seq),
                    "seq {seq} in {seqs:?}"
                );
            }
        }
    }

    #[test]
    fn a_summary_over_earlier_compactions_supersedes_them() {
        use crate::compaction::{Provenance, Summary, ToolPolicy};
        let summary = |from, to, text: &str| {
            let mut c = Compaction::new(from, to, Source::User);
            c.summary = Some(Summary {
                text: text.into(),
                provenance: Provenance::Supplied {
                    author: Source::User,
                },
            });
            c
        };
        let mut bodies: Vec<Body> = (0..4).flat_map(|n| turn(n, "body", false)).collect();
        let mut strip = Compaction::new(1, 2, Source::User);
        strip.reasoning = Some(ReasoningPolicy::Strip);
        // #1 strips reasoning of turns 2–3; #2 summarizes turn 2; #3
        // summarizes turns 1–3 (over both); #4 says #3 again; #5 strips
        // tool calls of turn 4, which #6 does again.
        bodies.push(compaction(strip));
        bodies.push(compaction(summary(1, 1, "two")));
        bodies.push(compaction(summary(0, 2, "one to three")));
        bodies.push(compaction(summary(0, 2, "one to three")));
        let mut tools = Compaction::new(3, 3, Source::User);
        tools.tool_calls = Some(ToolPolicy::Strip);
        bodies.push(compaction(tools.clone()));
        bodies.push(compaction(tools));
        let log = log_of(bodies);
        let s = standings(&log);
        let by_number = |n: usize| s[&(23 + n)];
        assert_eq!(by_number(1), Standing::Superseded { by: 4, more: 0 });
        assert_eq!(by_number(2), Standing::Superseded { by: 4, more: 0 });
        assert_eq!(by_number(3), Standing::Superseded { by: 4, more: 0 });
        // The same summary again, over the same turns, changes nothing.
        assert_eq!(by_number(4), Standing::NoEffect);
        assert_eq!(by_number(5), Standing::Superseded { by: 6, more: 0 });
        assert_eq!(by_number(6), Standing::NoEffect);
        assert_eq!(by_number(1).to_string(), "superseded by #4");
        assert!(!by_number(4).changes_view());
    }

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
