//! The neutral request, and a projected view turned into one.
//!
//! [`ChatRequest`] holds what both wire formats need: a system text and
//! messages of two roles, each a list of [`Part`]s. [`crate::openai::body`]
//! and [`crate::anthropic::body`] write it as each provider wants it.
//!
//! # From a view ([`request_from_view`])
//!
//! | view item | message part |
//! | --- | --- |
//! | system event | the system text (joined with "\n\n", after the base request's own) |
//! | user | user text |
//! | assistant | assistant text |
//! | structured answer | assistant text: its JSON |
//! | reasoning | assistant reasoning, with its signature only when kept (below) |
//! | tool call (whole or stripped) | assistant tool call |
//! | tool result (whole or stripped) | user-role tool result |
//! | summary | user text [`summary_lead`], then assistant text (the summary) |
//! | preamble | user text [`PREAMBLE`] |
//!
//! Consecutive parts of one role form one message, so roles alternate: a
//! summary's lead after a user message (the first, which automatic
//! compaction keeps) is a second text of that message, never a user
//! message of its own. In a user message, tool results come before text
//! (both providers want the results right after the calls). Empty texts
//! are left out.
//!
//! # Signed thinking
//!
//! Anthropic signs its thinking blocks and rejects a request where a signed
//! block's turn was changed. A reasoning part keeps its signature
//! (metadata `anthropic_thinking_signature`) only when its step — the model
//! call's output (reasoning, text, tool calls) and the results of its calls,
//! see [`ctxfold_core::Log::steps`] — reaches the request exactly as it was:
//!
//! 1. every model-visible event of the step is in the view unchanged (not
//!    stripped, omitted, dropped or summarized), and
//! 2. the view items right before and right after the step (system prompts
//!    aside) are the very events that surround it in the log: no summary,
//!    preamble or removed neighbour, so the step's messages are neither
//!    merged with other content nor cut from their own.
//!
//! Otherwise the part's signature is `None`. Anthropic's body leaves out
//! every reasoning part without a signature (it rejects unsigned thinking);
//! OpenAI's body never sends reasoning back (`reasoning_content` is output
//! only: servers ignore or refuse it in a request).
//!
//! If the step of the tool loop still running was changed, Anthropic with
//! thinking enabled may then refuse a request whose last assistant message
//! does not start with thinking; the caller can retry without thinking.

use ctxfold_core::log::Step;
use ctxfold_core::materialize::item_record;
use ctxfold_core::projection::{Item, PREAMBLE, View, covered_indices, summary_preamble};
use ctxfold_core::{Body, Log, Object};
use serde_json::Value;

use crate::part::{Part, THINKING_SIGNATURE};

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The user (and tool results).
    User,
    /// The model.
    Assistant,
}

/// A message: a role and its parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What it says.
    pub parts: Vec<Part>,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// A request to a chat model, in neither provider's format.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The model, as the provider names it (no `provider/` prefix).
    pub model: String,
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Output limit (`max_tokens`); Anthropic's body sends a default when
    /// `None`, OpenAI's sends nothing.
    pub max_tokens: Option<u32>,
    /// Keys laid over the top level of the body last, as they are (e.g.
    /// `temperature`, Anthropic's `thinking`, OpenAI's
    /// `max_completion_tokens`); a `null` value removes the key.
    pub extra: Object,
}

impl ChatRequest {
    /// An empty request for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        ChatRequest {
            model: model.into(),
            ..ChatRequest::default()
        }
    }

    /// Add `part` said by `role`: to the last message when it has that role
    /// (a tool result after the tool results already there, before text),
    /// else in a new message. Empty text is left out.
    pub fn push(&mut self, role: Role, part: Part) {
        if matches!(&part, Part::Text(t) if t.is_empty()) {
            return;
        }
        match self.messages.last_mut() {
            Some(m) if m.role == role => {
                if matches!(part, Part::ToolResult { .. }) {
                    let at = m
                        .parts
                        .iter()
                        .take_while(|p| matches!(p, Part::ToolResult { .. }))
                        .count();
                    m.parts.insert(at, part);
                } else {
                    m.parts.push(part);
                }
            }
            _ => self.messages.push(Message {
                role,
                parts: vec![part],
            }),
        }
    }

    /// Add a system text (joined to what is there with "\n\n").
    pub fn push_system(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match &mut self.system {
            Some(s) => {
                s.push_str("\n\n");
                s.push_str(text);
            }
            None => self.system = Some(text.to_owned()),
        }
    }
}

