//! Reconciling the history a client sends with the log stored for it.
//!
//! A client always sends its whole raw history. Most requests repeat what
//! the log holds and add a little (the answer the client got, a tool
//! result, a new user message). Records are compared by what the model sees
//! (their typed body), not by the wire's incidental fields: an answer the
//! proxy recorded from the upstream's response matches the same answer as
//! the client sends it back, with whatever fields its SDK adds.
//!
//! - System records are not compared: the client's current system prompt
//!   is what goes upstream, and a changed one is not a different history.
//! - Reasoning the log holds but the client did not send back (OpenAI chat
//!   clients drop it) is skipped: it stays in the log as recorded.
//! - What the log holds of an answer whose stream broke off (metadata
//!   [`CUT_SHORT`]) is not compared: the client retries, and its next
//!   history holds the retried answer, not the broken one.
//! - Texts (user and assistant messages) are compared without the
//!   whitespace around them and at the end of their lines: a client that
//!   keeps its history as text (aider's `--restore-chat-history` reads it
//!   back from Markdown, where every line of a user message ends in a hard
//!   break) sends the same words with other blank space around them.
//! - A client may rewrite its newest message once it is answered (a
//!   [`Rewrite`]; below).
//! - Everything else must match in order. The first record that differs is
//!   where the histories diverge.
//!
//! # Clients that rewrite their newest message
//!
//! aider adds a reminder to its newest user message (its edit format's
//! rules, some 800 characters) and drops it from that message on the next
//! request; before that message it sends its "chat files" messages (with
//! no file added, "I am not sharing any files that you can edit yet." and
//! "Ok."), which on the next request come after the answer, before the new
//! message. So request n+1 is not request n plus new messages: it holds
//! request n's user message shortened, and the context messages moved.
//!
//! A stored user message and a client's user message stand for each other
//! (a rewrite) when the client's text, without the whitespace around it,
//! is a proper beginning or end of the stored one (the client dropped what
//! it had added to it), and the answer that follows it is the same in
//! both: the client sends back the answer the model gave to the stored
//! message, so it goes on in the same conversation (or the log ends right
//! after the stored message: a client quick enough to send its next
//! request before the proxy recorded the answer to this one, whose copy
//! of the answer is then new). The stored text or
//! messages before it that the client no longer sends there (at most
//! [`MAX_LEFT`], plain user and assistant messages: never a tool call, a
//! result or reasoning) are left behind: the client's context messages of
//! that request.
//!
//! What is decided, and why:
//!
//! - **The log** keeps what the model was sent: the message with its
//!   reminder, the context messages where they were. Nothing stored is
//!   rewritten, and nothing is added for the rewrite (it is read again
//!   from the two histories on every request, like every other pairing).
//!   The client's context messages, sent again before its new message,
//!   are new records of the new turn, as the model sees them there.
//! - **Upstream**, until the next compaction there, a rewritten message
//!   goes as the log has it and the messages left behind go where they
//!   were: the request is then the previous request plus new messages, and
//!   the provider's prompt cache reads the whole prefix (sending the
//!   client's shortened text would change the prefix at that message on
//!   every request: a cache write of everything after it, each time).
//!   Once a compaction that folds from there or before is recorded after
//!   the rewrite was first seen (a firing changes the prefix there anyway;
//!   an excerpt of a newer output does not), the client's current text
//!   goes and what it left behind does not: what the client now says its
//!   history is, as a user reading its chat would expect. So the prefix
//!   changes only where compaction changes it (`book/render.rs`).
//! - The compactor measures the log's view (the longer texts): it never
//!   sends more than it counted.
//!
//! A client that edits a message or an answer still diverges: a rewrite
//! is only of a user message followed by the same answer, only by
//! dropping what was added around it; what it leaves behind is at most
//! [`MAX_LEFT`] plain messages right before it (were they an exchange the
//! client deleted, they would go upstream where they were until the next
//! compaction there, as aider's context messages do).

use ctxfold_core::{Body, Record};

