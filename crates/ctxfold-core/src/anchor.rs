//! Quote anchors (seed 000): the assistant names a turn by quoting text it
//! was shown, and the quote is resolved to a raw turn.
//!
//! The assistant cannot see turn numbers, but it can reproduce text. A
//! quote is searched in the projected view (what the model was shown: a
//! summary's text, a stripped result's one line, the raw text of
//! everything else) and mapped back to a raw turn through each item's
//! origin. Matching forgives what models change when they copy: runs of
//! whitespace compare as one space, curly quotes as straight ones, and an
//! ellipsis at either end of the quote is ignored.
//!
//! Two rules keep the assistant from tripping over its own words:
//! - calls of the compacting tool itself and their results are not
//!   searched (their arguments hold the very quotes being resolved);
//! - the turn in progress (the log's last turn) is not a place a quote can
//!   name: the assistant's text before a call often repeats the quote, and
//!   a paraphrase is often in the user's request. A quote found only there
//!   is an error, not "everything before this turn" (which `keep_last: 1`
//!   says plainly).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use crate::json_text::JsonText;
use crate::log::Log;
use crate::projection::{Item, View};
use crate::record::Body;
use crate::text::excerpt;
pub use crate::text::normalize;

/// Characters of context an excerpt shows around a match.
const EXCERPT_CHARS: usize = 70;

/// Candidates listed in an [`AnchorError::Ambiguous`] message.
const LIST_CANDIDATES: usize = 6;

/// Where a quote matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The turns (0-based, inclusive): one turn for a raw event, the whole
    /// range for a summary.
    pub turns: (u32, u32),
    /// Whether the match is inside a summary (already compacted).
    pub summary: bool,
    /// A short excerpt around the match, whitespace collapsed.
    pub excerpt: String,
}

/// Why a quote did not name exactly one turn. The messages are written for
/// the model, which corrects its call from them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnchorError {
    /// Nothing left to search once whitespace and ellipses are taken off.
    #[error("the quote is empty; quote a few words exactly as they appear in one message")]
    Empty,
    /// No message holds the quote.
    #[error(
        "no message holds this text; quote it exactly as it appears (a few distinctive words from one message are enough), or bound the range with keep_first / keep_last"
    )]
    NotFound,
    /// The quote matches in more than one turn.
    #[error("{}", ambiguous_message(.candidates))]
    Ambiguous {
        /// Every place it matched, one per turn or summary.
        candidates: Vec<Candidate>,
    },
    /// The quote is only in the turn in progress.
    #[error(
        "that text is only in the turn in progress, which cannot bound a range; quote an earlier message, or use keep_last: 1 to fold everything before this turn"
    )]
    InProgress,
    /// The quote lands inside a summary: those turns are already compacted.
    #[error(
        "the quote is inside the summary that stands for {}, which are already compacted; quote text outside the summary",
        turns_words(*.turns)
    )]
    AlreadyCompacted {
        /// The turns the summary covers (0-based, inclusive).
        turns: (u32, u32),
    },
}

fn turns_words((a, b): (u32, u32)) -> String {
    if a == b {
        format!("turn {}", a + 1)
    } else {
        format!("turns {}–{}", a + 1, b + 1)
    }
}

fn ambiguous_message(candidates: &[Candidate]) -> String {
    let mut s = format!(
        "the quote matches in {} places; quote more words, so that it matches one turn only:",
        candidates.len()
    );
    for c in candidates.iter().take(LIST_CANDIDATES) {
        let what = if c.summary {
            format!(
                "the summary of {} (already compacted)",
                turns_words(c.turns)
            )
        } else {
            turns_words(c.turns)
        };
        s.push_str(&format!("\n- {what}: \"{}\"", c.excerpt));
    }
    if candidates.len() > LIST_CANDIDATES {
        s.push_str(&format!(
            "\n- and {} more",
            candidates.len() - LIST_CANDIDATES
        ));
    }
    s
}

