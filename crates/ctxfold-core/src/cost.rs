//! What a conversation cost with ctxfold and what it would have cost
//! without, counted as the providers bill it: a price per model for input,
//! cache writes, cache reads and output, and the prefix each request shares
//! with the previous one read from the prompt cache, the rest written to it.
//!
//! The proxy keeps, per request, the figures of both sides in the metadata
//! of the answer's last record ([`REQUEST_META`], a [`Request`]): the
//! upstream's own usage for the request it was sent where the upstream
//! reported it, else ctxfold's estimate. Every report (`stats`, `/metrics`,
//! the pages, `run`) sums those same records with the same [`PriceTable`],
//! so they agree. No I/O here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::projection::Item;
use crate::record::Record;

/// The metadata key, on the last record of an answer the proxy recorded,
/// of that request's figures ([`Request`]).
pub const REQUEST_META: &str = "ctxfold_request";

/// When the built-in prices were taken from the providers' price pages.
pub const TABLE_DATE: &str = "2025-11-30";

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Input not read from the cache nor written to it.
    pub input: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Output, reasoning included.
    pub output: f64,
}

/// Built-in prices, by model family (the longest prefix of a model's name
/// wins). Anthropic bills a cache write at 1.25x the input price and a read
/// at 0.1x; OpenAI caches by itself, bills no write and a read at 0.1x to
/// 0.5x.
const BUILT_IN: &[(&str, [f64; 4])] = &[
    ("claude-opus-4-5", [5.0, 6.25, 0.5, 25.0]),
    ("claude-opus-4", [15.0, 18.75, 1.5, 75.0]),
    ("claude-sonnet-4", [3.0, 3.75, 0.3, 15.0]),
    ("claude-3-7-sonnet", [3.0, 3.75, 0.3, 15.0]),
    ("claude-3-5-sonnet", [3.0, 3.75, 0.3, 15.0]),
    ("claude-haiku-4", [1.0, 1.25, 0.1, 5.0]),
    ("claude-3-5-haiku", [0.8, 1.0, 0.08, 4.0]),
    ("gpt-5", [1.25, 1.25, 0.125, 10.0]),
    ("gpt-5-mini", [0.25, 0.25, 0.025, 2.0]),
    ("gpt-5-nano", [0.05, 0.05, 0.005, 0.4]),
    ("gpt-4.1", [2.0, 2.0, 0.5, 8.0]),
    ("gpt-4.1-mini", [0.4, 0.4, 0.1, 1.6]),
    ("gpt-4.1-nano", [0.1, 0.1, 0.025, 0.4]),
    ("gpt-4o", [2.5, 2.5, 1.25, 10.0]),
    ("gpt-4o-mini", [0.15, 0.15, 0.075, 0.6]),
    ("o3", [2.0, 2.0, 0.5, 8.0]),
    ("o4-mini", [1.1, 1.1, 0.275, 4.4]),
];

/// Prices by model family: the built-in ones with config's over them.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    entries: BTreeMap<String, Price>,
    /// Families config set (their prices are not the table's date's).
    configured: Vec<String>,
}

impl Default for PriceTable {
    fn default() -> Self {
        let entries = BUILT_IN
            .iter()
            .map(|&(k, [input, cache_write, cache_read, output])| {
                let p = Price {
                    input,
                    cache_write,
                    cache_read,
                    output,
                };
                (k.to_owned(), p)
            })
            .collect();
        PriceTable {
            entries,
            configured: Vec::new(),
        }
    }
}

impl PriceTable {
    /// Set (or add) a family's price, as config does.
    pub fn set(&mut self, family: &str, price: Price) {
        self.entries.insert(family.to_owned(), price);
        if !self.configured.iter().any(|c| c == family) {
            self.configured.push(family.to_owned());
        }
    }

    /// The families config set.
    pub fn configured(&self) -> &[String] {
        &self.configured
    }

    /// The family and price of `model`: the longest family its name (less
    /// a `provider/` prefix) starts with, or `None` (no price is invented).
    pub fn lookup(&self, model: &str) -> Option<(&str, Price)> {
        let name = model.rsplit('/').next().unwrap_or(model);
        let lower = name.to_ascii_lowercase();
        self.entries
            .iter()
            .filter(|(k, _)| lower.starts_with(k.as_str()))
            .max_by_key(|(k, _)| k.len())
            .map(|(k, p)| (k.as_str(), *p))
    }

    /// Every family and its price, in name order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Price)> {
        self.entries.iter().map(|(k, p)| (k.as_str(), p))
    }
}

