//! Properties of reconciling a request's history with the stored log: a
//! history that goes on from the log extends it by exactly what is new; a
//! shorter one is an earlier state; one that differs diverges where it
//! first differs; reasoning the client drops never diverges.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::{Body, Record};
use ctxfold_proxy::reconcile::{Alignment, align};
use proptest::prelude::*;

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        "[a-c]{1,3}".prop_map(|t| Body::User {
            content: t,
            author: None
        }),
        "[a-c]{1,3}".prop_map(|t| Body::Assistant { content: t }),
        ("[a-c]{1,2}", "[a-c]{1,3}").prop_map(|(id, c)| Body::ToolResult {
            id,
            content: c,
            is_error: false
        }),
        Just(Body::TurnStart),
    ]
}

fn records(bodies: &[Body]) -> Vec<Record> {
    bodies
        .iter()
        .enumerate()
        .map(|(i, b)| Record::new(i as u64, "", b.clone()))
        .collect()
}

fn compared(b: &Body) -> bool {
    !matches!(b, Body::TurnStart)
}

proptest! {
    #[test]
    fn a_history_that_goes_on_extends_by_what_is_new(
        stored in prop::collection::vec(body(), 0..30),
        new in prop::collection::vec(body(), 0..10),
    ) {
        let mut client = stored.clone();
        client.extend(new.clone());
        let Alignment::Extends { pairs, tail, .. } = align(&records(&stored), &records(&client)) else {
            panic!("not an extension");
        };
        prop_assert_eq!(pairs.len(), stored.iter().filter(|b| compared(b)).count());
        // What is appended holds every compared record of `new`, and only
        // records the log does not hold.
        prop_assert!(tail <= client.len());
        prop_assert!(tail >= pairs.last().map_or(0, |p| p.1 + 1));
        let appended = client[tail..].iter().filter(|b| compared(b)).count();
        prop_assert_eq!(appended, new.iter().filter(|b| compared(b)).count());
    }

    #[test]
    fn a_shorter_history_is_an_earlier_state(
        stored in prop::collection::vec(body(), 1..30),
        cut in 0usize..30,
    ) {
        let compared_at: Vec<usize> = (0..stored.len()).filter(|&i| compared(&stored[i])).collect();
        prop_assume!(!compared_at.is_empty());
        // Cut before a compared record.
        let at = compared_at[cut % compared_at.len()];
        let client = &stored[..at];
        let got = align(&records(&stored), &records(client));
        prop_assert!(matches!(got, Alignment::Earlier { .. }), "{:?}", got);
    }

    #[test]
    fn a_changed_history_diverges_where_it_first_differs(
        stored in prop::collection::vec(body(), 1..30),
        pick in 0usize..30,
    ) {
        let compared_at: Vec<usize> = (0..stored.len()).filter(|&i| compared(&stored[i])).collect();
        prop_assume!(!compared_at.is_empty());
        let at = compared_at[pick % compared_at.len()];
        let mut client = stored.clone();
        client[at] = Body::User { content: "changed!".into(), author: None };
        prop_assert_eq!(align(&records(&stored), &records(&client)), Alignment::Diverges { at });
    }

    #[test]
    fn reasoning_the_client_drops_never_diverges(
        stored in prop::collection::vec(body(), 0..30),
        thoughts in prop::collection::vec(0usize..30, 0..5),
    ) {
        let mut with = stored.clone();
        for &t in thoughts.iter().rev() {
            let t = t.min(with.len());
            with.insert(t, Body::Reasoning { content: "hmm".into() });
        }
        let got = align(&records(&with), &records(&stored));
        prop_assert!(matches!(got, Alignment::Extends { .. }), "{:?}", got);
    }
}