/// Resolve `quote` to the raw turn (0-based) whose text in `view` holds it.
/// `view` is the projection of `log` the model was shown; calls of
/// `own_tool` and their results are not searched.
pub fn resolve_anchor(
    log: &Log,
    view: &View<'_>,
    quote: &str,
    own_tool: &str,
) -> Result<u32, AnchorError> {
    let needle = normalize(trim_ellipses(quote));
    if needle.is_empty() {
        return Err(AnchorError::Empty);
    }
    // A word of the quote that any text holding it holds as it is: the
    // longest one without a quote mark (those may be curly in the text).
    let probe = needle
        .split(' ')
        .filter(|w| !w.contains(['\'', '"']))
        .max_by_key(|w| w.len())
        .unwrap_or("");
    let own_calls: HashSet<&str> = log
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall { id, name, .. } if name == own_tool => Some(id.as_str()),
            _ => None,
        })
        .collect();
    // One candidate per turn (raw events) or per summary, in view order.
    let mut found: BTreeMap<(bool, u32, u32), String> = BTreeMap::new();
    let mut order: Vec<(bool, u32, u32)> = Vec::new();
    for item in &view.items {
        let (summary, turns, texts) = match *item {
            Item::Summary { turns, text, .. } => (
                true,
                turns,
                vec![
                    Cow::Owned(item.summary_lead().unwrap_or_default()),
                    Cow::Borrowed(text.as_str()),
                ],
            ),
            Item::Preamble => continue,
            Item::Event { index, record }
            | Item::StrippedCall { index, record, .. }
            | Item::StrippedResult { index, record, .. }
            | Item::Clipped { index, record, .. } => {
                let own = match &record.body {
                    Body::ToolCall { name, .. } => name == own_tool,
                    Body::ToolResult { id, .. } => own_calls.contains(id.as_str()),
                    _ => false,
                };
                if own {
                    continue;
                }
                let turn = log.turn_of(index);
                (false, (turn, turn), item_texts(item))
            }
        };
        for t in texts {
            // Most texts do not hold the quote's longest word at all:
            // looked for as it is, before normalizing the text.
            if !probe.is_empty() && !t.contains(probe) {
                continue;
            }
            let hay = normalize(&t);
            if let Some(at) = hay.find(&needle) {
                let key = (summary, turns.0, turns.1);
                if let std::collections::btree_map::Entry::Vacant(e) = found.entry(key) {
                    order.push(key);
                    e.insert(excerpt(&hay, at, needle.len(), EXCERPT_CHARS));
                }
                break;
            }
        }
    }
    let current = (log.turn_count() as u32).saturating_sub(1);
    let in_progress = |&(s, a, _): &(bool, u32, u32)| !s && a == current;
    let found_there = order.iter().any(in_progress);
    let keys: Vec<(bool, u32, u32)> = order.into_iter().filter(|k| !in_progress(k)).collect();
    match keys.as_slice() {
        [] if found_there => Err(AnchorError::InProgress),
        [] => Err(AnchorError::NotFound),
        [(false, turn, _)] => Ok(*turn),
        [(true, a, b)] => Err(AnchorError::AlreadyCompacted { turns: (*a, *b) }),
        _ => Err(AnchorError::Ambiguous {
            candidates: keys
                .iter()
                .map(|k| Candidate {
                    turns: (k.1, k.2),
                    summary: k.0,
                    excerpt: found[k].clone(),
                })
                .collect(),
        }),
    }
}

/// The texts of an item as the model reads them: message content, a
/// stripped result's one line, a call's name and argument strings (stripped
/// ones as their placeholders). Borrowed where the item shows the record as
/// it is.
pub fn item_texts<'a>(item: &Item<'a>) -> Vec<Cow<'a, str>> {
    let body_texts = |body: &'a Body| -> Vec<Cow<'a, str>> {
        match body {
            Body::User { content, .. }
            | Body::Assistant { content }
            | Body::Reasoning { content }
            | Body::System { content }
            | Body::ToolResult { content, .. } => vec![Cow::Borrowed(content.as_str())],
            Body::ToolCall {
                name, arguments, ..
            } => {
                let mut out = vec![Cow::Borrowed(name.as_str())];
                out.extend(text_strings(arguments));
                out
            }
            _ => Vec::new(),
        }
    };
    match *item {
        Item::Event { record, .. } => body_texts(&record.body),
        Item::StrippedCall { record, .. } => match &record.body {
            Body::ToolCall { name, .. } => {
                let mut out = vec![Cow::Borrowed(name.as_str())];
                if let Some(args) = item.stripped_arguments() {
                    // Made for the asking: owned.
                    out.extend(
                        text_strings(&args)
                            .into_iter()
                            .map(|c| Cow::Owned(c.into_owned())),
                    );
                }
                out
            }
            _ => Vec::new(),
        },
        Item::StrippedResult { .. } => item.stripped_line().map(Cow::Owned).into_iter().collect(),
        Item::Clipped { .. } => item.clipped_text().map(Cow::Owned).into_iter().collect(),
        Item::Summary { .. } | Item::Preamble => Vec::new(),
    }
}

