//! What an automatic firing works to and what it did: the values a
//! compaction record keeps (`budget` in the log), so they sit with the
//! model the log is read into, below the policies that compute them
//! (`crate::budget` sizes a [`Budget`] from `[compaction.auto]`).

use serde::{Deserialize, Serialize};

/// The figures a firing works to, in tokens of the whole request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The model's context window.
    pub window: usize,
    /// What every request carries besides the conversation: the system
    /// prompt and the tool definitions.
    pub fixed: usize,
    /// Kept free for the reply.
    pub reserve: usize,
    /// A request over this fires automatic compaction.
    pub trigger: usize,
    /// What a firing compacts down to.
    pub target: usize,
    /// What a firing folds down to first, when the conversation's recent
    /// steps are known ([`Budget::banded`]): low enough that the band up
    /// to the trigger holds `band_steps` of them. Reaching it takes only
    /// the gentle rungs (the rule, strip, the head summary with the
    /// retained tail kept); the rungs that cut into the retained tail
    /// still stop at `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band_target: Option<usize>,
    /// The recent steps' average size the band was sized from, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_tokens: Option<usize>,
}

impl Budget {
    /// The budget with its band sized for the provider's prompt cache: a
    /// firing rewrites the request's prefix, so firings should be rare
    /// (see docs/PERFORMANCE.md, "the cost of a firing"). When `steps`
    /// steps of `step_tokens` each do not fit between `target` and the
    /// trigger, the firing aims lower, at `trigger - steps × step_tokens`
    /// (never below the fixed part). Unchanged for `steps` 0 or an
    /// unknown step size.
    pub fn banded(mut self, step_tokens: Option<usize>, steps: u32) -> Budget {
        let Some(step) = step_tokens.filter(|&t| t > 0 && steps > 0) else {
            return self;
        };
        self.step_tokens = Some(step);
        let band = step.saturating_mul(steps as usize);
        let aim = self.trigger.saturating_sub(band).max(self.fixed);
        if aim < self.target {
            self.band_target = Some(aim);
        }
        self
    }

    /// What the first rungs of a firing fold down to: the band target
    /// when there is one, else the target.
    pub fn aim(&self) -> usize {
        self.band_target.unwrap_or(self.target)
    }

    /// The most a request may hold: the window less the reserve.
    pub fn limit(&self) -> usize {
        self.window - self.reserve
    }

    /// What the conversation itself may take: the limit less the fixed
    /// part.
    pub fn room(&self) -> usize {
        self.limit().saturating_sub(self.fixed)
    }

    /// Whether the fixed part alone leaves no room for the conversation.
    pub fn no_room(&self) -> bool {
        self.room() == 0
    }

    /// The least a firing must save to be recorded (unless the request
    /// would not fit without it): a tenth of the window, or half the band
    /// between trigger and target when that is smaller.
    pub fn min_gain(&self) -> usize {
        (self.window / 10).min(self.trigger.saturating_sub(self.target) / 2)
    }
}

/// What one automatic firing worked to and did, kept in the compaction
/// record it appended (`budget` in the log): `c show` and the pages say it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Firing {
    /// The budget.
    #[serde(flatten)]
    pub budget: Budget,
    /// Estimated tokens of the request before the firing.
    pub before: usize,
    /// Estimated tokens of the request after it.
    pub after: usize,
    /// The steps it took, in order (`rule` alone when the rule was enough).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalation: Vec<Escalation>,
    /// Tokens its head summary could take ([`Budget::summary`]), when it
    /// made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_budget: Option<usize>,
    /// User messages its head summary shortened to their first line and a
    /// recall handle.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shortened: usize,
    /// User messages its head summary kept as a recall handle alone.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub handles_only: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Firing {
    /// The names of the steps it took, in order.
    pub fn steps(&self) -> Vec<&'static str> {
        self.escalation.iter().map(|e| e.name()).collect()
    }

    /// The firing in one line, for `c show`: the budget it worked to, the
    /// request's size before and after, the steps it took, and what its
    /// summary cut to a recall handle.
    pub fn line(&self) -> String {
        let b = &self.budget;
        let mut line = format!(
            "budget: window {}, fixed {}, reserve {}, trigger {}, target {}; the request ~{} → ~{} tokens",
            b.window, b.fixed, b.reserve, b.trigger, b.target, self.before, self.after
        );
        if let (Some(aim), Some(step)) = (b.band_target, b.step_tokens) {
            line.push_str(&format!(
                "; band target {aim} (recent steps ~{step} tokens each)"
            ));
        }
        if !self.escalation.is_empty() {
            line.push_str(&format!("; steps: {}", self.steps().join(", ")));
        }
        if let Some(s) = self.summary_budget {
            line.push_str(&format!("; summary within ~{s} tokens"));
        }
        if self.shortened + self.handles_only > 0 {
            line.push_str(&format!(
                ", user messages cut to a recall handle: {} to a first line and a handle, {} to a handle alone",
                self.shortened, self.handles_only
            ));
        }
        line
    }
}

/// A step of a firing, in the order they are tried: each is taken only
/// when the ones before it do not bring the request to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// The automatic rule over what lies before the retained tail.
    Rule,
    /// Reasoning and tool traffic the rule left, stripped too (per-tool
    /// `keep` hints and a rule without a tool policy included).
    Strip,
    /// The head summarized into one checkpoint (the offline digest or the
    /// rule's summarizer), merging earlier ones.
    Summary,
    /// The retained tail shrunk to the newest whole unit.
    ShrinkTail,
    /// Single units over a per-unit cap (tool results, pasted messages)
    /// shown as their head and tail, in the view only: for a request that
    /// would not fit the window otherwise.
    Clip,
}

impl Escalation {
    /// Its name, as the log spells it.
    pub fn name(self) -> &'static str {
        match self {
            Escalation::Rule => "rule",
            Escalation::Strip => "strip",
            Escalation::Summary => "summary",
            Escalation::ShrinkTail => "shrink_tail",
            Escalation::Clip => "clip",
        }
    }
}