/// How a request's history relates to the stored log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alignment {
    /// The request holds the whole stored history, then `client[tail..]`
    /// (possibly nothing) is new.
    Extends {
        /// Stored index paired with each compared client index.
        pairs: Vec<(usize, usize)>,
        /// First client record not in the log.
        tail: usize,
        /// The pairs of them that are rewrites (see the module docs).
        rewrites: Vec<Rewrite>,
    },
    /// The request is an earlier state of the log (a retried request, or a
    /// client that went back): nothing is new, and the log goes on past
    /// it.
    Earlier {
        /// Stored index paired with each compared client index.
        pairs: Vec<(usize, usize)>,
        /// The pairs of them that are rewrites (see the module docs).
        rewrites: Vec<Rewrite>,
    },
    /// The request's history differs from the log at client record `at`.
    Diverges {
        /// The first client record that differs.
        at: usize,
    },
}

/// A client's user message standing for a stored one it rewrote (see the
/// module docs); the two are also among the alignment's pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The stored user message.
    pub stored: usize,
    /// The client's message.
    pub client: usize,
    /// Stored messages right before it that the client no longer sends
    /// there (its context messages of that request), in order.
    pub left: Vec<usize>,
    /// The stored record of the answer that follows it (paired with the
    /// client's copy), or where the client's copy is appended when the
    /// proxy had not recorded it yet: a compaction recorded after it was
    /// recorded after the client first sent the rewrite.
    pub answer: usize,
}

/// How a request's history pairs with the log, when it does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paired {
    /// Stored index paired with each compared client index.
    pub pairs: Vec<(usize, usize)>,
    /// The pairs that are rewrites.
    pub rewrites: Vec<Rewrite>,
}

impl Alignment {
    /// The pairing of a history that extends the log or is an earlier
    /// state of it; `None` when it diverges.
    pub fn paired(self) -> Option<Paired> {
        match self {
            Alignment::Extends {
                pairs, rewrites, ..
            }
            | Alignment::Earlier { pairs, rewrites } => Some(Paired { pairs, rewrites }),
            Alignment::Diverges { .. } => None,
        }
    }
}

/// At most this many stored messages before a rewritten one may be left
/// behind (aider leaves two: its "chat files" message and the "Ok." after
/// it).
pub const MAX_LEFT: usize = 6;

/// Metadata key marking records of an answer that broke off before its
/// end (what completed of it).
pub use ctxfold_core::cut_short::CUT_SHORT;

/// Whether a stored record may be missing from the client's history.
fn optional(r: &Record) -> bool {
    matches!(r.body, Body::Reasoning { .. })
}

/// Whether a record takes part in the comparison.
fn compared(r: &Record) -> bool {
    if r.metadata
        .as_ref()
        .is_some_and(|m| m.contains_key(CUT_SHORT))
    {
        return false;
    }
    match &r.body {
        Body::System { .. } => false,
        // An assistant message of tool calls only may or may not carry an
        // empty text, depending on the SDK.
        Body::Assistant { content } => !content.is_empty(),
        b => b.is_model_visible(),
    }
}

/// Whether `r` is a provider's compaction or Codex's trigger, which the
/// log keeps whole and does not compare.
fn kept_whole(r: &Record) -> bool {
    ctxfold_formats::provider_compaction(r).is_some()
        || ctxfold_formats::responses::other_item(r)
            .is_some_and(ctxfold_wire::context_management::is_trigger)
}

/// Whether two records say the same to the model. Tool-call arguments
/// that say nothing (an empty string, `{}`, `null`) are the same: a
/// stream's parser and a request's reader spell a call without arguments
/// differently. Texts are the same without the whitespace around them.
fn same(a: &Body, b: &Body) -> bool {
    match (a, b) {
        (
            Body::ToolCall {
                id: i1,
                name: n1,
                arguments: a1,
            },
            Body::ToolCall {
                id: i2,
                name: n2,
                arguments: a2,
            },
        ) => i1 == i2 && n1 == n2 && (a1 == a2 || (empty(&a1.value()) && empty(&a2.value()))),
        (
            Body::User {
                content: c1,
                author: w1,
            },
            Body::User {
                content: c2,
                author: w2,
            },
        ) => w1 == w2 && same_text(c1, c2),
        (Body::Assistant { content: c1 }, Body::Assistant { content: c2 }) => same_text(c1, c2),
        _ => a == b,
    }
}

