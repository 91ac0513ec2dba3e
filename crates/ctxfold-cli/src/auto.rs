//! Automatic compaction from the command line, before the agent host
//! exists: `conversation compact --auto[=turn|step]` runs the trigger once,
//! `ctxfold compact FILE --auto` replays a transcript as a live agent with
//! that window would have grown it, and `conversation append` runs the
//! between-turn trigger when `[compaction.auto] enabled` and the appended
//! records complete a turn.

use anyhow::{Context as _, bail};
use ctxfold_compactor::replay::Replay;
use ctxfold_compactor::{
    BasicCompactor, Compactor, Context, Conversation, Moment, Outcome, Status,
};
use ctxfold_core::planner::SummaryRequest;
use ctxfold_core::{Body, Log};
use serde::Serialize;
use serde_json::json;

use crate::render::Report;
use crate::settings::Settings;

/// What an automatic run needs: the policy and the model's window.
pub struct Auto {
    compactor: BasicCompactor,
    window: u32,
}

/// The trigger run once on a conversation (`conversation compact --auto`).
pub struct Fired {
    outcome: Outcome,
    id: String,
    window: u32,
    dry_run: bool,
}

impl Report for Fired {}

/// The outcome, with the conversation, the window and `dry_run`.
impl Serialize for Fired {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let json = serde_json::to_value(&self.outcome).map_err(serde::ser::Error::custom)?;
        let fields = [
            ("id", json!(self.id)),
            ("window", json!(self.window)),
            ("dry_run", json!(self.dry_run)),
        ];
        crate::render::with_fields(json, fields).serialize(s)
    }
}

impl std::fmt::Display for Fired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let outcome = &self.outcome;
        let mut text = describe(outcome);
        if self.dry_run && outcome.compacted() {
            text.push_str("dry run: nothing was written\n");
        } else if outcome.compacted() {
            text.push_str(
                "`ctxfold conversation compact --reset=N` undoes (N as `show` numbers it)\n",
            );
        }
        f.write_str(&text)
    }
}

impl Auto {
    /// The automatic policy from config, made to run (the command asked
    /// for it, whatever `enabled` says), with the window from `--window`
    /// or the model's (`-m`, which also names the summarizer of a summary
    /// rule).
    pub fn from_flags(
        settings: &Settings,
        window: Option<u32>,
        model: Option<&str>,
    ) -> anyhow::Result<Auto> {
        let mut policy = settings.auto.clone();
        policy.enabled = true;
        if let (Some(m), Some(SummaryRequest::Derive { model, .. })) =
            (model, &mut policy.rule.summary)
        {
            *model = Some(m.to_owned());
        }
        let window = match (window, model) {
            (Some(w), _) => w,
            (None, Some(m)) => window_of(settings, m)?,
            (None, None) => bail!(
                "--auto needs the model's context window: give it with --window N (tokens), or name the model with -m provider/model"
            ),
        };
        Ok(Auto {
            compactor: compactor(settings, policy),
            window,
        })
    }

    /// Run the trigger once, as it would fire at `moment`.
    pub fn once(
        &self,
        conv: &mut Conversation<'_>,
        moment: Moment,
        dry_run: bool,
        id: &str,
    ) -> anyhow::Result<Fired> {
        let ctx = Context {
            dry_run,
            now: Some(jiff::Timestamp::now()),
            ..Context::new(moment, Some(self.window))
        };
        let outcome = self.compactor.compact_if_needed(conv, &ctx)?;
        Ok(Fired {
            outcome,
            id: id.to_owned(),
            window: self.window,
            dry_run,
        })
    }

    /// Replay `log` record by record as a live agent would have grown it,
    /// compacting before every model call and after every turn (the
    /// compaction service's `replay`).
    pub fn replay(&self, log: &Log) -> anyhow::Result<Replay> {
        Ok(ctxfold_compactor::replay::replay(
            &self.compactor,
            log,
            self.window,
        )?)
    }

    /// After `conversation append`: when automatic compaction is on and
    /// the appended records complete a turn, the between-turn trigger.
    pub fn after_append(
        settings: &Settings,
        conv: &mut Conversation<'_>,
        window: Option<u32>,
    ) -> anyhow::Result<Option<Outcome>> {
        if !settings.auto.enabled || !turn_complete(conv.log()) {
            return Ok(None);
        }
        let compactor = compactor(settings, settings.auto.clone());
        let ctx = Context {
            now: Some(jiff::Timestamp::now()),
            ..Context::new(Moment::BetweenTurns, window)
        };
        Ok(Some(compactor.compact_if_needed(conv, &ctx)?))
    }
}

