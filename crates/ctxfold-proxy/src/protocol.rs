//! The model APIs the proxy speaks, one module each (SPEC §14): OpenAI
//! chat completions ([`chat`]), Anthropic Messages ([`messages`]), OpenAI
//! Responses ([`responses`]) and Google's Gemini API ([`gemini`]).
//!
//! A [`Protocol`] owns, in one place, everything the proxy must know of
//! its API: its routes and upstream; reading a request into records and
//! writing the view back (through `ctxfold-formats`, on `ctxfold-wire`'s
//! types); where its system prompt, tools, model, output limit, usage and
//! fixed part are; its answers, whole and streamed, and where a stream
//! ends; its agents' session hints. What only some APIs have is a
//! capability the protocol returns or not: the providers' own context
//! management ([`ContextManagement`]), reading a request one message at a
//! time ([`Incremental`]). The book and the HTTP edge ask the protocol;
//! they match on none.
//!
//! Adding an API: a module here implementing [`Protocol`], its line in
//! [`ALL`], its upstream in `[proxy]` ([`Upstream`]), and its request
//! format in `ctxfold-formats` for `compact FILE`.

pub mod chat;
pub mod gemini;
pub mod messages;
pub mod responses;

use std::fmt;

use axum::http::HeaderMap;
use ctxfold_core::{Object, Record};
use ctxfold_formats::Transcript;
use ctxfold_formats::message_reader::Wire;
use ctxfold_formats::provider_compaction;
use ctxfold_tokens::{Heuristic, TokenEstimator};
use ctxfold_wire::context_management::{Asks, is_trigger};
use serde_json::Value;

use crate::agent::{Agent, Session};
pub use crate::config::Upstream;
use crate::config::{Emulate, ProxyConfig};

/// A request's protocol, as the book and the edge carry it.
pub type Shape = &'static dyn Protocol;

/// Every protocol the proxy serves, in the order its routes are made.
pub const ALL: [Shape; 4] = [
    &chat::Chat,
    &messages::Messages,
    &responses::Responses,
    &gemini::Gemini,
];

/// What a route does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serves {
    /// A model call: recorded, compacted, rendered.
    Turn,
    /// The provider's own compaction endpoint (`/v1/responses/compact`).
    Compact,
    /// A token count of the body the upstream would get; nothing recorded.
    CountTokens,
}

/// One path a protocol serves.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// The axum path pattern.
    pub path: &'static str,
    /// Its name in metrics (a Gemini route names its action instead:
    /// [`Protocol::call`]).
    pub label: &'static str,
    /// What it does.
    pub serves: Serves,
}

/// A request at one of a protocol's routes, as its path says.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its name in metrics.
    pub label: &'static str,
    /// What it does.
    pub serves: Serves,
    /// The model the path names (Gemini's), else the body's.
    pub model: Option<String>,
}

/// The stable head of a request, for its fingerprint: a system prompt the
/// history does not hold, and the tools' names.
#[derive(Debug, Default)]
pub struct Head<'b> {
    /// A system prompt kept outside the history's records (Responses'
    /// `instructions`).
    pub system: Option<&'b str>,
    /// The tools' names, as declared.
    pub tools: Vec<&'b str>,
}

