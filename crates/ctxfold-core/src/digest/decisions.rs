//! The "Decisions and conclusions" section: assistant sentences that
//! decide or conclude (scored by key phrases) and each turn's answer.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::text::{collapse, normalize_words, truncate_words};

use super::prose::{for_each_sentence, paragraphs, strip_marker, trim_emphasis};
use super::scan::{Scan, Text};
use super::vocabulary::{NARRATION, OFFERS, PLAN_INDEX, STRONG_INDEX, WEAK_INDEX, has_any, lower};

/// A decision or answer item is cut to about this many characters.
pub(super) const ITEM_MAX: usize = 300;
/// At most this many key-phrase sentences in the decisions section.
pub(super) const DECISIONS_MAX: usize = 12;
/// At most this many turn answers (the latest turns) in that section.
pub(super) const ANSWERS_MAX: usize = 12;
/// Sentences shorter than this carry too little to keep ("Done.").
pub(super) const SENTENCE_MIN: usize = 25;
/// One item of the decisions section.
pub(super) struct Item {
    pub(super) idx: usize,
    pub(super) order: usize,
    pub(super) turn: u32,
    pub(super) text: String,
    /// A turn's answer (else a key-phrase sentence).
    pub(super) answer: bool,
}

/// A turn's answer: the last paragraph of its last text, when no tool
/// call followed that text in the turn.
pub(super) struct Answer {
    pub(super) idx: usize,
    pub(super) turn: u32,
    pub(super) text: String,
    /// `text` as [`normalize_words`] keys it.
    pub(super) norm: String,
}

/// The answers of the latest [`ANSWERS_MAX`] turns, in turn order. A text
/// that tool calls followed is not one: it narrates the work in progress
/// ("I also need to reconsider…"), and "where it left off" quotes the last.
pub(super) fn turn_answers(scan: &Scan<'_>) -> BTreeMap<u32, Answer> {
    let mut last_text: BTreeMap<u32, &Text<'_>> = BTreeMap::new();
    for t in &scan.texts {
        last_text.insert(t.turn, t);
    }
    let skip = last_text.len().saturating_sub(ANSWERS_MAX);
    let mut answers = BTreeMap::new();
    for (&turn, t) in last_text.iter().skip(skip) {
        let paragraph = if t.structured {
            collapse(&t.content)
        } else {
            answer_paragraph(&t.content)
        };
        if paragraph.is_empty() {
            continue;
        }
        let is_final = scan.last_call_in_turn.get(&turn).is_none_or(|&c| c < t.idx);
        if !is_final {
            continue;
        }
        let text = truncate_words(&paragraph, ITEM_MAX);
        answers.insert(
            turn,
            Answer {
                idx: t.idx,
                turn,
                norm: normalize_words(&text),
                text,
            },
        );
    }
    answers
}

pub(super) fn section_decisions(scan: &Scan<'_>, answers: &BTreeMap<u32, Answer>) -> String {
    let mut items: Vec<Item> = answers
        .values()
        .map(|a| Item {
            idx: a.idx,
            order: usize::MAX,
            turn: a.turn,
            text: a.text.clone(),
            answer: true,
        })
        .collect();

    // Key-phrase sentences: (score, item), the latest duplicate kept.
    let mut candidates: Vec<(u8, Item)> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for t in scan.texts.iter().filter(|t| !t.structured) {
        let mut order = 0;
        for_each_sentence(&t.content, |sentence| {
            order += 1;
            let score = sentence_score(sentence);
            if score == 0 {
                return;
            }
            let text = truncate_words(&collapse(sentence), ITEM_MAX);
            let norm = normalize_words(&text);
            if norm.is_empty()
                || answers
                    .get(&t.turn)
                    .is_some_and(|a| a.norm.contains(norm.as_str()))
            {
                return;
            }
            seen.insert(norm, candidates.len());
            candidates.push((
                score,
                Item {
                    idx: t.idx,
                    order,
                    turn: t.turn,
                    text,
                    answer: false,
                },
            ));
        });
    }
    let keep: BTreeSet<usize> = seen.into_values().collect();
    let mut picked: Vec<(u8, Item)> = candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, c)| c)
        .collect();
    // Strongest first, then latest first; keep the cap; back to log order.
    picked.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.idx.cmp(&a.1.idx))
            .then(b.1.order.cmp(&a.1.order))
    });
    picked.truncate(DECISIONS_MAX);
    items.extend(picked.into_iter().map(|(_, item)| item));
    items.sort_by(|a, b| a.idx.cmp(&b.idx).then(a.order.cmp(&b.order)));

    let mut out = String::new();
    if items.is_empty() {
        return out;
    }
    out.push_str("## Decisions and conclusions\n");
    for item in &items {
        let label = if item.answer { " (answer)" } else { "" };
        let _ = writeln!(out, "- Turn {}{label}: {}", item.turn + 1, item.text);
    }
    out
}

