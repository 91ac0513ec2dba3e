//! Property tests for recall handles (SPEC §16) over generated logs (see
//! `common/mod.rs` for what the generator makes): every fold in a view
//! carries a handle, the handle recalls exactly what the fold stands for,
//! and appending records (overlays included) never changes a handle
//! already in the view.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::*;
use ctxfold_core::compaction::{Compaction, Source};
use ctxfold_core::handle::Target;
use ctxfold_core::projection::{Item, project};
use ctxfold_core::recall::{page, recall, record_text};
use ctxfold_core::{Body, Log, Record};
use proptest::prelude::*;

/// The text of every fold item with its handle, in view order.
fn folds(log: &Log) -> Vec<(String, String)> {
    project(log)
        .items
        .iter()
        .filter_map(|item| {
            let text = match item {
                Item::StrippedResult { .. } => item.stripped_line()?,
                Item::StrippedCall { .. } => item.stripped_arguments()?.text().to_owned(),
                Item::Clipped { .. } => item.clipped_text()?,
                Item::Summary { .. } => item.summary_lead()?,
                Item::Event { .. } | Item::Preamble => return None,
            };
            Some((item.handle()?.to_string(), text))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_fold_recalls_exactly_what_it_stands_for(
        turns in prop::collection::vec(turn(), 1..10),
        comps in prop::collection::vec(comp(), 0..8),
        resets in prop::collection::vec(reset(), 0..3),
    ) {
        let log = build(&turns, &comps, &resets, false);
        let view = project(&log);
        for item in &view.items {
            let Some(handle) = item.handle() else { continue };
            prop_assert_eq!(Some(handle.tag), view.tag);
            let recalled = recall(&log, &handle).unwrap();
            // Pages of any size give the text back whole.
            let mut whole = String::new();
            let mut offset = 0;
            loop {
                let p = page(&handle, &recalled, offset, 7).unwrap();
                whole.push_str(&p.text);
                if !p.has_more() { break; }
                offset = p.end;
            }
            prop_assert_eq!(&whole, &recalled.text);
            match (item, &handle.target) {
                (Item::Summary { first, last, .. }, Target::Range(..) | Target::Record(_)) => {
                    for r in &log.records()[*first..=*last] {
                        if r.body.is_model_visible() {
                            prop_assert!(whole.contains(&record_text(r)));
                        }
                    }
                }
                (Item::StrippedCall { record, .. }, _) => {
                    let Body::ToolCall { arguments, .. } = &record.body else { unreachable!() };
                    prop_assert_eq!(&whole, arguments.text());
                }
                (Item::StrippedResult { record, .. } | Item::Clipped { record, .. }, _) => {
                    prop_assert_eq!(&whole, &record_text(record));
                }
                _ => {}
            }
            // The handle's text is in what the model reads.
            let shown = item
                .stripped_line()
                .or_else(|| item.stripped_arguments().map(|a| a.text().to_owned()))
                .or_else(|| item.clipped_text())
                .or_else(|| item.summary_lead());
            if let Some(shown) = shown && !matches!(item, Item::StrippedCall { .. }) {
                prop_assert!(shown.contains(&format!("recall {handle}")), "{}", shown);
            }
        }
    }

    /// A fold's text, handle included, is the same in every later view:
    /// records appended after it (a new turn, a compaction of that turn)
    /// do not move it, so neither does the prefix a provider caches.
    #[test]
    fn a_folds_text_does_not_change_as_the_log_grows(
        turns in prop::collection::vec(turn(), 2..10),
        comps in prop::collection::vec(comp(), 0..6),
    ) {
        // A deferred compaction comes into force as turns are added: that
        // is a change of the view on purpose.
        prop_assume!(comps.iter().all(|c| c.deferred.is_none()));
        let before = build(&turns, &comps, &[], false);
        let mut after = before.clone();
        let next = after.next_seq();
        let turn = after.turn_count() as u32;
        after.push(Record::new(next, "2026-01-02T00:00:00Z", Body::TurnStart));
        after.push(Record::new(next + 1, "2026-01-02T00:00:00Z", Body::User {
            content: "one more question".into(),
            author: None,
        }));
        after.push(Record::new(next + 2, "2026-01-02T00:00:00Z", Body::Assistant {
            content: "x".repeat(400),
        }));
        let mut c = Compaction::new(turn, turn, Source::User);
        c.clip_chars = Some(100);
        after.push(Record::new(next + 3, "2026-01-02T00:00:01Z", Body::Compaction(Box::new(c))));
        let later = folds(&after);
        for fold in folds(&before) {
            prop_assert!(later.contains(&fold), "{:?} is gone from {:?}", fold, later);
        }
    }
}
