//! What `GET /metrics` reports, in the Prometheus text format: requests by
//! endpoint and outcome, upstream latency, compactions, estimated tokens
//! before and after compaction, errors and fail-opens, what the proxy
//! holds in memory, and the cost of the requests recorded with ctxfold and
//! without. No label ever holds anything from a request but the endpoint
//! (the cost's model label is a family of the price table, never the name
//! a request sent), so no key or content leaks.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// An endpoint label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Endpoint {
    /// `chat_completions`, `messages`, `passthrough`, …
    pub endpoint: String,
}

/// An endpoint and an HTTP status class label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    /// The endpoint.
    pub endpoint: String,
    /// `2xx`, `4xx`, `5xx`, or `error` when no answer came.
    pub status: String,
}

/// The cost labels: a family of the price table and the side.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostSide {
    /// The price table's family (`claude-sonnet-4`, `gpt-5`).
    pub model: String,
    /// `with` (what was sent) or `without` ctxfold (the client's history).
    pub side: String,
}

/// Where a request's cost figures came from: `usage` (the upstream's) or
/// `estimate`; and `unpriced` for a model with no price.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostSource {
    /// `usage`, `estimate` or `unpriced`.
    pub source: String,
}

/// A cache label: `conversations` (loaded logs), `readers`, `keys`,
/// `chains` (Responses answer ids).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Cache {
    /// The cache.
    pub cache: String,
}

fn upstream_seconds() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The proxy's counters.
pub struct Metrics {
    registry: Registry,
    /// Requests answered, by endpoint and status class.
    pub requests: Family<Outcome, Counter>,
    /// Time to the upstream's response head, by endpoint.
    pub upstream: Family<Endpoint, Histogram, fn() -> Histogram>,
    /// Compactions recorded.
    pub compactions: Counter,
    /// Estimated tokens of conversations as clients sent them.
    pub tokens_before: Counter,
    /// Estimated tokens of what went upstream.
    pub tokens_after: Counter,
    /// Requests sent upstream unchanged because preparing them failed.
    pub fail_open: Family<Endpoint, Counter>,
    /// Requests refused because preparing them failed (`on_error = "reject"`).
    pub rejected: Family<Endpoint, Counter>,
    /// Upstreams that could not be reached or broke off.
    pub upstream_errors: Family<Endpoint, Counter>,
    /// Answers recorded, and answers not recorded (log moved on, or the
    /// answer could not be read).
    pub answers: Family<Outcome, Counter>,
    /// Requests retried after the upstream said they were over the
    /// context window and ctxfold compacted them.
    pub overflow_retries: Counter,
    /// Requests that use the providers' context management, by who
    /// served it (status `provider`: passed through; `emulated`: ctxfold).
    pub context_management: Family<Outcome, Counter>,
    /// Micro-dollars of the requests recorded, by price family, with
    /// ctxfold and without (`stats` and the pages sum the same records).
    pub cost_microdollars: Family<CostSide, Counter>,
    /// Requests whose cost was counted, by where the figures came from
    /// (`unpriced`: a model with no price, counted nowhere in dollars).
    pub cost_requests: Family<CostSource, Counter>,
    /// Entries each cache holds (set when `/metrics` is read).
    pub cache_entries: Family<Cache, Gauge>,
    /// Bytes the conversation caches hold, as counted against
    /// `[proxy] cache_bytes`.
    pub cache_bytes: Family<Cache, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ctxfold_proxy");
        let m = Metrics {
            requests: Family::default(),
            upstream: Family::new_with_constructor(upstream_seconds),
            compactions: Counter::default(),
            tokens_before: Counter::default(),
            tokens_after: Counter::default(),
            fail_open: Family::default(),
            rejected: Family::default(),
            upstream_errors: Family::default(),
            answers: Family::default(),
            overflow_retries: Counter::default(),
            context_management: Family::default(),
            cost_microdollars: Family::default(),
            cost_requests: Family::default(),
            cache_entries: Family::default(),
            cache_bytes: Family::default(),
            registry: Registry::default(),
        };
        // Name, help, metric: one line each.
        macro_rules! register {
            ($(($name:literal, $help:literal, $field:ident)),* $(,)?) => {
                $(registry.register($name, $help, m.$field.clone());)*
            };
        }
        register![
            ("requests", "Requests answered", requests),
            (
                "upstream_seconds",
                "Time to the upstream's response head",
                upstream
            ),
            ("compactions", "Compactions recorded", compactions),
            (
                "tokens_before",
                "Estimated tokens of conversations as clients sent them",
                tokens_before
            ),
            (
                "tokens_after",
                "Estimated tokens of conversations as sent upstream",
                tokens_after
            ),
            (
                "fail_open",
                "Requests sent upstream unchanged because ctxfold could not prepare them",
                fail_open
            ),
            (
                "rejected",
                "Requests refused because ctxfold could not prepare them",
                rejected
            ),
            (
                "upstream_errors",
                "Upstreams unreachable or broken off",
                upstream_errors
            ),
            (
                "answers",
                "Answers recorded (status recorded) or not (skipped, unreadable)",
                answers
            ),
            (
                "context_management",
                "Requests using the providers' context management, passed through (provider) or emulated",
                context_management
            ),
            (
                "overflow_retries",
                "Requests compacted and retried once after an upstream context overflow",
                overflow_retries
            ),
            (
                "cost_microdollars",
                "Cost of the requests recorded in micro-dollars, by price family, with ctxfold and without (the client's own history), the prompt cache counted",
                cost_microdollars
            ),
            (
                "cost_requests",
                "Requests whose cost was counted, by source: usage (the upstream's), estimate, or unpriced (no price for the model)",
                cost_requests
            ),
            (
                "cache_entries",
                "Entries held in memory: loaded conversations, readers, keys, Responses answer ids",
                cache_entries
            ),
            (
                "cache_bytes",
                "Bytes of conversation text held in memory (loaded conversations, readers)",
                cache_bytes
            ),
        ];
        Metrics { registry, ..m }
    }
}

