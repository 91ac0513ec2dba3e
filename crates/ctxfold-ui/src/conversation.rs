//! One conversation's page: its figures, the timeline (turns as bars,
//! compactions as bands, failed and orphaned attempts), the token curve,
//! the compactions with their details and undo/restore buttons, and what
//! the model sees beside a window of raw turns. Also the confirmation page
//! an undo or restore goes through.

use std::collections::HashMap;

use ctxfold_core::attempt::{Attempt, attempts};
use ctxfold_core::estimate::view_tokens;
use ctxfold_core::kept::{Kept, Retentions, Tally};
use ctxfold_core::projection::{project, project_as_of, project_with};
use ctxfold_core::report::{fates, turn_reports};
use ctxfold_core::{Body, Log};
use ctxfold_store::ConversationMeta;
use maud::{Markup, html};

use crate::data;
use crate::html::{Ctx, page, percent, svg, tokens, when};
use crate::timeline::{self, Band, Status, source_name, status_name};

/// Turns shown beside the view when none are asked for: the last ones.
pub const DEFAULT_TURNS: u32 = 12;

/// What the address asks the page to show.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The selected compaction, by number.
    pub selected: Option<usize>,
    /// The turns shown beside the view, 1-based and inclusive.
    pub turns: Option<(u32, u32)>,
    /// The window configured for every model (`[proxy] window`).
    pub window: Option<u32>,
    /// What the cost is priced with.
    pub prices: ctxfold_core::cost::PriceTable,
}

/// The turns (0-based, inclusive) shown beside the view: those asked for,
/// kept inside the log, else the last [`DEFAULT_TURNS`].
pub fn turn_window(turn_count: usize, asked: Option<(u32, u32)>) -> Option<(u32, u32)> {
    let last = (turn_count as u32).checked_sub(1)?;
    Some(match asked {
        Some((a, b)) => {
            let (a, b) = (a.min(b).max(1) - 1, a.max(b).max(1) - 1);
            (a.min(last), b.min(last))
        }
        None => (last.saturating_sub(DEFAULT_TURNS - 1), last),
    })
}

