//! The providers' own context management for an upstream that has none
//! (issue 29, item 2: `[proxy.upstreams.NAME] context_management =
//! "emulate"`): each edit or compaction a request asks for, when its
//! trigger is reached, becomes an ordinary ctxfold compaction (source
//! `client`, undoable, listed by `c show` and the pages), planned by the
//! same rules as `c compact`; what the provider would return is described
//! by [`Emulated`], which the server puts into the answer.
//!
//! How each is mapped (and where it differs from the provider's):
//! - `compact_20260112` (trigger default 150,000 input tokens): a summary
//!   of every turn before the current one, by the configured summarizer
//!   (the offline digest unless one is set), with the edit's
//!   `instructions`; the answer starts with a `compaction` block holding
//!   its text. `pause_after_compaction`: that block alone.
//! - `compaction: {"type": "summarize"}`: a summary of the whole
//!   conversation, answered alone (nothing sampled), its block signed
//!   `ctxfold:` and the compaction's `seq`.
//! - `clear_tool_uses_20250919` (trigger default 100,000, keep 3): the
//!   results (with `clear_tool_inputs`, the calls' arguments too) of the
//!   turns before the current one, and of its steps but the last `keep`,
//!   replaced by one line; `exclude_tools` kept; not applied when it would
//!   clear fewer than `clear_at_least` tokens. The provider counts the
//!   last `keep` tool uses across turns; ctxfold's rule counts steps of
//!   the current turn.
//! - `clear_thinking_20251015` (keep 1 turn by default, or `"all"`):
//!   reasoning of all but the last `keep` turns dropped.
//! - Responses `context_management: [{"type": "compaction",
//!   "compact_threshold": N}]`: as `compact_20260112`, its item first in
//!   the output. Codex's `compaction_trigger` and `/v1/responses/compact`:
//!   a summary of the whole input, answered with the compaction item alone
//!   (the compact endpoint: after the input's user messages).
//!
//! The provider edits the prompt of each request anew; ctxfold records a
//! compaction once, which later requests' views keep.
//!
//! A compaction asked of the whole conversation that folds nothing (its
//! summary would not be smaller, SPEC §6, or there is nothing before it)
//! is refused ([`PrepareError::Unservable`]): answering one would name a
//! compaction that does not exist and drop what the user said from the
//! view. A retried request that was answered with a compaction is
//! answered with it again ([`Book::repeated`]), made from its record.

use ctxfold_compactor::compact_with_rules;
use ctxfold_core::bounds::Keep;
use ctxfold_core::compaction::{ReasoningPolicy, Source, ToolOverride, ToolPolicy};
use ctxfold_core::estimate::view_tokens;
use ctxfold_core::planner::{PlanContext, Rule, SummaryRequest};
use ctxfold_core::projection::project;
use ctxfold_core::{Body, Log};
use ctxfold_wire::context_management::{Asks, CLEAR_THINKING, CLEAR_TOOL_USES, Edit};
use ctxfold_wire::emulated;
use serde_json::Value;

use super::counting::scaled;
use super::session::Session;
use super::{Book, PrepareError};
use crate::context_management::SIGNATURE;
use crate::protocol::Shape;

/// What ctxfold did for a request's asks, to be said in its answer as the
/// provider would.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Emulated {
    /// The compaction to put first in the answer: an Anthropic block or a
    /// Responses item, as the provider shapes it.
    pub compaction: Option<Value>,
    /// Answer with the compaction alone; the upstream is not asked.
    pub alone: bool,
    /// Anthropic's `context_management.applied_edits`.
    pub applied_edits: Vec<Value>,
}

/// The signature of conversation `id`'s compaction record `seq`:
/// [`SIGNATURE`], the conversation and the record's `seq`.
fn signature(id: &str, seq: u64) -> String {
    format!("{SIGNATURE}{id}:{seq}")
}

/// What a request that compacts the whole conversation (`summarize`,
/// Codex's trigger, the compact endpoint) is told when nothing can be
/// folded: `why`, from the compactor.
fn nothing_to_compact(id: &str, why: &str) -> PrepareError {
    PrepareError::Unservable(format!(
        "conversation {id} cannot be compacted now: {why}. ctxfold records a summary only when it is smaller than what it replaces (a conversation this short needs none), and nothing was sent upstream"
    ))
}

/// Whether `tokens` are past an edit's `trigger` (input tokens; `default`
/// when the edit names none).
fn past(
    trigger: Option<&ctxfold_wire::context_management::Amount>,
    default: u64,
    tokens: usize,
) -> bool {
    tokens > trigger.map_or(default, |a| a.value) as usize
}

/// The input tokens of a request (its keys besides the history: `body`)
/// whose history is `log`'s view, as the upstream counts (`scale`).
fn request_tokens(fixed: usize, log: &Log, scale: f64) -> usize {
    scaled(fixed + view_tokens(&project(log)), scale)
}