/// Tokens of one request (or a sum), as a provider bills them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input neither read from the cache nor written to it.
    pub input: u64,
    /// Input written to the cache.
    pub cache_write: u64,
    /// Input read from the cache.
    pub cache_read: u64,
    /// Output.
    pub output: u64,
}

impl Tokens {
    /// The cost in micro-dollars (tokens times dollars per million tokens),
    /// rounded once per request.
    pub fn micros(&self, p: &Price) -> u64 {
        let c = self.input as f64 * p.input
            + self.cache_write as f64 * p.cache_write
            + self.cache_read as f64 * p.cache_read
            + self.output as f64 * p.output;
        c.round() as u64
    }

    /// All input, cached or not.
    pub fn all_input(&self) -> u64 {
        self.input + self.cache_write + self.cache_read
    }

    fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.cache_write += o.cache_write;
        self.cache_read += o.cache_read;
        self.output += o.output;
    }
}

/// Where a request's figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The upstream's `usage` for what was sent; the side without ctxfold
    /// is ctxfold's estimate scaled to it.
    Usage,
    /// ctxfold's estimate for both sides.
    Estimate,
}

/// One request's figures, with ctxfold (what was sent) and without (the
/// client's own history).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model the request named.
    pub model: String,
    /// Where the figures came from.
    pub source: Source,
    /// What was sent.
    pub with: Tokens,
    /// What the client's own history would have been.
    pub without: Tokens,
}

impl Request {
    /// The figures kept on `r`, if the proxy kept any (a log recorded
    /// before it did has none; they are left out, not guessed).
    pub fn of_record(r: &Record) -> Option<Request> {
        let v = r.metadata.as_ref()?.get(REQUEST_META)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// As kept in a record's metadata.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What ctxfold knew of a request when it sent it: estimated tokens of
/// both sides, all of the input and the part shared with the previous
/// request (read from the cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// The client's own request.
    pub without_input: u64,
    /// Of it, the prefix the previous request had.
    pub without_cached: u64,
    /// What was sent.
    pub with_input: u64,
    /// Of it, the prefix the previous request sent had.
    pub with_cached: u64,
}

impl Estimate {
    /// The request's figures: the upstream's `usage` object (as the
    /// upstream sent it: Anthropic's, chat completions' or Responses')
    /// for what was sent where there is one, the side without scaled by
    /// the same ratio of counted to estimated input; else the estimate,
    /// every input token not read from the cache written to it. `output`:
    /// the answer's estimated tokens, used where usage names none.
    pub fn request(&self, model: &str, output: u64, usage: Option<&Value>) -> Request {
        let estimated = |input: u64, cached: u64| Tokens {
            input: 0,
            cache_write: input.saturating_sub(cached),
            cache_read: cached.min(input),
            output,
        };
        let with_est = estimated(self.with_input, self.with_cached);
        let without_est = estimated(self.without_input, self.without_cached);
        match usage.and_then(reported) {
            Some(with) if with.all_input() > 0 => {
                let k = if self.with_input > 0 {
                    with.all_input() as f64 / self.with_input as f64
                } else {
                    1.0
                };
                let scale = |t: u64| (t as f64 * k).round() as u64;
                let without = Tokens {
                    input: 0,
                    cache_write: scale(without_est.cache_write),
                    cache_read: scale(without_est.cache_read),
                    output: with.output,
                };
                Request {
                    model: model.to_owned(),
                    source: Source::Usage,
                    with,
                    without,
                }
            }
            _ => Request {
                model: model.to_owned(),
                source: Source::Estimate,
                with: with_est,
                without: without_est,
            },
        }
    }
}

/// The tokens a `usage` object reports: Anthropic's `input_tokens` (what
/// was neither read nor written), `cache_creation_input_tokens` and
/// `cache_read_input_tokens`; chat completions' `prompt_tokens` with
/// `prompt_tokens_details.cached_tokens`; Responses' `input_tokens` with
/// `input_tokens_details.cached_tokens`. ctxfold's own wrapping of it
/// (`{"raw": usage, …}`) is read through.
pub fn reported(usage: &Value) -> Option<Tokens> {
    let u = usage.get("raw").filter(|r| r.is_object()).unwrap_or(usage);
    let n = |k: &str| u.get(k).and_then(Value::as_u64);
    let nested = |k: &str| {
        u.get(k)
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64)
    };
    if let Some(prompt) = n("prompt_tokens") {
        let read = nested("prompt_tokens_details").unwrap_or(0).min(prompt);
        return Some(Tokens {
            input: prompt - read,
            cache_write: 0,
            cache_read: read,
            output: n("completion_tokens").unwrap_or(0),
        });
    }
    let input = n("input_tokens")?;
    let output = n("output_tokens").unwrap_or(0);
    if let Some(read) = nested("input_tokens_details") {
        let read = read.min(input);
        return Some(Tokens {
            input: input - read,
            cache_write: 0,
            cache_read: read,
            output,
        });
    }
    Some(Tokens {
        input,
        cache_write: n("cache_creation_input_tokens").unwrap_or(0),
        cache_read: n("cache_read_input_tokens").unwrap_or(0),
        output,
    })
}