/// One model API.
pub trait Protocol: Sync + 'static {
    /// Its name, as metrics and the conversation's metadata give it.
    fn name(&self) -> &'static str;

    /// The paths it serves.
    fn routes(&self) -> &'static [Route];

    /// The request a path of `route` makes (`None`: not one the proxy
    /// interprets; it passes through).
    fn call(&self, route: &Route, _path: &str) -> Option<Call> {
        Some(Call {
            label: route.label,
            serves: route.serves,
            model: None,
        })
    }

    /// The upstream its requests go to.
    fn upstream(&self) -> Upstream;

    /// Whether a request the proxy does not interpret is this API's: by
    /// its path or its headers (passed through to [`Protocol::upstream`]).
    fn claims(&self, path: &str, headers: &HeaderMap) -> bool;

    /// The body key of the history.
    fn history_key(&self) -> &'static str;

    /// A request body's history as records, and the rest of the body.
    fn read(&self, body: &Value) -> Result<Transcript, String>;

    /// A request body holding `records`, with the rest of the body as
    /// [`read`](Self::read) kept it in `extras`.
    fn write(&self, records: &[&Record], extras: &Object) -> Value;

    /// Reading one message at a time, for a request that repeats the last
    /// (`None`: read whole every time).
    fn incremental(&self) -> Option<&dyn Incremental>;

    /// The request's model named in its body ("" when none: see
    /// [`Call::model`]).
    fn model<'b>(&self, body: &'b Value) -> &'b str;

    /// What every request carries besides the history, for the
    /// fingerprint.
    fn head<'b>(&self, body: &'b Value) -> Head<'b>;

    /// Tokens of what every request carries besides the records the log
    /// holds for it (tool definitions, a system prompt kept outside the
    /// history), counted on their JSON text as the upstream reads it.
    fn fixed_tokens(&self, body: &Value) -> usize;

    /// The answer's output limit the request sets.
    fn output_limit(&self, body: &Value) -> Option<u64>;

    /// The records of a whole answer body, stamped `ts`, the usage the
    /// upstream reported on the last one in the form every protocol keeps
    /// it (`ctxfold_providers::response::USAGE`: `input_tokens` with the
    /// cached ones, `output_tokens`, `raw`).
    fn answer(&self, raw: Value, model: &str, ts: &str) -> Result<Vec<Record>, String>;

    /// The records of a streamed answer, stamped `ts`: read to its end,
    /// or, `cut_short`, what completed of one that broke off.
    fn streamed_answer(
        &self,
        stream: &[u8],
        model: &str,
        ts: &str,
        cut_short: bool,
    ) -> Result<Vec<Record>, String>;

    /// An answer's records made to follow `history`, the log it is
    /// appended to, as the next request will send them back (Gemini
    /// numbers the calls it gave no id on from the history's).
    fn follow(&self, _answer: &mut [Record], _history: &[Record]) {}

    /// Whether a stream event (its `event:` name, its data) ends an
    /// answer: whole, or with an error.
    fn ends(&self, event: Option<&str>, data: &str) -> bool;

    /// The agent session a request names, if any.
    fn session(&self, body: &Value, agent: Option<Agent>) -> Option<Session>;

    /// The earlier answer a request is chained to instead of sending its
    /// history (Responses' `previous_response_id`).
    fn chained<'b>(&self, body: &'b Value) -> Option<&'b str>;

    /// The providers' own context management, where the API has it.
    fn context_management(&self) -> Option<&dyn ContextManagement>;

    /// A record ctxfold made (a summary's answer) put in the API's form.
    fn made(&self, _record: &mut Record) {}

    /// Whether its records carry prompt-cache markers that must move
    /// back when what holds them is folded (Anthropic's `cache_control`).
    fn cache_markers(&self) -> bool {
        false
    }

    /// An error body in the API's shape.
    fn error_body(&self, kind: &str, message: &str) -> Value {
        ctxfold_wire::value(&ctxfold_wire::error::ErrorBody::new(kind, message))
    }
}

/// Reading a request one message at a time: the proxy keeps a reader per
/// conversation and reads only what a request adds to the last.
pub trait Incremental: Sync {
    /// The format's message reader.
    fn wire(&self) -> Wire;

    /// What of the head (the body's keys besides the history) the reader
    /// depends on, so a kept reader serves only the same (Anthropic's
    /// `system`).
    fn reader_head(&self, _head: &Object) -> Option<Value> {
        None
    }

    /// The messages of `records` appended to `out`, a JSON array being
    /// written (a comma first unless `out` is just its `[`).
    fn write_messages(&self, records: &[&Record], out: &mut Vec<u8>) -> Option<()>;

    /// Whether a record goes to a body key of its own, not among the
    /// messages (Anthropic's system prompt).
    fn top_level(&self, _record: &Record) -> bool {
        false
    }

    /// Whether the API joins messages of one role that follow each other
    /// (so a message goes as sent only between messages of the other).
    fn joins_roles(&self) -> bool {
        false
    }
}

/// What an emulated compaction is to do, as the request asks it.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// The turns left out of it (`None`: the whole conversation).
    pub keep_last: Option<u32>,
    /// The client's instructions for the summary.
    pub instructions: Option<String>,
    /// What the compaction record's note says.
    pub note: &'static str,
    /// Answered alone: the upstream is not asked.
    pub alone: bool,
    /// Asked for explicitly: nothing to fold is refused, not skipped.
    pub required: bool,
}

/// The providers' own context management (issue 29): what a request asks,
/// what an upstream without it must not get, and the answers of
/// ctxfold's emulation.
pub trait ContextManagement: Sync {
    /// What a request's keys (besides its history) ask.
    fn asks(&self, body: &Object) -> Asks;

    /// What of `body` an upstream without it must not get (its
    /// parameters, its compaction blocks and items), taken out.
    fn strip(&self, body: &mut Object);

    /// The compaction ctxfold emulates for a request of `asks` (`compacts`:
    /// sent to the compaction endpoint; `tokens`: the request's size now).
    fn wanted(&self, asks: &Asks, compacts: bool, tokens: usize) -> Option<Wanted>;

    /// A compaction block or item of ctxfold's, `signature` naming its
    /// record, holding `text`.
    fn compaction(&self, signature: &str, text: &str) -> Value;

    /// For a retried request: whether the compaction recorded for it
    /// (`note`: its record's) answers it again, and alone.
    fn repeat(&self, asks: &Asks, compacts: bool, note: &str) -> Option<bool>;

    /// The answer to a request (`raw`) whose compaction is answered alone,
    /// and its stream when it asked for one.
    fn alone(
        &self,
        raw: &Value,
        compacts: bool,
        compaction: &Value,
        at: i64,
    ) -> (Value, Option<String>);