/// The strings of a call's arguments as the record holds them (values,
/// not keys, in order), read straight from the JSON text: a view's text
/// reads every call's arguments, and a parsed value costs a map per
/// object. Those without escapes borrow from the record.
fn text_strings(arguments: &JsonText) -> Vec<Cow<'_, str>> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_str(arguments.text());
    // The text is what serde_json wrote; were it not read whole, it shows
    // no strings, as its value (`null`) would.
    if serde::de::DeserializeSeed::deserialize(Strings(&mut found), &mut de).is_err() {
        found.clear();
    }
    found
}

/// Collects the string values of the JSON it reads, in order.
struct Strings<'o, 'de>(&'o mut Vec<Cow<'de, str>>);

impl<'de> serde::de::DeserializeSeed<'de> for Strings<'_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strings<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.0.push(Cow::Borrowed(v));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.push(Cow::Owned(v.to_owned()));
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Strings(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(Strings(&mut *self.0))?;
        }
        Ok(())
    }
}

fn trim_ellipses(q: &str) -> &str {
    let mut q = q.trim();
    loop {
        let before = q;
        for e in ["...", "…"] {
            q = q.strip_prefix(e).unwrap_or(q).trim();
            q = q.strip_suffix(e).unwrap_or(q).trim();
        }
        if q == before {
            return q;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::{Compaction, Provenance, Source, Summary};
    use crate::projection::project;
    use crate::record::Record;
    use serde_json::json;

    /// The strings of a value as a walk of the parsed value finds them.
    fn walked(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|v| walked(v, out)),
            serde_json::Value::Object(o) => o.values().for_each(|v| walked(v, out)),
            _ => {}
        }
    }

    #[test]
    fn arguments_strings_read_from_the_text_are_the_parsed_values_strings() {
        let deep = (0..200).fold(json!("bottom"), |v, _| json!([v]));
        for v in [
            json!({"path": "src/lib.rs", "n": 3, "ok": true, "none": null, "f": 1.5,
                   "list": ["a", {"b": "c\"quoted\"\nline", "k": -7}], "z": "é\u{1}"}),
            json!("just a string"),
            json!([]),
            json!({}),
            json!(12),
            deep,
        ] {
            let text = JsonText::from_value(&v);
            let mut expected = Vec::new();
            if serde_json::from_str::<serde_json::Value>(text.text()).is_ok() {
                walked(&v, &mut expected);
            }
            let got: Vec<String> = text_strings(&text)
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            assert_eq!(got, expected, "{}", text.text());
        }
    }

    fn rec(body: Body) -> Record {
        Record::new(0, "2026-01-01T00:00:00Z", body)
    }

    fn user(s: &str) -> Body {
        Body::User {
            content: s.into(),
            author: None,
        }
    }

    fn assistant(s: &str) -> Body {
        Body::Assistant { content: s.into() }
    }

    /// Turns of (user, assistant) text.
    fn log_of(turns: &[(&str, &str)]) -> Vec<Body> {
        let mut out = Vec::new();
        for (u, a) in turns {
            out.push(Body::TurnStart);
            out.push(user(u));
            out.push(assistant(a));
        }
        out
    }

    fn load(bodies: Vec<Body>) -> Log {
        Log::from_records(crate::log::renumber(bodies.into_iter().map(rec).collect()))
    }

    fn resolve(log: &Log, q: &str) -> Result<u32, AnchorError> {
        resolve_anchor(log, &project(log), q, "compact")
    }

    #[test]
    fn a_quote_names_its_turn_despite_whitespace_quotes_and_ellipses() {
        let log = load(log_of(&[
            ("set up the repo", "done"),
            (
                "fix the divider",
                "so the divider\n  cursor works if I move",
            ),
            ("now the tests", "they pass"),
            ("and now?", "docs"),
        ]));
        assert_eq!(resolve(&log, "so the divider cursor works"), Ok(1));
        assert_eq!(resolve(&log, "…divider cursor works if I..."), Ok(1));
        assert_eq!(resolve(&log, "now the tests"), Ok(2));
        assert_eq!(resolve(&log, "  "), Err(AnchorError::Empty));
        assert_eq!(resolve(&log, "...").unwrap_err(), AnchorError::Empty);
        assert_eq!(resolve(&log, "not there"), Err(AnchorError::NotFound));
        let curly = load(log_of(&[("it’s “quoted”", "ok"), ("next", "fine")]));
        assert_eq!(resolve(&curly, "it's \"quoted\""), Ok(0));
    }

    #[test]
    fn a_quote_in_two_turns_lists_both_with_excerpts() {
        let log = load(log_of(&[
            ("run the tests", "3 failed"),
            ("again", "run the tests passed"),
            ("what next", "ok"),
        ]));
        let Err(AnchorError::Ambiguous { candidates }) = resolve(&log, "run the tests") else {
            panic!("expected ambiguity");
        };
        let turns: Vec<(u32, u32)> = candidates.iter().map(|c| c.turns).collect();
        assert_eq!(turns, vec![(0, 0), (1, 1)]);
        assert_eq!(candidates[1].excerpt, "run the tests passed");
        let msg = AnchorError::Ambiguous { candidates }.to_string();
        assert!(msg.contains("turn 1: \"run the tests\""), "{msg}");
        assert!(msg.contains("turn 2: \"run the tests passed\""), "{msg}");
    }

    #[test]
    fn a_quote_inside_a_summary_is_already_compacted() {
        let mut bodies = log_of(&[
            ("one", "the parser was rewritten"),
            ("two", "b"),
            ("three", "c"),
        ]);
        let mut c = Compaction::new(0, 1, Source::User);
        c.summary = Some(Summary {
            text: "We rewrote the parser and fixed the lexer.".into(),
            provenance: Provenance::Supplied {
                author: Source::User,
            },
        });
        bodies.push(Body::Compaction(Box::new(c)));
        let log = load(bodies);
        assert_eq!(
            resolve(&log, "fixed the lexer"),
            Err(AnchorError::AlreadyCompacted { turns: (0, 1) })
        );
        // The raw text under the summary is not what the model was shown.
        assert_eq!(
            resolve(&log, "the parser was rewritten"),
            Err(AnchorError::NotFound)
        );
        let msg = resolve(&log, "fixed the lexer").unwrap_err().to_string();
        assert!(msg.contains("turns 1–2"), "{msg}");
        // A match in a summary and in a raw turn is ambiguous, and says
        // which one is compacted.
        let mut bodies = log
            .records()
            .iter()
            .map(|r| r.body.clone())
            .collect::<Vec<_>>();
        bodies.extend(log_of(&[("we fixed the lexer", "yes"), ("and now", "ok")]));
        let log = load(bodies);
        let msg = resolve(&log, "fixed the lexer").unwrap_err().to_string();
        assert!(
            msg.contains("the summary of turns 1–2 (already compacted)"),
            "{msg}"
        );
    }

    #[test]
    fn the_turn_in_progress_and_the_tools_own_calls_do_not_compete() {
        let mut bodies = log_of(&[("fix the divider bug", "fixed"), ("next", "ok")]);
        bodies.push(Body::TurnStart);
        bodies.push(user("fold everything before the divider bug"));
        bodies.push(assistant(
            "I will fold everything before \"fix the divider bug\".",
        ));
        bodies.push(Body::ToolCall {
            id: "c1".into(),
            name: "compact".into(),
            arguments: json!({"rules": [{"after_quote": "fixed", "note": "n"}]}).into(),
        });
        bodies.push(Body::ToolResult {
            id: "c1".into(),
            content: "the quote \"fixed\" matched".into(),
            is_error: true,
        });
        let log = load(bodies);
        assert_eq!(resolve(&log, "fix the divider bug"), Ok(0));
        assert_eq!(resolve(&log, "matched"), Err(AnchorError::NotFound));
        // Only the turn in progress holds it: not a bound (a paraphrase in
        // the user's request must not mean "everything before").
        assert_eq!(
            resolve(&log, "fold everything before"),
            Err(AnchorError::InProgress)
        );
    }

    #[test]
    fn tool_arguments_and_stripped_results_are_searched_as_shown() {
        let bodies = vec![
            Body::TurnStart,
            user("look"),
            Body::ToolCall {
                id: "a".into(),
                name: "read".into(),
                arguments: json!({"path": "src/pane.rs"}).into(),
            },
            Body::ToolResult {
                id: "a".into(),
                content: "fn pane() {}".into(),
                is_error: false,
            },
            assistant("read it"),
            Body::TurnStart,
            user("more"),
            assistant("sure"),
        ];
        let log = load(bodies);
        assert_eq!(resolve(&log, "src/pane.rs"), Ok(0));
        assert_eq!(resolve(&log, "fn pane()"), Ok(0));
    }
}
