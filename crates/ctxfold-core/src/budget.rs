//! One budget for a request, counted as the upstream counts it.
//!
//! The window holds the fixed part (system prompt, tool definitions), the
//! messages, and a reserve for the reply. Automatic compaction fires when
//! the request is over `trigger` and folds, in that one firing, down to
//! `target`: both are the fixed part plus a share of the room the fixed
//! part and the reserve leave. Firings are then as far apart as the band
//! between the two allows, and the prefix the upstream caches (system,
//! tools, the folded head) stays the same between them.

pub use crate::firing::{Budget, Escalation, Firing};
use crate::trigger::AutoPolicy;

// Sizing a budget takes the policy; the figures themselves (`Budget`) are
// the model's (`crate::firing`), kept in the compaction record.
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
}

impl AutoPolicy {
    /// The budget of a request to a model of `window` tokens carrying
    /// `fixed` tokens besides the conversation (see [`Budget::new`]).
    pub fn budget(&self, window: u32, fixed: usize, max_tokens: Option<u32>) -> Budget {
        Budget::new(self, window, fixed, max_tokens)
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
