//! Steering: whether a user sentence corrects or constrains, said in so
//! many words, and the "Corrections and constraints" section that quotes
//! those sentences.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::text::{collapse, normalize_words, truncate_words};

use super::prose::{for_each_user_sentence, trim_emphasis};
use super::scan::Scan;
use super::vocabulary::{
    COMMA_IMPERATIVES, CONSTRAINT_INDEX, CONSTRAINT_OPENINGS, CORRECTION_INDEX,
    CORRECTION_OPENINGS, FILLERS, has_any, lower,
};

/// A quoted correction or constraint is cut to about this many characters.
pub(super) const CONSTRAINT_MAX: usize = 300;
/// At most this many corrections and constraints (the latest).
pub(super) const CONSTRAINTS_MAX: usize = 20;
/// User sentences shorter than this are not quoted as constraints ("No.").
pub(super) const CONSTRAINT_MIN: usize = 12;
/// Whether a user message corrects (`Some(true)`) or constrains
/// (`Some(false)`), by its own sentences.
pub(super) fn steer(content: &str) -> Option<bool> {
    let mut found = None;
    for_each_user_sentence(content, |s| {
        if found != Some(true) && s.chars().count() >= CONSTRAINT_MIN {
            found = steer_sentence(s).or(found);
        }
    });
    found
}

/// Whether one sentence corrects (`Some(true)`) or constrains
/// (`Some(false)`): it says so in so many words, not merely holds one of
/// them ("only", "don't" and "must" describe and infer as often).
pub(super) fn steer_sentence(sentence: &str) -> Option<bool> {
    if trim_emphasis(sentence).ends_with('?') {
        // A question asks; it does not (yet) steer.
        return None;
    }
    let l = lower(sentence.trim_start_matches(['*', '_', '"', '(', ' ']));
    let mut opening = l.as_str();
    while let Some(rest) = FILLERS.iter().find_map(|f| opening.strip_prefix(f)) {
        opening = rest;
    }
    let opens = |set: &[&str]| {
        set.iter().any(|p| {
            opening.starts_with(p)
                && opening[p.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric())
        })
    };
    if opens(CORRECTION_OPENINGS) || has_any(&l, &CORRECTION_INDEX) {
        Some(true)
    } else if opens(CONSTRAINT_OPENINGS)
        || has_any(&l, &CONSTRAINT_INDEX)
        || COMMA_IMPERATIVES.iter().any(|p| l.contains(p))
    {
        Some(false)
    } else {
        None
    }
}

/// The user's own sentences that correct or constrain, the latest
/// [`CONSTRAINTS_MAX`], in order.
pub(super) fn section_constraints(scan: &Scan<'_>) -> String {
    let mut items: Vec<(u32, String)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for r in &scan.requests {
        for_each_user_sentence(r.content, |s| {
            if s.chars().count() < CONSTRAINT_MIN || steer_sentence(s).is_none() {
                return;
            }
            let text = truncate_words(&collapse(s), CONSTRAINT_MAX);
            if seen.insert(normalize_words(&text)) {
                items.push((r.turn, text));
            }
        });
    }
    let mut out = String::new();
    if items.is_empty() {
        return out;
    }
    out.push_str("## Corrections and constraints (the user's words)\n");
    let hidden = items.len().saturating_sub(CONSTRAINTS_MAX);
    if hidden > 0 {
        let _ = writeln!(out, "- ({hidden} earlier not shown)");
    }
    for (turn, text) in items.iter().skip(hidden) {
        let _ = writeln!(out, "- Turn {}: {text}", turn + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, digest_all, said, section, user};
    use crate::record::Body;

    #[test]
    fn corrections_and_constraints_are_kept_as_such() {
        let log = build(vec![
            Body::TurnStart,
            user("Write the parser by hand.\nIt should read the whole file."),
            said("Done."),
            Body::TurnStart,
            user(
                "Actually, use serde instead of a hand-written\nparser. Don't touch the public API.\n\n> You must never do this\n\nIs this the only way?\n\n```\n// never\n```",
            ),
            said("Ok."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Corrections and constraints (the user's words)"),
            [
                "- Turn 2: Actually, use serde instead of a hand-written parser.",
                "- Turn 2: Don't touch the public API.",
            ],
            "{text}"
        );
        let asked = section(&text, "What the user asked");
        assert_eq!(
            asked[..3],
            ["- Turn 1:", "```", "Write the parser by hand."]
        );
        // A fence longer than the one the message holds.
        assert_eq!(asked[5..7], ["- Turn 2 (correction):", "````"], "{text}");
        assert_eq!(asked[7], "Actually, use serde instead of a hand-written");
    }

    #[test]
    fn steering_is_said_in_so_many_words() {
        for (s, want) in [
            ("Don't touch the public API.", Some(false)),
            ("Please make sure the tests still pass.", Some(false)),
            (
                "Go ahead and write the plan, dont implement it yet.",
                Some(false),
            ),
            (
                "One thing I want to avoid is for jp to be git aware.",
                Some(false),
            ),
            ("Actually, use serde for the parser.", Some(true)),
            ("That is an incorrect answer.", Some(true)),
            // Described, inferred or doubted: not steering.
            ("I still don't think the two-pass scan was the issue.", None),
            (
                "It MUST be the streaming parser, nothing else changed.",
                None,
            ),
            ("Some legacy files don't have a timestamp field yet.", None),
            ("It runs in read-only mode by default.", None),
            ("These conversations would not actually be visible.", None),
        ] {
            assert_eq!(steer_sentence(s), want, "{s}");
        }
    }
}
