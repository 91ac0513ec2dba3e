//! The timeline of a conversation as inline SVG: its turns as bars (raw
//! tokens behind, in-view tokens in front), each compaction as a band over
//! the turns and steps it covers (coloured by source, outlined by status),
//! and failed or orphaned compaction attempts as markers.
//!
//! Long conversations are drawn in buckets of turns (at most
//! [`MAX_BARS`] bars); bands keep their exact extent, down to the record.

use std::fmt::Write as _;

use ctxfold_core::attempt::Attempt;
use ctxfold_core::compaction::Source;
use ctxfold_core::projection::covered_indices;
use ctxfold_core::report::TurnReport;
use ctxfold_core::{Body, Log};

use crate::html::escape;

/// Most bars drawn; more turns are summed into buckets.
pub const MAX_BARS: usize = 240;
/// Most lanes of bands; more overlapping bands share the last lanes.
pub const MAX_LANES: usize = 8;

const WIDTH: f64 = 1000.0;
const LANE: f64 = 14.0;
const BARS: f64 = 110.0;
const ATTEMPTS: f64 = 12.0;

/// Where a compaction stands: the core's
/// [`Standing`](ctxfold_core::projection::Standing).
pub use ctxfold_core::projection::Standing as Status;

/// The word the page shows and styles with.
pub fn status_name(s: Status) -> &'static str {
    match s {
        Status::Active => "active",
        Status::Superseded { .. } => "superseded",
        Status::NoEffect => "no-effect",
        Status::Revoked => "revoked",
        Status::Deferred(_) => "deferred",
        Status::OutOfBounds => "out-of-bounds",
    }
}

/// The name of a compaction's source as the pages show it: a person's
/// compaction is `manual`.
pub fn source_name(s: Source) -> &'static str {
    match s {
        Source::User => "manual",
        Source::Auto => "auto",
        Source::Assistant => "assistant",
        Source::Agent => "agent",
        Source::Provider => "provider",
        Source::Client => "client",
    }
}

/// One compaction record, as the pages draw and list it.
#[derive(Debug, Clone)]
pub struct Band {
    /// Its number, from 1 in log order (as `conversation show` lists them,
    /// and as `--reset N` takes it).
    pub number: usize,
    /// Index of its record in the log.
    pub index: usize,
    /// Whether it is in force, and whether revoking it changes the view.
    pub status: Status,
    /// The records it covers (inclusive), when its range is in the log.
    pub covered: Option<(usize, usize)>,
}

/// Every compaction record of `log`, numbered, with its status and range.
pub fn bands(log: &Log) -> Vec<Band> {
    let status = ctxfold_core::projection::standings(log);
    let mut out = Vec::new();
    for (i, r) in log.records().iter().enumerate() {
        if let Body::Compaction(c) = &r.body {
            out.push(Band {
                number: out.len() + 1,
                index: i,
                status: status.get(&i).copied().unwrap_or(Status::OutOfBounds),
                covered: covered_indices(log, c),
            });
        }
    }
    out
}

/// Where record `i` starts on the turn axis: its turn plus how far into the
/// turn it lies (so a band ending at a step boundary ends mid-turn).
fn position(log: &Log, i: usize) -> f64 {
    let i = i.min(log.len().saturating_sub(1));
    let t = log.turn_of(i);
    match log.turn_range(t) {
        Some(r) if !r.is_empty() && r.contains(&i) => {
            f64::from(t) + (i - r.start) as f64 / r.len() as f64
        }
        _ => f64::from(t),
    }
}

/// Where record `i` ends on the turn axis.
fn end_position(log: &Log, i: usize) -> f64 {
    let i = i.min(log.len().saturating_sub(1));
    let t = log.turn_of(i);
    match log.turn_range(t) {
        Some(r) if !r.is_empty() && r.contains(&i) => {
            f64::from(t) + (i + 1 - r.start) as f64 / r.len() as f64
        }
        _ => f64::from(t) + 1.0,
    }
}

/// Lanes for bands so that overlapping ones do not hide each other: the
/// first lane free at a band's start, at most [`MAX_LANES`].
fn lanes(spans: &[(f64, f64)]) -> Vec<usize> {
    let mut ends: Vec<f64> = Vec::new();
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| spans[a].0.total_cmp(&spans[b].0).then(a.cmp(&b)));
    let mut out = vec![0; spans.len()];
    for k in order {
        let (lo, hi) = spans[k];
        let lane = match ends.iter().position(|&e| e <= lo) {
            Some(l) => l,
            None if ends.len() < MAX_LANES => {
                ends.push(f64::MIN);
                ends.len() - 1
            }
            // Full: the lane that frees first.
            None => (0..ends.len())
                .min_by(|&a, &b| ends[a].total_cmp(&ends[b]))
                .unwrap_or(0),
        };
        ends[lane] = hi;
        out[k] = lane;
    }
    out
}

