//! The server time to render a conversation's page (issue 15: under 200 ms
//! for a conversation of 100,000 events with 1,000 compactions), and its
//! parts. Figures: `docs/PERFORMANCE.md`.
//!
//! ```text
//! cargo bench -p ctxfold-ui --bench page
//! ```
//!
//! The conversation is generated deterministically: turns of ten records
//! (a user message, reasoning, three tool calls with their results, an
//! answer); every tenth turn a compaction folds what lies before the last
//! three turns into a summary (automatic, with now and then a manual
//! strip or an assistant's summary), as a long agent session does.

use std::sync::LazyLock;

use ctxfold_core::compaction::{Provenance, ReasoningPolicy, Source, Summary, ToolPolicy};
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Compaction, Log, Record};
use ctxfold_store::ConversationMeta;
use ctxfold_ui::conversation::{Options, render};
use ctxfold_ui::html::Ctx;
use serde_json::json;

fn main() {
    let log = &*LOG;
    let compactions = log
        .records()
        .iter()
        .filter(|r| matches!(r.body, Body::Compaction(_)))
        .count();
    eprintln!(
        "conversation: {} records, {} turns, {compactions} compactions",
        log.len(),
        log.turn_count()
    );
    divan::main();
}

const EVENTS: usize = 100_000;
const EVERY: usize = 10;

static LOG: LazyLock<Log> = LazyLock::new(|| generate(EVENTS, EVERY));

fn push(log: &mut Log, body: Body) -> u64 {
    let seq = log.next_seq();
    log.push(Record::new(seq, "2026-12-01T00:00:00Z", body));
    seq
}

/// `events` records (about), a compaction every `every` turns.
fn generate(events: usize, every: usize) -> Log {
    let mut log = Log::new();
    let mut turn = 0u32;
    let mut turn_starts: Vec<u64> = Vec::new();
    while turn_starts.len() < events / 10 {
        turn_starts.push(push(&mut log, Body::TurnStart));
        push(
            &mut log,
            Body::User {
                content: format!(
                    "Turn {turn}: fix the failing test in src/module_{}.rs",
                    turn % 50
                ),
                author: None,
            },
        );
        push(
            &mut log,
            Body::Reasoning {
                content: "Let me look at the file and run the tests. ".repeat(6),
            },
        );
        for k in 0..3 {
            let id = format!("call-{turn}-{k}");
            push(
                &mut log,
                Body::ToolCall {
                    id: id.clone(),
                    name: ["read_file", "run_tests", "edit_file"][k].into(),
                    arguments: json!({"path": format!("src/module_{}.rs", turn % 50), "content": "x".repeat(200)}).into(),
                },
            );
            push(
                &mut log,
                Body::ToolResult {
                    id,
                    content: format!("line {turn}\n").repeat(40),
                    is_error: k == 1 && turn.is_multiple_of(7),
                },
            );
        }
        push(
            &mut log,
            Body::Assistant {
                content: format!("Done with turn {turn}; the test passes now."),
            },
        );
        turn += 1;
        if (turn as usize).is_multiple_of(every) && turn > 3 {
            let to = turn - 4;
            let n = turn as usize / every;
            let source = match n % 10 {
                3 => Source::User,
                7 => Source::Assistant,
                _ => Source::Auto,
            };
            let mut c = Compaction::new(0, to, source);
            c.from_seq = Some(0);
            c.to_seq = Some(turn_starts[to as usize + 1] - 1);
            if source == Source::User {
                c.reasoning = Some(ReasoningPolicy::Strip);
                c.tool_calls = Some(ToolPolicy::StripResponses);
            } else {
                c.summary = Some(Summary {
                    text: format!("Turns 1–{} fixed tests in many modules. ", to + 1).repeat(8),
                    provenance: match source {
                        Source::Assistant => Provenance::Supplied {
                            author: Source::Assistant,
                        },
                        _ => Provenance::Derived {
                            summarizer: "local/model".into(),
                            version: None,
                            instructions: None,
                            method: None,
                        },
                    },
                });
            }
            c = c.with_note("the view was over the automatic threshold");
            push(&mut log, Body::Compaction(Box::new(c)));
        }
    }
    log
}

fn meta() -> ConversationMeta {
    ConversationMeta {
        id: "bench".into(),
        title: Some("a long agent session".into()),
        created_at: "2026-12-01T00:00:00Z".into(),
        last_used_at: "2026-12-01T00:00:00Z".into(),
        imported_from: None,
        extras: Default::default(),
    }
}

/// The whole page, from the loaded log to the HTML text.
#[divan::bench(sample_count = 20)]
fn conversation_page(b: divan::Bencher) {
    let (log, meta, ctx) = (&*LOG, meta(), Ctx::default());
    b.bench(|| {
        render(&ctx, &meta, log, &Options::default())
            .into_string()
            .len()
    });
}

/// The page with a compaction selected (its kept and lost facts measured).
#[divan::bench(sample_count = 20)]
fn conversation_page_selected(b: divan::Bencher) {
    let (log, meta, ctx) = (&*LOG, meta(), Ctx::default());
    let opts = Options {
        selected: Some(500),
        ..Options::default()
    };
    b.bench(|| render(&ctx, &meta, log, &opts).into_string().len());
}

/// What the server does for the page: load the log from a workspace (on
/// this machine's disk, warm in the page cache), then render.
#[divan::bench(sample_count = 10)]
fn conversation_page_from_workspace(b: divan::Bencher) {
    use ctxfold_store::Store as _;
    let dir = tempfile::tempdir().unwrap();
    let (ws, _) = ctxfold_store::Workspace::init(dir.path()).unwrap();
    let meta = ctxfold_store::create_new(
        &ws,
        Some("a long agent session".into()),
        None,
        Default::default(),
        LOG.records().to_vec(),
    )
    .unwrap();
    let ctx = Ctx::default();
    b.bench(|| {
        let loaded = ws.load(&meta.id).unwrap();
        let log = Log::from_records(loaded.records);
        render(&ctx, &meta, &log, &Options::default())
            .into_string()
            .len()
    });
}

/// One projection of the whole log, for comparison.
#[divan::bench(sample_count = 20)]
fn projection(b: divan::Bencher) {
    let log = &*LOG;
    b.bench(|| project(log).items.len());
}

/// The token curve (a picture of its own, asked for by the page), with the
/// budget the server gives it.
#[divan::bench(sample_count = 10)]
fn curve_picture(b: divan::Bencher) {
    let log = &*LOG;
    b.bench(|| {
        let points = ctxfold_ui::curve::points(log, ctxfold_ui::curve::budget(log.len()));
        ctxfold_ui::curve::svg(&points, log.turn_count(), None).len()
    });
}
