//! The token curve: raw and in-view tokens over a conversation's life, at
//! the end of every turn and right before and after every overlay record,
//! so each compaction shows as a drop of the in-view line.
//!
//! The in-view size as of each point comes from
//! [`ctxfold_core::view_size::ViewSize`], which adds what each
//! record adds and projects again only when an overlay could change older
//! parts of the view. A projection costs what the log holds, so a
//! conversation with very many compactions would pay one per compaction:
//! past a [`budget`] of them, projections are spaced out over the
//! log and the points between are left unknown (the line joins the known
//! ones), and the picture says so.

use std::fmt::Write as _;

use ctxfold_core::estimate::{item_tokens, record_tokens};
use ctxfold_core::view_size::ViewSize;
use ctxfold_core::{Body, Kind, Log};

/// The records one curve may project in all (about 100 ms here): a
/// conversation of 10,000 records gets 100 projections, one of 100,000 gets
/// 10 (never fewer than [`MIN_PROJECTIONS`]).
pub const PROJECTION_WORK: usize = 1_000_000;
/// The fewest full projections a curve may make, however long the log.
pub const MIN_PROJECTIONS: usize = 8;

/// How many full projections the curve of a log of `records` may make.
pub fn budget(records: usize) -> usize {
    (PROJECTION_WORK / records.max(1)).max(MIN_PROJECTIONS)
}
/// Most points drawn; more are thinned, keeping those around overlays.
pub const MAX_POINTS: usize = 2400;

const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 160.0;

/// One point of the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Records of the log at this point.
    pub records: usize,
    /// Where it lies on the turn axis (turns completed, fractional inside a
    /// turn).
    pub at: f64,
    /// Raw tokens so far.
    pub raw: usize,
    /// Tokens in view so far; `None` where the budget left it unknown.
    pub view: Option<usize>,
    /// Whether the point comes right after a compaction or reset record.
    pub overlay: bool,
}

/// The curve of `log`: raw and in-view tokens after every turn and around
/// every overlay, with at most `budget` full projections.
pub fn points(log: &Log, budget: usize) -> Vec<Point> {
    let records = log.records();
    let n = records.len();
    let spacing = n / budget.max(1);
    // The log as it grew, its view's size, the points so far, and whether
    // an overlay's effect is still to be measured.
    struct Drawn {
        grown: Log,
        size: ViewSize,
        out: Vec<Point>,
        pending: bool,
    }
    let mut d = Drawn {
        grown: Log::new(),
        size: ViewSize::new(),
        out: Vec::new(),
        pending: false,
    };
    let mut raw = 0usize;
    let mut last_projection: Option<usize> = None;
    let at_of = |k: usize| -> f64 {
        // k records done: the position where record k would start.
        if k >= n {
            return log.turn_count() as f64;
        }
        let t = log.turn_of(k);
        match log.turn_range(t) {
            Some(r) if !r.is_empty() && r.contains(&k) => {
                f64::from(t) + (k - r.start) as f64 / r.len() as f64
            }
            _ => f64::from(t),
        }
    };
    let mut emit = |d: &mut Drawn, raw: usize, overlay: bool| {
        let k = d.grown.len();
        // An update after an overlay projects: only once the last
        // projection is `spacing` records back, within the budget. The end
        // of the log is always measured.
        let allowed = k == n
            || !d.pending
            || (last_projection.is_none_or(|p| k - p >= spacing)
                && d.size.projections < budget.max(1));
        let before = d.size.projections;
        let view = if allowed {
            let v = d.size.update(&d.grown, record_tokens, item_tokens);
            d.pending = false;
            if d.size.projections > before {
                last_projection = Some(k);
            }
            Some(v)
        } else {
            None
        };
        d.out.push(Point {
            records: k,
            at: at_of(k),
            raw,
            view,
            overlay,
        });
    };
    // Where the conversation started from: nothing.
    d.out.push(Point {
        records: 0,
        at: 0.0,
        raw: 0,
        view: Some(0),
        overlay: false,
    });
    for (i, r) in records.iter().enumerate() {
        if i > 0 && matches!(r.body, Body::TurnStart) {
            emit(&mut d, raw, false);
        }
        let is_overlay = matches!(r.kind(), Kind::Compaction | Kind::CompactionReset);
        if is_overlay && !d.pending && d.out.last().is_none_or(|p| p.records != i) {
            // The value just before the overlay, so the drop is drawn as one.
            emit(&mut d, raw, false);
        }
        d.grown.push(r.clone());
        if r.body.is_model_visible() || matches!(r.body, Body::System { .. }) {
            raw += record_tokens(r);
        }
        if is_overlay {
            d.pending = true;
            emit(&mut d, raw, true);
        }
    }
    if d.out.last().is_none_or(|p| p.records != n) {
        emit(&mut d, raw, false);
    }
    d.out
}

/// Whether some points were left unknown for the budget.
pub fn sampled(points: &[Point]) -> bool {
    points.iter().any(|p| p.view.is_none())
}