impl Metrics {
    /// Set the cache gauges to what `held` says.
    pub fn set_held(&self, held: &crate::book::Held) {
        let set = |f: &Family<Cache, Gauge>, cache: &str, n: usize| {
            f.get_or_create(&Cache {
                cache: cache.to_owned(),
            })
            .set(i64::try_from(n).unwrap_or(i64::MAX));
        };
        set(&self.cache_entries, "conversations", held.conversations.0);
        set(&self.cache_bytes, "conversations", held.conversations.1);
        set(&self.cache_entries, "readers", held.readers.0);
        set(&self.cache_bytes, "readers", held.readers.1);
        set(&self.cache_entries, "keys", held.keys);
        set(&self.cache_entries, "chains", held.chains);
    }

    /// Count one recorded request's cost, priced with `prices` as `stats`
    /// prices the same record.
    pub fn add_cost(
        &self,
        r: &ctxfold_core::cost::Request,
        prices: &ctxfold_core::cost::PriceTable,
    ) {
        let Some((family, price)) = prices.lookup(&r.model) else {
            self.cost_requests
                .get_or_create(&CostSource {
                    source: "unpriced".into(),
                })
                .inc();
            return;
        };
        let source = match r.source {
            ctxfold_core::cost::Source::Usage => "usage",
            ctxfold_core::cost::Source::Estimate => "estimate",
        };
        self.cost_requests
            .get_or_create(&CostSource {
                source: source.into(),
            })
            .inc();
        for (side, tokens) in [("with", &r.with), ("without", &r.without)] {
            self.cost_microdollars
                .get_or_create(&CostSide {
                    model: family.to_owned(),
                    side: side.into(),
                })
                .inc_by(tokens.micros(&price));
        }
    }

    /// The Prometheus text exposition.
    // The encoder's only errors are its writer's, and writing to a String
    // does not fail.
    #[allow(clippy::expect_used)]
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String does not fail");
        out
    }
}

/// An endpoint label.
pub fn endpoint(name: &str) -> Endpoint {
    Endpoint {
        endpoint: name.to_owned(),
    }
}

/// An outcome label.
pub fn outcome(name: &str, status: &str) -> Outcome {
    Outcome {
        endpoint: name.to_owned(),
        status: status.to_owned(),
    }
}
