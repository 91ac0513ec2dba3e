//! The one pass over a view's text that decides which facts it keeps
//! (`batch.rs`): every distinct needle in one Aho-Corasick automaton,
//! each fact's check replayed at its occurrences as `appears` and
//! `diagnostic_appears` decide it.

use aho_corasick::AhoCorasick;
use foldhash::{HashMap, HashSet};

use crate::diagnostics::{Diagnostic, collapse};

/// How a fact's presence is decided: by the finder's pass (its answer's
/// index), by the reference function where the pass cannot (an empty
/// needle), or known kept without a search (a request the view shows as
/// it is).
#[derive(Clone, Copy)]
pub(super) enum Resolution {
    Found(usize),
    Direct,
    Kept,
}

/// Every distinct needle looked for at once, in one pass over the text,
/// deciding each fact as [`appears`] and [`diagnostic_appears`] do, at
/// every occurrence (overlapping ones too).
#[derive(Default)]
pub(super) struct Finder {
    patterns: Vec<String>,
    ids: HashMap<String, usize>,
    /// Per pattern: the checks that look at each of its occurrences, and
    /// those that need it anywhere.
    at_each: Vec<Vec<usize>>,
    anywhere: Vec<Vec<usize>>,
    checks: Vec<Check>,
}

enum Check {
    /// The needle whole, not inside a longer word (`appears`).
    Whole {
        first: bool,
        last: bool,
        inner: fn(char) -> bool,
    },
    /// A diagnostic's line with its location in the 400 bytes after it.
    Line { location: Option<String> },
    /// A diagnostic's text anywhere.
    Anywhere,
}

impl Finder {
    fn pattern(&mut self, needle: String) -> usize {
        if let Some(&p) = self.ids.get(&needle) {
            return p;
        }
        let p = self.patterns.len();
        self.ids.insert(needle.clone(), p);
        self.patterns.push(needle);
        self.at_each.push(Vec::new());
        self.anywhere.push(Vec::new());
        p
    }

    fn add(&mut self, p: usize, check: Check) -> usize {
        let c = self.checks.len();
        match check {
            Check::Anywhere => self.anywhere[p].push(c),
            _ => self.at_each[p].push(c),
        }
        self.checks.push(check);
        c
    }

    /// Whether nothing is looked for.
    pub(super) fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// `needle` as `appears` looks for it.
    pub(super) fn whole(&mut self, needle: &str, inner: fn(char) -> bool) -> Resolution {
        let needle = collapse(needle);
        if needle.is_empty() {
            return Resolution::Direct;
        }
        let first = needle.chars().next().is_some_and(inner);
        let last = needle.chars().next_back().is_some_and(inner);
        let p = self.pattern(needle);
        Resolution::Found(self.add(p, Check::Whole { first, last, inner }))
    }

    /// `d` as `diagnostic_appears` looks for it: two checks, the text
    /// anywhere and the line with its location; answered by the pair's
    /// first index (the second follows it).
    pub(super) fn diagnostic(&mut self, d: &Diagnostic) -> Resolution {
        let (text, line) = (collapse(&d.text), collapse(&d.line));
        if text.is_empty() || line.is_empty() {
            return Resolution::Direct;
        }
        let p = self.pattern(text);
        let c = self.add(p, Check::Anywhere);
        let p = self.pattern(line);
        self.add(
            p,
            Check::Line {
                location: d.location.clone(),
            },
        );
        Resolution::Found(c)
    }