/// The curve as a standalone SVG picture (styled by its own attributes: a
/// picture loaded by `<img>` gets no stylesheet): raw (grey) and in-view
/// (blue) lines over the turn axis, `turns` wide, a dot where a compaction
/// or reset took effect, the window as a dashed line when it is known and
/// in range.
pub fn svg(points: &[Point], turns: usize, window: Option<u32>) -> String {
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let keep = |k: usize| {
        step == 1
            || k.is_multiple_of(step)
            || k + 1 == points.len()
            || points[k].overlay
            || points.get(k + 1).is_some_and(|p| p.overlay)
    };
    let max = points
        .iter()
        .map(|p| p.raw.max(p.view.unwrap_or(0)))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let sx = WIDTH / turns.max(1) as f64;
    let y = |v: usize| HEIGHT - v as f64 / max * (HEIGHT - 8.0);
    let mut raw = String::new();
    let mut view = String::new();
    for (_, p) in points.iter().enumerate().filter(|&(k, _)| keep(k)) {
        let _ = write!(raw, "{:.1},{:.1} ", p.at * sx, y(p.raw));
        if let Some(v) = p.view {
            let _ = write!(view, "{:.1},{:.1} ", p.at * sx, y(v));
        }
    }
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="curve" viewBox="0 0 {WIDTH} {:.0}" width="{WIDTH}" height="{:.0}" preserveAspectRatio="none" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>"##,
        HEIGHT + 14.0,
        HEIGHT + 14.0
    );
    if let Some(w) = window
        && (w as f64) <= max
    {
        let _ = write!(
            s,
            r##"<line x1="0" x2="{WIDTH}" y1="{0:.1}" y2="{0:.1}" stroke="#c0392b" stroke-dasharray="6 4"><title>window: {w} tokens</title></line><text x="{WIDTH}" y="{1:.1}" text-anchor="end" font-size="10" fill="#c0392b">window {w}</text>"##,
            y(w as usize),
            y(w as usize) - 3.0
        );
    }
    let _ = write!(
        s,
        r##"<polyline class="raw" points="{raw}" fill="none" stroke="#9aa2ad" stroke-width="1.5"><title>raw tokens</title></polyline><polyline class="inview" points="{view}" fill="none" stroke="#2f6fb5" stroke-width="2"><title>tokens in view</title></polyline>"##
    );
    for p in points.iter().filter(|p| p.overlay) {
        if let Some(v) = p.view {
            let _ = write!(
                s,
                r##"<circle class="drop" cx="{:.1}" cy="{:.1}" r="2.5" fill="#d07a12"/>"##,
                p.at * sx,
                y(v)
            );
        }
    }
    if let Some(p) = points.last() {
        let note = if sampled(points) {
            " · in view measured at some compactions only, joined between"
        } else {
            ""
        };
        let _ = write!(
            s,
            r##"<text x="2" y="{:.0}" font-size="10" fill="#6b7480">raw {} · in view {} tokens now{note}</text>"##,
            HEIGHT + 12.0,
            p.raw,
            p.view.map_or("?".into(), |v| v.to_string())
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::compaction::{ReasoningPolicy, Source};
    use ctxfold_core::estimate::view_tokens;
    use ctxfold_core::projection::project;
    use ctxfold_core::{Compaction, Record};

    fn turn(log: &mut Log, text: &str) {
        for b in [
            Body::TurnStart,
            Body::User {
                content: text.into(),
                author: None,
            },
            Body::Reasoning {
                content: text.repeat(20),
            },
            Body::Assistant {
                content: text.into(),
            },
        ] {
            let seq = log.next_seq();
            log.push(Record::new(seq, "t", b));
        }
    }

    fn strip(log: &mut Log, to: u32) {
        let mut c = Compaction::new(0, to, Source::Auto);
        c.reasoning = Some(ReasoningPolicy::Strip);
        let seq = log.next_seq();
        log.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
    }

    #[test]
    fn each_point_is_the_view_of_the_log_so_far_and_compactions_drop() {
        let mut log = Log::new();
        for k in 0..6 {
            turn(&mut log, &format!("message number {k} with some words"));
            if k % 2 == 1 {
                strip(&mut log, k);
            }
        }
        let pts = points(&log, budget(log.len()));
        assert!(!sampled(&pts));
        for p in &pts {
            let prefix = Log::from_records(log.records()[..p.records].to_vec());
            assert_eq!(
                p.view,
                Some(view_tokens(&project(&prefix))),
                "at {}",
                p.records
            );
        }
        let drops = pts
            .windows(2)
            .filter(|w| w[1].overlay && w[1].view < w[0].view)
            .count();
        assert_eq!(drops, 3, "each compaction brings the view down");
        assert_eq!(pts.last().unwrap().at, 6.0);
    }

    #[test]
    fn the_budget_bounds_projections() {
        let mut log = Log::new();
        for k in 0..40 {
            turn(&mut log, "words and more words");
            strip(&mut log, k);
        }
        let pts = points(&log, 4);
        assert!(sampled(&pts));
        let known = pts.iter().filter(|p| p.overlay && p.view.is_some()).count();
        assert!(known <= 8, "{known} projections");
        assert!(
            pts.last().unwrap().view.is_some(),
            "the end is always known"
        );
    }
}
