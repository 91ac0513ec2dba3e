//! Recall and search over a conversation's raw log (SPEC §16): what a
//! handle stands for, byte for byte and in pages, and where a text occurs,
//! folded parts included. Read-only and pure: the shells (the agent
//! host's tools, `ctxfold mcp`, the command line) find the log through a
//! store and call these.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder};

use crate::handle::{Handle, Tag, Target, recall_hint};
use crate::log::Log;
use crate::position::{index_of_position, is_overlay, positions};
use crate::record::{Body, Record};

/// Characters a page holds unless the caller asks otherwise: about 3,000
/// tokens, enough for most outputs in one call and small beside any
/// window an agent runs with.
pub const DEFAULT_PAGE_CHARS: usize = 12_000;

/// Hits a search returns unless the caller asks otherwise.
pub const DEFAULT_HITS: usize = 20;

/// Characters of context on each side of a hit in its excerpt.
const EXCERPT_SIDE: usize = 80;

/// Why a recall or search cannot be answered; each says what the caller
/// can do instead, since the caller is often a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecallError {
    /// No record at that position.
    #[error("this conversation has no record {seq} (its records are numbered 0 to {last})")]
    NoSuchRecord {
        /// The position asked for.
        seq: u64,
        /// The last position.
        last: u64,
    },
    /// A range with no model-visible record in it.
    #[error("records {0} to {1} hold nothing the model saw")]
    EmptyRange(u64, u64),
    /// An argument handle on a record that is not a tool call.
    #[error(
        "record {0} is not a tool call, so it has no arguments: recall {1} without the part after the number"
    )]
    NotACall(u64, String),
    /// No value at that pointer in the call's arguments.
    #[error("the arguments of call {seq} have no value at `{pointer}`")]
    NoSuchArgument {
        /// The call's `seq`.
        seq: u64,
        /// The JSON pointer asked for.
        pointer: String,
    },
    /// An offset at or past the end of what the handle stands for.
    #[error("offset {offset} is past the end: {handle} stands for {total} characters (offsets 0 to {last})", last = total.saturating_sub(1))]
    OffsetPastEnd {
        /// The handle.
        handle: String,
        /// The offset asked for.
        offset: usize,
        /// How many characters there are.
        total: usize,
    },
    /// A handle of another conversation than the one asked about.
    #[error("{handle} belongs to another conversation (tag {tag}); this one's tag is {own}")]
    OtherConversation {
        /// The handle.
        handle: String,
        /// Its tag.
        tag: Tag,
        /// The conversation's own tag.
        own: Tag,
    },
    /// An empty query.
    #[error("the search query is empty: give a word or phrase to look for")]
    EmptyQuery,
}

/// What a handle stands for, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    /// What it is, in a few words ("the output of Bash (record 41)").
    pub what: String,
    /// The text, exactly as the log holds it (a range: its records as a
    /// transcript, each one's text exact).
    pub text: String,
}

/// The text of `handle` in `log`. The handle's tag must be the log's.
pub fn recall(log: &Log, handle: &Handle) -> Result<Recalled, RecallError> {
    let own = Tag::of(log).unwrap_or_default();
    if handle.tag != own {
        return Err(RecallError::OtherConversation {
            handle: handle.to_string(),
            tag: handle.tag,
            own,
        });
    }
    match &handle.target {
        Target::Record(seq) => {
            let (r, _) = record(log, *seq)?;
            Ok(Recalled {
                what: describe(log, r, *seq),
                text: record_text(r),
            })
        }
        Target::Argument(seq, pointer) => {
            let (r, _) = record(log, *seq)?;
            let Body::ToolCall {
                name, arguments, ..
            } = &r.body
            else {
                return Err(RecallError::NotACall(
                    *seq,
                    Handle::record(own, *seq).to_string(),
                ));
            };
            let value = arguments.value();
            let found = value
                .pointer(pointer)
                .ok_or_else(|| RecallError::NoSuchArgument {
                    seq: *seq,
                    pointer: pointer.clone(),
                })?;
            let text = match found {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Ok(Recalled {
                what: format!("the argument {pointer} of a {name} call (record {seq})"),
                text,
            })
        }
        Target::Range(first, last) => {
            let records = in_range(log, *first, *last)?;
            let text = transcript(log, &records);
            if text.is_empty() {
                return Err(RecallError::EmptyRange(*first, *last));
            }
            Ok(Recalled {
                what: format!("records {first} to {last} as a transcript"),
                text,
            })
        }
    }
}

/// One page of a recalled text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The characters `offset..end` of the text.
    pub text: String,
    /// Where the page starts, in characters.
    pub offset: usize,
    /// Where it ends (exclusive), in characters.
    pub end: usize,
    /// The text's length in characters.
    pub total: usize,
}

