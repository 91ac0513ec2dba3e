//! The compaction listing's facts (`ctxfold conversation show`, the
//! reports of `compact`): where each compaction record stands and what the
//! view keeps of its range, every report made in one pass over the view
//! whatever the ranges' nesting or overlap.

use crate::log::Log;
use crate::projection::{
    Standing, compaction_status, covered_indices, project, project_as_of, standings,
};
use crate::record::Body;

use super::{Kept, RangeFacts, Retentions};

/// One compaction record as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its number, from 1, in the order of the log (as `show` and
    /// `reset` count them).
    pub number: usize,
    /// Its record's index in the log.
    pub index: usize,
    /// Where it stands (`None` only for a record the status pass did not
    /// reach, which it reaches for every compaction).
    pub standing: Option<Standing>,
    /// What the view keeps of its range: for an active one, in the view
    /// as it is; for a deferred one due by the next turn, in the view it
    /// will come into force in; for the others nothing (they fold nothing,
    /// or decide nothing the view shows).
    pub kept: Option<Kept>,
}

/// The compactions in force (their records' indices) and the ranges they
/// cover, in the same order.
type InForce = (Vec<usize>, Vec<(usize, usize)>);

/// Which view a compaction's report is made in (`true`: now, `false`: once
/// the deferred come into force), and the range it covers.
type InView = (bool, (usize, usize));

/// Every compaction record of `log`, in order, with its standing and its
/// retention report; with `lost`, the reports list what each lost (with
/// ranges nested from the first record those lists grow with the square
/// of the conversation, so a one-line listing leaves them out).
///
/// Each report is what [`retention`](super::retention) makes of the
/// compaction's range alone (`tests/retentions.rs` holds this on logs of
/// nested, side by side and overlapping ranges); they are made together,
/// one pass over each view.
pub fn listing(log: &Log, lost: bool) -> Vec<Listed> {
    let any =
        (log.overlays().iter()).any(|&i| matches!(log.records()[i].body, Body::Compaction(_)));
    // The standings, the facts of the ranges in force and the reading of
    // the view as it is do not depend on one another, and each is a large
    // part of the listing of a million events: the view is read on this
    // thread while another makes the standings, then reads the facts (the
    // same result as one after the other; issue 48: the facts read after
    // the view were a third of the listing). The view is read whenever
    // there are compactions; most listings have one in force.
    //
    // The reports of every compaction in force (the active ones among
    // them) are made together, with the standings: a range's report does
    // not depend on the ranges made with it. Not with the lists of what
    // was lost: superseded ranges nested from the first record would make
    // those grow with the square of the conversation.
    let early_ranges: Option<InForce> = (any && !lost).then(|| {
        let (in_force, _) = compaction_status(log);
        (in_force.into_iter())
            .filter_map(|i| match &log.records()[i].body {
                Body::Compaction(c) => covered_indices(log, c).map(|range| (i, range)),
                _ => None,
            })
            .unzip()
    });
    let ranges = early_ranges.as_ref().map(|(_, r)| r.as_slice());
    std::thread::scope(|s| {
        let side = s.spawn(move || {
            let statuses = standings(log);
            let facts = ranges.map(|r| RangeFacts::read(log, r));
            (statuses, facts)
        });
        let now = any.then(|| Retentions::projecting(log));
        let (statuses, facts) = (side.join()).unwrap_or_else(|p| std::panic::resume_unwind(p));
        let early = match (now.as_ref(), facts, &early_ranges) {
            (Some(r), Some(facts), Some((indices, ranges))) => {
                let kept = r.of_read(facts, ranges, false);
                Some(
                    indices
                        .iter()
                        .copied()
                        .zip(kept)
                        .collect::<foldhash::HashMap<usize, Kept>>(),
                )
            }
            _ => None,
        };
        listed(log, lost, &statuses, now.as_ref(), early)
    })
}

/// The listing from the compactions' standings and the view as it is,
/// read (`None` when the log has no compaction).
fn listed(
    log: &Log,
    lost: bool,
    statuses: &foldhash::HashMap<usize, Standing>,
    now: Option<&Retentions<'_>>,
    mut early: Option<foldhash::HashMap<usize, Kept>>,
) -> Vec<Listed> {
    let next = log.turn_count() as u32;
    let records = log.records();
    let compactions: Vec<(usize, Option<InView>)> = (log.overlays().iter())
        .filter_map(|&i| match &records[i].body {
            Body::Compaction(c) => Some((i, c)),
            _ => None,
        })
        .map(|(i, c)| {
            let now = match statuses.get(&i) {
                Some(Standing::Active) => Some(true),
                Some(Standing::Deferred(_)) if c.deferred_until_turn.is_some_and(|t| t <= next) => {
                    Some(false)
                }
                _ => None,
            };
            (
                i,
                now.and_then(|now| covered_indices(log, c).map(|range| (now, range))),
            )
        })
        .collect();
    let now_read = now;
    let mut reports = |now: bool| -> Vec<Kept> {
        let wanted: Vec<(usize, (usize, usize))> = compactions
            .iter()
            .filter_map(|&(i, v)| v.filter(|(n, _)| *n == now).map(|(_, r)| (i, r)))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        // Made already, with the standings (every one in force was).
        if now && let Some(early) = early.as_mut() {
            let made: Option<Vec<Kept>> = wanted.iter().map(|(i, _)| early.remove(i)).collect();
            if let Some(made) = made {
                return made;
            }
        }
        let ranges: Vec<(usize, usize)> = wanted.into_iter().map(|(_, r)| r).collect();
        match (now, now_read) {
            (true, Some(r)) => r.of(&ranges, lost),
            _ => {
                let view = if now {
                    project(log)
                } else {
                    project_as_of(log, next)
                };
                Retentions::new(log, &view).of(&ranges, lost)
            }
        }
    };
    let mut now_kept = reports(true).into_iter();
    let mut later_kept = reports(false).into_iter();
    compactions
        .into_iter()
        .enumerate()
        .map(|(n, (index, in_view))| Listed {
            number: n + 1,
            index,
            standing: statuses.get(&index).copied(),
            kept: match in_view {
                Some((true, _)) => now_kept.next(),
                Some((false, _)) => later_kept.next(),
                None => None,
            },
        })
        .collect()
}
