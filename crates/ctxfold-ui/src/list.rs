//! The conversation list: newest activity first, with a filter box that
//! works as a plain form (the script also filters as one types).

use maud::{Markup, html};

use crate::data::Row;
use crate::html::{Ctx, page, percent, tokens, when};

/// Whether `row` matches the filter `q` (case-insensitive, on the title,
/// the id and the source).
pub fn matches(row: &Row, q: &str) -> bool {
    let q = q.trim().to_lowercase();
    q.is_empty()
        || row.id.to_lowercase().contains(&q)
        || row.origin.name().contains(&q)
        || row
            .title
            .as_deref()
            .is_some_and(|t| t.to_lowercase().contains(&q))
}

/// The list page of `rows` (already newest first), filtered by `q`, with
/// the conversations that could not be read named at the end.
pub fn render(ctx: &Ctx, rows: &[Row], broken: &[(String, String)], q: &str) -> Markup {
    let shown: Vec<&Row> = rows.iter().filter(|r| matches(r, q)).collect();
    page(
        ctx,
        "Conversations",
        None,
        html! {
            h1 { "Conversations" }
            form.filter method="get" action=(ctx.home()) {
                label for="q" { "Filter" }
                input #q type="search" name="q" value=(q) placeholder="title, id or source" autocomplete="off";
                button type="submit" { "Filter" }
            }
            p.count { (shown.len()) " of " (rows.len()) " conversations" }
            table #conversations.list {
                thead { tr {
                    th { "Title" } th { "Source" } th.num { "Turns" } th.num { "Raw tokens" }
                    th.num { "In view" } th.num { "Window" } th.num { "Compactions" } th.num { "Cost with / without" } th { "Last activity" }
                } }
                tbody {
                    @for r in &shown {
                        tr.conversation data-id=(r.id) data-filter=(format!("{} {} {}", r.title.as_deref().unwrap_or(""), r.id, r.origin.name()).to_lowercase()) {
                            td { a href=(ctx.href(&crate::html::conversation_path(&r.id))) {
                                (r.title.as_deref().unwrap_or("(untitled)"))
                            } br; small.id { (r.id) } }
                            td { span class=(format!("origin {}", r.origin.name())) { (r.origin.name()) } }
                            td.num { (r.figures.turns) }
                            td.num { (tokens(r.figures.raw)) }
                            td.num { (tokens(r.figures.view)) }
                            td.num { @match r.share() {
                                Some(s) => span title=(format!("of {} tokens", tokens(r.window.unwrap_or_default() as usize))) { (percent(s)) },
                                None => span.muted title="the model's window is not known" { "—" },
                            } }
                            td.num { (r.figures.compactions) }
                            td.num { (crate::html::cost_cell(&r.figures.cost)) }
                            td { (when(r.last_activity)) }
                        }
                    }
                }
            }
            @if shown.is_empty() {
                p.muted { @if rows.is_empty() { "No conversations in this store yet." } @else { "No conversation matches the filter." } }
            }
            @if !broken.is_empty() {
                h2 { "Could not be read" }
                ul.broken { @for (id, why) in broken { li { code { (id) } ": " (why) } } }
            }
        },
    )
}