/// 2 for a decision or conclusion, 1 for a likely one, 0 for neither.
pub(super) fn sentence_score(sentence: &str) -> u8 {
    let end = trim_emphasis(sentence);
    if sentence.chars().count() < SENTENCE_MIN || end.ends_with(':') {
        return 0;
    }
    let l = lower(sentence);
    // A condition ("If trigram doesn't error…, the flow still works")
    // supposes; it does not settle anything.
    if has_any(&l, &PLAN_INDEX) || l.starts_with("if ") || l.starts_with("unless ") {
        return 0;
    }
    let question = end.ends_with('?');
    if has_any(&l, &STRONG_INDEX) {
        return if question { 1 } else { 2 };
    }
    if question || NARRATION.iter().any(|p| l.starts_with(p)) {
        return 0;
    }
    u8::from(has_any(&l, &WEAK_INDEX))
}

/// A turn's answer: the last paragraph of its last text that is not an
/// offer of more help, a question or an intro ending with a colon.
pub(super) fn answer_paragraph(text: &str) -> String {
    let paras = paragraphs(text);
    // Skip closing offers and questions, and intros to a code block or list.
    let is_offer = |p: &String| {
        let l = lower(strip_marker(p));
        let end = trim_emphasis(p);
        end.ends_with('?') || end.ends_with(':') || OFFERS.iter().any(|o| l.starts_with(o))
    };
    match paras.iter().rev().find(|p| !is_offer(p)).or(paras.last()) {
        Some(p) => p.clone(),
        None => collapse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, digest_all, said, sample, section, user};
    use crate::record::Body;
    use serde_json::json;

    #[test]
    fn decisions_pick_key_sentences_and_each_turn_answer() {
        let text = digest_all(&sample());
        let lines = section(&text, "Decisions and conclusions");
        assert!(
            lines.contains(
                &"- Turn 1: The root cause is a missing import of `Session` in the login path."
            ),
            "{lines:#?}"
        );
        // The turn's answer skips the closing offer.
        assert!(
            lines.contains(&"- Turn 1 (answer): I fixed the import and the check passes now."),
            "{lines:#?}"
        );
        // Narration and reasoning are not picked.
        assert!(!text.contains("Let me look"));
        assert!(!lines.iter().any(|l| l.contains("I'll add it")));
        assert!(!text.contains("secret reasoning"));
    }

    #[test]
    fn decisions_are_deduplicated_and_capped_keeping_strong_then_latest() {
        let mut bodies = vec![Body::TurnStart, user("go")];
        for i in 0..30 {
            bodies.push(said(&format!(
                "We prefer option {i} for now.\n\nThe root cause is bug {} in the parser.\n\nThe root cause is bug {} in the parser.",
                i % 5,
                i % 5
            )));
        }
        bodies.push(said("All finished, thanks."));
        let text = digest_all(&build(bodies));
        let lines = section(&text, "Decisions and conclusions");
        assert!(lines.len() <= DECISIONS_MAX + 1, "{lines:#?}");
        for b in 0..5 {
            let needle = format!("The root cause is bug {b} in the parser.");
            let n = lines.iter().filter(|l| l.ends_with(&needle)).count();
            assert_eq!(n, 1, "{needle}: {lines:#?}");
        }
        // Weak sentences fill the rest, latest first.
        assert!(lines.iter().any(|l| l.contains("option 29")));
        assert!(!lines.iter().any(|l| l.contains("option 0 ")));
        assert_eq!(
            lines.last().unwrap(),
            &"- Turn 1 (answer): All finished, thanks."
        );
    }

    #[test]
    fn plans_doubts_and_conditions_are_not_decisions() {
        for s in [
            "I also need to reconsider the Auto-mode fallback test.",
            "If trigram doesn't error on short queries, the flow still works.",
            "We'll implement the update command for every provider.",
            "Maybe the root cause is the cache after all.",
        ] {
            assert_eq!(sentence_score(s), 0, "{s}");
        }
        assert_eq!(
            sentence_score("We decided to keep the cache per process."),
            2
        );
    }

    #[test]
    fn keyword_matching_respects_word_boundaries() {
        assert_eq!(
            sentence_score("The frameworks were abandoned in the prefixed dir."),
            0
        );
        assert_eq!(sentence_score("Everything works on both platforms now."), 1);
        assert_eq!(sentence_score("The fix is to clear the cache on load."), 2);
        assert_eq!(
            sentence_score("Should I also update the changelog entry?"),
            0
        );
        assert_eq!(sentence_score("Let me check whether this works now."), 0);
        assert_eq!(sentence_score("Done."), 0);
    }

    #[test]
    fn answers_skip_intros_and_left_off_hides_code() {
        let log = build(vec![
            user("patch it"),
            said(
                "The parser drops the last line.\n\nHere is the fix:\n\n```rust\nfn a() {}\nfn b() {}\n```",
            ),
        ]);
        let text = digest_all(&log);
        assert!(
            text.contains("- Turn 1 (answer): The parser drops the last line.\n"),
            "{text}"
        );
        assert!(text.contains(
            "- Last assistant text (turn 1): The parser drops the last line. Here is the fix: [code block, 2 lines]\n"
        ));
        assert_eq!(
            sentence_score("Can we keep native types instead of JSON?**"),
            0
        );
    }

    #[test]
    fn structured_answers_count_as_answers() {
        let log = build(vec![
            user("give me json"),
            Body::Structured {
                data: json!({"answer": 42}).into(),
            },
        ]);
        let text = digest_all(&log);
        assert!(
            text.contains("- Turn 1 (answer): {\"answer\":42}"),
            "{text}"
        );
    }
}
