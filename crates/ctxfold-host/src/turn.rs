//! One turn of the agent: a user message, then model calls and tool runs
//! until the model answers without tools.
//!
//! ```text
//! repair an unclosed step left by a crash or an interrupt
//! turn_start, user
//! per step (at most `step_limit`):
//!   compact_if_needed (before the step)          ← seed 002's pre-step seam
//!   request from the projected view, once, with the tools offered for it
//!   call the model, streaming; on "context too long": one compaction, one retry
//!   record what it said (text, reasoning with its signature, tool calls, usage)
//!   run each tool call, recording its result as it completes
//!   no tool calls → the turn is answered
//! compact_if_needed (between turns)              ← seed 004
//! ```
//!
//! An interrupt (the caller's `cancel` flag) ends the turn at the next
//! point where the log is consistent: calls left without a result get an
//! `interrupted` error result, so the log stays valid and the next turn
//! continues from it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use ctxfold_compactor::{
    BasicCompactor, Committed, Compactor, Context, Conversation, Moment, Outcome, OverflowError,
    retry_on_overflow,
};
use ctxfold_core::{Body, Compaction, Log, Record};
use ctxfold_providers::response::StreamEvent;
use ctxfold_providers::{ChatRequest, Provider, ProviderError, ToolSpec};
use ctxfold_tokens::{Heuristic, TokenEstimator};
use serde::Serialize;

use crate::output::HostEffect;
use crate::request_cache::RequestCache;
use ctxfold_compactor::assistant::{Proposal, record_proposals};
use serde_json::Value;

// What the runners implementing `ToolRunner` return, with the tools.
pub use crate::output::ToolOutput;

/// Runs the tool calls the model makes: local commands, with approval, and
/// the built-in tools ([`crate::builtin`]).
pub trait ToolRunner {
    /// The tools offered to the model in a request from `log` (the log as
    /// it stands before the request: what is offered may follow the view,
    /// as `recall` and `search` do once a compaction is in force).
    fn specs(&self, log: &Log) -> Vec<ToolSpec>;

    /// Run one call. `log` is the raw log as it stands: what the model was
    /// shown, its answer with this call, and the results of the calls of
    /// this step run before it. `cancel` turns true on an
    /// interrupt: stop the tool and return an error result saying so.
    fn run(
        &mut self,
        id: &str,
        name: &str,
        arguments: &Value,
        log: &Log,
        cancel: &AtomicBool,
    ) -> ToolOutput;
}

/// Where the turn shows what happens.
pub trait Ui {
    /// A piece of the assistant's text, as it streams.
    fn text(&mut self, piece: &str);
    /// A piece of reasoning, as it streams.
    fn reasoning(&mut self, piece: &str);
    /// The model started a tool call.
    fn tool_call(&mut self, name: &str);
    /// A tool finished.
    fn tool_result(&mut self, name: &str, output: &ToolOutput);
    /// Automatic compaction did something (or tried and failed).
    fn compaction(&mut self, outcome: &Outcome);
    /// The model call of a step ended.
    fn step_end(&mut self) {}
    /// The assistant's compactions were recorded (in effect from the next
    /// turn), each with its number as `conversation show` numbers them.
    fn recorded(&mut self, _compactions: &[(usize, Committed)]) {}
}

/// What the host runs with.
pub struct Host {
    /// The provider the model is called through.
    pub provider: Provider,
    /// The model, as the provider names it.
    pub model: String,
    /// A system prompt from config, sent before the log's own.
    pub system: Option<String>,
    /// The compaction service.
    pub compactor: BasicCompactor,
    /// The model's window, when known.
    pub window: Option<u32>,
    /// Compact automatically (before every step and between turns).
    pub auto: bool,
    /// Model calls allowed in one turn.
    pub step_limit: usize,
    /// Output limit per call.
    pub max_tokens: Option<u32>,
    /// Force the first call of the turn to use this tool.
    pub force_tool: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "end")]
pub enum TurnEnd {
    /// The model answered without tools.
    Answered,
    /// The caller interrupted it.
    Interrupted,
    /// The model kept calling tools past the step limit.
    StepLimit {
        /// The limit.
        limit: usize,
    },
}

