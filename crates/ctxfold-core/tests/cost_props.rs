//! Property test of the prompt-cache model: requests made at every point
//! of a growing log (compactions, resets and deferrals included) read from
//! the cache exactly the items their view shares, from the first, with the
//! previous request's view, and write the rest; without a compaction the
//! two sides are the same.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::*;
use ctxfold_core::Log;
use ctxfold_core::cost::{Prefix, Sent};
use ctxfold_core::estimate::{item_tokens, record_tokens};
use ctxfold_core::projection::project;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_cache_reads_the_shared_prefix_of_the_view(
        turns in prop::collection::vec(turn(), 1..8),
        comps in prop::collection::vec(comp(), 0..6),
        resets in prop::collection::vec(reset(), 0..3),
        fixed in 0..500u64,
    ) {
        let full = build(&turns, &comps, &resets, false);
        let mut log = Log::new();
        let mut previous: Option<(Sent, Vec<String>, Vec<u64>)> = None;
        for r in full.records() {
            log.push(r.clone());
            let view = project(&log);
            let tokens: Vec<u64> = view.items.iter().map(|i| item_tokens(i) as u64).collect();
            let raw: u64 = log
                .records()
                .iter()
                .filter(|r| r.body.is_model_visible())
                .map(|r| record_tokens(r) as u64)
                .sum();
            let prefix = Prefix::of(&view.items);
            let with = tokens.iter().sum();
            let before = previous.as_ref().map(|p| &p.0.prefix);
            let sent = Sent {
                fixed,
                without: raw,
                with,
                shared: prefix.shared_tokens(before, &view.items, with, item_tokens),
                prefix,
            };
            let sig = signature(&log, &view);
            let e = sent.estimate(previous.as_ref().map(|p| &p.0));
            let q = e.request("m", 0, None);
            // Every input token is read or written, never both.
            prop_assert_eq!(q.with.all_input(), fixed + sent.with);
            prop_assert_eq!(q.without.all_input(), fixed + raw);
            match &previous {
                None => prop_assert_eq!(e.with_cached + e.without_cached, 0),
                Some((p, psig, _)) => {
                    // Independently: the items both views have, in order
                    // from the first, by what they show.
                    let same = sig.iter().zip(psig).take_while(|(a, b)| a == b).count();
                    let shared: u64 = tokens[..same].iter().sum();
                    prop_assert_eq!(e.with_cached, fixed + shared);
                    prop_assert_eq!(e.without_cached, fixed + p.without.min(raw));
                }
            }
            if !log.records().iter().any(|r| !r.body.is_model_visible()) {
                // No overlay record: the view is the history.
                prop_assert_eq!(q.with, q.without);
            }
            previous = Some((sent, sig, tokens));
        }
    }
}