    /// An upstream's streamed answer with the compaction and the applied
    /// edits put in.
    fn stream_with(&self, text: &str, compaction: Option<&Value>, edits: &[Value]) -> String;
}

impl PartialEq for dyn Protocol {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for dyn Protocol {}

impl fmt::Debug for dyn Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The protocol named `name` (as metrics and metadata give it).
pub fn named(name: &str) -> Option<Shape> {
    ALL.into_iter().find(|p| p.name() == name)
}

/// The protocol a request the proxy does not interpret belongs to: the
/// first that claims it, else OpenAI's.
pub fn claiming(path: &str, headers: &HeaderMap) -> Shape {
    ALL.into_iter()
        .find(|p| p.claims(path, headers))
        .unwrap_or(&chat::Chat)
}

/// `body` (a request of `shape`, its bytes) without what an upstream that
/// lacks the providers' context management must not get: the parameters
/// (`context_management`, and what the protocol has of its own), its
/// compaction blocks and items and Codex's trigger (ctxfold's view holds
/// their summary), and messages left empty by that. `None`: not a JSON
/// object, or a protocol without context management.
pub fn strip_for_upstream(shape: Shape, body: &[u8]) -> Option<Vec<u8>> {
    let cm = shape.context_management()?;
    let mut v: Value = serde_json::from_slice(body).ok()?;
    cm.strip(v.as_object_mut()?);
    serde_json::to_vec(&v).ok()
}

/// What `body` (a request's keys besides its history) and `client` (its
/// history, read) ask of the provider's context management.
pub fn asks(shape: Shape, body: &Value, client: &[Record]) -> Asks {
    let (Some(cm), Some(o)) = (shape.context_management(), body.as_object()) else {
        return Asks::default();
    };
    let mut asks = cm.asks(o);
    // The head the proxy reads need not hold the input: the trigger is
    // found among the records too.
    asks.trigger |= client
        .last()
        .is_some_and(|r| ctxfold_formats::responses::other_item(r).is_some_and(is_trigger));
    asks
}

/// Whether the provider manages the context of this request itself: it
/// asks for a compaction, or its history holds one the provider made.
pub fn provider_managed(shape: Shape, asks: &Asks, client: &[Record]) -> bool {
    // A protocol without it: its histories are not read for it.
    shape.context_management().is_some()
        && (asks.compaction() || client.iter().any(|r| provider_compaction(r).is_some()))
}

/// An answer's `records` stamped `ts`; one empty text when it has none (an
/// answer is always recorded, so the next request knows it was there).
pub(crate) fn stamped(records: &mut Vec<Record>, ts: &str) {
    for r in records.iter_mut() {
        r.ts = ts.into();
    }
    if records.is_empty() {
        records.push(Record::new(
            0,
            ts,
            ctxfold_core::Body::Assistant {
                content: String::new(),
            },
        ));
    }
}

/// The tokens of the values of `keys` in `body`, on their JSON text.
pub(crate) fn tokens_of(body: &Value, keys: &[&str]) -> usize {
    let est = Heuristic::default();
    keys.iter()
        .filter_map(|k| body.get(*k))
        .map(|v| match v {
            Value::String(s) => est.count_text(s),
            other => est.count_text(&other.to_string()),
        })
        .sum()
}

/// The first of `keys` in `body` holding a count.
pub(crate) fn first_count(body: &Value, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|k| body.get(*k)?.as_u64())
}

/// The body's `model`, or "".
pub(crate) fn body_model(body: &Value) -> &str {
    body.get("model").and_then(Value::as_str).unwrap_or("")
}

/// Whether a request asks for a streamed answer (`stream: true`).
pub(crate) fn wants_stream(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool) == Some(true)
}

/// The URL of the upstream `protocol`'s requests go to.
pub fn upstream_url(config: &ProxyConfig, protocol: Shape) -> &str {
    config.upstream(protocol.upstream())
}

/// Whether ctxfold emulates `protocol`'s context management: it has one,
/// and its upstream is said to lack it (`emulate`).
pub fn emulated(emulate: Emulate, protocol: Shape) -> bool {
    protocol.context_management().is_some() && emulate.of(protocol.upstream())
}

/// The names of the tools a body declares in `tools`: each tool's `name`,
/// or its `function`'s (chat's).
pub(crate) fn tool_names(body: &Value) -> Vec<&str> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.get("name")
                .or_else(|| t.get("function").and_then(|f| f.get("name")))
                .and_then(Value::as_str)
        })
        .collect()
}

/// `m` appended to a JSON array being written (a comma first unless the
/// array is just its `[`).
pub(crate) fn put_message(out: &mut Vec<u8>, m: &impl serde::Serialize) -> Option<()> {
    if out.len() > 1 {
        out.push(b',');
    }
    serde_json::to_writer(out, m).ok()
}

/// The `type` of a stream event's data, when it is an object that has one.
pub(crate) fn event_type(data: &str) -> Option<String> {
    /// An event's `type`, all that is read of it.
    #[derive(serde::Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_str::<Typed>(data).ok().map(|t| t.kind)
}