fn empty(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::String(s) => s.trim().is_empty(),
        serde_json::Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// A text as it is compared: without the whitespace around it nor at the
/// end of its lines (Markdown's hard line breaks, which aider's restored
/// history adds to every line of a user message).
fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    let t = text.trim();
    if !t.lines().any(|l| l.ends_with(char::is_whitespace)) && !t.contains('\r') {
        return std::borrow::Cow::Borrowed(t);
    }
    let mut out = String::with_capacity(t.len());
    for (n, line) in t.lines().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str(line.trim_end());
    }
    std::borrow::Cow::Owned(out)
}

/// Whether two texts say the same: equal, or equal as [`plain`] texts.
fn same_text(a: &str, b: &str) -> bool {
    a == b || plain(a) == plain(b)
}

/// Whether the client's user text `client` is the stored `stored` with
/// something the client had added dropped: as [`plain`] texts, a proper
/// beginning or end of it.
fn rewritten(stored: &str, client: &str) -> bool {
    let (s, c) = (plain(stored), plain(client));
    !c.is_empty() && s.len() > c.len() && (s.starts_with(&*c) || s.ends_with(&*c))
}

/// Align `client` (a request's records) with `stored` (the log's).
///
/// A history the provider compacted may come back as the provider's
/// replacement: Codex sends `/v1/responses/compact`'s output (the user
/// messages, then the compaction item) in place of what it covers, and
/// Anthropic's on-demand compaction puts its block first. When the whole
/// histories do not align and the client's holds a provider compaction
/// the log holds too, they are aligned from that compaction on; what the
/// client sends before it stands for what the log has before it.
pub fn align(stored: &[Record], client: &[Record]) -> Alignment {
    let whole = align_from(stored, client, 0, 0);
    if !matches!(whole, Alignment::Diverges { .. }) {
        return whole;
    }
    let Some(cj) = client
        .iter()
        .rposition(|r| ctxfold_formats::provider_compaction(r).is_some())
    else {
        return whole;
    };
    let recorded = stored.iter().rposition(|r| {
        ctxfold_formats::provider_compaction(r).is_some() && same(&r.body, &client[cj].body)
    });
    // One ctxfold emulated whose answer the log does not hold (the client
    // sent its next request before the proxy recorded it, or it never
    // was): its compaction record stands for it, and the client's copy of
    // the block or item is new.
    let anchor = match recorded {
        Some(si) => Some((si, cj + 1)),
        None => ctxfold_formats::provider_compaction(&client[cj])
            .and_then(|c| emulated_record(stored, c))
            .map(|si| (si, cj)),
    };
    match anchor {
        // The compaction is the first pair (overlays like it are not
        // compared), and everything after it is aligned as usual.
        Some((si, c0)) => match align_from(stored, client, si + 1, c0) {
            Alignment::Extends {
                mut pairs,
                tail,
                rewrites,
            } => {
                pairs.insert(0, (si, cj));
                Alignment::Extends {
                    pairs,
                    tail,
                    rewrites,
                }
            }
            Alignment::Earlier {
                mut pairs,
                rewrites,
            } => {
                pairs.insert(0, (si, cj));
                Alignment::Earlier { pairs, rewrites }
            }
            diverges => diverges,
        },
        None => whole,
    }
}

/// The compaction record of `stored` that `c`, a compaction block or item
/// ctxfold emulated, names by its signature's `seq`, when it is the
/// client's and holds the same summary.
fn emulated_record(stored: &[Record], c: &serde_json::Value) -> Option<usize> {
    let (_, seq) = crate::context_management::emulated_origin(c)?;
    let text = crate::context_management::emulated_summary(c)?;
    // Seqs grow along the log.
    let i = stored.partition_point(|r| r.seq < seq);
    match &stored.get(i)?.body {
        Body::Compaction(k)
            if k.source == ctxfold_core::compaction::Source::Client
                && k.summary.as_ref().is_some_and(|s| s.text == text) =>
        {
            Some(i)
        }
        _ => None,
    }
}

