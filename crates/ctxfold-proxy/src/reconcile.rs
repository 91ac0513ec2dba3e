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
//! - Everything else must match in order. The first record that differs is
//!   where the histories diverge.

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
    },
    /// The request is an earlier state of the log (a retried request, or a
    /// client that went back): nothing is new, and the log goes on past
    /// it.
    Earlier {
        /// Stored index paired with each compared client index.
        pairs: Vec<(usize, usize)>,
    },
    /// The request's history differs from the log at client record `at`.
    Diverges {
        /// The first client record that differs.
        at: usize,
    },
}

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

/// Whether two records say the same to the model. Tool-call arguments
/// that say nothing (an empty string, `{}`, `null`) are the same: a
/// stream's parser and a request's reader spell a call without arguments
/// differently.
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
    match stored.iter().rposition(|r| {
        ctxfold_formats::provider_compaction(r).is_some() && same(&r.body, &client[cj].body)
    }) {
        // The compaction is the first pair (overlays like it are not
        // compared), and everything after it is aligned as usual.
        Some(si) => match align_from(stored, client, si + 1, cj + 1) {
            Alignment::Extends { mut pairs, tail } => {
                pairs.insert(0, (si, cj));
                Alignment::Extends { pairs, tail }
            }
            Alignment::Earlier { mut pairs } => {
                pairs.insert(0, (si, cj));
                Alignment::Earlier { pairs }
            }
            diverges => diverges,
        },
        None => whole,
    }
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
    while i < s.len() && j < c.len() {
        let (a, b) = (&stored[s[i]], &client[c[j]]);
        if same(&a.body, &b.body) {
            pairs.push((s[i], c[j]));
            i += 1;
            j += 1;
        } else if optional(a) {
            i += 1;
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
        return Alignment::Earlier { pairs };
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
    Alignment::Extends { pairs, tail }
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
                tail: 3
            }
        );
        // The same history again: nothing new.
        assert_eq!(
            align(&stored, &stored),
            Alignment::Extends {
                pairs: vec![(1, 1), (2, 2)],
                tail: 3
            }
        );
        // An empty log takes everything.
        assert_eq!(
            align(&[], &client),
            Alignment::Extends {
                pairs: vec![],
                tail: 0
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
                tail: 3
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
    fn a_retry_is_an_earlier_state_and_an_edit_diverges() {
        let stored = recs(vec![user("hi"), text("hello"), user("more"), text("ok")]);
        let retry = recs(vec![user("hi"), text("hello"), user("more")]);
        assert_eq!(
            align(&stored, &retry),
            Alignment::Earlier {
                pairs: vec![(0, 0), (1, 1), (2, 2)]
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
                tail: 3
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
                tail: 2
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
                tail: 1
            }
        );
    }
}