/// The page of conversation `meta` with log `log`.
pub fn render(ctx: &Ctx, meta: &ConversationMeta, log: &Log, opts: &Options) -> Markup {
    let id = &meta.id;
    let here = ctx.href(&crate::html::conversation_path(id));
    let view = project(log);
    let reports = turn_reports(log, &view);
    let raw = data::raw_tokens(log);
    let in_view = view_tokens(&view);
    // The window holds the view and what every request carries besides it.
    let fixed = meta.fixed_tokens();
    let mut cost = ctxfold_core::cost::CostSum::default();
    cost.add_records(log.records(), &opts.prices);
    let request = in_view + fixed.unwrap_or(0);
    let window = data::window(meta, opts.window);
    let bands = timeline::bands(log);
    let all_attempts = attempts(log);
    let unfinished: Vec<&Attempt> = all_attempts
        .iter()
        .filter(|a| a.state() != "done")
        .collect();
    let number_of: HashMap<usize, usize> = bands.iter().map(|b| (b.index, b.number)).collect();
    let turns_q = opts
        .turns
        .map(|(a, b)| format!("&from={a}&to={b}"))
        .unwrap_or_default();
    let link = |n: usize| format!("{here}?c={n}{turns_q}#compaction");
    let timeline_svg = timeline::svg(log, &reports, &bands, &unfinished, opts.selected, &link);
    let active = bands.iter().filter(|b| b.status == Status::Active).count();
    let selected = opts
        .selected
        .and_then(|n| bands.iter().find(|b| b.number == n));
    // Beside the view: the turns asked for; else the selected compaction's
    // (its first ones); else the last ones.
    let band_turns = selected.and_then(|b| b.covered).map(|(lo, hi)| {
        let (a, b) = (log.turn_of(lo) + 1, log.turn_of(hi) + 1);
        (a, b.min(a + DEFAULT_TURNS - 1))
    });
    let shown_turns = turn_window(log.turn_count(), opts.turns.or(band_turns));
    let fates = fates(log, &view);
    let title = meta.title.clone().unwrap_or_else(|| id.clone());
    let body = html! {
        h1 { (title) }
        p.meta {
            code { (id) } " · "
            span class=(format!("origin {}", data::origin(meta).name())) { (data::origin(meta).name()) }
            @if let Some(m) = data::model(meta) { " · " (m) }
            " · last activity " (when(data::last_activity(meta, log)))
        }
        dl.figures {
            div { dt { "Turns" } dd #turns { (log.turn_count()) } }
            div { dt { "Raw tokens" } dd #raw-tokens data-tokens=(raw) { (tokens(raw)) } }
            div { dt { "In view" } dd #in-view-tokens data-tokens=(in_view) { (tokens(in_view)) } }
            @if let Some(f) = fixed {
                div title="the system prompt and tool definitions sent with every request" {
                    dt { "Fixed part" } dd #fixed-tokens data-tokens=(f) { (tokens(f)) }
                }
            }
            div { dt { "Window" } dd #window-share data-tokens=(request) {
                @match window {
                    Some(w) => { (percent(request as f64 / f64::from(w.max(1)))) " of " (tokens(w as usize)) },
                    None => span.muted title="the model's window is not known" { "—" },
                }
            } }
            div { dt { "Compactions" } dd #compaction-count data-count=(bands.len()) { (active) " in force of " (bands.len()) } }
            div { dt { "Records" } dd #records data-next-seq=(log.next_seq()) { (log.len()) } }
            (crate::html::cost_figure(&cost))
        }
        p.live { span #live-status { "Reload the page to see what was recorded since." } }

        section #timeline-section {
            h2 { "Timeline" }
            p.legend {
                span.key.raw { "raw tokens" } span.key.inview { "in view" }
                span.key.manual { "manual" } span.key.auto { "auto" } span.key.assistant { "assistant" }
                span.key.summary { "summary" } span.key.mechanical { "strip or omit" }
                span.key.revoked { "revoked" } span.key.failed { "failed attempt" } span.key.orphaned { "orphaned attempt" }
            }
            (svg(timeline_svg))
            p.hint { "Select a band to see its compaction." }
        }
        section #curve-section {
            h2 { "Tokens over the conversation's life" }
            // A picture of its own: it costs a projection per compaction,
            // so the page does not wait for it (and reads without it).
            img.curve #curve src=(ctx.href(&format!("{}/curve.svg?seq={}", crate::html::conversation_path(id), log.next_seq())))
                alt="Raw and in-view tokens after each turn; each compaction shows as a drop of the in-view line."
                width="1000" height="174";
            p.legend { span.key.raw { "raw tokens" } span.key.inview { "in view" } span.key.drop { "a compaction or reset" } }
        }
        section #compaction {
            h2 { "Compactions" }
            @if let Some(b) = selected { (details(ctx, log, &view, b, id, &link)) }
            @else if let Some(n) = opts.selected {
                p.error { "There is no compaction " (n) " in this conversation; it has " (bands.len()) "." }
            }
            @if bands.is_empty() { p.muted { "Nothing has been compacted." } }
            @else { (compaction_table(ctx, log, &bands, opts.selected, id, &link)) }
            @if !unfinished.is_empty() {
                h3 { "Attempts that left no compaction" }
                ul.attempts { @for a in &unfinished { li class=(format!("attempt {}", a.state())) {
                    strong { (a.state()) } " " (source_name(a.started.source)) " compaction of turns "
                    (a.started.from_turn + 1) "–" (a.started.to_turn + 1) " with " (a.started.summarizer)
                    @if let Some(e) = a.finished.as_ref().and_then(|f| f.error.as_deref()) { ": " (e) }
                    @else if a.finished.is_none() { ": the process ended before it finished (inert)" }
                } } }
            }
        }
        section #view-section {
            h2 { "What the model sees" }
            @if let Some((a, b)) = shown_turns {
                form.turns method="get" action=(here) {
                    "Turns "
                    input type="number" name="from" min="1" max=(log.turn_count()) value=(a + 1);
                    " to "
                    input type="number" name="to" min="1" max=(log.turn_count()) value=(b + 1);
                    @if let Some(n) = opts.selected { input type="hidden" name="c" value=(n); }
                    " " button type="submit" { "Show" }
                    @if a > 0 {
                        " " a href=(format!("{here}?from={}&to={}", a.saturating_sub(b - a + 1) + 1, a)) { "← earlier" }
                    }
                    @if (b as usize) + 1 < log.turn_count() {
                        " " a href=(format!("{here}?from={}&to={}", b + 2, (b + 1 + (b - a + 1)).min(log.turn_count() as u32))) { "later →" }
                    }
                }
                (crate::view::render(log, &view, &fates, (a, b), &number_of, &link))
            } @else {
                p.muted { "No turns yet." }
            }
        }
    };
    let events = ctx.href(&format!("{}/events", crate::html::conversation_path(id)));
    page(ctx, &title, Some((events, log.next_seq())), body)
}

/// The table of every compaction, with an undo or restore button each.
fn compaction_table(
    ctx: &Ctx,
    log: &Log,
    bands: &[Band],
    selected: Option<usize>,
    id: &str,
    link: &dyn Fn(usize) -> String,
) -> Markup {
    html! {
        table.compactions {
            thead { tr { th { "#" } th { "Turns" } th { "Source" } th { "What" } th { "Status" } th {} } }
            tbody {
                @for b in bands.iter().rev() {
                    @if let Body::Compaction(c) = &log.records()[b.index].body {
                        tr class=(format!("compaction {}{}", status_name(b.status), if selected == Some(b.number) { " selected" } else { "" })) data-number=(b.number) {
                            td { a href=(link(b.number)) { "#" (b.number) } }
                            td { (c.from_turn + 1) "–" (c.to_turn + 1) }
                            td { span class=(format!("source {}", source_name(c.source))) { (source_name(c.source)) } }
                            td { (c.describe().join(", ")) @if let Some(n) = &c.note { br; small.note { (n) } } }
                            td { (status_words(b.status)) }
                            td { (button(ctx, id, b, link)) }
                        }
                    }
                }
            }
        }
    }
}

/// As the command line says it, but "in force" for one that is; one in
/// force that decides nothing says that revoking it changes nothing.
fn status_words(s: Status) -> String {
    match s {
        Status::Active => "in force".into(),
        Status::Superseded { .. } | Status::NoEffect => {
            format!("{s}: revoking it changes nothing")
        }
        other => other.to_string(),
    }
}

/// The undo (or, for a revoked compaction, restore) button: a link to the
/// confirmation page, so it works without JavaScript. A compaction that
/// decides nothing in the view gets none: undoing it would change nothing
/// (its confirmation page, asked for by address, says so); a superseded
/// one links to the compaction that supersedes it.
fn button(ctx: &Ctx, id: &str, b: &Band, link: &dyn Fn(usize) -> String) -> Markup {
    match b.status {
        Status::Superseded { by, .. } => {
            return html! {
                a.superseded-by data-number=(b.number) data-by=(by) href=(link(by)) { "see #" (by) }
            };
        }
        Status::NoEffect => return html! { span.muted { "nothing to undo" } },
        _ => {}
    }
    let restore = b.status == Status::Revoked;
    let href = ctx.href(&format!(
        "{}/reset?n={}&restore={}",
        crate::html::conversation_path(id),
        b.number,
        u8::from(restore)
    ));
    html! {
        a class=(if restore { "button restore" } else { "button undo" }) data-number=(b.number) href=(href) {
            @if restore { "Restore" } @else { "Undo" }
        }
    }
}

/// The details of compaction `b`: summary or policies, note, and what it
/// keeps and loses of its range's facts.
fn details(
    ctx: &Ctx,
    log: &Log,
    view: &ctxfold_core::projection::View<'_>,
    b: &Band,
    id: &str,
    link: &dyn Fn(usize) -> String,
) -> Markup {
    let Body::Compaction(c) = &log.records()[b.index].body else {
        return html! {};
    };
    // The view it acts in: now when in force; for a deferred one, once it
    // comes into force; for a revoked one, were it appended again.
    let report = |v: &ctxfold_core::projection::View<'_>, range| {
        Retentions::new(log, v).of(&[range], true).pop()
    };
    let kept: Option<Kept> = b.covered.and_then(|range| match b.status {
        Status::Active => report(view, range),
        // What is in view of its range is another compaction's doing.
        Status::Superseded { .. } | Status::NoEffect => None,
        Status::Deferred(t) => report(&project_as_of(log, t), range),
        Status::Revoked | Status::OutOfBounds => {
            let mut again = c.as_ref().clone();
            again.deferred_until_turn = None;
            let extra = [again];
            let v = project_with(log, &extra, (log.turn_count() as u32).saturating_sub(1));
            report(&v, range)
        }
    });
    let tally = |name: &str, t: &Tally| -> Markup {
        html! {
            li { strong { (name) } ": " (t.kept) " of " (t.total) " kept"
                @if !t.lost.is_empty() {
                    "; lost: " @for (k, l) in t.lost.iter().take(12).enumerate() { @if k > 0 { ", " } code { (l) } }
                    @if t.lost.len() > 12 { " and " (t.lost.len() - 12) " more" }
                }
            }
        }
    };
    html! {
        article.details #details data-number=(b.number) data-source=(source_name(c.source)) {
            h3 { "Compaction #" (b.number) ": turns " (c.from_turn + 1) "–" (c.to_turn + 1)
                " by " (source_name(c.source)) " (" (status_words(b.status)) ")" }
            @if let Some(n) = &c.note { p.note { "Note: " (n) } }
            @let policies = c.describe();
            @if !policies.is_empty() { p { "Does: " (policies.join(", ")) } }
            @if let Some(s) = &c.summary {
                h4 { "Summary" }
                pre.summary { (s.text) }
            }
            @if let Some(f) = &c.budget {
                (firing(f))
            }
            @if let Status::Superseded { by, more } = b.status {
                p.superseded #superseded data-by=(by) {
                    "Superseded: " a href=(link(by)) { "#" (by) }
                    @if more > 0 { " and " (more) " more" }
                    " decide everything it covers, so the model sees their work, not its. Revoking it changes nothing in the view until "
                    a href=(link(by)) { "#" (by) } " is revoked."
                }
            } @else if b.status == Status::NoEffect {
                p.no-effect #no-effect {
                    "No effect: the view is the same without it (nothing in its range it acts on, or what it does is done under it too). Revoking it changes nothing."
                }
            } @else if let Some(k) = &kept {
                h4 { @if b.status == Status::Active { "What it keeps and loses" } @else { "What it would keep and lose in force" } }
                p { "Its range: " (tokens(k.tokens.0)) " tokens raw → " (tokens(k.tokens.1)) " in view" }
                ul.kept {
                    (tally("files", &k.files))
                    (tally("diagnostics", &k.diagnostics))
                    (tally("requests", &k.requests))
                }
            } @else {
                p.muted { "Its range lies outside the log: it folds nothing." }
            }
            p { (button(ctx, id, b, link)) }
        }
    }
}