/// What a turn did.
#[derive(Debug, Clone, Serialize)]
pub struct TurnReport {
    /// How it ended.
    #[serde(flatten)]
    pub end: TurnEnd,
    /// Model calls made.
    pub steps: usize,
    /// Index of the turn's first record in the log.
    pub first_record: usize,
    /// What automatic compaction did (only the attempts that did or failed
    /// something).
    pub compactions: Vec<Outcome>,
}

/// Why a turn could not go on.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The model call failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// Compaction could not read or write the conversation.
    #[error(transparent)]
    Compact(#[from] ctxfold_compactor::CompactError),
    /// The conversation could not be written.
    #[error(transparent)]
    Store(#[from] ctxfold_store::StoreError),
}

/// The error result given to a tool call that never ran to completion.
pub const INTERRUPTED: &str = "interrupted: the turn was stopped before this tool call finished";

/// Give every tool call left without a result (a crash, an interrupt, a
/// second Ctrl-C) an `interrupted` error result, so the log is valid for
/// every provider and the conversation can go on. Returns how many.
pub fn repair(conv: &mut Conversation<'_>) -> Result<usize, HostError> {
    let open = unanswered(conv.log());
    let n = open.len();
    if n > 0 {
        let ts = ctxfold_store::now();
        conv.append(
            open.into_iter()
                .map(|(id, content)| {
                    Record::new(
                        0,
                        ts.clone(),
                        Body::ToolResult {
                            id,
                            content: content.into(),
                            is_error: true,
                        },
                    )
                })
                .collect(),
        )?;
    }
    Ok(n)
}

/// The result given to a `compact` call cut short after its approved
/// compactions were written (they were appended just before the result).
pub const INTERRUPTED_RECORDED: &str = "interrupted after the user approved this call: its compactions were recorded and take effect from the next turn";

/// Each compaction with its number among the log's compaction records
/// (1-based, as `conversation show` numbers them and `--reset=N` takes).
fn number(log: &Log, committed: Vec<Committed>) -> Vec<(usize, Committed)> {
    let mut n = 0;
    let mut numbers = std::collections::HashMap::new();
    for r in log.records() {
        if let Body::Compaction(_) = r.body {
            n += 1;
            numbers.insert(r.seq, n);
        }
    }
    committed
        .into_iter()
        .filter_map(|c| Some((*numbers.get(&c.seq?)?, c)))
        .collect()
}

/// Calls of the last turn without a result, in order, each with the
/// result it gets: [`INTERRUPTED`], or [`INTERRUPTED_RECORDED`] for the
/// `compact` call whose compactions end the log (a crash between them and
/// their result, which are one append).
fn unanswered(log: &Log) -> Vec<(String, &'static str)> {
    let Some(turn) = (log.turn_count() as u32).checked_sub(1) else {
        return Vec::new();
    };
    let Some(range) = log.turn_range(turn) else {
        return Vec::new();
    };
    let records = &log.records()[range];
    let answered: HashSet<&str> = records.iter().filter_map(|r| r.body.result_id()).collect();
    // The assistant's compactions after the last result belong to the
    // first unanswered `compact` call: calls run, and record, in order.
    let tail = records
        .iter()
        .rposition(|r| matches!(r.body, Body::ToolResult { .. } | Body::ToolCall { .. }))
        .map_or(records, |i| &records[i + 1..]);
    let mut recorded = tail.iter().any(|r| {
        matches!(&r.body, Body::Compaction(c) if c.source == ctxfold_core::compaction::Source::Assistant)
    });
    records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall { id, name, .. } if !answered.contains(id.as_str()) => {
                let content = if recorded && name == crate::builtin::compact::NAME {
                    recorded = false;
                    INTERRUPTED_RECORDED
                } else {
                    INTERRUPTED
                };
                Some((id.clone(), content))
            }
            _ => None,
        })
        .collect()
}