impl Page {
    /// Whether more follows this page.
    pub fn has_more(&self) -> bool {
        self.end < self.total
    }
}

/// Characters `offset..offset + limit` of `recalled` (a `limit` of 0 means
/// [`DEFAULT_PAGE_CHARS`]). An offset past the end is an error, except 0
/// of an empty text.
pub fn page(
    handle: &Handle,
    recalled: &Recalled,
    offset: usize,
    limit: usize,
) -> Result<Page, RecallError> {
    let limit = if limit == 0 {
        DEFAULT_PAGE_CHARS
    } else {
        limit
    };
    let total = recalled.text.chars().count();
    if offset >= total && !(offset == 0 && total == 0) {
        return Err(RecallError::OffsetPastEnd {
            handle: handle.to_string(),
            offset,
            total,
        });
    }
    let text: String = recalled.text.chars().skip(offset).take(limit).collect();
    let end = offset + text.chars().count();
    Ok(Page {
        text,
        offset,
        end,
        total,
    })
}

/// A page as a tool answers with it: the text, then one line that says
/// what it was and what is left (and how to get it).
pub fn render_page(handle: &Handle, recalled: &Recalled, page: &Page) -> String {
    let mut out = page.text.clone();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if page.has_more() {
        out.push_str(&format!(
            "[{}: characters {}–{} of {}; {} more: {} with offset {}]",
            recalled.what,
            page.offset,
            page.end,
            page.total,
            page.total - page.end,
            recall_hint(handle),
            page.end
        ));
    } else if page.offset > 0 {
        out.push_str(&format!(
            "[{}: characters {}–{} of {}, the end]",
            recalled.what, page.offset, page.end, page.total
        ));
    } else {
        out.push_str(&format!(
            "[{}: all {} characters]",
            recalled.what, page.total
        ));
    }
    out
}

/// One place a search found its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The record it is in (recall it for the whole text).
    pub handle: Handle,
    /// What the record is ("user", "tool result of Bash", …).
    pub what: String,
    /// The text around the first match, on one line.
    pub excerpt: String,
    /// How many times the text occurs in that record.
    pub count: usize,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Found {
    /// Hits, newest first, at most the limit asked for.
    pub hits: Vec<Hit>,
    /// Records that also hold the text, past the limit.
    pub more: usize,
}

/// Records of `log` (or of `within`, `seq`s inclusive) whose text holds
/// `query`, ignoring ASCII case: folded records included, newest first,
/// at most `limit` (0 means [`DEFAULT_HITS`]).
pub fn search(
    log: &Log,
    query: &str,
    within: Option<(u64, u64)>,
    limit: usize,
) -> Result<Found, RecallError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(RecallError::EmptyQuery);
    }
    let limit = if limit == 0 { DEFAULT_HITS } else { limit };
    let tag = Tag::of(log).unwrap_or_default();
    let matcher: AhoCorasick = AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .build([query])
        .map_err(|_| RecallError::EmptyQuery)?;
    let mut found = Found::default();
    let mut at = positions(log);
    for r in log.records().iter().rev() {
        if is_overlay(&r.body) {
            continue;
        }
        at -= 1;
        if !r.body.is_model_visible() && !matches!(r.body, Body::System { .. }) {
            continue;
        }
        if let Some((a, b)) = within
            && !(a..=b).contains(&at)
        {
            continue;
        }
        let text = record_text(r);
        let mut matches = matcher.find_iter(&text);
        let Some(m) = matches.next() else {
            continue;
        };
        if found.hits.len() == limit {
            found.more += 1;
            continue;
        }
        found.hits.push(Hit {
            handle: Handle::record(tag, at),
            what: describe(log, r, at),
            excerpt: excerpt(&text, m.start(), m.end()),
            count: 1 + matches.count(),
        });
    }
    Ok(found)
}

/// Search results as a tool answers with them.
pub fn render_found(query: &str, found: &Found) -> String {
    if found.hits.is_empty() {
        return format!("[no record holds \"{query}\"]");
    }
    let mut out = String::new();
    for h in &found.hits {
        let times = if h.count > 1 {
            format!(" ({} times)", h.count)
        } else {
            String::new()
        };
        out.push_str(&format!("{} {}{times}: {}\n", h.handle, h.what, h.excerpt));
    }
    if found.more > 0 {
        out.push_str(&format!(
            "[{} more records hold it; search within a handle's range to narrow]\n",
            found.more
        ));
    }
    out.push_str("[recall HANDLE brings back a record whole]");
    out
}