/// The request for the projected `view` of `log` (see the module docs):
/// `base` (what a request gets besides the view: the model, the system
/// prompt, put before any system event of the log, the tools, the limit
/// and the extra keys) with the view's messages after its own.
pub fn request_from_view(log: &Log, view: &View<'_>, base: &ChatRequest) -> ChatRequest {
    let mut req = ChatRequest {
        system: None,
        ..base.clone()
    };
    if let Some(s) = &base.system {
        req.push_system(s);
    }
    let mut signatures = Signatures::new(log, view);
    for item in &view.items {
        match *item {
            Item::Summary { text, .. } => {
                // After a user message (the client's first, which
                // automatic compaction keeps), the lead joins it: roles
                // still alternate.
                req.push(
                    Role::User,
                    Part::Text(summary_lead(log, item).unwrap_or_default()),
                );
                req.push(Role::Assistant, Part::Text(text.to_owned()));
            }
            Item::Preamble => req.push(Role::User, Part::Text(PREAMBLE.to_owned())),
            Item::Event { index, record } => match &record.body {
                Body::System { content } => req.push_system(content),
                Body::Reasoning { content } => {
                    let signature = signature_of(record.metadata.as_deref())
                        .filter(|_| signatures.keeps(index));
                    req.push(
                        Role::Assistant,
                        Part::Reasoning {
                            text: content.clone(),
                            signature,
                        },
                    );
                }
                body => push_body(&mut req, body.clone()),
            },
            Item::StrippedCall { .. } | Item::StrippedResult { .. } | Item::Clipped { .. } => {
                if let Some(r) = item_record(item) {
                    push_body(&mut req, r.body);
                }
            }
        }
    }
    req
}

/// The user message that leads summary `item` of a view of `log`
/// ([`summary_preamble`], with its handle), naming the turns of the first
/// and last events the model sees among those its compaction folds: the
/// turns its digest names. (The item's own [`Item::summary_lead`] names
/// the turns of the compaction's first and last records, and a range that
/// ends on the `turn_start` of the turn it keeps named one turn more than
/// its digest: "turns 1–9" over a digest of turns 1–8.) `None` for any
/// other item.
pub fn summary_lead(log: &Log, item: &Item<'_>) -> Option<String> {
    let Item::Summary {
        compaction, turns, ..
    } = *item
    else {
        return None;
    };
    let records = log.records();
    let visible = |k: &usize| records[*k].body.is_model_visible();
    let seen = match records.get(compaction).map(|r| &r.body) {
        Some(Body::Compaction(c)) => covered_indices(log, c).and_then(|(lo, hi)| {
            let first = (lo..=hi).find(visible)?;
            let last = (lo..=hi).rev().find(visible)?;
            Some((log.turn_of(first), log.turn_of(last)))
        }),
        // A compaction measured but not recorded (`project_with`).
        _ => None,
    };
    Some(summary_preamble(
        seen.unwrap_or(turns),
        item.handle().as_ref(),
    ))
}

/// Lay `extra` over the top level of a request body: a `null` removes the
/// key.
pub(crate) fn apply_extra(body: &mut Object, extra: &Object) {
    for (k, v) in extra {
        if v.is_null() {
            body.shift_remove(k);
        } else {
            body.insert(k.clone(), v.clone());
        }
    }
}

