//! Property test: the request kept between steps and extended with what
//! each step appended always equals the request derived from a fresh
//! projection, whatever was appended (overlays, resets, deferrals, system
//! prompts, signed reasoning, calls answered late, repeated ids).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::compaction::{
    AllMarker, Compaction, CompactionReset, Provenance, ReasoningPolicy, ResetTargets, Source,
    Summary, ToolPolicy,
};
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_host::request_cache::RequestCache;
use ctxfold_providers::{ChatRequest, request_from_view};
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Add {
    Turn,
    User,
    Text,
    Reasoning {
        signed: bool,
    },
    /// A step of `n` calls, answered (or one left for later).
    Calls {
        n: usize,
        late: bool,
        reuse: bool,
    },
    LateResult,
    System,
    Compact {
        back: usize,
        kind: usize,
        deferred: bool,
        beyond: bool,
    },
    Reset,
}

fn add() -> impl Strategy<Value = Add> {
    prop_oneof![
        2 => Just(Add::Turn),
        2 => Just(Add::User),
        3 => Just(Add::Text),
        1 => any::<bool>().prop_map(|signed| Add::Reasoning { signed }),
        4 => (1..3usize, prop::bool::weighted(0.15), prop::bool::weighted(0.1))
            .prop_map(|(n, late, reuse)| Add::Calls { n, late, reuse }),
        1 => Just(Add::LateResult),
        1 => Just(Add::System),
        1 => (1..20usize, 0..3usize, prop::bool::weighted(0.2), prop::bool::weighted(0.2))
            .prop_map(|(back, kind, deferred, beyond)| Add::Compact { back, kind, deferred, beyond }),
        1 => Just(Add::Reset),
    ]
}

fn records(a: &Add, log: &Log, n: &mut usize, late: &mut Vec<String>) -> Vec<Body> {
    *n += 1;
    match a {
        Add::Turn => vec![
            Body::TurnStart,
            Body::User {
                content: format!("q{n}"),
                author: None,
            },
        ],
        Add::User => vec![Body::User {
            content: format!("more {n}"),
            author: None,
        }],
        Add::Text => vec![Body::Assistant {
            content: format!("answer {n}"),
        }],
        Add::Reasoning { .. } => vec![Body::Reasoning {
            content: format!("think {n}"),
        }],
        Add::Calls {
            n: k,
            late: l,
            reuse,
        } => {
            let ids: Vec<String> = (0..*k)
                .map(|i| {
                    if *reuse {
                        "same".to_owned()
                    } else {
                        format!("c{n}-{i}")
                    }
                })
                .collect();
            let mut out: Vec<Body> = ids
                .iter()
                .map(|id| Body::ToolCall {
                    id: id.clone(),
                    name: "run".into(),
                    arguments: json!({"x": "y".repeat(200)}).into(),
                })
                .collect();
            for (i, id) in ids.iter().enumerate() {
                if *l && i + 1 == ids.len() {
                    late.push(id.clone());
                } else {
                    out.push(Body::ToolResult {
                        id: id.clone(),
                        content: "out ".repeat(50),
                        is_error: false,
                    });
                }
            }
            out
        }
        Add::LateResult => match late.pop() {
            Some(id) => vec![Body::ToolResult {
                id,
                content: "late".into(),
                is_error: false,
            }],
            None => vec![],
        },
        Add::System => vec![Body::System {
            content: format!("be brief {n}"),
        }],
        Add::Compact {
            back,
            kind,
            deferred,
            beyond,
        } => {
            let len = log.len();
            if len == 0 {
                return vec![];
            }
            let lo = len.saturating_sub(*back);
            let mut c = Compaction::new(log.turn_of(lo), log.turn_of(len - 1), Source::Auto);
            c.from_seq = Some(log.records()[lo].seq);
            // Sometimes a range that reaches past the end of the log (a
            // hand-edited or imported record): it covers what comes next.
            c.to_seq = Some(if *beyond {
                1_000_000
            } else {
                log.records()[len - 1].seq
            });
            match kind {
                0 => c.reasoning = Some(ReasoningPolicy::Strip),
                1 => c.tool_calls = Some(ToolPolicy::Strip),
                _ => {
                    c.summary = Some(Summary {
                        text: format!("summary {n}"),
                        provenance: Provenance::Supplied {
                            author: Source::User,
                        },
                    })
                }
            }
            if *deferred {
                c.deferred_until_turn = Some(log.turn_count() as u32 + 1);
            }
            vec![Body::Compaction(Box::new(c))]
        }
        Add::Reset => vec![Body::CompactionReset(Box::new(CompactionReset {
            targets: ResetTargets::All(AllMarker::All),
            restore: false,
            extra: Object::new(),
        }))],
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn extending_equals_projecting_from_scratch(adds in prop::collection::vec(add(), 1..60)) {
        let opts = ChatRequest { model: "m".into(), system: Some("sys".into()), ..ChatRequest::default() };
        let mut log = Log::new();
        let mut cache = RequestCache::new();
        let mut n = 0;
        let mut late = Vec::new();
        let mut checks = 0;
        for a in &adds {
            let signed = matches!(a, Add::Reasoning { signed: true });
            for b in records(a, &log, &mut n, &mut late) {
                let mut r = Record::new(log.next_seq(), "t", b);
                if signed {
                    r.metadata = Some(Box::new(Object::from_iter([(
                        ctxfold_providers::part::THINKING_SIGNATURE.to_owned(),
                        json!("sig"),
                    )])));
                }
                log.push(r);
            }
            let got = cache.request(&log, &opts);
            let want = request_from_view(&log, &project(&log), &opts);
            prop_assert_eq!(got, want, "after {:?}", a);
            checks += 1;
        }
        prop_assert!(cache.projections <= checks);
    }
}

/// Ordinary steps never project again.
#[test]
fn ordinary_steps_extend_without_projecting() {
    let opts = ChatRequest {
        model: "m".into(),
        ..ChatRequest::default()
    };
    let mut log = Log::new();
    let mut cache = RequestCache::new();
    let mut n = 0;
    let mut late = Vec::new();
    for a in [Add::Turn, Add::Text]
        .into_iter()
        .chain((0..20).map(|_| Add::Calls {
            n: 2,
            late: false,
            reuse: false,
        }))
    {
        for b in records(&a, &log, &mut n, &mut late) {
            log.push(Record::new(log.next_seq(), "t", b));
        }
        assert_eq!(
            cache.request(&log, &opts),
            request_from_view(&log, &project(&log), &opts)
        );
    }
    assert_eq!(cache.projections, 1);
}