/// The timeline SVG of `log` with its per-turn `reports`, its `bands` and
/// `attempts`; `selected` (a band number) is highlighted; each band links
/// to `link(number)`.
pub fn svg(
    log: &Log,
    reports: &[TurnReport],
    bands: &[Band],
    attempts: &[&Attempt],
    selected: Option<usize>,
    link: &dyn Fn(usize) -> String,
) -> String {
    let turns = reports.len().max(1);
    let scale = WIDTH / turns as f64;
    let spans: Vec<(f64, f64)> = bands
        .iter()
        .map(|b| match b.covered {
            Some((lo, hi)) => (position(log, lo), end_position(log, hi)),
            None => (0.0, 0.0),
        })
        .collect();
    let lane_of = lanes(&spans);
    let lane_count = lane_of.iter().max().map_or(0, |m| m + 1);
    let bands_h = lane_count as f64 * LANE;
    let top_bars = bands_h + ATTEMPTS + 6.0;
    let height = top_bars + BARS + 16.0;
    let mut s = String::with_capacity(256 + bands.len() * 300 + MAX_BARS * 200);
    let _ = write!(
        s,
        r#"<svg class="timeline" viewBox="0 0 {WIDTH} {height:.0}" preserveAspectRatio="none" role="img" aria-label="timeline of {turns} turns">"#
    );

    // Bars, in buckets of turns.
    let buckets = turns.min(MAX_BARS);
    let mut sums = vec![(0usize, 0usize); buckets];
    for (t, r) in reports.iter().enumerate() {
        let b = t * buckets / turns;
        sums[b].0 += r.tokens_before;
        sums[b].1 += r.tokens_after;
    }
    let max = sums
        .iter()
        .map(|&(raw, view)| raw.max(view))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let bottom = top_bars + BARS;
    for (b, &(raw, view)) in sums.iter().enumerate() {
        let first = (b * turns).div_ceil(buckets);
        let last = ((b + 1) * turns).div_ceil(buckets).max(first + 1) - 1;
        let x = first as f64 * scale;
        let w = ((last + 1 - first) as f64 * scale - 0.6).max(0.4);
        let hr = raw as f64 / max * BARS;
        let hv = view as f64 / max * BARS;
        let turns_label = if first == last {
            format!("turn {}", first + 1)
        } else {
            format!("turns {}–{}", first + 1, last + 1)
        };
        let _ = write!(
            s,
            r#"<g class="turn"><title>{turns_label}: {raw} tokens raw, {view} in view</title><rect class="raw" x="{x:.2}" y="{:.2}" width="{w:.2}" height="{hr:.2}"/><rect class="inview" x="{x:.2}" y="{:.2}" width="{w:.2}" height="{hv:.2}"/></g>"#,
            bottom - hr,
            bottom - hv,
        );
    }

    // Bands, in log order (later ones drawn over earlier ones).
    for (k, b) in bands.iter().enumerate() {
        let Some((lo, hi)) = b.covered else { continue };
        let Body::Compaction(c) = &log.records()[b.index].body else {
            continue;
        };
        let (x0, x1) = spans[k];
        let y = lane_of[k] as f64 * LANE;
        let source = source_name(c.source);
        let policies = c.describe().join(", ");
        let mut tip = format!(
            "#{} turns {}–{} by {source} ({}): {policies}",
            b.number,
            log.turn_of(lo) + 1,
            log.turn_of(hi) + 1,
            status_name(b.status)
        );
        if let Some(f) = &c.budget {
            let _ = write!(
                tip,
                "; request ~{} → ~{} tokens (target {})",
                crate::html::tokens(f.before),
                crate::html::tokens(f.after),
                crate::html::tokens(f.budget.target)
            );
        }
        if let Some(note) = &c.note {
            let _ = write!(tip, " — {note}");
        }
        let sel = if selected == Some(b.number) {
            " selected"
        } else {
            ""
        };
        // Drawn solid when it summarizes, light when it only strips or
        // omits (the policies themselves are in the tooltip and the list).
        let policy = if c.summary.is_some() {
            "summary"
        } else {
            "mechanical"
        };
        let _ = write!(
            s,
            r#"<a href="{}"><rect class="band {source} {}{sel}" data-number="{}" data-source="{source}" data-status="{}" data-policy="{policy}" x="{:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" rx="2"><title>{}</title></rect></a>"#,
            escape(&link(b.number)),
            status_name(b.status),
            b.number,
            status_name(b.status),
            x0 * scale,
            ((x1 - x0) * scale).max(1.5),
            LANE - 3.0,
            escape(&tip),
        );
    }

    // Attempts that left no compaction: failed and orphaned.
    let records = log.records();
    for a in attempts {
        let lo = records.partition_point(|r| r.seq < a.started.from_seq);
        let hi = records
            .partition_point(|r| r.seq <= a.started.to_seq)
            .saturating_sub(1)
            .max(lo);
        if lo >= records.len() {
            continue;
        }
        let (x0, x1) = (position(log, lo), end_position(log, hi));
        let why = a
            .finished
            .as_ref()
            .and_then(|f| f.error.as_deref())
            .unwrap_or("the process ended before it finished");
        let tip = format!(
            "{} {} compaction of turns {}–{} with {}: {why}",
            a.state(),
            source_name(a.started.source),
            a.started.from_turn + 1,
            a.started.to_turn + 1,
            a.started.summarizer
        );
        let _ = write!(
            s,
            r#"<rect class="attempt {}" x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}"><title>{}</title></rect>"#,
            a.state(),
            x0 * scale,
            bands_h + 2.0,
            ((x1 - x0) * scale).max(3.0),
            ATTEMPTS - 4.0,
            escape(&tip)
        );
    }

    // Turn numbers at the ends.
    let _ = write!(
        s,
        r#"<text class="axis" x="0" y="{:.0}">turn 1</text><text class="axis" x="{WIDTH}" y="{:.0}" text-anchor="end">turn {turns}</text></svg>"#,
        height - 3.0,
        height - 3.0,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::attempt::{Finished, Started, attempts};
    use ctxfold_core::compaction::{CompactionReset, ResetTargets};
    use ctxfold_core::report::turn_reports;
    use ctxfold_core::{Compaction, Object, Record};

    fn push(log: &mut Log, b: Body) {
        let seq = log.next_seq();
        log.push(Record::new(seq, "t", b));
    }

    #[test]
    fn bands_by_source_and_status_and_unfinished_attempts_as_marks() {
        let mut log = Log::new();
        for k in 0..6 {
            push(&mut log, Body::TurnStart);
            push(
                &mut log,
                Body::User {
                    content: format!("q{k} {}", "word ".repeat(200)),
                    author: None,
                },
            );
        }
        // Each clips the long messages; the assistant's, last, to another
        // length over the same turns: the automatic one is superseded.
        for (source, clip) in [
            (Source::User, 100),
            (Source::Auto, 100),
            (Source::Assistant, 300),
        ] {
            let mut c = Compaction::new(0, 2, source);
            c.clip_chars = Some(clip);
            push(&mut log, Body::Compaction(Box::new(c)));
        }
        // The first is revoked; then a failed attempt and an orphan.
        push(
            &mut log,
            Body::CompactionReset(Box::new(CompactionReset {
                targets: ResetTargets::Some(vec![12]),
                restore: false,
                extra: Object::new(),
            })),
        );
        let started = Started {
            from_turn: 3,
            to_turn: 4,
            from_seq: 6,
            to_seq: 9,
            source: Source::Auto,
            summarizer: "local/m".into(),
        };
        push(&mut log, started.body());
        let failed_at = log.next_seq() - 1;
        push(
            &mut log,
            Finished {
                started: failed_at,
                compaction: None,
                error: Some("timed out <after> 60 s".into()),
            }
            .body(),
        );
        push(&mut log, started.body());

        let b = bands(&log);
        let got: Vec<(usize, Status)> = b.iter().map(|b| (b.number, b.status)).collect();
        assert_eq!(
            got,
            [
                (1, Status::Revoked),
                (2, Status::Superseded { by: 3, more: 0 }),
                (3, Status::Active)
            ]
        );
        let all = attempts(&log);
        let unfinished: Vec<&Attempt> = all.iter().filter(|a| a.state() != "done").collect();
        let view = ctxfold_core::projection::project(&log);
        let svg = svg(
            &log,
            &turn_reports(&log, &view),
            &b,
            &unfinished,
            Some(2),
            &|n| format!("?c={n}"),
        );
        assert_eq!(svg.matches("<rect class=\"band ").count(), 3);
        for (source, status) in [
            ("manual", "revoked"),
            ("auto", "superseded selected"),
            ("assistant", "active"),
        ] {
            assert!(
                svg.contains(&format!("class=\"band {source} {status}\"")),
                "{source}: {svg}"
            );
        }
        assert_eq!(svg.matches("<rect class=\"attempt failed\"").count(), 1);
        assert_eq!(svg.matches("<rect class=\"attempt orphaned\"").count(), 1);
        // The error is text in the picture, escaped.
        assert!(svg.contains("timed out &lt;after&gt; 60 s"), "{svg}");
        assert_eq!(svg.matches("<g class=\"turn\">").count(), 6);
        assert_eq!(svg.matches("data-policy=\"mechanical\"").count(), 3);
    }

    #[test]
    fn overlapping_bands_get_their_own_lanes() {
        let l = lanes(&[(0.0, 5.0), (1.0, 3.0), (5.0, 6.0), (2.0, 4.0)]);
        assert_eq!(l[0], 0);
        assert_eq!(l[1], 1);
        assert_eq!(l[2], 0, "starts where the first ends");
        assert_eq!(l[3], 2);
        let many: Vec<(f64, f64)> = (0..20).map(|_| (0.0, 1.0)).collect();
        assert!(lanes(&many).iter().all(|&k| k < MAX_LANES));
    }
}