/// The text around `start..end` of `text`, on one line.
fn excerpt(text: &str, start: usize, end: usize) -> String {
    let mut from = start.saturating_sub(EXCERPT_SIDE * 4);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let before: String = {
        let chars: Vec<char> = text[from..start].chars().collect();
        let k = chars.len().saturating_sub(EXCERPT_SIDE);
        chars[k..].iter().collect()
    };
    let after: String = text[end..].chars().take(EXCERPT_SIDE).collect();
    let lead = if before.len() < start { "…" } else { "" };
    let trail = if end + after.len() < text.len() {
        "…"
    } else {
        ""
    };
    let line = format!("{lead}{before}{}{after}{trail}", &text[start..end]);
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn record(log: &Log, seq: u64) -> Result<(&Record, usize), RecallError> {
    match index_of_position(log, seq) {
        Some(i) => Ok((&log.records()[i], i)),
        None => Err(RecallError::NoSuchRecord {
            seq,
            last: positions(log).saturating_sub(1),
        }),
    }
}

/// The records at positions `first..=last`, with theirs.
fn in_range(log: &Log, first: u64, last: u64) -> Result<Vec<(u64, usize)>, RecallError> {
    let found: Vec<(u64, usize)> = log
        .records()
        .iter()
        .enumerate()
        .filter(|(_, r)| !is_overlay(&r.body))
        .enumerate()
        .map(|(n, (i, _))| (n as u64, i))
        .skip_while(|&(n, _)| n < first)
        .take_while(|&(n, _)| n <= last)
        .collect();
    if found.is_empty() {
        return Err(RecallError::NoSuchRecord {
            seq: first,
            last: positions(log).saturating_sub(1),
        });
    }
    Ok(found)
}

/// A record's own text, exactly as the log holds it: a message's or a
/// result's content, a call's arguments, a structured answer's JSON; any
/// other record as its JSON line.
pub fn record_text(r: &Record) -> String {
    match &r.body {
        Body::User { content, .. }
        | Body::Assistant { content }
        | Body::Reasoning { content }
        | Body::System { content }
        | Body::ToolResult { content, .. } => content.clone(),
        Body::ToolCall { arguments, .. } => arguments.text().to_owned(),
        Body::Structured { data } => data.text().to_owned(),
        _ => r.to_json_line(),
    }
}

/// What the record at position `seq` is, in a few words.
fn describe(log: &Log, r: &Record, seq: u64) -> String {
    match &r.body {
        Body::User { .. } => format!("a user message (record {seq})"),
        Body::Assistant { .. } => format!("an assistant message (record {seq})"),
        Body::Reasoning { .. } => format!("the assistant's reasoning (record {seq})"),
        Body::System { .. } => format!("the system prompt (record {seq})"),
        Body::ToolCall { name, .. } => format!("the arguments of a {name} call (record {seq})"),
        Body::ToolResult { id, is_error, .. } => {
            let name = call_name(log, id).unwrap_or("a tool");
            let failed = if *is_error { ", which failed" } else { "" };
            format!("the output of {name}{failed} (record {seq})")
        }
        Body::Structured { .. } => format!("a structured answer (record {seq})"),
        other => format!("a {} record (record {seq})", other.type_name()),
    }
}

fn call_name<'a>(log: &'a Log, id: &str) -> Option<&'a str> {
    log.records().iter().rev().find_map(|r| match &r.body {
        Body::ToolCall { id: c, name, .. } if c == id => Some(name.as_str()),
        _ => None,
    })
}

