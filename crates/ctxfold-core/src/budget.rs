//! One budget for a request, counted as the upstream counts it.
//!
//! The window holds the fixed part (system prompt, tool definitions), the
//! messages, and a reserve for the reply. Automatic compaction fires when
//! the request is over `trigger` and folds, in that one firing, down to
//! `target`: both are the fixed part plus a share of the room the fixed
//! part and the reserve leave. Firings are then as far apart as the band
//! between the two allows, and the prefix the upstream caches (system,
//! tools, the folded head) stays the same between them.

use serde::{Deserialize, Serialize};

use crate::trigger::AutoPolicy;

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
    /// The budget of a request to a model of `window` tokens that carries
    /// `fixed` tokens besides its messages and lets the reply take up to
    /// `max_tokens` (the client's, when it says).
    pub fn new(policy: &AutoPolicy, window: u32, fixed: usize, max_tokens: Option<u32>) -> Budget {
        let window = window as usize;
        // A sixteenth of the window (12.5k of 200k, about what agents keep
        // free), never all of the client's max_tokens: agents ask for the
        // most the model can write, not what it will.
        let reserve = policy
            .reserve_tokens
            .unwrap_or_else(|| {
                let d = window / 16;
                max_tokens.map_or(d, |m| d.min(m as usize))
            })
            .min(window / 2);
        let limit = window - reserve;
        let room = limit.saturating_sub(fixed);
        let share = |r: f64| fixed + (room as f64 * r).floor() as usize;
        Budget {
            window,
            fixed,
            reserve,
            trigger: share(policy.trigger_ratio),
            target: share(policy.target_ratio.min(policy.trigger_ratio)),
            band_target: None,
            step_tokens: None,
        }
    }

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

    /// Tokens of the newest whole units a firing keeps verbatim at least
    /// (`retain_tokens`, else a tenth of the room).
    pub fn retain(&self, policy: &AutoPolicy) -> usize {
        policy.retain_tokens.unwrap_or(self.room() / 10)
    }

    /// Tokens the head summary of a firing may take: `summary_share` of
    /// the room (never less than the digest's floor,
    /// [`SUMMARY_FLOOR_CHARS`](crate::digest::SUMMARY_FLOOR_CHARS)).
    pub fn summary(&self, policy: &AutoPolicy) -> usize {
        let floor = crate::digest::SUMMARY_FLOOR_CHARS / crate::estimate::CHARS_PER_TOKEN;
        ((self.room() as f64 * policy.summary_share).floor() as usize).max(floor)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_and_target_are_shares_of_the_room_after_the_fixed_part() {
        let p = AutoPolicy::default();
        let b = Budget::new(&p, 40_000, 19_000, Some(32_000));
        assert_eq!(b.reserve, 2_500, "a sixteenth, not the client's 32,000");
        assert_eq!(b.room(), 18_500);
        assert_eq!(b.trigger, 19_000 + 13_875);
        assert_eq!(b.target, 19_000 + 9_250);
        assert!(b.min_gain() <= (b.trigger - b.target) / 2);
        assert_eq!(b.summary(&p), 1_850, "a tenth of the room");
        let none = Budget::new(&p, 40_000, 39_000, None);
        assert!(none.no_room());
        assert_eq!(none.trigger, 39_000);
    }

    #[test]
    fn a_firing_in_one_line() {
        let budget = Budget::new(&AutoPolicy::default(), 40_000, 19_000, Some(32_000));
        let mut f = Firing {
            budget,
            before: 34_100,
            after: 27_900,
            escalation: vec![Escalation::Rule, Escalation::Strip, Escalation::ShrinkTail],
            summary_budget: None,
            shortened: 0,
            handles_only: 0,
        };
        assert_eq!(
            f.line(),
            "budget: window 40000, fixed 19000, reserve 2500, trigger 32875, target 28250; \
             the request ~34100 → ~27900 tokens; steps: rule, strip, shrink_tail"
        );
        f.escalation.clear();
        assert!(f.line().ends_with("~27900 tokens"), "{}", f.line());
        f.summary_budget = Some(1_850);
        f.shortened = 12;
        f.handles_only = 3;
        assert!(
            f.line().ends_with(
                "~27900 tokens; summary within ~1850 tokens, user messages cut to a recall handle: 12 to a first line and a handle, 3 to a handle alone"
            ),
            "{}",
            f.line()
        );
    }

    #[test]
    fn a_band_holds_the_steps_asked_for_or_aims_at_the_fixed_part() {
        let b = Budget::new(&AutoPolicy::default(), 40_000, 19_000, Some(32_000));
        assert_eq!(b.banded(None, 8), b, "no steps known: unchanged");
        assert_eq!(b.banded(Some(500), 0), b, "band_steps 0: unchanged");
        let small = b.banded(Some(200), 8);
        assert_eq!(
            small.band_target, None,
            "8 × 200 fit between target and trigger"
        );
        assert_eq!(small.aim(), b.target);
        let wide = b.banded(Some(1_000), 8);
        assert_eq!(wide.band_target, Some(b.trigger - 8_000));
        assert_eq!(wide.step_tokens, Some(1_000));
        assert_eq!(wide.aim(), b.trigger - 8_000);
        assert_eq!(
            wide.target, b.target,
            "the target the deep rungs stop at stays"
        );
        let huge = b.banded(Some(10_000), 8);
        assert_eq!(huge.aim(), b.fixed, "never below the fixed part");
    }

    #[test]
    fn a_configured_reserve_wins_and_target_never_exceeds_trigger() {
        let p = AutoPolicy {
            reserve_tokens: Some(1_000),
            target_ratio: 0.9,
            ..AutoPolicy::default()
        };
        let b = Budget::new(&p, 10_000, 0, Some(100));
        assert_eq!(b.reserve, 1_000);
        assert_eq!(b.target, b.trigger);
    }

    #[test]
    fn a_firing_round_trips_with_its_budget_flat() {
        let f = Firing {
            budget: Budget::new(&AutoPolicy::default(), 1000, 100, None),
            before: 900,
            after: 400,
            escalation: vec![Escalation::Rule, Escalation::Summary],
            summary_budget: Some(90),
            shortened: 4,
            handles_only: 0,
        };
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["window"], 1000);
        assert_eq!(v["escalation"], serde_json::json!(["rule", "summary"]));
        assert_eq!(v["shortened"], 4);
        assert!(v.get("handles_only").is_none(), "zero is left out");
        assert_eq!(serde_json::from_value::<Firing>(v).unwrap(), f);
    }
}