    /// Whether each check holds in `text`; a diagnostic's answer is at its
    /// first check's index, made the pair's either.
    pub(super) fn run(&self, text: &str) -> Option<Vec<bool>> {
        let mut found = vec![false; self.checks.len()];
        // Only the needles that can occur go into the automaton: building
        // it is most of the pass's cost, and in a small view (ranges that
        // nest) most needles are folded away: a user request naming its
        // turn, a path only the folded calls gave. Pruning reads every
        // word of the text, so it is done only when the needles are many;
        // a few hundred paths and diagnostics build in no time.
        let bytes: usize = self.patterns.iter().map(String::len).sum();
        let live: Vec<usize> = if bytes > PRUNE_FROM {
            let words = words(text);
            (0..self.patterns.len())
                .filter(|&p| could_occur(&self.patterns[p], &words))
                .collect()
        } else {
            (0..self.patterns.len()).collect()
        };
        if live.is_empty() {
            return Some(found);
        }
        let ac = AhoCorasick::new(live.iter().map(|&p| &self.patterns[p])).ok()?;
        // Whether any of a pattern's checks is still open.
        let mut open: Vec<bool> = (0..self.patterns.len()).map(|_| true).collect();
        for m in ac.find_overlapping_iter(text) {
            let p = live[m.pattern().as_usize()];
            if !open[p] {
                continue;
            }
            for &c in &self.anywhere[p] {
                found[c] = true;
            }
            for &c in &self.at_each[p] {
                if !found[c] {
                    found[c] = self.holds(&self.checks[c], text, m.start(), m.end());
                }
            }
            open[p] = self.at_each[p].iter().any(|&c| !found[c]);
        }
        // A diagnostic's line check follows its text check.
        for c in 0..self.checks.len() {
            if matches!(self.checks[c], Check::Anywhere) && found[c + 1] {
                found[c] = true;
            }
        }
        Some(found)
    }

    fn holds(&self, check: &Check, text: &str, at: usize, end: usize) -> bool {
        match check {
            Check::Whole { first, last, inner } => {
                let before = text[..at].chars().next_back();
                let after = text[end..].chars().next();
                !(*first && before.is_some_and(inner) || *last && after.is_some_and(inner))
            }
            Check::Line { location: None } => true,
            Check::Line {
                location: Some(loc),
            } => {
                let mut stop = (end + 400).min(text.len());
                while !text.is_char_boundary(stop) {
                    stop -= 1;
                }
                text[end..stop].contains(loc.as_str())
            }
            Check::Anywhere => true,
        }
    }
}

/// The words of `text`: its maximal runs of alphanumeric characters.
fn words(text: &str) -> HashSet<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether `needle` can occur in the text whose [`words`] are `words`: a
/// run of alphanumeric characters inside the needle (with a character
/// that is not one on each side of it in the needle) is a whole word
/// wherever the needle occurs, so it must be one of the text's. The runs
/// at the needle's ends may be parts of longer words there, and are not
/// asked for.
fn could_occur(needle: &str, words: &HashSet<&str>) -> bool {
    let runs: Vec<&str> = needle.split(|c: char| !c.is_alphanumeric()).collect();
    // `split` gives an empty first (last) piece when the needle starts
    // (ends) with a separator, so the pieces strictly inside are whole
    // runs with a separator on each side.
    runs.len() < 3
        || runs[1..runs.len() - 1]
            .iter()
            .all(|w| w.is_empty() || words.contains(w))
}

/// Needles' total bytes from which only those whose inner words occur in
/// the text go into the automaton.
const PRUNE_FROM: usize = 1 << 18;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_needle_can_occur_only_where_its_inner_words_are_words_of_the_text() {
        let text = "Turn 7: fix the failing test in src/module_7.rs; turn 12 too";
        let w = words(text);
        // Its inner words all there (the end words may be parts of longer ones).
        for needle in [
            "Turn 7: fix the",
            "urn 7: fix th",
            "module_7.r",
            "12",
            "x the f",
        ] {
            assert!(could_occur(needle, &w), "{needle}");
            assert!(text.contains(needle), "{needle}");
        }
        // An inner word the text does not hold: it cannot occur.
        for needle in ["Turn 8: fix", "in src/lib.rs", "a 123 b"] {
            assert!(!could_occur(needle, &w), "{needle}");
            assert!(!text.contains(needle), "{needle}");
        }
    }
}
