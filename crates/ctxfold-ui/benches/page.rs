//! The server time to render a conversation's page (issue 15: under 200 ms
//! for a conversation of 100,000 events with 1,000 compactions), and its
//! parts. Figures: `docs/PERFORMANCE.md`.
//!
//! ```text
//! cargo bench -p ctxfold-ui --bench page
//! ```
//!
//! The conversation is generated deterministically (`ctxfold_testkit::session`): turns
//! of ten records, every tenth turn a compaction folding what lies before
//! the last three turns; 100,000 events and 1,000 compactions, and for the
//! `_1m` benchmarks ten times both. The `_overlapping_1m` ones strip
//! fifteen recent turns every ten turns instead (ranges that overlap,
//! issue 48).

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::sync::LazyLock;

use ctxfold_testkit::session;

use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log};
use ctxfold_store::ConversationMeta;
use ctxfold_ui::conversation::{Options, render};
use ctxfold_ui::html::Ctx;

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

static LOG: LazyLock<Log> = LazyLock::new(|| session::generate(EVENTS, EVERY));

/// Ten times the events and the compactions (issue 26: the page linear
/// from 100,000 events).
static LOG_1M: LazyLock<Log> = LazyLock::new(|| session::generate(10 * EVENTS, EVERY));

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
    page_from_workspace(b, &LOG);
}

/// The same at 1,000,000 events and 10,000 compactions: a log the store
/// keeps a snapshot of (written by a first load before the samples, as
/// the server's first visit to the page does).
#[divan::bench(sample_count = 10)]
fn conversation_page_from_workspace_1m(b: divan::Bencher) {
    page_from_workspace(b, &LOG_1M);
}

fn page_from_workspace(b: divan::Bencher, log: &Log) {
    use ctxfold_store::Store as _;
    let dir = tempfile::tempdir().unwrap();
    let (ws, _) = ctxfold_store::Workspace::init(dir.path()).unwrap();
    let meta = ctxfold_store::create_new(
        &ws,
        Some("a long agent session".into()),
        None,
        Default::default(),
        log.records().to_vec(),
    )
    .unwrap();
    ws.load(&meta.id).unwrap();
    let ctx = Ctx::default();
    b.bench(|| {
        let log = ws.load(&meta.id).unwrap().into_log();
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

/// The page at 1,000,000 events and 10,000 compactions.
#[divan::bench(sample_count = 10)]
fn conversation_page_1m(b: divan::Bencher) {
    let (log, meta, ctx) = (&*LOG_1M, meta(), Ctx::default());
    b.bench(|| {
        render(&ctx, &meta, log, &Options::default())
            .into_string()
            .len()
    });
}

/// The page with a compaction selected, at 1,000,000 events.
#[divan::bench(sample_count = 10)]
fn conversation_page_selected_1m(b: divan::Bencher) {
    let (log, meta, ctx) = (&*LOG_1M, meta(), Ctx::default());
    let opts = Options {
        selected: Some(5_000),
        ..Options::default()
    };
    b.bench(|| render(&ctx, &meta, log, &opts).into_string().len());
}

/// One projection at 1,000,000 events, for comparison.
#[divan::bench(sample_count = 10)]
fn projection_1m(b: divan::Bencher) {
    let log = &*LOG_1M;
    b.bench(|| project(log).items.len());
}

/// 1,000,000 events whose 10,000 compactions each strip fifteen recent
/// turns, every one overlapping the one before, all in force (issue 48).
static OVERLAPPING_1M: LazyLock<Log> =
    LazyLock::new(|| session::generate_overlapping(10 * EVENTS, EVERY));

/// The page of the overlapping shape at 1,000,000 events.
#[divan::bench(sample_count = 10)]
fn conversation_page_overlapping_1m(b: divan::Bencher) {
    let (log, meta, ctx) = (&*OVERLAPPING_1M, meta(), Ctx::default());
    b.bench(|| {
        render(&ctx, &meta, log, &Options::default())
            .into_string()
            .len()
    });
}

/// The same with a compaction selected (its kept and lost facts).
#[divan::bench(sample_count = 10)]
fn conversation_page_selected_overlapping_1m(b: divan::Bencher) {
    let (log, meta, ctx) = (&*OVERLAPPING_1M, meta(), Ctx::default());
    let opts = Options {
        selected: Some(5_000),
        ..Options::default()
    };
    b.bench(|| render(&ctx, &meta, log, &opts).into_string().len());
}

/// One projection of the overlapping shape, for comparison.
#[divan::bench(sample_count = 10)]
fn projection_overlapping_1m(b: divan::Bencher) {
    let log = &*OVERLAPPING_1M;
    b.bench(|| project(log).items.len());
}
