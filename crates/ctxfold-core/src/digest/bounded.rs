//! The digest within a budget (SPEC §16): the head summary an automatic
//! firing keeps. Anything folded can be recalled, so the summary need not
//! grow with the conversation:
//!
//! - the user's words stay byte for byte within the budget, newest first
//!   (however long a message is: no start-and-end cut here), taking at
//!   most half of the budget when they do not all fit;
//! - an older message that no longer fits becomes its first line (cut at
//!   about [`FIRST_LINE_CHARS`]) and the handle of its record
//!   (`recall TAG:N`), which brings it back exactly;
//! - when even those lines do not fit, the oldest become a handle alone,
//!   in one list, and past that one range handle over their records;
//! - the other sections shrink first: the full form, then the terse, the
//!   minimal, and the header alone, the first whose sections leave the
//!   user's words at least half of the budget (or that fits whole).
//!
//! The whole text is at most the budget (never less than
//! [`SUMMARY_FLOOR_CHARS`]), and never more than three quarters of the
//! range it replaces.

use super::Digest;
use super::forms::{Short, render_full_with, render_short_with};
use super::requests::{item_head, spaced, verbatim};
use super::scan::{Request, scan};
use crate::compaction::Provenance;
use crate::handle::{Handle, Tag, recall_hint};
use crate::position::{is_overlay, position};
use crate::summarizer::{SummarizeError, SummaryInput, SummaryOutput};
use crate::text::truncate_words;

/// The least budget a bounded digest is given, in characters: the header,
/// a line of handles and the last answer fit in it.
pub const SUMMARY_FLOOR_CHARS: usize = 400;

/// A shortened user message keeps about this many characters of its first
/// line.
pub const FIRST_LINE_CHARS: usize = 100;

/// What the provenance of a bounded digest says it did.
pub const BOUNDED_METHOD: &str = "bounded";

/// A digest made within a budget, and what it did with the user's words.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounded {
    /// The summary (`method: "bounded"`).
    pub output: SummaryOutput,
    /// How the user's messages were kept.
    pub kept: KeptWords,
}

/// How many of a range's user messages a bounded digest kept each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptWords {
    /// Whole, byte for byte.
    pub whole: usize,
    /// As their first line and the handle of their record.
    pub shortened: usize,
    /// As a handle alone (in the list of handles, or inside the one range
    /// handle over the oldest).
    pub by_handle: usize,
}

impl KeptWords {
    /// Messages kept other than whole: what the summary cut to a handle.
    pub fn cut(&self) -> usize {
        self.shortened + self.by_handle
    }
}

/// How one request is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    Whole,
    FirstLine,
    Handle,
    InRange,
}

/// The start of the line of handles.
const HANDLES_PREFIX: &str = "- Older messages, each whole through its handle: recall ";