/// A view as a request sent it, for comparing with the next request's:
/// each item's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefix {
    keys: Vec<u64>,
}

impl Prefix {
    /// The identities of `items`. An item is the same in two views when
    /// it renders the same record the same way (or the same summary): the
    /// log is append-only, so its index names it.
    pub fn of(items: &[Item<'_>]) -> Prefix {
        Prefix {
            keys: items.iter().map(key).collect(),
        }
    }

    /// How many items, from the first, this view has in common with
    /// `previous`.
    pub fn same(&self, previous: &Prefix) -> usize {
        self.keys
            .iter()
            .zip(&previous.keys)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Tokens of the view `items` (this prefix's) that `previous` also
    /// had, from the first: `total`, the view's tokens, less those of the
    /// items after the common ones, so that only what is new is counted
    /// (most of a request is what the one before sent). 0 when nothing is
    /// in common or there is no previous request.
    pub fn shared_tokens(
        &self,
        previous: Option<&Prefix>,
        items: &[Item<'_>],
        total: u64,
        tokens: impl Fn(&Item<'_>) -> usize,
    ) -> u64 {
        let same = previous.map_or(0, |p| self.same(p));
        if same == 0 {
            return 0;
        }
        let fresh: u64 = (items.get(same..).unwrap_or(&[]).iter())
            .map(|i| tokens(i) as u64)
            .sum();
        total.saturating_sub(fresh)
    }
}

fn key(item: &Item<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    // What makes an item render differently, by kind; SipHash with fixed
    // keys, so a key is the same for the same item.
    let mut h = std::hash::DefaultHasher::new();
    match *item {
        Item::Event { index, .. } => (1u8, index).hash(&mut h),
        Item::StrippedCall { index, .. } => (2u8, index).hash(&mut h),
        Item::StrippedResult {
            index,
            keep_diagnostics,
            ..
        } => (3u8, index, keep_diagnostics).hash(&mut h),
        Item::Clipped {
            index,
            keep_chars,
            excerpt,
            ..
        } => (4u8, index, keep_chars, excerpt).hash(&mut h),
        Item::Summary {
            first,
            last,
            compaction,
            ..
        } => (5u8, first, last, compaction).hash(&mut h),
        Item::Preamble => 6u8.hash(&mut h),
    }
    h.finish()
}

/// What a request of a conversation sent, and what of it the previous
/// request of the conversation sent too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// Tokens of the fixed part (tools, instructions): it comes first, so
    /// a change to it breaks the whole prefix.
    pub fixed: u64,
    /// Tokens of the client's own conversation.
    pub without: u64,
    /// Tokens of the conversation sent (the view).
    pub with: u64,
    /// Of `with`, the tokens of the view the previous request's view had
    /// too, from the first ([`Prefix::shared_tokens`] against the
    /// previous request's `prefix`).
    pub shared: u64,
    /// The view sent.
    pub prefix: Prefix,
}

impl Sent {
    /// This request's estimate after `previous` (`None`: the first request
    /// this process sees of the conversation, all written to the cache).
    /// The client's history is append-only, so without ctxfold all of the
    /// previous request is read from the cache; with it, the view up to
    /// its first item that changed (a compaction since breaks it there).
    pub fn estimate(&self, previous: Option<&Sent>) -> Estimate {
        let without_input = self.fixed + self.without;
        let with_input = self.fixed + self.with;
        let (without_cached, with_cached) = match previous {
            Some(p) if p.fixed == self.fixed => (
                (p.fixed + p.without).min(without_input),
                (self.fixed + self.shared).min(with_input),
            ),
            _ => (0, 0),
        };
        Estimate {
            without_input,
            without_cached,
            with_input,
            with_cached,
        }
    }
}

/// One model's sums.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelCost {
    /// The model as the requests named it.
    pub model: String,
    /// The price-table family it was priced as, if any.
    pub family: Option<String>,
    /// Requests counted.
    pub requests: u64,
    /// Of them, those whose figures are the upstream's usage.
    pub from_usage: u64,
    /// Tokens with ctxfold.
    pub with: Tokens,
    /// Tokens without.
    pub without: Tokens,
    /// Micro-dollars with ctxfold (none without a price).
    pub with_micros: Option<u64>,
    /// Micro-dollars without.
    pub without_micros: Option<u64>,
}

/// Sums over requests, by model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostSum {
    /// By model, in name order.
    pub models: Vec<ModelCost>,
}

impl CostSum {
    /// Add one request's figures priced with `prices`.
    pub fn add(&mut self, r: &Request, prices: &PriceTable) {
        let i = match self
            .models
            .binary_search_by(|m| m.model.as_str().cmp(&r.model))
        {
            Ok(i) => i,
            Err(i) => {
                let family = prices.lookup(&r.model).map(|(f, _)| f.to_owned());
                let m = ModelCost {
                    model: r.model.clone(),
                    family,
                    with_micros: None,
                    without_micros: None,
                    ..ModelCost::default()
                };
                self.models.insert(i, m);
                i
            }
        };
        let m = &mut self.models[i];
        m.requests += 1;
        m.from_usage += u64::from(r.source == Source::Usage);
        m.with.add(&r.with);
        m.without.add(&r.without);
        if let Some((_, p)) = prices.lookup(&r.model) {
            *m.with_micros.get_or_insert(0) += r.with.micros(&p);
            *m.without_micros.get_or_insert(0) += r.without.micros(&p);
        }
    }

    /// Add every request kept in `records`.
    pub fn add_records<'a>(
        &mut self,
        records: impl IntoIterator<Item = &'a Record>,
        prices: &PriceTable,
    ) {
        for r in records {
            if let Some(req) = Request::of_record(r) {
                self.add(&req, prices);
            }
        }
    }

    /// Add another sum (another conversation's).
    pub fn merge(&mut self, other: &CostSum, prices: &PriceTable) {
        for o in &other.models {
            let i = match self.models.binary_search_by(|m| m.model.cmp(&o.model)) {
                Ok(i) => i,
                Err(i) => {
                    let family = prices.lookup(&o.model).map(|(f, _)| f.to_owned());
                    let m = ModelCost {
                        model: o.model.clone(),
                        family,
                        ..ModelCost::default()
                    };
                    self.models.insert(i, m);
                    i
                }
            };
            let m = &mut self.models[i];
            m.requests += o.requests;
            m.from_usage += o.from_usage;
            m.with.add(&o.with);
            m.without.add(&o.without);
            let plus = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            };
            m.with_micros = plus(m.with_micros, o.with_micros);
            m.without_micros = plus(m.without_micros, o.without_micros);
        }
    }