/// The compaction service as a command runs it.
fn compactor(settings: &Settings, policy: ctxfold_core::trigger::AutoPolicy) -> BasicCompactor {
    BasicCompactor::new(
        policy,
        settings.hints.clone(),
        Box::new(ctxfold_tokens::Heuristic::default()),
        Box::new(crate::summarizers::CliSummarizers::new(settings.clone())),
    )
}

/// The context window of `model` (`provider/model`): the built-in table,
/// then the provider (its server, then its config).
fn window_of(settings: &Settings, model: &str) -> anyhow::Result<u32> {
    let (provider, name) = settings
        .providers
        .resolve(model)
        .with_context(|| format!("-m {model}"))?;
    if let Some(w) = ctxfold_tokens::context_window(&name) {
        return Ok(w);
    }
    match provider.context_window(&name)? {
        Some(w) => Ok(w),
        None => bail!(
            "the context window of {model} is not known: give it with --window N, or context_window in [providers.{}]",
            provider.name()
        ),
    }
}

/// Whether the log ends with a complete turn: the model answered (its last
/// visible event is assistant text or a structured answer) and every call
/// has its result.
pub fn turn_complete(log: &Log) -> bool {
    let last = log
        .records()
        .iter()
        .rev()
        .find(|r| r.body.is_model_visible());
    let answered = matches!(
        last.map(|r| &r.body),
        Some(Body::Assistant { .. } | Body::Structured { .. })
    );
    let Some(turn) = (log.turn_count() as u32).checked_sub(1) else {
        return false;
    };
    answered && log.steps(turn).iter().all(|s| s.closed)
}

/// An outcome in words.
pub fn describe(o: &Outcome) -> String {
    let mut text = String::new();
    let moment = match o.moment {
        Moment::BetweenTurns => "between turns",
        Moment::BeforeStep => "before the next model call",
    };
    let threshold = match o.budget {
        Some(b) => format!(
            " (trigger ~{} tokens, target ~{}, window {}: fixed ~{}, reserve {})",
            b.trigger, b.target, b.window, b.fixed, b.reserve
        ),
        None => String::new(),
    };
    for c in &o.committed {
        let comp = &c.compaction;
        text.push_str(&format!(
            "automatic compaction {moment}: turns {}–{}{}: {}\n",
            u64::from(comp.from_turn) + 1,
            u64::from(comp.to_turn) + 1,
            match (comp.from_seq, comp.to_seq) {
                (Some(a), Some(b)) => format!(" (records {a}–{b})"),
                _ => String::new(),
            },
            c.effect.describe(comp).join(", ")
        ));
        if let Some(f) = &comp.budget
            && !f.escalation.is_empty()
        {
            let steps: Vec<&str> = f.escalation.iter().map(|e| e.name()).collect();
            text.push_str(&format!(
                "  ~{} → ~{} tokens; steps: {}\n",
                f.before,
                f.after,
                steps.join(", ")
            ));
        }
    }
    let status = match &o.status {
        Status::Skipped { why } => format!("not compacted: {why}"),
        Status::Compacted => format!("~{} → ~{} tokens{threshold}", o.before, o.after),
        Status::StillOver { reason } => {
            format!(
                "~{} → ~{} tokens{threshold}; still over: {reason}",
                o.before, o.after
            )
        }
        Status::NothingToCompact { reason } => format!("nothing to compact: {reason}"),
        Status::Unfit {
            unit_tokens,
            threshold,
        } => format!(
            "the newest step alone holds ~{unit_tokens} tokens, over the ~{threshold}-token threshold: compaction cannot make it fit"
        ),
        Status::NoRoom { fixed, limit } => format!(
            "the fixed part (system prompt and tools, ~{fixed} tokens) alone fills the window less the reply's reserve (~{limit}): nothing folded can make room"
        ),
        Status::Busy => "another process is compacting this conversation; nothing was done".into(),
        Status::BreakerOpen => {
            "automatic compaction is stopped for the rest of this turn after repeated failures"
                .into()
        }
        Status::Failed { error } => format!("compaction failed, nothing was recorded: {error}"),
    };
    text.push_str(&status);
    text.push('\n');
    text
}