/// Records (position, index in the log) as a readable transcript: a
/// header line for each model-visible record (its position, turn and
/// kind) and its text exactly.
fn transcript(log: &Log, records: &[(u64, usize)]) -> String {
    let mut out = String::new();
    for &(at, i) in records {
        let r = &log.records()[i];
        if !r.body.is_model_visible() {
            continue;
        }
        let turn = log.turn_of(i) + 1;
        let head = match &r.body {
            Body::User { .. } => "user".to_owned(),
            Body::Assistant { .. } => "assistant".to_owned(),
            Body::Reasoning { .. } => "reasoning".to_owned(),
            Body::ToolCall { name, id, .. } => format!("tool call {name} ({id})"),
            Body::ToolResult { id, is_error, .. } => {
                let name = call_name(log, id).unwrap_or("tool");
                if *is_error {
                    format!("tool result of {name} ({id}), error")
                } else {
                    format!("tool result of {name} ({id})")
                }
            }
            Body::Structured { .. } => "structured answer".to_owned(),
            other => other.type_name().to_owned(),
        };
        out.push_str(&format!("--- record {at} · turn {turn} · {head}\n"));
        out.push_str(&record_text(r));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_text::JsonText;

    fn rec(seq: u64, body: Body) -> Record {
        Record::new(seq, "2026-12-06T10:00:00Z", body)
    }

    fn log() -> Log {
        Log::from_records(vec![
            rec(
                0,
                Body::User {
                    content: "run the tests".into(),
                    author: None,
                },
            ),
            rec(
                1,
                Body::ToolCall {
                    id: "c1".into(),
                    name: "Bash".into(),
                    arguments: JsonText::from(
                        serde_json::json!({"command": "cargo test", "env": {"a/b": "x".repeat(200)}}),
                    ),
                },
            ),
            rec(
                2,
                Body::ToolResult {
                    id: "c1".into(),
                    content: "line one\nERROR: the parser failed ünïcödé\nline three".into(),
                    is_error: true,
                },
            ),
            rec(
                3,
                Body::Assistant {
                    content: "The parser failed.".into(),
                },
            ),
        ])
    }

    #[test]
    fn a_record_an_argument_and_a_range_come_back_exactly() {
        let log = log();
        let tag = Tag::of(&log).unwrap();
        let r = recall(&log, &Handle::record(tag, 2)).unwrap();
        assert_eq!(
            r.text,
            "line one\nERROR: the parser failed ünïcödé\nline three"
        );
        assert_eq!(r.what, "the output of Bash, which failed (record 2)");
        let a = recall(&log, &Handle::argument(tag, 1, "/env/a~1b".into())).unwrap();
        assert_eq!(a.text, "x".repeat(200));
        let t = recall(&log, &Handle::range(tag, 0, 3)).unwrap();
        assert!(t.text.contains("--- record 2 · turn 1 · tool result of Bash (c1), error\nline one\nERROR: the parser failed ünïcödé\nline three\n"));
        assert!(
            t.text
                .starts_with("--- record 0 · turn 1 · user\nrun the tests\n")
        );
    }

    #[test]
    fn pages_walked_in_order_give_back_the_whole_text() {
        let log = log();
        let tag = Tag::of(&log).unwrap();
        let h = Handle::record(tag, 2);
        let r = recall(&log, &h).unwrap();
        let mut offset = 0;
        let mut whole = String::new();
        loop {
            let p = page(&h, &r, offset, 7).unwrap();
            whole.push_str(&p.text);
            let shown = render_page(&h, &r, &p);
            if !p.has_more() {
                assert!(shown.ends_with("the end]"), "{shown}");
                break;
            }
            assert!(
                shown.contains(&format!("with offset {}]", p.end)),
                "{shown}"
            );
            offset = p.end;
        }
        assert_eq!(whole, r.text);
        let total = r.text.chars().count();
        assert_eq!(
            page(&h, &r, total, 0),
            Err(RecallError::OffsetPastEnd {
                handle: h.to_string(),
                offset: total,
                total
            })
        );
    }

    #[test]
    fn bad_handles_are_errors_that_say_what_to_do() {
        let log = log();
        let tag = Tag::of(&log).unwrap();
        let e = recall(&log, &Handle::record(tag, 99)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "this conversation has no record 99 (its records are numbered 0 to 3)"
        );
        let e = recall(&log, &Handle::argument(tag, 2, "/x".into())).unwrap_err();
        assert!(e.to_string().contains("is not a tool call"), "{e}");
        let e = recall(&log, &Handle::argument(tag, 1, "/nope".into())).unwrap_err();
        assert!(e.to_string().contains("no value at `/nope`"), "{e}");
        let other: Tag = "zzzzz".parse().unwrap();
        let e = recall(&log, &Handle::record(other, 2)).unwrap_err();
        assert!(
            e.to_string().contains("belongs to another conversation"),
            "{e}"
        );
    }

    #[test]
    fn search_finds_text_anywhere_with_its_handle_newest_first() {
        let log = log();
        let tag = Tag::of(&log).unwrap();
        let found = search(&log, "PARSER", None, 0).unwrap();
        assert_eq!(found.hits.len(), 2);
        assert_eq!(found.hits[0].handle, Handle::record(tag, 3));
        assert_eq!(found.hits[1].handle, Handle::record(tag, 2));
        assert!(
            found.hits[1]
                .excerpt
                .contains("ERROR: the parser failed ünïcödé"),
            "{:?}",
            found.hits[1]
        );
        let within = search(&log, "parser", Some((0, 2)), 0).unwrap();
        assert_eq!(within.hits.len(), 1);
        let capped = search(&log, "parser", None, 1).unwrap();
        assert_eq!((capped.hits.len(), capped.more), (1, 1));
        assert!(render_found("parser", &capped).contains("1 more records hold it"));
        assert_eq!(search(&log, "  ", None, 0), Err(RecallError::EmptyQuery));
        assert!(search(&log, "absent", None, 0).unwrap().hits.is_empty());
    }
}