impl Host {
    /// Tokens the request holds besides the view: the system prompt and
    /// the tool definitions (what `stats` calls the fixed part).
    pub fn extra_tokens(&self, tools: &[ToolSpec]) -> usize {
        let est = Heuristic::default();
        let system = self
            .system
            .as_deref()
            .map_or(0, |s| est.system_prompt_tokens(s));
        let schema: Vec<Value> = tools
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        system + est.schema_tokens(&Value::Array(schema))
    }

    fn context(&self, moment: Moment, extra: usize) -> Context {
        Context {
            extra_tokens: extra,
            now: Some(jiff::Timestamp::now()),
            ..Context::new(moment, self.window)
        }
    }

    /// Run one turn for `message`.
    pub fn run_turn(
        &self,
        conv: &mut Conversation<'_>,
        message: &str,
        tools: &mut dyn ToolRunner,
        ui: &mut dyn Ui,
        cancel: &AtomicBool,
    ) -> Result<TurnReport, HostError> {
        let repaired = repair(conv)?;
        if repaired > 0 {
            tracing::info!(
                repaired,
                "tool calls left without a result were closed as interrupted"
            );
        }
        conv.begin_turn();
        let first_record = conv.log().len();
        let ts = ctxfold_store::now();
        conv.append(vec![
            Record::new(0, ts.clone(), Body::TurnStart),
            Record::new(
                0,
                ts,
                Body::User {
                    content: message.to_owned(),
                    author: None,
                },
            ),
        ])?;
        let mut specs = tools.specs(conv.log());
        let mut extra = self.extra_tokens(&specs);
        // Derived from the view once, then extended with each step.
        let mut requests = RequestCache::new();
        let mut report = TurnReport {
            end: TurnEnd::Answered,
            steps: 0,
            first_record,
            compactions: Vec::new(),
        };
        loop {
            if cancel.load(Ordering::SeqCst) {
                report.end = TurnEnd::Interrupted;
                break;
            }
            if report.steps == self.step_limit {
                report.end = TurnEnd::StepLimit {
                    limit: self.step_limit,
                };
                break;
            }
            // What is offered follows the log: a compaction recorded since
            // the last step may bring in `recall` and `search`.
            let now = tools.specs(conv.log());
            if now != specs {
                specs = now;
                extra = self.extra_tokens(&specs);
            }
            if self.auto {
                let outcome = self
                    .compactor
                    .compact_if_needed(conv, &self.context(Moment::BeforeStep, extra))?;
                self.show(&outcome, ui, &mut report);
            }
            let force = if report.steps == 0 {
                self.force_tool.as_deref()
            } else {
                None
            };
            let base = ChatRequest {
                model: self.model.clone(),
                system: self.system.clone(),
                messages: Vec::new(),
                tools: Vec::new(),
                max_tokens: self.max_tokens,
                extra: force.map(|t| self.tool_choice(t)).unwrap_or_default(),
            };
            let ctx = self.context(Moment::BeforeStep, extra);
            let runner: &dyn ToolRunner = &*tools;
            let sent = retry_on_overflow(
                &self.compactor,
                conv,
                &ctx,
                |log: &Log| {
                    // The tools of the log as compacted just before.
                    let base = ChatRequest {
                        tools: runner.specs(log),
                        ..base.clone()
                    };
                    let req = requests.request(log, &base);
                    let mut on = |e: StreamEvent| match e {
                        StreamEvent::Text(t) => ui.text(&t),
                        StreamEvent::Reasoning(t) => ui.reasoning(&t),
                        StreamEvent::ToolCall { name, .. } => ui.tool_call(&name),
                    };
                    self.provider.chat(&req, Some(&mut on))
                },
                |e| e.is_context_overflow(),
            );
            report.steps += 1;
            let (response, overflow) = match sent {
                Ok(r) => r,
                Err(OverflowError::Send(e)) => return Err(e.into()),
                Err(OverflowError::Compact(e)) => return Err(e.into()),
            };
            if let Some(o) = overflow {
                self.show(&o, ui, &mut report);
            }
            ui.step_end();
            conv.append(response.to_records(&ctxfold_store::now()))?;
            let calls: Vec<(String, String, Value)> = response
                .tool_calls()
                .into_iter()
                .map(|(id, name, args)| (id.to_owned(), name.to_owned(), args.clone()))
                .collect();
            if calls.is_empty() {
                // Stopped while the answer streamed: recorded, but not
                // answered as far as the user is concerned (and no
                // between-turn compaction after they asked to stop).
                if cancel.load(Ordering::SeqCst) {
                    report.end = TurnEnd::Interrupted;
                }
                break;
            }
            for (id, name, args) in calls {
                let output = if cancel.load(Ordering::SeqCst) {
                    ToolOutput::text(INTERRUPTED, true)
                } else {
                    tools.run(&id, &name, &args, conv.log(), cancel)
                };
                let (output, recorded) = self.record_result(conv, id, output)?;
                ui.tool_result(&name, &output);
                if !recorded.is_empty() {
                    ui.recorded(&recorded);
                }
            }
        }
        if self.auto && report.end == TurnEnd::Answered {
            let outcome = self
                .compactor
                .compact_if_needed(conv, &self.context(Moment::BetweenTurns, extra))?;
            self.show(&outcome, ui, &mut report);
        }
        Ok(report)
    }