impl Digest {
    /// Digest the range in at most `max_chars` characters (see the module
    /// docs of `digest::bounded`): the user's words byte for byte newest
    /// first, older ones as their first line and a handle.
    pub fn summarize_within(
        &self,
        input: SummaryInput<'_>,
        max_chars: usize,
    ) -> Result<Bounded, SummarizeError> {
        let (lo, hi) = input.range;
        let log = input.log;
        let scan = scan(log, lo, hi)?;
        let tag = Tag::of(log).unwrap_or_default();
        // The position of each request's record: what its handle names.
        let mut at = Vec::with_capacity(scan.requests.len());
        let mut pos = position(log, lo);
        let mut next = lo;
        for r in &scan.requests {
            pos += log.records()[next..r.idx]
                .iter()
                .filter(|x| !is_overlay(&x.body))
                .count() as u64;
            next = r.idx;
            at.push(pos);
        }
        let raw_chars: usize = log.records()[lo..=hi]
            .iter()
            .map(|r| crate::estimate::record_tokens(r) * 4)
            .sum();
        let budget = max_chars
            .min(raw_chars - raw_chars / 4)
            .max(SUMMARY_FLOOR_CHARS);
        let render = |form: Option<Short>, requests: String| match form {
            None => render_full_with(log, &scan, lo, hi, requests),
            Some(f) => render_short_with(log, &scan, f, Some(&requests)),
        };
        let forms = [
            None,
            Some(Short::Terse),
            Some(Short::Minimal),
            Some(Short::Bare),
        ];
        let heading = |form: Option<Short>| {
            if form.is_none() {
                "## What the user asked\n"
            } else {
                ""
            }
        };
        // The form's other sections, and what adding a requests section
        // adds besides it (the blank line before a section).
        let other = |form: Option<Short>| {
            let sep = usize::from(form.is_none() && !scan.requests.is_empty());
            chars(&render(form, String::new())) + sep
        };
        let others: Vec<usize> = forms.iter().map(|&f| other(f)).collect();
        // Every request whole: the full form's section, and the shorter
        // forms' (the same lines without the heading).
        let all = allocate(&scan.requests, &at, tag, usize::MAX, heading(None));
        let lines = all.0.strip_prefix(heading(None)).unwrap_or("").to_owned();
        let mut chosen = None;
        for (i, &form) in forms.iter().enumerate() {
            let section = if form.is_none() { &all.0 } else { &lines };
            if others[i] + chars(section) <= budget {
                chosen = Some((form, section.clone(), all.1));
                break;
            }
        }
        let chosen = chosen.unwrap_or_else(|| {
            let i = (0..forms.len())
                .find(|&i| others[i] <= budget / 2)
                .unwrap_or(forms.len() - 1);
            let room = budget.saturating_sub(others[i]);
            let (section, kept) = allocate(&scan.requests, &at, tag, room, heading(forms[i]));
            (forms[i], section, kept)
        });
        let (form, section, kept) = chosen;
        let text = render(form, section);
        let mut provenance = Digest::provenance();
        if let Provenance::Derived { method, .. } = &mut provenance {
            *method = Some(BOUNDED_METHOD.into());
        }
        Ok(Bounded {
            output: SummaryOutput { text, provenance },
            kept,
        })
    }
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// A request kept whole.
fn whole_item(r: &Request<'_>) -> String {
    format!("{}{}\n", item_head(r), spaced(verbatim(r.content)))
}

/// A request as its first line and its handle.
fn first_line_item(r: &Request<'_>, handle: &Handle) -> String {
    let line = r.content.trim().lines().next().unwrap_or("").trim();
    format!(
        "{} {} [first line of {} characters: {}]\n",
        item_head(r),
        truncate_words(line, FIRST_LINE_CHARS),
        chars(r.content),
        recall_hint(handle)
    )
}

/// The oldest `k` requests in one range handle over their records.
fn range_item(reqs: &[Request<'_>], at: &[u64], k: usize, tag: Tag) -> String {
    let (first, last) = (&reqs[0], &reqs[k - 1]);
    let turns = if first.turn == last.turn {
        format!("Turn {}", first.turn + 1)
    } else {
        format!("Turns {}–{}", first.turn + 1, last.turn + 1)
    };
    let s = if k == 1 { "" } else { "s" };
    format!(
        "- {turns}: {k} older message{s}, each whole inside {}\n",
        recall_hint(&Handle::range(tag, at[0], at[k - 1]))
    )
}

/// The requests section within `budget` characters (heading included):
/// every request at least a handle (the oldest in one range handle when
/// the list of handles does not fit), then, newest first, each made whole
/// where that fits, else its first line and handle where that does.
fn allocate(
    reqs: &[Request<'_>],
    at: &[u64],
    tag: Tag,
    budget: usize,
    heading: &str,
) -> (String, KeptWords) {
    let n = reqs.len();
    if n == 0 {
        return (String::new(), KeptWords::default());
    }
    let handles: Vec<Handle> = at.iter().map(|&p| Handle::record(tag, p)).collect();
    // A handle in the list: itself and ", " (an upper bound: the last has
    // no comma but the line ends in a newline).
    let hcost: Vec<usize> = handles.iter().map(|h| chars(&h.to_string()) + 2).collect();
    let list = chars(HANDLES_PREFIX);
    let mut suffix = vec![0; n + 1];
    for i in (0..n).rev() {
        suffix[i] = suffix[i + 1] + hcost[i];
    }
    let base = chars(heading);
    let cost_at = |k: usize| {
        let range = if k == 0 {
            0
        } else {
            chars(&range_item(reqs, at, k, tag))
        };
        let rest = if k < n { list + suffix[k] } else { 0 };
        base + range + rest
    };
    let k = (0..=n).find(|&k| cost_at(k) <= budget).unwrap_or(n);
    let mut kept = vec![Kept::InRange; k];
    kept.resize(n, Kept::Handle);
    let mut used = cost_at(k);
    let mut items: Vec<Option<String>> = vec![None; n];
    let mut listed = n - k;
    // Whole messages take at most half of a budget they do not all fit
    // in: the rest goes to first lines, an index of what to recall.
    let whole_cap = if budget == usize::MAX {
        usize::MAX
    } else {
        budget / 2
    };
    let mut whole_used = 0;
    for i in (k..n).rev() {
        // Upgrading the last listed message drops the list's line too.
        let freed = hcost[i] + if listed == 1 { list } else { 0 };
        let whole = whole_item(&reqs[i]);
        let first = first_line_item(&reqs[i], &handles[i]);
        for (level, item) in [(Kept::Whole, whole), (Kept::FirstLine, first)] {
            let size = chars(&item);
            let now = used - freed + size;
            let capped = level == Kept::Whole && whole_used + size > whole_cap;
            if now <= budget && !capped {
                if level == Kept::Whole {
                    whole_used += size;
                }
                used = now;
                kept[i] = level;
                items[i] = Some(item);
                listed -= 1;
                break;
            }
        }
    }
    let mut out = heading.to_owned();
    if k > 0 {
        out.push_str(&range_item(reqs, at, k, tag));
    }
    let listed: Vec<String> = (k..n)
        .filter(|&i| kept[i] == Kept::Handle)
        .map(|i| handles[i].to_string())
        .collect();
    if !listed.is_empty() {
        out.push_str(HANDLES_PREFIX);
        out.push_str(&listed.join(", "));
        out.push('\n');
    }
    for item in items.into_iter().flatten() {
        out.push_str(&item);
    }
    let count = |level: Kept| kept.iter().filter(|&&k| k == level).count();
    let words = KeptWords {
        whole: count(Kept::Whole),
        shortened: count(Kept::FirstLine),
        by_handle: count(Kept::Handle) + count(Kept::InRange),
    };
    (out, words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, said, user};
    use crate::log::Log;
    use crate::recall::recall;
    use crate::record::Body;

    /// A chat of `n` user messages of varied length, each answered.
    fn chat(n: usize) -> Log {
        let mut bodies = vec![];
        for i in 0..n {
            bodies.push(Body::TurnStart);
            let len = 200 + (i * 977) % 3_000;
            let mut text = format!("Request {i}: please look at part {i} of the plan.\n");
            while text.len() < len {
                text.push_str(&format!("Line about item {} and its details. ", text.len()));
                if text.len() % 7 == 0 {
                    text.push('\n');
                }
            }
            bodies.push(user(&text));
            bodies.push(said(&format!("Done with part {i}; {}", "ok. ".repeat(50))));
        }
        build(bodies)
    }

    fn within(log: &Log, max: usize) -> Bounded {
        Digest
            .summarize_within(
                SummaryInput {
                    log,
                    range: (0, log.len() - 1),
                    instructions: None,
                },
                max,
            )
            .unwrap()
    }

    /// Every user message is whole in `text`, or named by a handle in it
    /// that recalls it exactly (its own, or a range holding it).
    fn all_recoverable(log: &Log, text: &str) {
        let tag = Tag::of(log).unwrap();
        for (i, r) in log.records().iter().enumerate() {
            let Body::User { content, .. } = &r.body else {
                continue;
            };
            if text.contains(content.as_str()) {
                continue;
            }
            let at = position(log, i);
            let own = recall_hint(&Handle::record(tag, at));
            let own_listed = text.contains(&format!("{own} "))
                || text.contains(&format!("{own}]"))
                || text.lines().any(|l| {
                    l.starts_with(HANDLES_PREFIX)
                        && l.split(", ").any(|h| h.ends_with(&format!(":{at}")))
                });
            if own_listed {
                let back = recall(log, &Handle::record(tag, at)).unwrap();
                assert_eq!(&back.text, content);
                continue;
            }
            let range = text
                .lines()
                .find(|l| l.contains("older message"))
                .and_then(|l| l.rsplit("recall ").next())
                .map(|h| h.trim().parse::<Handle>().unwrap())
                .unwrap_or_else(|| panic!("record {at} is nowhere in\n{text}"));
            let back = recall(log, &range).unwrap();
            assert!(back.text.contains(content.as_str()), "record {at}");
        }
    }

    #[test]
    fn the_budget_holds_and_every_message_comes_back() {
        let log = chat(60);
        for max in [400, 1_000, 3_000, 7_500, 20_000, 60_000, 1_000_000] {
            let b = within(&log, max);
            let n = b.output.text.chars().count();
            assert!(n <= max.max(SUMMARY_FLOOR_CHARS), "{n} over {max}");
            assert_eq!(b.kept.whole + b.kept.cut(), 60);
            all_recoverable(&log, &b.output.text);
        }
        // A large budget is cut to three quarters of the range (a summary
        // must save something): the newest whole in half of it, every
        // other one at least its first line.
        let big = within(&log, 1_000_000);
        assert!(big.kept.whole >= 20, "{:?}", big.kept);
        assert_eq!(big.kept.by_handle, 0, "{:?}", big.kept);
        let raw: usize = log
            .records()
            .iter()
            .map(crate::estimate::record_tokens)
            .sum();
        assert!(big.output.text.chars().count() <= raw * 3);
        let small = within(&log, 7_500);
        assert!(small.kept.cut() > 0 && small.kept.whole > 0);
        assert!(
            matches!(small.output.provenance, Provenance::Derived { method: Some(ref m), .. } if m == BOUNDED_METHOD)
        );
    }

    #[test]
    fn the_newest_stay_whole_and_the_oldest_are_cut_first() {
        let log = chat(30);
        let b = within(&log, 6_000);
        let text = &b.output.text;
        let users: Vec<&str> = log
            .records()
            .iter()
            .filter_map(|r| match &r.body {
                Body::User { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        assert!(text.contains(users[29]), "{text}");
        assert!(!text.contains(users[0]), "{text}");
        assert!(text.contains("[first line of ") || text.contains(HANDLES_PREFIX));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]

        /// Any chat, any budget: the digest fits it (or the floor), and
        /// every user message is whole in it or comes back exactly
        /// through a handle it shows.
        #[test]
        fn any_chat_fits_any_budget_and_loses_no_word(
            messages in proptest::collection::vec("[a-zA-Z0-9 .,`#\n\t-]{0,2500}", 1..40),
            answer in 0usize..600,
            max in 0usize..30_000,
        ) {
            let mut bodies = vec![];
            for m in &messages {
                bodies.push(Body::TurnStart);
                bodies.push(user(m));
                bodies.push(said(&"a".repeat(answer)));
            }
            let log = build(bodies);
            let b = within(&log, max);
            let n = b.output.text.chars().count();
            proptest::prop_assert!(n <= max.max(SUMMARY_FLOOR_CHARS), "{} over {}", n, max);
            proptest::prop_assert_eq!(b.kept.whole + b.kept.cut(), messages.len());
            all_recoverable(&log, &b.output.text);
        }
    }

    #[test]
    fn a_long_single_message_is_whole_or_a_handle_never_a_head_and_tail() {
        let long = "word ".repeat(1_000);
        let log = build(vec![user(long.trim()), said(&"answer ".repeat(2_000))]);
        let b = within(&log, 10_000);
        assert!(b.output.text.contains(long.trim()));
        let b = within(&log, 1_000);
        assert!(!b.output.text.contains("characters left out"));
        assert_eq!(b.kept.shortened, 1, "{}", b.output.text);
        all_recoverable(&log, &b.output.text);
    }
}
