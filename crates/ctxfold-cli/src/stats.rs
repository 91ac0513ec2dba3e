//! `ctxfold stats [ID]`: tokens by kind before and after projection, the
//! model's window and the share of it a request uses (the view and the
//! fixed part: system prompt and tools, where the proxy or `query` recorded it).

use ctxfold_core::projection::{Item, project};
use ctxfold_core::{Body, Record};
use ctxfold_tokens::TokenEstimator;
use serde_json::json;

use crate::render::Printer;
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

pub fn stats(
    target: &crate::store::Target,
    id: Option<&str>,
    model: Option<&str>,
    settings: &Settings,
    out: &Printer,
) -> anyhow::Result<()> {
    let meta = target.resolve(id)?;
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
    let view = project(log);
    let mut after = [0usize; KINDS.len()];
    for item in &view.items {
        let k = match item {
            Item::Event { record, .. } | Item::Clipped { record, .. } => kind_of(record),
            Item::StrippedCall { .. } => Some(3),
            Item::StrippedResult { .. } => Some(4),
            Item::Summary { .. } => Some(5),
            Item::Preamble => Some(0),
        };
        if let Some(k) = k {
            after[k] += est.item_tokens(item);
        }
    }
    let (total_raw, total_after): (usize, usize) = (raw.iter().sum(), after.iter().sum());
    // What every request carries besides the log's view, as the proxy or
    // `query` last sent it: the window holds both.
    let fixed = meta.fixed_tokens();
    let request = total_after + fixed.unwrap_or(0);
    let (window, window_from) = window(model, settings);
    let share = window.map(|w| request as f64 / w as f64);
    let exact = est.name() != "heuristic";
    let json = json!({
        "id": meta.id,
        "estimator": est.name(),
        "exact": exact,
        "tokens": KINDS.iter().enumerate().map(|(i, k)| (k.to_string(), json!({"raw": raw[i], "view": after[i]}))).collect::<serde_json::Map<_, _>>(),
        "total": {"raw": total_raw, "view": total_after},
        "fixed": fixed,
        "request": request,
        "window": window,
        "window_source": window_from,
        "share_of_window": share,
    });
    out.emit(&json, || {
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
            "total", total_raw, total_after
        ));
        if let Some(f) = fixed {
            s.push_str(&format!(
                "{:<14}{:>12}{:>12}   (system prompt and tools, sent with every request)\n",
                "fixed part", "", f
            ));
            s.push_str(&format!("{:<14}{:>12}{:>12}\n", "request", "", request));
        }
        let how = if exact {
            "exact".to_owned()
        } else {
            format!(
                "estimated: characters / {}",
                ctxfold_core::estimate::CHARS_PER_TOKEN
            )
        };
        s.push_str(&format!("counted with {} ({how})\n", est.name()));
        match (window, share) {
            (Some(w), Some(sh)) => s.push_str(&format!(
                "window: {w} tokens ({window_from}); the request uses {:.1}%\n",
                sh * 100.0
            )),
            _ => s.push_str(&format!("window: {window_from}\n")),
        }
        s
    })
}
