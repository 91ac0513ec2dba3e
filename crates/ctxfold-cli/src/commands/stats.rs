//! `ctxfold stats [ID]`: tokens by kind before and after projection, the
//! model's window and the share of it a request uses (the view and the
//! fixed part: what every request carries besides the conversation, where
//! the proxy or `query` recorded it: the tools, `query`'s system prompt,
//! Responses' instructions; a system prompt the conversation records is in
//! the view), and the cost with ctxfold and without of the requests the
//! proxy recorded (`crate::cost`). `--all`: the cost of every
//! conversation, and the total.

use ctxfold_core::projection::{Item, for_each_item};
use ctxfold_core::{Body, Record};
use ctxfold_tokens::TokenEstimator;
use serde::Serialize;

use crate::cli::StatsArgs;
use crate::context::Context;
use crate::cost::{CostReport, conversations_cost, log_cost};
use crate::render::Report;
use crate::settings::Settings;

/// Kinds as `stats` lists them, in order.
const KINDS: [&str; 7] = [
    "user",
    "assistant",
    "reasoning",
    "tool_calls",
    "tool_results",
    "summaries",
    "system",
];

fn kind_of(r: &Record) -> Option<usize> {
    Some(match r.body {
        Body::User { .. } => 0,
        Body::Assistant { .. } | Body::Structured { .. } => 1,
        Body::Reasoning { .. } => 2,
        Body::ToolCall { .. } => 3,
        Body::ToolResult { .. } => 4,
        Body::System { .. } => 6,
        _ => return None,
    })
}

/// Where the window figure came from.
fn window(model: Option<&str>, settings: &Settings) -> (Option<u32>, String) {
    let Some(m) = model else {
        return (
            None,
            "unknown (name the model with -m provider/model)".into(),
        );
    };
    let mut configured = None;
    if let Ok((provider, name)) = settings.providers.resolve(m) {
        configured = provider.config().context_window;
        match provider.context_window(&name) {
            Ok(Some(w)) => {
                return (
                    Some(w),
                    format!("{m}: from the provider, the table or config"),
                );
            }
            Ok(None) => {}
            Err(e) => {
                crate::render::say!("warning: {m}: cannot ask the provider for its window: {e}")
            }
        }
    }
    match ctxfold_tokens::context_window(m).or(configured) {
        Some(w) => (Some(w), format!("{m}: from the built-in table or config")),
        None => (None, format!("unknown for {m}")),
    }
}

/// Tokens by kind, raw and in view, and the share of the window.
#[derive(Serialize)]
pub struct Stats {
    id: String,
    estimator: String,
    exact: bool,
    tokens: ByKind,
    total: RawView,
    fixed: Option<usize>,
    request: usize,
    window: Option<u32>,
    window_source: String,
    share_of_window: Option<f64>,
    cost: CostReport,
}

/// `stats` of one conversation, or the cost of all (`--all`).
#[derive(Serialize)]
#[serde(untagged)]
pub enum StatsReport {
    /// One conversation.
    One(Box<Stats>),
    /// Every conversation's cost, and the total.
    All(AllCost),
}

impl Report for StatsReport {}

impl std::fmt::Display for StatsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatsReport::One(s) => s.fmt(f),
            StatsReport::All(a) => a.fmt(f),
        }
    }
}

/// The cost of every conversation the store holds.
#[derive(Serialize)]
pub struct AllCost {
    conversations: Vec<ConversationCost>,
    total: CostReport,
}

/// One conversation's line of [`AllCost`].
#[derive(Serialize)]
struct ConversationCost {
    id: String,
    title: Option<String>,
    requests: u64,
    from_usage: u64,
    with_micros: u64,
    without_micros: u64,
}

fn all(ctx: &Context) -> anyhow::Result<StatsReport> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let listing = target.store.list()?;
    let mut total = ctxfold_core::cost::CostSum::default();
    let mut rows = Vec::new();
    for meta in listing.conversations {
        let one = conversations_cost(ctx, std::slice::from_ref(&meta.id))?;
        total.merge(&one.sum, &settings.prices);
        rows.push(ConversationCost {
            id: meta.id,
            title: meta.title,
            requests: one.sum.requests(),
            from_usage: one.sum.from_usage(),
            with_micros: one.with_micros,
            without_micros: one.without_micros,
        });
    }
    let ids = rows.iter().map(|r| r.id.clone()).collect();
    Ok(StatsReport::All(AllCost {
        conversations: rows,
        total: crate::cost::report(ids, total, &settings.prices),
    }))
}

