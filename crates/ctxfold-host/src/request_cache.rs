//! The request kept between steps: the host derives the request from the
//! projected view once, then extends it with what each step appended,
//! instead of projecting the whole log again before every model call (a
//! full projection takes about 0.2 s at a million events).
//!
//! Records appended after the last overlay fall outside every compaction,
//! so each enters the request as it is. Anything else projects again: a
//! new compaction or reset, a compaction that could still grow over new
//! records (deferred, turn-bounded, beyond the log), a system prompt, signed
//! reasoning (whose replay depends on the whole step), a tool call whose
//! result has not come, or a request that is still empty (the first item
//! decides the preamble). [`RequestCache::request`] therefore always equals
//! [`request_from_view`] of a fresh projection (property-tested).

use std::collections::HashSet;

use ctxfold_core::projection::{Inactive, project};
use ctxfold_core::{Body, Log};
use ctxfold_providers::{ChatRequest, Part, push_body, request_from_view};

/// The last request and what it was built from.
#[derive(Debug, Default, Clone)]
pub struct RequestCache {
    built: Option<Built>,
    /// Full projections made (for tests and benchmarks).
    pub projections: usize,
}

#[derive(Debug, Clone)]
struct Built {
    /// Records accounted for.
    len: usize,
    /// What the request was built on (see [`request_from_view`]).
    base: ChatRequest,
    req: ChatRequest,
    /// No compaction can reach records appended later.
    extendable: bool,
}

impl RequestCache {
    /// An empty cache: the first request projects.
    pub fn new() -> Self {
        RequestCache::default()
    }

    /// The request for `log`'s view on `base` (see [`request_from_view`]).
    pub fn request(&mut self, log: &Log, base: &ChatRequest) -> ChatRequest {
        if let Some(b) = &mut self.built
            && b.extendable
            && b.len <= log.len()
            && &b.base == base
            && !b.req.messages.is_empty()
            && extend(&mut b.req, log, b.len)
        {
            b.len = log.len();
            return b.req.clone();
        }
        self.projections += 1;
        let view = project(log);
        let req = request_from_view(log, &view, base);
        let last_turn = (log.turn_count() as u32).saturating_sub(1);
        let last_seq = log.records().last().map_or(0, |r| r.seq);
        // A range still open at the end (bounded by turn, or by a seq the
        // log has not reached) covers what is appended next.
        let open_ended = view.active.iter().any(|&i| {
            matches!(&log.records()[i].body, Body::Compaction(c)
                if (c.to_seq.is_none() && c.to_turn >= last_turn)
                    || c.to_seq.is_some_and(|s| s >= last_seq))
        });
        let extendable = !open_ended
            && !view
                .inactive
                .iter()
                .any(|&(_, why)| matches!(why, Inactive::Deferred | Inactive::OutOfBounds));
        self.built = Some(Built {
            len: log.len(),
            base: base.clone(),
            req: req.clone(),
            extendable,
        });
        req
    }
}

/// Add the records of `log` from `from` on to `req`, as a fresh projection
/// would show them; `false` (and `req` untouched) when one of them needs
/// the whole view.
fn extend(req: &mut ChatRequest, log: &Log, from: usize) -> bool {
    let new = &log.records()[from..];
    let mut calls: HashSet<&str> = HashSet::new();
    let mut results: HashSet<&str> = HashSet::new();
    for r in new {
        match &r.body {
            Body::TurnStart
            | Body::User { .. }
            | Body::Assistant { .. }
            | Body::Structured { .. } => {}
            Body::Reasoning { .. } => {
                let signed = r
                    .metadata
                    .as_ref()
                    .is_some_and(|m| m.contains_key(ctxfold_providers::part::THINKING_SIGNATURE));
                if signed {
                    return false;
                }
            }
            Body::ToolCall { id, .. } => {
                if !calls.insert(id) {
                    return false;
                }
            }
            Body::ToolResult { id, .. } => {
                if !results.insert(id) {
                    return false;
                }
            }
            // Overlays, system prompts, bookkeeping that is not inert.
            Body::Other { kind, .. }
                if kind == ctxfold_core::attempt::STARTED
                    || kind == ctxfold_core::attempt::FINISHED => {}
            _ => return false,
        }
    }
    // Every new call is answered in the batch, every new result answers a
    // new call (a result for an older call could pair with a call the view
    // dropped).
    if calls != results {
        return false;
    }
    // Not a call reusing an id the request already has.
    let known: HashSet<&str> = req
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    if calls.iter().any(|id| known.contains(id)) {
        return false;
    }
    for r in new {
        push_body(req, r.body.clone());
    }
    true
}