/// What an automatic firing worked to: the budget (window, fixed part,
/// reserve, trigger, target), the request's size before and after, and the
/// steps it took.
fn firing(f: &ctxfold_core::budget::Firing) -> Markup {
    let b = &f.budget;
    let row = |name: &str, n: usize| {
        html! { li { strong { (name) } ": " (tokens(n)) " tokens" } }
    };
    html! {
        section.firing #firing {
            h4 { "The budget it worked to" }
            ul.budget {
                (row("window", b.window))
                (row("fixed part (sent with every request besides the conversation)", b.fixed))
                (row("reserve for the reply", b.reserve))
                (row("trigger", b.trigger))
                (row("target", b.target))
                @if let (Some(aim), Some(step)) = (b.band_target, b.step_tokens) {
                    li { strong { "band target" } ": " (tokens(aim)) " tokens (the band holds the recent steps, ~"
                        (tokens(step)) " tokens each, so that firings are rare)" }
                }
            }
            p.sizes { "The request: " (tokens(f.before)) " → " (tokens(f.after)) " tokens" }
            @if !f.escalation.is_empty() {
                p.steps { "Steps: "
                    @for (k, s) in f.steps().iter().enumerate() { @if k > 0 { " → " } code { (s) } }
                }
            }
        }
    }
}