impl Book {
    /// Emulate what `asks` asks of conversation `s` (a request of `shape`
    /// whose keys besides the history are `body`; `compacts`: sent to an
    /// endpoint that compacts).
    pub(super) fn emulate(
        &self,
        s: &mut Session,
        shape: Shape,
        fixed: usize,
        asks: &Asks,
        compacts: bool,
    ) -> Result<Emulated, PrepareError> {
        let mut out = Emulated::default();
        let Some(cm) = shape.context_management() else {
            return Ok(out);
        };
        let tokens = |log: &Log, scale: f64| request_tokens(fixed, log, scale);
        // What an edit that folded something says in the answer.
        let applied = |kind: &str, what: &str, cleared: usize, before: usize, s: &Session| {
            let after = tokens(s.conv.log(), s.scale);
            emulated::applied_edit(kind, what, cleared, before.saturating_sub(after))
        };
        for edit in &asks.edits {
            let now = tokens(s.conv.log(), s.scale);
            match edit {
                Edit::ClearThinking(t) => {
                    let Some(keep) = t.keep_turns() else { continue };
                    let rule = Rule {
                        keep_last: Some(Keep::Count(keep as u32)),
                        reasoning: Some(ReasoningPolicy::Strip),
                        ..Rule::default()
                    };
                    if let Ok(e) = self.run(s, rule, Vec::new(), CLEAR_THINKING)? {
                        let edit = applied(CLEAR_THINKING, "cleared_thinking_turns", e.0, now, s);
                        out.applied_edits.push(edit);
                    }
                }
                Edit::ClearToolUses(t) => {
                    if !past(t.trigger.as_ref(), 100_000, now) {
                        continue;
                    }
                    let keep = t.keep.as_ref().map_or(3, |a| a.value) as u32;
                    let rule = Rule {
                        keep_last: Some(Keep::Count(1)),
                        keep_steps: Some(keep),
                        tool_calls: Some(if t.clear_tool_inputs == Some(true) {
                            ToolPolicy::Strip
                        } else {
                            ToolPolicy::StripResponses
                        }),
                        ..Rule::default()
                    };
                    let exclude = t.exclude_tools.clone().unwrap_or_default();
                    // The provider does not clear when it cannot clear at
                    // least this many tokens.
                    if let Some(least) = &t.clear_at_least {
                        let would = self.dry_run(s, rule.clone(), exclude.clone(), fixed)?;
                        if now.saturating_sub(would) < least.value as usize {
                            continue;
                        }
                    }
                    if let Ok(e) = self.run(s, rule, exclude, CLEAR_TOOL_USES)? {
                        let edit = applied(CLEAR_TOOL_USES, "cleared_tool_uses", e.1, now, s);
                        out.applied_edits.push(edit);
                    }
                }
                Edit::Compact(c) => {
                    if !past(c.trigger.as_ref(), 150_000, now) {
                        continue;
                    }
                    let what = "compact_20260112";
                    if let Ok((text, seq)) =
                        self.summarize(s, Some(1), c.instructions.clone(), what)?
                    {
                        out.compaction = Some(cm.compaction(&signature(s.id(), seq), &text));
                        out.alone = c.pause_after_compaction == Some(true);
                    }
                }
                Edit::Other(_) => {}
            }
        }
        let now = tokens(s.conv.log(), s.scale);
        if let Some(w) = cm.wanted(asks, compacts, now) {
            let made = self.summarize(s, w.keep_last, w.instructions, w.note)?;
            let made = if w.required {
                // Asked now, of the whole conversation: a compaction that
                // folds nothing cannot be answered as the provider would.
                Some(made.map_err(|why| nothing_to_compact(s.id(), &why))?)
            } else {
                made.ok()
            };
            if let Some((text, seq)) = made {
                out.compaction = Some(cm.compaction(&signature(s.id(), seq), &text));
                out.alone = w.alone;
            }
        }
        Ok(out)
    }

    /// What a request that repeats one the emulation already answered
    /// with a compaction (a retry: the same history, or an earlier state
    /// of the log) is answered: that compaction again, made from its
    /// record, as the first answer had it. `after`: where the request's
    /// history ends in the log (its last record's index there). The
    /// compaction recorded for it is the first with a summary of the
    /// client's after it, before anything the log compares; `None` when
    /// there is none (the request asked for none, or was never answered).
    pub(super) fn repeated(
        s: &Session,
        shape: Shape,
        asks: &Asks,
        compacts: bool,
        after: usize,
    ) -> Option<Emulated> {
        let records = s.conv.log().records();
        let (seq, text, note) = records
            .get(after + 1..)?
            .iter()
            .find_map(|r| match &r.body {
                Body::Compaction(c) if c.source == Source::Client => {
                    let text = &c.summary.as_ref()?.text;
                    Some((r.seq, text.clone(), c.note.clone().unwrap_or_default()))
                }
                _ => None,
            })?;
        let cm = shape.context_management()?;
        let alone = cm.repeat(asks, compacts, &note)?;
        let compaction = cm.compaction(&signature(s.id(), seq), &text);
        Some(Emulated {
            compaction: Some(compaction),
            alone,
            applied_edits: Vec::new(),
        })
    }