fn signature_of(meta: Option<&Object>) -> Option<String> {
    match meta?.get(THINKING_SIGNATURE)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Add the part an event body stands for, as it is (no compaction, no
/// signature kept for reasoning): what [`request_from_view`] adds for a
/// record shown unchanged. Callers extending a request with new records
/// use it so both agree.
pub fn push_body(req: &mut ChatRequest, body: Body) {
    match body {
        Body::User { content, .. } => req.push(Role::User, Part::Text(content)),
        Body::Assistant { content } => req.push(Role::Assistant, Part::Text(content)),
        Body::Structured { data } => req.push(Role::Assistant, Part::Text(data.to_string())),
        Body::Reasoning { content } => req.push(
            Role::Assistant,
            Part::Reasoning {
                text: content,
                signature: None,
            },
        ),
        Body::ToolCall {
            id,
            name,
            arguments,
        } => req.push(
            Role::Assistant,
            Part::ToolCall {
                id,
                name,
                arguments: arguments.value(),
            },
        ),
        Body::ToolResult {
            id,
            content,
            is_error,
        } => req.push(
            Role::User,
            Part::ToolResult {
                id,
                content,
                is_error,
            },
        ),
        Body::System { content } => req.push_system(&content),
        _ => {}
    }
}

/// Decides, step by step, whether signed reasoning may keep its signature
/// (rule in the module docs). Built lazily: a view with no signed reasoning
/// costs nothing.
struct Signatures<'l, 'v> {
    log: &'l Log,
    items: &'v [Item<'v>],
    /// View position of each record shown unchanged, by record index.
    pos: Option<Vec<usize>>,
    /// Steps of the turns looked at, and verdicts by step start.
    steps: std::collections::HashMap<u32, Vec<Step>>,
    verdicts: std::collections::HashMap<usize, bool>,
}

const ABSENT: usize = usize::MAX;

/// Whether a view item is a system prompt (neither role: not a neighbour).
fn is_system(item: &Item<'_>) -> bool {
    matches!(item, Item::Event { record, .. } if matches!(record.body, Body::System { .. }))
}

impl<'l, 'v> Signatures<'l, 'v> {
    fn new(log: &'l Log, view: &'v View<'v>) -> Self {
        Signatures {
            log,
            items: &view.items,
            pos: None,
            steps: Default::default(),
            verdicts: Default::default(),
        }
    }

    fn positions(&mut self) -> &[usize] {
        let (log, items) = (self.log, self.items);
        self.pos.get_or_insert_with(|| {
            let mut pos = vec![ABSENT; log.len()];
            for (p, item) in items.iter().enumerate() {
                if let Item::Event { index, .. } = item {
                    pos[*index] = p;
                }
            }
            pos
        })
    }

    /// Whether the reasoning event at record `index` keeps its signature.
    fn keeps(&mut self, index: usize) -> bool {
        let turn = self.log.turn_of(index);
        let log = self.log;
        let steps = self.steps.entry(turn).or_insert_with(|| log.steps(turn));
        let Some(step) = steps
            .iter()
            .find(|s| s.start <= index && index < s.end)
            .copied()
        else {
            return false;
        };
        if let Some(&v) = self.verdicts.get(&step.start) {
            return v;
        }
        let v = self.step_intact(step);
        self.verdicts.insert(step.start, v);
        v
    }

    fn step_intact(&mut self, step: Step) -> bool {
        let records = self.log.records();
        let visible = |k: usize| records[k].body.is_model_visible();
        let items = self.items;
        let pos = self.positions();
        // 1. Every model-visible event of the step is shown unchanged.
        if (step.start..step.end).any(|k| visible(k) && pos[k] == ABSENT) {
            return false;
        }
        let Some(first) = (step.start..step.end).find(|&k| visible(k)) else {
            return false;
        };
        let Some(last) = (step.start..step.end).rev().find(|&k| visible(k)) else {
            return false;
        };
        // 2. Its neighbours in the view are its neighbours in the log.
        let raw_before = (0..step.start).rev().find(|&k| visible(k));
        let raw_after = (step.end..records.len()).find(|&k| visible(k));
        let view_before = items[..pos[first]].iter().rev().find(|i| !is_system(i));
        let view_after = items[pos[last] + 1..].iter().find(|i| !is_system(i));
        let same = |raw: Option<usize>, shown: Option<&Item<'_>>| match (raw, shown) {
            (None, None) => true,
            (Some(k), Some(Item::Event { index, .. })) => k == *index,
            _ => false,
        };
        same(raw_before, view_before) && same(raw_after, view_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn push_merges_roles_and_puts_results_before_text() {
        let mut r = ChatRequest::new("m");
        r.push(Role::User, Part::Text("hi".into()));
        r.push(Role::User, Part::Text(String::new()));
        r.push(
            Role::Assistant,
            Part::ToolCall {
                id: "a".into(),
                name: "t".into(),
                arguments: json!({}),
            },
        );
        r.push(Role::User, Part::Text("interrupt".into()));
        r.push(
            Role::User,
            Part::ToolResult {
                id: "a".into(),
                content: "ok".into(),
                is_error: false,
            },
        );
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.messages[0].parts, vec![Part::Text("hi".into())]);
        assert!(matches!(r.messages[2].parts[0], Part::ToolResult { .. }));
        assert_eq!(r.messages[2].parts[1], Part::Text("interrupt".into()));
    }

    fn log_of(bodies: Vec<Body>) -> Log {
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| ctxfold_core::Record::new(i as u64, "", b))
                .collect(),
        )
    }

    fn user(t: &str) -> Body {
        Body::User {
            content: t.into(),
            author: None,
        }
    }

    fn said(t: &str) -> Body {
        Body::Assistant { content: t.into() }
    }

    fn folded(from_seq: u64, to_seq: u64) -> Body {
        use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
        let mut c = Compaction::new(0, 0, Source::Auto);
        c.from_seq = Some(from_seq);
        c.to_seq = Some(to_seq);
        c.summary = Some(Summary {
            text: "Digest of turns 1–2".into(),
            provenance: Provenance::Supplied {
                author: Source::Auto,
            },
        });
        Body::Compaction(Box::new(c))
    }

    #[test]
    fn a_lead_names_the_turns_its_digest_covers() {
        // The range ends on turn 3's `turn_start`: the turn it keeps.
        let log = log_of(vec![
            Body::TurnStart,
            user("one"),
            said("1"),
            Body::TurnStart,
            user("two"),
            said("2"),
            Body::TurnStart,
            user("three"),
            folded(0, 6),
        ]);
        let view = ctxfold_core::projection::project(&log);
        let item = &view.items[0];
        let lead = summary_lead(&log, item).unwrap();
        assert!(
            lead.starts_with("[The text that follows summarizes turns 1–2 "),
            "{lead}"
        );
        assert_eq!(
            lead,
            summary_preamble((0, 1), item.handle().as_ref()),
            "the handle is the item's"
        );
        let req = request_from_view(&log, &view, &ChatRequest::new("m"));
        assert_eq!(req.messages[0].parts[0], Part::Text(lead));
    }

    #[test]
    fn a_lead_after_a_user_message_joins_it() {
        // Automatic compaction keeps the first user message and folds from
        // its answer on.
        let log = log_of(vec![
            Body::TurnStart,
            user("I am not sharing any files that you can edit yet."),
            said("Ok."),
            Body::TurnStart,
            user("two"),
            said("2"),
            Body::TurnStart,
            user("three"),
            folded(2, 5),
        ]);
        let view = ctxfold_core::projection::project(&log);
        let req = request_from_view(&log, &view, &ChatRequest::new("m"));
        let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            vec![Role::User, Role::Assistant, Role::User],
            "{req:#?}"
        );
        assert_eq!(req.messages[0].parts.len(), 2, "the message, then the lead");
        let Part::Text(lead) = &req.messages[0].parts[1] else {
            panic!("{req:#?}");
        };
        assert!(lead.starts_with("[The text that follows summarizes turns 1–2"));
    }
}