/// The confirmation page of an undo (`restore == false`) or restore of
/// compaction `number`, whose form posts the reset.
pub fn confirm(
    ctx: &Ctx,
    meta: &ConversationMeta,
    log: &Log,
    number: usize,
    restore: bool,
) -> Option<Markup> {
    let bands = timeline::bands(log);
    let b = bands.iter().find(|b| b.number == number)?;
    let Body::Compaction(c) = &log.records()[b.index].body else {
        return None;
    };
    let id = &meta.id;
    let verb = if restore { "Restore" } else { "Undo" };
    // What it would do, measured as the reset itself will be.
    let unchanged = match ctxfold_compactor::reset::plan_reset(log, restore, Some(number), "") {
        Ok(r) if !r.view_changes => Some(
            r.named
                .and_then(|(n, s)| ctxfold_compactor::reset::unchanged_because(n, s, restore))
                .unwrap_or_else(|| "nothing it covers would look different".into()),
        ),
        _ => None,
    };
    Some(page(
        ctx,
        &format!("{verb} compaction #{number}"),
        None,
        html! {
            h1 { (verb) " compaction #" (number) "?" }
            p { "Turns " (c.from_turn + 1) "–" (c.to_turn + 1) " by " (source_name(c.source)) ": "
                (c.describe().join(", ")) " (" (status_words(b.status)) ")." }
            @if let Some(why) = &unchanged {
                p.unchanged #unchanged { "This changes nothing the model sees: " (why) ". It appends a reset record all the same; nothing is deleted." }
            } @else {
                p { @if restore {
                    "This appends a reset record that puts the compaction back in force. Nothing is deleted."
                } @else {
                    "This appends a reset record that revokes the compaction: the model sees its turns again. Nothing is deleted; Restore brings it back."
                } }
            }
            form.confirm method="post" action=(ctx.href(&format!("{}/reset", crate::html::conversation_path(id)))) {
                input type="hidden" name="csrf" value=(ctx.csrf);
                input type="hidden" name="n" value=(number);
                input type="hidden" name="restore" value=(u8::from(restore));
                button #confirm type="submit" { (verb) }
                " " a href=(ctx.href(&crate::html::conversation_path(id))) { "Cancel" }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::compaction::{ReasoningPolicy, Source};
    use ctxfold_core::{Compaction, Record};

    fn meta() -> ConversationMeta {
        ConversationMeta {
            id: "c1".into(),
            title: Some("<b>title</b>".into()),
            created_at: "2026-12-01T00:00:00Z".into(),
            last_used_at: "2026-12-01T00:00:00Z".into(),
            imported_from: None,
            extras: Default::default(),
        }
    }

    fn log() -> Log {
        log_with(None)
    }

    /// Four turns, the first three stripped of reasoning by an automatic
    /// compaction that carries `budget`.
    fn log_with(budget: Option<ctxfold_core::budget::Firing>) -> Log {
        let mut log = Log::new();
        for k in 0..4 {
            for b in [
                Body::TurnStart,
                Body::User {
                    content: format!("question {k} <script>"),
                    author: None,
                },
                Body::Reasoning {
                    content: "thinking ".repeat(40),
                },
                Body::Assistant {
                    content: format!("answer {k}"),
                },
            ] {
                let seq = log.next_seq();
                log.push(Record::new(seq, "t", b));
            }
        }
        let mut c = Compaction::new(0, 2, Source::Auto);
        c.reasoning = Some(ReasoningPolicy::Strip);
        c.budget = budget;
        let seq = log.next_seq();
        log.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
        log
    }

    #[test]
    fn a_selected_band_shows_its_details_and_an_undo_button() {
        let opts = Options {
            selected: Some(1),
            ..Options::default()
        };
        let html = render(&Ctx::default(), &meta(), &log(), &opts).into_string();
        assert_eq!(
            html.matches("<rect class=\"band auto active selected\"")
                .count(),
            1
        );
        assert!(
            html.contains(
                r#"<article class="details" id="details" data-number="1" data-source="auto">"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"class="button undo""#), "{html}");
        assert!(html.contains("/c/c1/reset?n=1&amp;restore=0"), "{html}");
        // Beside the view: the selected compaction's turns (1–3 of 4).
        assert!(
            html.contains(r#"name="to" min="1" max="4" value="3""#),
            "{html}"
        );
        // Text from the log and the metadata is escaped.
        assert!(html.contains("&lt;b&gt;title&lt;/b&gt;") && !html.contains("<b>title"));
        assert!(!html.contains("<script>"));
    }

    #[test]
    fn an_automatic_firing_shows_its_budget_sizes_and_steps() {
        use ctxfold_core::budget::{Budget, Escalation, Firing};
        let opts = Options {
            selected: Some(1),
            ..Options::default()
        };
        // Without a budget (compactions before it, or by hand): no section.
        let plain = render(&Ctx::default(), &meta(), &log(), &opts).into_string();
        assert!(!plain.contains("firing"), "{plain}");
        let log = log_with(Some(Firing {
            budget: Budget {
                window: 40_000,
                fixed: 19_000,
                reserve: 2_500,
                trigger: 32_875,
                target: 28_250,
                band_target: None,
                step_tokens: None,
            },
            before: 34_100,
            after: 27_900,
            escalation: vec![Escalation::Rule, Escalation::Strip, Escalation::ShrinkTail],
            summary_budget: None,
            shortened: 0,
            handles_only: 0,
        }));
        let html = render(&Ctx::default(), &meta(), &log, &opts).into_string();
        for want in [
            r#"<section class="firing" id="firing">"#,
            "<li><strong>window</strong>: 40,000 tokens</li>",
            "<li><strong>fixed part (sent with every request besides the conversation)</strong>: 19,000 tokens</li>",
            "<li><strong>reserve for the reply</strong>: 2,500 tokens</li>",
            "<li><strong>trigger</strong>: 32,875 tokens</li>",
            "<li><strong>target</strong>: 28,250 tokens</li>",
            "The request: 34,100 → 27,900 tokens",
            "Steps: <code>rule</code> → <code>strip</code> → <code>shrink_tail</code>",
        ] {
            assert!(html.contains(want), "{want}: {html}");
        }
        // The band's tooltip says the sizes too.
        assert!(html.contains("request ~34,100 → ~27,900 tokens"), "{html}");
    }

    #[test]
    fn an_empty_or_odd_log_renders() {
        let opts = Options {
            selected: Some(7),
            turns: Some((5, 2)),
            window: Some(1000),
            ..Options::default()
        };
        let empty = render(&Ctx::default(), &meta(), &Log::new(), &opts).into_string();
        assert!(empty.contains("No turns yet."), "{empty}");
        assert!(empty.contains("There is no compaction 7"), "{empty}");
        // A compaction whose range lies outside the log, and an orphaned
        // attempt.
        let mut log = log();
        let seq = log.next_seq();
        log.push(Record::new(
            seq,
            "t",
            Body::Compaction(Box::new(Compaction::new(40, 50, Source::User))),
        ));
        let seq = log.next_seq();
        let started = ctxfold_core::attempt::Started {
            from_turn: 0,
            to_turn: 1,
            from_seq: 0,
            to_seq: 5,
            source: Source::Auto,
            summarizer: "local/m".into(),
        };
        log.push(Record::new(seq, "t", started.body()));
        let opts = Options {
            selected: Some(2),
            ..opts
        };
        let html = render(&Ctx::default(), &meta(), &log, &opts).into_string();
        assert!(html.contains("out of bounds"), "{html}");
        assert!(html.contains("Its range lies outside the log"), "{html}");
        assert!(html.contains(r#"<li class="attempt orphaned">"#), "{html}");
        assert!(
            html.contains("0.0% of 1,000") || html.contains("% of 1,000"),
            "{html}"
        );
    }

    #[test]
    fn turn_windows_stay_inside_the_log() {
        assert_eq!(turn_window(0, None), None);
        assert_eq!(turn_window(5, None), Some((0, 4)));
        assert_eq!(turn_window(30, None), Some((18, 29)));
        assert_eq!(turn_window(30, Some((40, 3))), Some((2, 29)));
        assert_eq!(turn_window(30, Some((0, 0))), Some((0, 0)));
    }
}
