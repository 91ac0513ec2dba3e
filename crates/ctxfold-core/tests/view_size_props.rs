//! Property test: the running view size, extended record by record as a
//! log grows (overlays, resets, deferrals and open steps included), always
//! equals the size of a fresh projection.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::*;
use ctxfold_core::Log;
use ctxfold_core::estimate::{item_tokens, record_tokens, view_tokens};
use ctxfold_core::projection::project;
use ctxfold_core::view_size::ViewSize;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn extending_equals_projecting_from_scratch(
        turns in prop::collection::vec(turn(), 1..8),
        comps in prop::collection::vec(comp(), 0..6),
        resets in prop::collection::vec(reset(), 0..3),
        open_end in prop::bool::weighted(0.3),
        stride in 1..4usize,
    ) {
        let full = build(&turns, &comps, &resets, open_end);
        let mut log = Log::new();
        let mut size = ViewSize::new();
        let mut checked = 0;
        for (i, r) in full.records().iter().enumerate() {
            log.push(r.clone());
            // Not after every record: several appended at once must add up too.
            if (i + 1) % stride == 0 || i + 1 == full.len() {
                let got = size.update(&log, record_tokens, item_tokens);
                prop_assert_eq!(got, view_tokens(&project(&log)), "after {} records", i + 1);
                checked += 1;
            }
        }
        prop_assert!(checked > 0);
        // Projections are made only when an overlay or a deferral calls for
        // one, not for every append.
        let overlays = full
            .records()
            .iter()
            .filter(|r| matches!(r.kind(), ctxfold_core::Kind::Compaction | ctxfold_core::Kind::CompactionReset))
            .count();
        prop_assert!(size.projections <= checked);
        if overlays == 0 && full.len() > 3 * stride {
            prop_assert!(size.projections < checked, "{} projections for {} checks", size.projections, checked);
        }
    }
}