/// The rewrite (see the module docs) that client record `c[j]` is of a
/// stored user message at or after `s[i]`, the first compared records
/// that differ: the stored message's place in `s`, and the place in `s`
/// of the answer after it (the next record that is not [`optional`],
/// paired with `c[j + 1]`), `None` when the log holds nothing after it
/// yet.
fn rewrite_at(
    stored: &[Record],
    client: &[Record],
    s: &[usize],
    c: &[usize],
    i: usize,
    j: usize,
) -> Option<(usize, Option<usize>)> {
    let Body::User {
        content: text,
        author,
    } = &client[c[j]].body
    else {
        return None;
    };
    // The client's copy of the answer: a rewrite is known by what follows.
    let answer = &client[*c.get(j + 1)?].body;
    for k in i..s.len().min(i + MAX_LEFT + 1) {
        match &stored[s[k]].body {
            Body::User { content, author: a } if a == author && rewritten(content, text) => {
                return match (k + 1..s.len()).find(|&n| !optional(&stored[s[n]])) {
                    Some(next) => same(&stored[s[next]].body, answer).then_some((k, Some(next))),
                    // The log ends there: the client sends the next request
                    // before the proxy recorded the answer to that one, and
                    // the client's copy of it is new.
                    None => Some((k, None)),
                };
            }
            // A context message the client may have left behind.
            Body::User { .. } | Body::Assistant { .. } => {}
            _ => return None,
        }
    }
    None
}

