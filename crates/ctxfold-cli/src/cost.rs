//! What conversations cost with ctxfold and without: the figures the proxy
//! kept on each answer it recorded ([`ctxfold_core::cost`]), priced with
//! config's price table. `stats` and `run` print it; `/metrics` and the
//! pages sum the same records with the same table.

use ctxfold_core::cost::{CostSum, TABLE_DATE, dollars};
use serde::Serialize;

use crate::context::Context;

/// The cost of some conversations, by model, with where the figures came
/// from and the models without a price.
#[derive(Debug, Clone, Serialize)]
pub struct CostReport {
    /// The conversations counted.
    pub conversations: Vec<String>,
    /// The sums, by model.
    pub sum: CostSum,
    /// Micro-dollars with ctxfold, over the priced models.
    pub with_micros: u64,
    /// Micro-dollars without.
    pub without_micros: u64,
    /// The built-in table's date.
    pub prices_of: &'static str,
    /// Models config priced (not the table's date's prices).
    pub configured: Vec<String>,
}

/// The cost of the conversations `ids` (each an id or a prefix of one),
/// from the requests the proxy recorded in them. A conversation the proxy
/// did not record (imported, `query`) counts no request.
pub fn conversations_cost(ctx: &Context, ids: &[String]) -> anyhow::Result<CostReport> {
    let settings = ctx.settings()?;
    let target = ctx.target()?;
    let mut sum = CostSum::default();
    let mut conversations = Vec::with_capacity(ids.len());
    for id in ids {
        let meta = target.resolve(Some(id))?;
        let log = target.load(&meta.id)?;
        sum.add_records(log.records(), &settings.prices);
        conversations.push(meta.id);
    }
    Ok(report(conversations, sum, &settings.prices))
}

/// The cost of conversation `id`, whose log is loaded already (`stats`
/// read it for its counts: loading it again doubled the command's time
/// and memory on a long log).
pub fn log_cost(
    id: String,
    log: &ctxfold_core::Log,
    prices: &ctxfold_core::cost::PriceTable,
) -> CostReport {
    let mut sum = CostSum::default();
    sum.add_records(log.records(), prices);
    report(vec![id], sum, prices)
}

/// The report of `sum`, over `conversations`.
pub fn report(
    conversations: Vec<String>,
    sum: CostSum,
    prices: &ctxfold_core::cost::PriceTable,
) -> CostReport {
    let (with_micros, without_micros) = sum.micros();
    CostReport {
        conversations,
        sum,
        with_micros,
        without_micros,
        prices_of: TABLE_DATE,
        configured: prices.configured().to_vec(),
    }
}

impl CostReport {
    /// "saved $X (N%)", or "costs $X more", or nothing to compare.
    fn saving(&self) -> String {
        let (w, wo) = (self.with_micros, self.without_micros);
        if wo >= w {
            let pct = if wo > 0 {
                (wo - w) as f64 * 100.0 / wo as f64
            } else {
                0.0
            };
            format!("saved {} ({pct:.0}%)", dollars(wo - w))
        } else {
            format!("{} more with ctxfold", dollars(w - wo))
        }
    }

    /// Where the prices came from, in words.
    fn prices_words(&self) -> String {
        let mut s = format!("prices of {}", self.prices_of);
        if !self.configured.is_empty() {
            s.push_str(&format!(", config's for {}", self.configured.join(", ")));
        }
        s
    }
}

impl std::fmt::Display for CostReport {
    /// A few lines: the cost with and without, the saving, where the
    /// figures came from; by model when there are several; a line per
    /// model without a price, saying how to set one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.sum.requests() == 0 {
            return writeln!(
                f,
                "cost: no request recorded by the proxy with its figures (conversations recorded before ctxfold kept them, or not through the proxy, count none)"
            );
        }
        let priced = self.sum.models.iter().filter(|m| m.family.is_some());
        if priced.clone().count() > 0 {
            writeln!(
                f,
                "cost: {} with ctxfold, {} without: {}",
                dollars(self.with_micros),
                dollars(self.without_micros),
                self.saving()
            )?;
        }
        if self.sum.models.len() > 1 {
            for m in priced {
                writeln!(
                    f,
                    "  {}: {} with, {} without ({} requests)",
                    m.model,
                    dollars(m.with_micros.unwrap_or(0)),
                    dollars(m.without_micros.unwrap_or(0)),
                    m.requests
                )?;
            }
        }
        writeln!(f, "  {}; {}", self.sum.source_words(), self.prices_words())?;
        for m in self.sum.unpriced() {
            writeln!(
                f,
                "  no price for {m}: set [prices.\"{m}\"] input, output, cache_write, cache_read (dollars per million tokens)"
            )?;
        }
        Ok(())
    }
}