    /// Requests counted.
    pub fn requests(&self) -> u64 {
        self.models.iter().map(|m| m.requests).sum()
    }

    /// Of them, those whose figures are the upstream's usage.
    pub fn from_usage(&self) -> u64 {
        self.models.iter().map(|m| m.from_usage).sum()
    }

    /// Micro-dollars with and without ctxfold, over the priced models.
    pub fn micros(&self) -> (u64, u64) {
        self.models.iter().fold((0, 0), |(w, wo), m| {
            (
                w + m.with_micros.unwrap_or(0),
                wo + m.without_micros.unwrap_or(0),
            )
        })
    }

    /// The models without a price.
    pub fn unpriced(&self) -> impl Iterator<Item = &str> {
        self.models
            .iter()
            .filter(|m| m.family.is_none())
            .map(|m| m.model.as_str())
    }

    /// Where the figures came from, in words.
    pub fn source_words(&self) -> String {
        let (n, u) = (self.requests(), self.from_usage());
        let requests = if n == 1 {
            "1 request".to_owned()
        } else {
            format!("{n} requests")
        };
        match (n, u) {
            (0, _) => "no request recorded with its figures".to_owned(),
            (_, u) if u == n => format!("{requests}, from the upstream's usage"),
            (_, 0) => format!("{requests}, estimated (the upstream reported no usage)"),
            (_, u) => format!(
                "{requests}: {u} from the upstream's usage, {} estimated",
                n - u
            ),
        }
    }
}

/// Micro-dollars as dollars, the one way every report writes them: at
/// least cents, down to the micro-dollar where there is more.
pub fn dollars(micros: u64) -> String {
    let frac = format!("{:06}", micros % 1_000_000);
    let frac = frac.trim_end_matches('0');
    format!("${}.{frac:0<2}", micros / 1_000_000)
}

#[cfg(test)]
mod tests;