    /// Summarize conversation `s` but its last `keep_last` turns: the
    /// summary's text and its compaction record's `seq`, or why nothing
    /// was folded.
    fn summarize(
        &self,
        s: &mut Session,
        keep_last: Option<u32>,
        instructions: Option<String>,
        what: &str,
    ) -> Result<Result<(String, u64), String>, PrepareError> {
        let rule = Rule {
            keep_last: keep_last.map(Keep::Count),
            summary: Some(SummaryRequest::Derive {
                model: None,
                instructions,
            }),
            ..Rule::default()
        };
        let before = s.conv.log().len();
        if let Err(why) = self.run(s, rule, Vec::new(), what)? {
            return Ok(Err(why));
        }
        let made = s.conv.log().records()[before.min(s.conv.log().len())..]
            .iter()
            .rev()
            .find_map(|r| match &r.body {
                Body::Compaction(c) => c.summary.as_ref().map(|x| (x.text.clone(), r.seq)),
                _ => None,
            });
        Ok(made.ok_or_else(|| "the compaction recorded has no summary".to_owned()))
    }

    /// The tokens of the request (its keys besides the history: `body`)
    /// were `rule` run on `s`, recording nothing.
    fn dry_run(
        &self,
        s: &mut Session,
        rule: Rule,
        exclude: Vec<String>,
        fixed: usize,
    ) -> Result<usize, PrepareError> {
        let ctx = self.plan_context(exclude, "dry run");
        let summarizers = (self.compaction.summarizers)();
        let run = compact_with_rules(&mut s.conv, &[rule], &ctx, summarizers.as_ref(), true)?;
        let mut log = s.conv.log().clone();
        for c in run.compactions {
            let seq = log.next_seq();
            log.push(ctxfold_core::Record::new(
                seq,
                "",
                Body::Compaction(Box::new(c)),
            ));
        }
        Ok(request_tokens(fixed, &log, s.scale))
    }

    /// How the client's compactions are planned: as the client's, the
    /// tools of `exclude` left as they are, the note naming `what`.
    fn plan_context(&self, exclude: Vec<String>, what: &str) -> PlanContext {
        let mut hints = self.compaction.hints.clone();
        for t in exclude {
            hints.per_tool.insert(t, ToolOverride::Keep);
        }
        PlanContext {
            now: Some(jiff::Timestamp::now()),
            hints,
            source: Source::Client,
            note: Some(format!("{what}, emulated by ctxfold")),
            deferred_until_turn: None,
        }
    }

    /// Run `rule` on `s` as the client's compaction (`what` names the
    /// edit); `exclude`: tools left as they are. The reasoning blocks and
    /// tool results it changes, or why it recorded nothing.
    fn run(
        &self,
        s: &mut Session,
        rule: Rule,
        exclude: Vec<String>,
        what: &str,
    ) -> Result<Result<(usize, usize), String>, PrepareError> {
        let ctx = self.plan_context(exclude, what);
        let summarizers = (self.compaction.summarizers)();
        let run = match compact_with_rules(&mut s.conv, &[rule], &ctx, summarizers.as_ref(), false)
        {
            Ok(run) => run,
            // A summary that failed or would not be smaller: nothing is
            // compacted this time, as the provider's failed compaction
            // (a block without a summary) changes nothing.
            Err(ctxfold_compactor::CompactError::Summary(e)) => {
                tracing::info!("{what}: not compacted: {e}");
                return Ok(Err(e));
            }
            // Another process (`c compact`, a replica) is compacting this
            // conversation: the request goes on without this edit rather
            // than being refused.
            Err(ctxfold_compactor::CompactError::Busy) => {
                tracing::info!(
                    "{what}: not compacted now: the conversation is being compacted elsewhere"
                );
                return Ok(Err("it is being compacted elsewhere; try again".into()));
            }
            Err(e) => return Err(e.into()),
        };
        if run.compactions.is_empty() {
            return Ok(Err("it holds nothing to fold".into()));
        }
        let reasoning = run.effects.iter().map(|e| e.reasoning_stripped).sum();
        let results = run.effects.iter().map(|e| e.stripped_results).sum();
        Ok(Ok((reasoning, results)))
    }
}