    /// Record a tool call's result, with its effects: the compactions an
    /// approved `compact` call proposes go in the same batch as the result,
    /// planned again against the log as it now is (each after the ones
    /// before it). When they cannot be recorded, the result says so instead
    /// and nothing else is written. Returns the output as recorded, and the
    /// compactions recorded with their numbers.
    fn record_result(
        &self,
        conv: &mut Conversation<'_>,
        id: String,
        output: ToolOutput,
    ) -> Result<(ToolOutput, Vec<(usize, Committed)>), HostError> {
        let result = |content: &str, is_error: bool| {
            Record::new(
                0,
                ctxfold_store::now(),
                Body::ToolResult {
                    id: id.clone(),
                    content: content.to_owned(),
                    is_error,
                },
            )
        };
        let mut proposals: Vec<Proposal> = Vec::new();
        let mut approved: Vec<Compaction> = Vec::new();
        for HostEffect::Compact {
            proposals: p,
            approved: a,
        } in &output.effects
        {
            proposals.extend(p.iter().cloned());
            approved.extend(a.iter().cloned());
        }
        if output.effects.is_empty() {
            conv.append(vec![result(&output.content, output.is_error)])?;
            return Ok((output, Vec::new()));
        }
        let with = vec![result(&output.content, output.is_error)];
        let now = Some(jiff::Timestamp::now());
        let hints = self.compactor.hints();
        match record_proposals(conv, &proposals, &approved, hints, now, with) {
            Ok(committed) => {
                tracing::info!(
                    compactions = committed.len(),
                    "the assistant's compactions were recorded, in effect from the next turn"
                );
                let numbered = number(conv.log(), committed);
                Ok((output, numbered))
            }
            Err(e) => {
                let failed = ToolOutput::text(
                    format!(
                        "The user approved, but the compactions could not be recorded: {e}. Nothing was recorded."
                    ),
                    true,
                );
                conv.append(vec![result(&failed.content, true)])?;
                Ok((failed, Vec::new()))
            }
        }
    }

    /// `tool_choice` forcing `tool`, in the provider's shape.
    fn tool_choice(&self, tool: &str) -> ctxfold_core::Object {
        use ctxfold_providers::model::ProviderKind;
        let choice = match self.provider.config().kind {
            ProviderKind::OpenAi => {
                ctxfold_wire::value(&ctxfold_wire::chat::ToolChoice::function(tool))
            }
            ProviderKind::Anthropic => {
                ctxfold_wire::value(&ctxfold_wire::anthropic::ToolChoice::tool(tool))
            }
        };
        let mut o = ctxfold_core::Object::new();
        o.insert("tool_choice".into(), choice);
        o
    }

    fn show(&self, outcome: &Outcome, ui: &mut dyn Ui, report: &mut TurnReport) {
        use ctxfold_compactor::Status;
        let worth = outcome.compacted()
            || matches!(
                outcome.status,
                Status::Failed { .. } | Status::Unfit { .. } | Status::StillOver { .. }
            );
        if worth {
            ui.compaction(outcome);
            report.compactions.push(outcome.clone());
        }
    }
}
