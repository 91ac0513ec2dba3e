//! The page layout and small formatting helpers. Escaping is maud's: every
//! value spliced into a template is escaped unless wrapped in
//! `PreEscaped`, which only the embedded SVG path data and assets use.

use maud::{DOCTYPE, Markup, PreEscaped, html};

/// The stylesheet, embedded so the pages work offline.
pub const CSS: &str = include_str!("../assets/ui.css");
/// The script for live updates and the list's filter; the pages read and
/// work without it.
pub const JS: &str = include_str!("../assets/ui.js");

/// What every page shares: where the pages are mounted (`""` for `ctxfold
/// ui`, `"/ui"` under the proxy).
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    /// The path prefix of every link.
    pub base: String,
    /// The form token of the browser's session (see
    /// [`crate::security`]).
    pub csrf: String,
}

/// What a conversation id may not hold as it is in a path segment.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The cost figure of a conversation's page: with ctxfold and without,
/// where the figures came from, and the models without a price.
pub fn cost_figure(cost: &ctxfold_core::cost::CostSum) -> Markup {
    use ctxfold_core::cost::{TABLE_DATE, dollars};
    let (with, without) = cost.micros();
    let unpriced: Vec<&str> = cost.unpriced().collect();
    html! {
        div title=(format!("{}; prices of {TABLE_DATE}", cost.source_words())) {
            dt { "Cost with / without ctxfold" }
            dd #cost data-with-micros=(with) data-without-micros=(without) data-requests=(cost.requests()) data-from-usage=(cost.from_usage()) {
                @if cost.requests() == 0 {
                    span.muted title="no request recorded by the proxy with its figures" { "—" }
                } @else {
                    (dollars(with)) " / " (dollars(without))
                    small.source { " (" (cost.source_words()) ")" }
                    @for m in &unpriced {
                        br; small.unpriced { "no price for " (m) ": set [prices.\"" (m) "\"]" }
                    }
                }
            }
        }
    }
}

/// The list's cost cell: with ctxfold and without.
pub fn cost_cell(cost: &ctxfold_core::cost::CostSum) -> Markup {
    let (with, without) = cost.micros();
    html! {
        @if cost.requests() == 0 {
            span.muted title="no request recorded by the proxy with its figures" { "—" }
        } @else {
            span.cost data-with-micros=(with) data-without-micros=(without) title=(cost.source_words()) {
                (ctxfold_core::cost::dollars(with)) " / " (ctxfold_core::cost::dollars(without))
            }
        }
    }
}

/// The path of conversation `id`'s page, `id` percent-encoded (ids are
/// folder names: they may hold `?`, `#`, `%` or spaces).
pub fn conversation_path(id: &str) -> String {
    format!("/c/{}", percent_encoding::utf8_percent_encode(id, SEGMENT))
}

impl Ctx {
    /// The link to `path` (which starts with `/`).
    pub fn href(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// The link to the conversation list.
    pub fn home(&self) -> String {
        if self.base.is_empty() {
            "/".into()
        } else {
            self.base.clone()
        }
    }
}

/// A whole page: `title`, the body, and for a conversation page the
/// attributes the live-update script reads (its events URL and the log's
/// next `seq` the page was rendered at).
pub fn page(ctx: &Ctx, title: &str, live: Option<(String, u64)>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " — ctxfold" }
                link rel="stylesheet" href=(ctx.href("/assets/ui.css"));
                script defer src=(ctx.href("/assets/ui.js")) {}
            }
            body {
                header.top {
                    a.brand href=(ctx.home()) { "ctxfold" }
                    span.where { "conversations" }
                }
                @match live {
                    Some((events, seq)) => main #main data-events=(events) data-seq=(seq) { (body) },
                    None => main #main { (body) },
                }
            }
        }
    }
}

/// An error page: the status line's words and what the user can do.
pub fn error_page(ctx: &Ctx, heading: &str, message: &str) -> Markup {
    page(
        ctx,
        heading,
        None,
        html! {
            h1 { (heading) }
            p.error { (message) }
            p { a href=(ctx.home()) { "Back to the conversations" } }
        },
    )
}

/// A token count with thousands separators: `12,345`.
pub fn tokens(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share as a percentage with one decimal: `12.5%`.
pub fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A timestamp as people read it, to the minute, in UTC.
pub fn when(ts: Option<jiff::Timestamp>) -> String {
    match ts {
        Some(t) => t.strftime("%Y-%m-%d %H:%M UTC").to_string(),
        None => "—".into(),
    }
}

/// At most `max` characters of `text`, an ellipsis marking a cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// Raw SVG markup built by [`crate::timeline`] and [`crate::curve`] from
/// numbers and escaped text only.
pub fn svg(markup: String) -> PreEscaped<String> {
    PreEscaped(markup)
}

/// `text` escaped for an SVG built as a string (maud escapes everything
/// else).
pub fn escape(text: &str) -> String {
    maud::html! { (text) }.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text() {
        assert_eq!(tokens(0), "0");
        assert_eq!(tokens(1234567), "1,234,567");
        assert_eq!(tokens(100), "100");
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 2), "hi");
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }

    #[test]
    fn ids_are_one_path_segment_whatever_they_hold() {
        assert_eq!(
            conversation_path("20261202-0140-ab_c"),
            "/c/20261202-0140-ab_c"
        );
        assert_eq!(
            conversation_path("notes v2.x?#%é"),
            "/c/notes%20v2.x%3F%23%25%C3%A9"
        );
    }
}