impl std::fmt::Display for AllCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use ctxfold_core::cost::dollars;
        writeln!(
            f,
            "{:<24}{:>10}{:>14}{:>14}  title",
            "id", "requests", "with", "without"
        )?;
        for c in self.conversations.iter().filter(|c| c.requests > 0) {
            let title: String = c.title.as_deref().unwrap_or("").chars().take(40).collect();
            writeln!(
                f,
                "{:<24}{:>10}{:>14}{:>14}  {title}",
                c.id,
                c.requests,
                dollars(c.with_micros),
                dollars(c.without_micros)
            )?;
        }
        let none = self
            .conversations
            .iter()
            .filter(|c| c.requests == 0)
            .count();
        if none > 0 {
            writeln!(
                f,
                "({none} conversations without requests recorded by the proxy not listed)"
            )?;
        }
        write!(f, "total {}", self.total)
    }
}

/// Raw and in-view tokens of one kind, or of all.
#[derive(Serialize)]
struct RawView {
    raw: usize,
    view: usize,
}

/// Raw and in-view tokens of each of [`KINDS`], in order.
struct ByKind {
    raw: [usize; KINDS.len()],
    view: [usize; KINDS.len()],
}

impl Serialize for ByKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(KINDS.len()))?;
        for (i, k) in KINDS.iter().enumerate() {
            let v = RawView {
                raw: self.raw[i],
                view: self.view[i],
            };
            m.serialize_entry(k, &v)?;
        }
        m.end()
    }
}

pub fn run(ctx: &Context, args: StatsArgs) -> anyhow::Result<StatsReport> {
    if args.all {
        return all(ctx);
    }
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let model = args.model.as_deref();
    let meta = target.resolve(args.conversation.id.as_deref())?;
    let log = target.load_once(&meta.id)?;
    // Without a model: the heuristic, the very one the compaction report
    // counts with (ctxfold_core::estimate), so the two agree.
    let est: Box<dyn TokenEstimator> = match model {
        Some(m) => ctxfold_tokens::for_model(m),
        None => Box::new(ctxfold_tokens::Heuristic::default()),
    };
    let mut raw = [0usize; KINDS.len()];
    for r in log.records() {
        if let Some(k) = kind_of(r) {
            raw[k] += est.record_tokens(r);
        }
    }
    // Counted as the view is made, not made and then counted: a million
    // items are 60 MB, a quarter of the log's file (issue 48).
    let mut after = [0usize; KINDS.len()];
    for_each_item(log, |item| {
        let k = match item {
            Item::Event { record, .. } | Item::Clipped { record, .. } => kind_of(record),
            Item::StrippedCall { .. } => Some(3),
            Item::StrippedResult { .. } => Some(4),
            Item::Summary { .. } => Some(5),
            Item::Preamble => Some(0),
        };
        if let Some(k) = k {
            after[k] += est.item_tokens(&item);
        }
    });
    let (total_raw, total_after): (usize, usize) = (raw.iter().sum(), after.iter().sum());
    // What every request carries besides the log's view, as the proxy or
    // `query` last sent it: the window holds both.
    let fixed = meta.fixed_tokens();
    let request = total_after + fixed.unwrap_or(0);
    let (window, window_from) = window(model, settings);
    let share = window.map(|w| request as f64 / w as f64);
    let exact = est.name() != "heuristic";
    let cost = log_cost(meta.id.clone(), log, &settings.prices);
    Ok(StatsReport::One(Box::new(Stats {
        id: meta.id,
        estimator: est.name().to_owned(),
        exact,
        tokens: ByKind { raw, view: after },
        total: RawView {
            raw: total_raw,
            view: total_after,
        },
        fixed,
        request,
        window,
        window_source: window_from,
        share_of_window: share,
        cost,
    })))
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (raw, after) = (&self.tokens.raw, &self.tokens.view);
        let mut s = format!("{:<14}{:>12}{:>12}\n", "tokens", "raw", "in view");
        for (i, k) in KINDS.iter().enumerate() {
            s.push_str(&format!(
                "{:<14}{:>12}{:>12}\n",
                k.replace('_', " "),
                raw[i],
                after[i]
            ));
        }
        s.push_str(&format!(
            "{:<14}{:>12}{:>12}\n",
            "total", self.total.raw, self.total.view
        ));
        if let Some(f) = self.fixed {
            s.push_str(&format!(
                "{:<14}{:>12}{:>12}   (sent with every request besides the conversation)\n",
                "fixed part", "", f
            ));
            s.push_str(&format!(
                "{:<14}{:>12}{:>12}\n",
                "request", "", self.request
            ));
        }
        let how = if self.exact {
            "exact".to_owned()
        } else {
            format!(
                "estimated: characters / {}",
                ctxfold_core::estimate::CHARS_PER_TOKEN
            )
        };
        s.push_str(&format!("counted with {} ({how})\n", self.estimator));
        let window_from = &self.window_source;
        match (self.window, self.share_of_window) {
            (Some(w), Some(sh)) => s.push_str(&format!(
                "window: {w} tokens ({window_from}); the request uses {:.1}%\n",
                sh * 100.0
            )),
            _ => s.push_str(&format!("window: {window_from}\n")),
        }
        s.push_str(&self.cost.to_string());
        f.write_str(&s)
    }
}