/// [`align`] of `stored[s0..]` and `client[c0..]`, in the slices' indices.
fn align_from(stored: &[Record], client: &[Record], s0: usize, c0: usize) -> Alignment {
    let s: Vec<usize> = (s0..stored.len())
        .filter(|&i| compared(&stored[i]))
        .collect();
    let c: Vec<usize> = (c0..client.len())
        .filter(|&j| compared(&client[j]))
        .collect();
    let (mut i, mut j) = (0, 0);
    let mut pairs = Vec::new();
    let mut rewrites = Vec::new();
    while i < s.len() && j < c.len() {
        let (a, b) = (&stored[s[i]], &client[c[j]]);
        if same(&a.body, &b.body) {
            pairs.push((s[i], c[j]));
            i += 1;
            j += 1;
        } else if optional(a) {
            i += 1;
        } else if let Some((k, answer)) = rewrite_at(stored, client, &s, &c, i, j) {
            rewrites.push(Rewrite {
                stored: s[k],
                client: c[j],
                left: s[i..k].to_vec(),
                // Not recorded yet: the client's copy is appended next.
                answer: answer.map_or(stored.len(), |n| s[n]),
            });
            pairs.push((s[k], c[j]));
            i = k + 1;
            j += 1;
        } else {
            return Alignment::Diverges { at: c[j] };
        }
    }
    // Stored reasoning after the last pair was not sent back either.
    while i < s.len() && optional(&stored[s[i]]) {
        i += 1;
    }
    if i < s.len() {
        if j < c.len() {
            return Alignment::Diverges { at: c[j] };
        }
        return Alignment::Earlier { pairs, rewrites };
    }
    let (mut k, mut tail) = pairs.last().map_or((s0, c0), |&(si, cj)| (si + 1, cj + 1));
    // System messages the log holds after the last pair (they are not
    // compared), which the client sends again next, are not new: the log
    // has them when the request's answer is not recorded yet.
    while tail < client.len() && matches!(client[tail].body, Body::System { .. }) {
        let Some(next) = (k..stored.len()).find(|&i| matches!(stored[i].body, Body::System { .. }))
        else {
            break;
        };
        if stored[next].body != client[tail].body {
            break;
        }
        (k, tail) = (next + 1, tail + 1);
    }
    // So are the blocks and items the log keeps whole but does not
    // compare (a compaction, Codex's trigger) that the log holds after
    // the last pair: a retried `compaction_trigger`, or the compaction
    // item sent back after the history it was answered to.
    while let Some(c) = client.get(tail).filter(|c| kept_whole(c)) {
        let Some(next) = (k..stored.len()).find(|&i| stored[i].body == c.body) else {
            break;
        };
        (k, tail) = (next + 1, tail + 1);
    }
    Alignment::Extends {
        pairs,
        tail,
        rewrites,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(t: &str) -> Body {
        Body::User {
            content: t.into(),
            author: None,
        }
    }
    fn text(t: &str) -> Body {
        Body::Assistant { content: t.into() }
    }
    fn recs(bodies: Vec<Body>) -> Vec<Record> {
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| Record::new(i as u64, "", b))
            .collect()
    }

    #[test]
    fn a_request_that_adds_to_the_log_extends_it() {
        let stored = recs(vec![Body::TurnStart, user("hi"), text("hello")]);
        let mut client = stored.clone();
        client.extend(recs(vec![Body::TurnStart, user("more")]));
        assert_eq!(
            align(&stored, &client),
            Alignment::Extends {
                pairs: vec![(1, 1), (2, 2)],
                tail: 3,
                rewrites: vec![]
            }
        );
        // The same history again: nothing new.
        assert_eq!(
            align(&stored, &stored),
            Alignment::Extends {
                pairs: vec![(1, 1), (2, 2)],
                tail: 3,
                rewrites: vec![]
            }
        );
        // An empty log takes everything.
        assert_eq!(
            align(&[], &client),
            Alignment::Extends {
                pairs: vec![],
                tail: 0,
                rewrites: vec![]
            }
        );
    }

    #[test]
    fn incidental_fields_and_dropped_reasoning_do_not_diverge() {
        let mut stored = recs(vec![
            user("hi"),
            Body::Reasoning {
                content: "think".into(),
            },
            text("hello"),
        ]);
        stored[2].metadata = Some(Box::new(
            serde_json::from_value(json!({"usage": 3})).unwrap(),
        ));
        let mut client = recs(vec![
            Body::System {
                content: "be brief".into(),
            },
            user("hi"),
            text("hello"),
            user("and?"),
        ]);
        client[2].extra.insert("refusal".into(), json!(null));
        assert_eq!(
            align(&stored, &client),
            Alignment::Extends {
                pairs: vec![(0, 1), (2, 2)],
                tail: 3,
                rewrites: vec![]
            }
        );
    }

    #[test]
    fn a_call_without_arguments_matches_however_it_is_spelled() {
        let call = |args: serde_json::Value| Body::ToolCall {
            id: "c1".into(),
            name: "now".into(),
            arguments: args.into(),
        };
        let stored = recs(vec![user("time?"), call(json!({}))]);
        let client = recs(vec![user("time?"), call(json!("")), user("thanks")]);
        assert!(matches!(
            align(&stored, &client),
            Alignment::Extends { tail: 2, .. }
        ));
        let other = recs(vec![user("time?"), call(json!({"tz": "UTC"}))]);
        assert_eq!(align(&stored, &other), Alignment::Diverges { at: 1 });
    }

    #[test]
    fn a_compaction_or_trigger_the_log_holds_after_the_last_pair_is_not_new() {
        let read = |input: serde_json::Value| {
            ctxfold_formats::responses::from_json(&json!({"model": "m", "input": input}))
                .unwrap()
                .records
        };
        let asked = json!({"type": "message", "role": "user", "content": "fix it"});
        let trigger = json!({"type": "compaction_trigger"});
        let item = json!({"type": "compaction", "id": "cmp_1",
            "encrypted_content": "ctxfold:c:3:Digest of turn 1"});
        let stored = read(json!([asked, trigger, item]));
        // Codex's trigger sent again: nothing is new.
        let retried = read(json!([asked, trigger]));
        assert!(
            matches!(align(&stored, &retried), Alignment::Extends { tail, .. } if tail == retried.len())
        );
        // The item sent back after the history, then a question: only the
        // question is new.
        let question = json!({"type": "message", "role": "user", "content": "and?"});
        let next = read(json!([asked, item, question]));
        let Alignment::Extends { tail, .. } = align(&stored, &next) else {
            panic!("{:?}", align(&stored, &next))
        };
        let new: Vec<&Body> = next[tail..].iter().map(|r| &r.body).collect();
        assert!(
            new.iter().all(|b| !matches!(b, Body::Other { .. })) && new.contains(&&user("and?")),
            "{new:?}"
        );
    }

    #[test]
    fn an_emulated_compaction_whose_answer_is_not_recorded_aligns_on_its_record() {
        use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
        let read = |input: serde_json::Value| {
            ctxfold_formats::responses::from_json(&json!({"model": "m", "input": input}))
                .unwrap()
                .records
        };
        let u = |t: &str| json!({"type": "message", "role": "user", "content": t});
        let a = |t: &str| json!({"type": "message", "role": "assistant", "content": t});
        let mut stored = read(json!([u("fix it"), a("done"), u("again"), a("done too")]));
        let mut c = Compaction::new(0, 1, Source::Client);
        c.summary = Some(Summary {
            text: "Digest of turns 1–2".into(),
            provenance: Provenance::Supplied {
                author: Source::Client,
            },
        });
        stored.push(Record::new(0, "", Body::Compaction(Box::new(c))));
        let stored = ctxfold_core::log::renumber(stored);
        let seq = stored.last().unwrap().seq;
        // The compact endpoint's output, sent back before the proxy
        // recorded it, and a question.
        let item = |text: &str| {
            json!({"type": "compaction", "id": "cmp_1",
                "encrypted_content": format!("ctxfold:c:{seq}:{text}")})
        };
        let next = read(json!([
            u("fix it"),
            u("again"),
            item("Digest of turns 1–2"),
            u("and?")
        ]));
        let Alignment::Extends { pairs, tail, .. } = align(&stored, &next) else {
            panic!("{:?}", align(&stored, &next))
        };
        let at = (next.iter())
            .position(|r| ctxfold_formats::provider_compaction(r).is_some())
            .unwrap();
        assert_eq!(pairs[0], (stored.len() - 1, at));
        // The item is new to the log, and so is the question.
        assert_eq!(tail, at);
        // Another summary under that seq is not that compaction.
        let other = read(json!([
            u("fix it"),
            u("again"),
            item("Something else"),
            u("and?")
        ]));
        assert!(matches!(align(&stored, &other), Alignment::Diverges { .. }));
    }

    #[test]
    fn a_retry_is_an_earlier_state_and_an_edit_diverges() {
        let stored = recs(vec![user("hi"), text("hello"), user("more"), text("ok")]);
        let retry = recs(vec![user("hi"), text("hello"), user("more")]);
        assert_eq!(
            align(&stored, &retry),
            Alignment::Earlier {
                pairs: vec![(0, 0), (1, 1), (2, 2)],
                rewrites: vec![]
            }
        );
        let edited = recs(vec![user("hi"), text("HELLO"), user("more")]);
        assert_eq!(align(&stored, &edited), Alignment::Diverges { at: 1 });
        let compacted_by_client = recs(vec![user("summary of it all"), user("more")]);
        assert_eq!(
            align(&stored, &compacted_by_client),
            Alignment::Diverges { at: 0 }
        );
    }

    #[test]
    fn a_history_the_provider_replaced_goes_on_from_its_compaction() {
        let item = |id: &str| Body::Other {
            kind: "responses_item".into(),
            fields: Box::new(
                json!({"item": {"type": "compaction", "id": id, "encrypted_content": "E"}})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        };
        let stored = recs(vec![user("a"), text("b"), user("c"), item("cmp_1")]);
        // `/v1/responses/compact`'s output (the user messages, the item),
        // then a new message.
        let replaced = recs(vec![user("a"), user("c"), item("cmp_1"), user("d")]);
        assert_eq!(
            align(&stored, &replaced),
            Alignment::Extends {
                pairs: vec![(3, 2)],
                tail: 3,
                rewrites: vec![]
            }
        );
        // A compaction the log does not hold: a different history.
        let other = recs(vec![user("a"), user("c"), item("cmp_9"), user("d")]);
        assert!(matches!(align(&stored, &other), Alignment::Diverges { .. }));
    }

    #[test]
    fn a_system_message_the_log_has_after_its_last_pair_is_not_new_again() {
        let sys = || Body::System {
            content: "Be concise.".into(),
        };
        // The answer to the request that brought the system message is not
        // recorded yet when the next request comes.
        let stored = recs(vec![user("a"), sys()]);
        let client = recs(vec![user("a"), sys(), text("b"), user("c")]);
        assert_eq!(
            align(&stored, &client),
            Alignment::Extends {
                pairs: vec![(0, 0)],
                tail: 2,
                rewrites: vec![]
            }
        );
        // A system message the log does not have is new.
        let other = recs(vec![
            user("a"),
            Body::System {
                content: "Be verbose.".into(),
            },
            user("c"),
        ]);
        assert_eq!(
            align(&stored, &other),
            Alignment::Extends {
                pairs: vec![(0, 0)],
                tail: 1,
                rewrites: vec![]
            }
        );
    }

    /// aider's requests with one exchange done: the example messages,
    /// the history, its "chat files" messages, then the newest message
    /// with its reminder.
    const REMINDER: &str = "To suggest changes to a file you MUST return the entire content.";
    fn aider(done: &[(&str, &str)], newest: &str) -> Vec<Body> {
        let mut out = vec![
            Body::System {
                content: "Act as an expert software developer.".into(),
            },
            user("Change the greeting to be more casual"),
            text("Ok, I will: ..."),
        ];
        for (u, a) in done {
            out.extend([user(u), text(a)]);
        }
        out.extend([
            user("I am not sharing any files that you can edit yet."),
            text("Ok."),
            user(&format!("{newest}\n\n{REMINDER}")),
        ]);
        out
    }

    #[test]
    fn a_newest_message_the_client_shortened_continues_the_conversation() {
        // Request 1 and its answer, as the log holds them.
        let mut stored = recs(aider(&[], "Message 1"));
        stored.push(Record::new(7, "", text("Answer 1")));
        // Request 2: the reminder is gone from message 1, the chat files'
        // messages come after its answer.
        let client = recs(aider(&[("Message 1", "Answer 1")], "Message 2"));
        assert_eq!(
            align(&stored, &client),
            Alignment::Extends {
                pairs: vec![(1, 1), (2, 2), (5, 3), (6, 4)],
                tail: 5,
                rewrites: vec![Rewrite {
                    stored: 5,
                    client: 3,
                    left: vec![3, 4],
                    answer: 6,
                }],
            }
        );
        // The log then holds request 2's new messages and its answer;
        // request 3 rewrites message 2 the same way, and message 1 is
        // still the stored one's rewrite.
        stored.extend(recs(vec![
            user("I am not sharing any files that you can edit yet."),
            text("Ok."),
            user(&format!("Message 2\n\n{REMINDER}")),
            text("Answer 2"),
        ]));
        let client = recs(aider(
            &[("Message 1", "Answer 1"), ("Message 2", "Answer 2")],
            "Message 3",
        ));
        let Alignment::Extends {
            pairs,
            tail,
            rewrites,
        } = align(&stored, &client)
        else {
            panic!("not an extension");
        };
        assert_eq!(tail, 7);
        assert_eq!(pairs.last(), Some(&(10, 6)));
        assert_eq!(
            rewrites
                .iter()
                .map(|r| (r.stored, r.client, r.left.clone()))
                .collect::<Vec<_>>(),
            vec![(5, 3, vec![3, 4]), (9, 5, vec![7, 8])]
        );
    }

    #[test]
    fn a_rewrite_before_its_answer_is_recorded_takes_the_clients_answer() {
        // The client got its answer and sent the next request before the
        // proxy recorded the answer.
        let stored = recs(aider(&[], "Message 1"));
        let client = recs(aider(&[("Message 1", "Answer 1")], "Message 2"));
        assert_eq!(
            align(&stored, &client),
            Alignment::Extends {
                pairs: vec![(1, 1), (2, 2), (5, 3)],
                tail: 4,
                rewrites: vec![Rewrite {
                    stored: 5,
                    client: 3,
                    left: vec![3, 4],
                    answer: 6,
                }],
            }
        );
    }

    #[test]
    fn a_history_restored_from_markdown_is_the_same_history() {
        // aider's `--restore-chat-history`: a hard break at the end of
        // every line of a user message, blank lines around an answer.
        let mut stored = recs(aider(&[], "Message 1: do it.\n- one\n\n  two"));
        stored.push(Record::new(7, "", text("Answer 1.\nMore.")));
        let restored = recs(aider(
            &[(
                "Message 1: do it.  \n- one  \n  \n  two  \n",
                "\nAnswer 1.\nMore.\n\n",
            )],
            "Message 2",
        ));
        assert!(matches!(
            align(&stored, &restored),
            Alignment::Extends { tail: 5, ref rewrites, .. } if rewrites.len() == 1
        ));
        // The same words are the same record, without a rewrite.
        let a = recs(vec![user("a  \nb"), text("\nc\n")]);
        let b = recs(vec![user("a\nb"), text("c")]);
        assert!(matches!(
            align(&a, &b),
            Alignment::Extends { tail: 2, ref rewrites, .. } if rewrites.is_empty()
        ));
    }

    #[test]
    fn a_rewrite_needs_the_same_answer_after_it_and_only_drops_what_was_added() {
        let mut stored = recs(aider(&[], "Message 1"));
        stored.push(Record::new(7, "", text("Answer 1")));
        // Another answer after the shortened message: another history.
        let other = recs(aider(&[("Message 1", "Answer 9")], "Message 2"));
        assert!(matches!(
            align(&stored, &other),
            Alignment::Diverges { at: 3 }
        ));
        // Not a beginning or an end of the stored text: an edit.
        let edited = recs(aider(&[("Message one", "Answer 1")], "Message 2"));
        assert!(matches!(
            align(&stored, &edited),
            Alignment::Diverges { at: 3 }
        ));
        // No answer yet after it (a retry of an edited request): diverges.
        let retry = recs(vec![
            Body::System {
                content: "Act as an expert software developer.".into(),
            },
            user("Change the greeting to be more casual"),
            text("Ok, I will: ..."),
            user("Message 1"),
        ]);
        assert!(matches!(
            align(&stored, &retry),
            Alignment::Diverges { at: 3 }
        ));
        // A tool call or result is never left behind.
        let call = Body::ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({}).into(),
        };
        let result = Body::ToolResult {
            id: "c1".into(),
            content: "a b".into(),
            is_error: false,
        };
        let stored = recs(vec![
            user("go"),
            call.clone(),
            result.clone(),
            user(&format!("next\n\n{REMINDER}")),
            text("done"),
        ]);
        let client = recs(vec![user("go"), user("next"), text("done"), user("more")]);
        assert!(matches!(
            align(&stored, &client),
            Alignment::Diverges { at: 1 }
        ));
        let client = recs(vec![
            user("go"),
            call,
            result,
            user("next"),
            text("done"),
            user("more"),
        ]);
        assert!(matches!(
            align(&stored, &client),
            Alignment::Extends { tail: 5, ref rewrites, .. } if rewrites.len() == 1 && rewrites[0].left.is_empty()
        ));
    }

    fn visible() -> impl Strategy<Value = Body> {
        prop_oneof![
            "[a-c]{1,3}".prop_map(|t| user(&t)),
            "[a-c]{1,3}".prop_map(|t| text(&t)),
            ("[a-c]{1,2}", "[a-c]{1,3}").prop_map(|(id, c)| Body::ToolResult {
                id,
                content: c,
                is_error: false
            }),
        ]
    }

    use proptest::prelude::*;

    proptest! {
        /// A client that adds a reminder to its newest message, sends
        /// context messages before it, and on the next request drops the
        /// reminder and moves the context after the answer (aider) is one
        /// conversation at every request, the log extended by exactly the
        /// new request's messages, whether or not the proxy recorded the
        /// previous answer before the request came.
        #[test]
        fn a_client_that_rewrites_its_newest_message_stays_one_conversation(
            turns in prop::collection::vec(
                ("[a-c]{1,4}", "[a-c]{1,4}", 0usize..3, any::<bool>()),
                1..8,
            ),
        ) {
            let context = |n: usize| -> Vec<Body> {
                (0..n).flat_map(|k| [user(&format!("context {k}")), text("Ok.")]).collect()
            };
            let mut stored: Vec<Body> = Vec::new();
            let mut done: Vec<Body> = Vec::new();
            // Whether the previous answer is in the log: the proxy records
            // it after the client got it, and the next request may come
            // first (its copy is then new).
            let mut recorded = true;
            for (n, (u, a, ctx, records)) in turns.iter().enumerate() {
                let u = format!("{n}: {u}");
                let mut client = done.clone();
                client.extend(context(*ctx));
                client.push(user(&format!("{u}\n\n{REMINDER}")));
                let got = align(&recs(stored.clone()), &recs(client.clone()));
                let Alignment::Extends { tail, rewrites, .. } = got else {
                    panic!("request {n} diverged: {got:?}");
                };
                prop_assert_eq!(rewrites.len(), n);
                let answer = usize::from(!recorded);
                prop_assert_eq!(client.len() - tail, 2 * ctx + 1 + answer);
                stored.extend(client[tail..].iter().cloned());
                recorded = *records;
                if recorded {
                    stored.push(text(a));
                }
                done.extend([user(&u), text(a)]);
            }
        }

        /// Rewrites never make a history that differs anywhere but in a
        /// rewritten message continue: a changed record of any other kind
        /// still diverges where it is.
        #[test]
        fn a_changed_record_still_diverges(
            stored in prop::collection::vec(visible(), 1..20),
            pick in 0usize..20,
        ) {
            let at = pick % stored.len();
            let mut client = stored.clone();
            client[at] = user("changed!");
            prop_assert_eq!(align(&recs(stored), &recs(client)), Alignment::Diverges { at });
        }
    }
}
