//! What the model sees beside the raw turns: for a window of turns, each
//! raw event on the left and what the view makes of it on the right — the
//! same, stripped to one line, folded into a summary (shown once, where it
//! starts), or dropped and why.

use std::collections::HashMap;

use ctxfold_core::Log;
use ctxfold_core::projection::{Item, View};
use ctxfold_core::record::Body;
use ctxfold_core::report::Fate;
use maud::{Markup, html};

use crate::html::{clip, tokens};

/// Longest text shown for one event; the rest is cut with an ellipsis.
pub const MAX_TEXT: usize = 700;

/// The kind of a raw record as the page labels it, and its text.
fn raw_text(body: &Body) -> Option<(&'static str, String)> {
    Some(match body {
        Body::User { content, .. } => ("user", content.clone()),
        Body::Assistant { content } => ("assistant", content.clone()),
        Body::Reasoning { content } => ("reasoning", content.clone()),
        Body::ToolCall {
            name, arguments, ..
        } => ("tool call", format!("{name} {arguments}")),
        Body::ToolResult {
            content, is_error, ..
        } => (
            if *is_error {
                "tool error"
            } else {
                "tool result"
            },
            content.clone(),
        ),
        Body::Structured { data } => ("structured", data.to_string()),
        Body::System { content } => ("system", content.clone()),
        _ => return None,
    })
}

/// The view side of a window of turns `first..=last` (0-based) of `log`,
/// whose view is `view` and record fates `fates`; `number_of` maps a
/// compaction's record index to its number.
pub fn render(
    log: &Log,
    view: &View<'_>,
    fates: &[Fate],
    (first, last): (u32, u32),
    number_of: &HashMap<usize, usize>,
    link: &dyn Fn(usize) -> String,
) -> Markup {
    let Some(lo) = log.turn_range(first).map(|r| r.start) else {
        return html! { p.muted { "No turns." } };
    };
    let hi = log.turn_range(last).map_or(log.len(), |r| r.end);
    // The stripped items of the window by record, and the summaries that
    // reach into it (shown once, at their first row in the window).
    let mut items: HashMap<usize, &Item<'_>> = HashMap::new();
    let mut summaries: Vec<(usize, usize, &str)> = Vec::new();
    for item in &view.items {
        let o = item.origin();
        if o.is_empty() || *o.start() >= hi || *o.end() < lo {
            continue;
        }
        match item {
            Item::Summary {
                first, last, text, ..
            } => summaries.push((*first, *last, text)),
            _ => {
                items.insert(*o.start(), item);
            }
        }
    }
    let mut shown = vec![false; summaries.len()];
    let records = log.records();
    let rows: Vec<Markup> = (lo..hi)
        .filter_map(|i| {
            let (kind, text) = raw_text(&records[i].body)?;
            let fate = fates[i];
            let summary = match fate {
                Fate::Summarized { .. } => summaries
                    .iter()
                    .position(|&(f, l, _)| f <= i && i <= l)
                    .filter(|&k| !std::mem::replace(&mut shown[k], true))
                    .map(|k| summaries[k].2),
                _ => None,
            };
            let cell = seen(fate, items.get(&i).copied(), summary, number_of, link);
            Some(html! {
                tr class=(format!("event {}", fate_class(fate))) data-seq=(records[i].seq) {
                    td.turn { (log.turn_of(i) + 1) }
                    td.raw {
                        span.kind { (kind) } " "
                        span.text { (clip(&text, MAX_TEXT)) }
                        small.tokens { " ~" (tokens(ctxfold_core::estimate::record_tokens(&records[i]))) }
                    }
                    td.seen { (cell) }
                }
            })
        })
        .collect();
    html! {
        table.view {
            thead { tr { th.turn { "Turn" } th { "Raw" } th { "What the model sees" } } }
            tbody { @for r in rows { (r) } }
        }
    }
}

fn fate_class(f: Fate) -> &'static str {
    match f {
        Fate::Hidden => "hidden",
        Fate::Kept => "kept",
        Fate::Stripped | Fate::Clipped => "stripped",
        Fate::ReasoningStripped { .. } | Fate::Omitted { .. } | Fate::Unpaired => "dropped",
        Fate::Summarized { .. } => "folded",
    }
}

/// The right-hand cell for a record: `summary` is the text of the summary
/// it is folded into when this row is the first of it shown.
fn seen(
    fate: Fate,
    item: Option<&Item<'_>>,
    summary: Option<&str>,
    number_of: &HashMap<usize, usize>,
    link: &dyn Fn(usize) -> String,
) -> Markup {
    let by = |c: usize| -> Markup {
        match number_of.get(&c) {
            Some(&n) => html! { a href=(link(n)) { "#" (n) } },
            None => html! { "a compaction" },
        }
    };
    match fate {
        Fate::Hidden => html! {},
        Fate::Kept => html! { span.same { "as it is" } },
        Fate::Stripped => {
            let line = match item {
                Some(it @ Item::StrippedResult { .. }) => it.stripped_line().unwrap_or_default(),
                Some(it @ Item::StrippedCall { record, .. }) => {
                    match (&record.body, it.stripped_arguments()) {
                        (Body::ToolCall { name, .. }, Some(args)) => format!("{name} {args}"),
                        _ => String::new(),
                    }
                }
                _ => String::new(),
            };
            html! { span.mark { "stripped" } " " span.text { (clip(&line, MAX_TEXT)) } }
        }
        Fate::Clipped => {
            let text = item.and_then(Item::clipped_text).unwrap_or_default();
            html! { span.mark { "clipped" } " " span.text { (clip(&text, MAX_TEXT)) } }
        }
        Fate::ReasoningStripped { compaction } => {
            html! { span.mark { "dropped" } " reasoning stripped by " (by(compaction)) }
        }
        Fate::Omitted { compaction } => {
            html! { span.mark { "dropped" } " tool call omitted by " (by(compaction)) }
        }
        Fate::Unpaired => {
            html! { span.mark { "dropped" } " a call or result without its partner" }
        }
        Fate::Summarized { compaction } => match summary {
            Some(text) => html! {
                span.mark { "summary" } " by " (by(compaction)) ": "
                span.text { (clip(text, MAX_TEXT * 2)) }
            },
            _ => html! { span.mark.folded { "folded" } " into the summary of " (by(compaction)) },
        },
    }
}
