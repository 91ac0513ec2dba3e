//! The providers' own context management (issue 29) in front of a
//! provider that implements it: a request that asks the provider to
//! compact, or whose history holds a compaction the provider made, is the
//! provider's to manage. It goes upstream as the client sent it, and
//! ctxfold does not compact on top of it; what the provider returns (its
//! `compaction` block or item, its applied edits) is recorded as it came;
//! and the log gets a compaction record (source `provider`) saying that
//! everything before the provider's latest compaction is out of the
//! provider's view. The log keeps all of it.
//!
//! What the emulation for an upstream without it (`book/emulate.rs`,
//! `server/emulating.rs`) shares with that lives here too: what is
//! stripped from the body that goes to such an upstream, and how a block
//! or item ctxfold made is told from the provider's (its `ctxfold:`
//! signature).

use ctxfold_core::compaction::{Compaction, Provenance, Source, Summary};
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_formats::provider_compaction;
use ctxfold_wire::context_management::{applied_edits, is_compaction, is_trigger};
use serde::Deserialize;
use serde_json::Value;

/// Key, in a provider compaction record's `extra`, of the `seq` of the
/// block or item it stands for.
const BLOCK_SEQ: &str = "provider_compaction_seq";
/// Metadata key of an answer's `context_management` (its applied edits),
/// on the answer's last record.
pub const APPLIED_EDITS: &str = "anthropic_context_management";

/// The prefix of the `signature` of a compaction block and of the
/// `encrypted_content` of a compaction item ctxfold emulated (its own, and
/// readable: the conversation and the compaction's `seq`, for an item the
/// summary too).
pub const SIGNATURE: &str = "ctxfold:";

/// What is read of a compaction block or item: its seal (a block's
/// `signature`, an item's `encrypted_content`) and a block's summary;
/// a value of another type than text is none.
#[derive(Deserialize, Default)]
struct Sealed<'a> {
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    signature: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    encrypted_content: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "ctxfold_wire::loose::text")]
    content: Option<&'a str>,
}

impl<'a> Sealed<'a> {
    fn of(c: &'a Value) -> Sealed<'a> {
        Sealed::deserialize(c).unwrap_or_default()
    }

    /// Its seal past ctxfold's [`SIGNATURE`], if ctxfold made it.
    fn ours(&self) -> Option<&'a str> {
        [self.signature, self.encrypted_content]
            .into_iter()
            .flatten()
            .find_map(|s| s.strip_prefix(SIGNATURE))
    }
}

/// Whether `c` (a compaction block or item) is one ctxfold made.
pub fn is_emulated(c: &Value) -> bool {
    Sealed::of(c).ours().is_some()
}

/// The conversation and the compaction record's `seq` that a compaction
/// block or item ctxfold made (see [`SIGNATURE`]) names, from its
/// signature: `ctxfold:CONVERSATION:SEQ`, an item's followed by `:` and
/// its summary. `None`: not one of ctxfold's, or not of that form.
pub fn emulated_origin(c: &Value) -> Option<(&str, u64)> {
    let signed = Sealed::of(c).ours()?;
    let mut parts = signed.splitn(3, ':');
    let id = parts.next().filter(|id| !id.is_empty())?;
    let seq = parts.next()?.parse().ok()?;
    Some((id, seq))
}

/// The summary a compaction block or item ctxfold made holds: a block's
/// `content`, an item's text after its signature.
pub fn emulated_summary(c: &Value) -> Option<&str> {
    let sealed = Sealed::of(c);
    if let Some(text) = sealed.content {
        return Some(text);
    }
    let signed = sealed.encrypted_content?.strip_prefix(SIGNATURE)?;
    signed.splitn(3, ':').nth(2)
}

/// Whether `item` (a message or item of a request's history) is a
/// compaction or Codex's trigger, or holds a compaction block.
pub fn holds_compaction(item: &Value) -> bool {
    /// A message's blocks, all that is read of it.
    #[derive(Deserialize)]
    struct Blocks {
        #[serde(default)]
        content: Option<Vec<Value>>,
    }
    is_compaction(item)
        || is_trigger(item)
        || Blocks::deserialize(item)
            .ok()
            .and_then(|b| b.content)
            .is_some_and(|b| b.iter().any(is_compaction))
}

/// The records of the blocks of an Anthropic answer (`raw`, the message
/// as the client got it) that the answer's parser leaves out but a client
/// sends back: its `compaction` blocks, first as the provider puts them.
pub fn answer_blocks(raw: &Value) -> Vec<Record> {
    /// An answer's blocks, all that is read of it.
    #[derive(Deserialize)]
    struct Blocks {
        #[serde(default)]
        content: Vec<Value>,
    }
    let Ok(Blocks { content }) = Blocks::deserialize(raw) else {
        return Vec::new();
    };
    content
        .iter()
        .filter(|b| is_compaction(b))
        .filter_map(Value::as_object)
        .map(ctxfold_formats::anthropic::assistant_block_record)
        .collect()
}

/// `records` (an Anthropic answer's) with the blocks
/// [`answer_blocks`] finds first, and the answer's applied edits on the
/// last record.
pub fn with_answer_blocks(raw: &Value, mut records: Vec<Record>, ts: &str) -> Vec<Record> {
    let mut blocks = answer_blocks(raw);
    for b in &mut blocks {
        b.ts = ts.into();
    }
    if let (Some(edits), Some(last)) = (applied_edits(raw), records.last_mut()) {
        let mut cm = Object::new();
        cm.insert("applied_edits".into(), edits.clone());
        last.metadata
            .get_or_insert_default()
            .insert(APPLIED_EDITS.into(), Value::Object(cm));
    }
    blocks.append(&mut records);
    blocks
}

/// The compaction record `log` lacks for the provider's latest compaction
/// in it: everything model-visible before that block or item, folded by
/// the provider. `None` when there is none, it has its record already, or
/// it folds nothing (an Anthropic block without a summary is a failed
/// compaction, which the provider treats as nothing).
pub fn provider_folded(log: &Log) -> Option<Record> {
    let records = log.records();
    let (b, block) = (records.iter().enumerate().rev())
        .find_map(|(i, r)| provider_compaction(r).map(|v| (i, v)))?;
    // One ctxfold made has its own compaction record already.
    if is_emulated(block) {
        return None;
    }
    let block_seq = records[b].seq;
    // The block's seq is one of the compaction's own fields: a record read
    // back from the log has it there, whichever version wrote it.
    let recorded = records[b..].iter().any(|r| {
        matches!(&r.body, Body::Compaction(c) if c.source == Source::Provider
            && c.extra.get(BLOCK_SEQ).and_then(Value::as_u64) == Some(block_seq))
    });
    if recorded {
        return None;
    }
    let anthropic = ctxfold_formats::anthropic::other_block(&records[b]).is_some();
    let sealed = Sealed::of(block);
    let text = if anthropic {
        sealed.content?.to_owned()
    } else {
        let n = sealed.encrypted_content.map_or(0, str::len);
        format!(
            "[The provider compacted the conversation before this point; its compaction is encrypted ({n} characters) and only the provider can read it.]"
        )
    };
    let visible = |r: &Record| r.body.is_model_visible() && provider_compaction(r).is_none();
    let first = records[..b].iter().position(visible)?;
    let last = records[..b].iter().rposition(visible)?;
    let mut c = Compaction::new(log.turn_of(first), log.turn_of(last), Source::Provider);
    c.from_seq = Some(records[first].seq);
    c.to_seq = Some(records[last].seq);
    c.summary = Some(Summary {
        text,
        provenance: Provenance::Supplied {
            author: Source::Provider,
        },
    });
    c.note = Some(
        if anthropic {
            "Anthropic's compaction, on its servers"
        } else {
            "OpenAI's compaction, on its servers"
        }
        .into(),
    );
    c.extra.insert(BLOCK_SEQ.into(), block_seq.into());
    Some(Record::new(
        0,
        records[b].ts.clone(),
        Body::Compaction(Box::new(c)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Record {
        Record::new(
            0,
            "",
            Body::User {
                content: text.into(),
                author: None,
            },
        )
    }

    #[test]
    fn an_emulated_compaction_names_its_conversation_seq_and_summary() {
        let item = json!({"type": "compaction", "id": "cmp_x",
            "encrypted_content": "ctxfold:20261206-1200-ab12:8:Digest: a:b"});
        assert_eq!(emulated_origin(&item), Some(("20261206-1200-ab12", 8)));
        assert_eq!(emulated_summary(&item), Some("Digest: a:b"));
        let block = json!({"type": "compaction", "content": "Digest", "signature": "ctxfold:c1:3"});
        assert_eq!(emulated_origin(&block), Some(("c1", 3)));
        assert_eq!(emulated_summary(&block), Some("Digest"));
        // The provider's own, or a signature of another form.
        for c in [
            json!({"type": "compaction", "encrypted_content": "gAAAA"}),
            json!({"type": "compaction", "signature": "ctxfold::3"}),
            json!({"type": "compaction", "signature": "ctxfold:c1:x"}),
        ] {
            assert_eq!(emulated_origin(&c), None, "{c}");
        }
    }

    #[test]
    fn compaction_blocks_are_stripped_wherever_a_client_put_them() {
        let block = json!({"type": "compaction", "content": "S", "signature": "x"});
        let body = json!({"model": "m", "compaction": {"type": "summarize"},
            "system": [block],
            "messages": [
                {"role": "assistant", "content": [block]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                    "content": [{"type": "text", "text": "ok"}, block]}]}]});
        let out = crate::protocol::strip_for_upstream(
            &crate::protocol::messages::Messages,
            body.to_string().as_bytes(),
        )
        .unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            out,
            json!({"model": "m", "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                    "content": [{"type": "text", "text": "ok"}]}]}]})
        );
        let body = json!({"input": [{"type": "compaction_trigger"},
            {"type": "function_call_output", "call_id": "c", "output": [block]}]});
        let out = crate::protocol::strip_for_upstream(
            &crate::protocol::responses::Responses,
            body.to_string().as_bytes(),
        )
        .unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            out,
            json!({"input": [{"type": "function_call_output", "call_id": "c", "output": []}]})
        );
    }

    #[test]
    fn the_provider_folds_what_precedes_its_latest_compaction_once() {
        let block = json!({"type": "compaction", "content": "Summary: read a.rs."});
        let mut records = vec![
            Record::new(0, "", Body::TurnStart),
            user("read a.rs"),
            Record::new(
                0,
                "",
                Body::Assistant {
                    content: "done".into(),
                },
            ),
            Record::new(0, "", Body::TurnStart),
            user("go on"),
        ];
        records.extend(with_answer_blocks(
            &json!({"content": [block.clone(), {"type": "text", "text": "ok"}],
                    "context_management": {"applied_edits": []}}),
            vec![Record::new(
                0,
                "",
                Body::Assistant {
                    content: "ok".into(),
                },
            )],
            "t",
        ));
        let mut log = Log::from_records(ctxfold_core::log::renumber(records));
        assert_eq!(provider_compaction(&log.records()[5]), Some(&block));
        let r = provider_folded(&log).unwrap();
        let Body::Compaction(c) = &r.body else {
            panic!()
        };
        assert_eq!((c.from_seq, c.to_seq), (Some(1), Some(4)));
        assert_eq!(c.source, Source::Provider);
        assert_eq!(c.summary.as_ref().unwrap().text, "Summary: read a.rs.");
        let mut r = r;
        r.seq = log.next_seq();
        // As another process (or this one, started again) reads it back.
        let line = r.to_json_line();
        let (r, _) = Record::from_json_line(&line).unwrap();
        log.push(r);
        assert!(provider_folded(&log).is_none(), "recorded once: {line}");
        // A failed compaction (no summary) folds nothing.
        let failed = Log::from_records(ctxfold_core::log::renumber(vec![
            user("x"),
            ctxfold_formats::anthropic::assistant_block_record(
                json!({"type": "compaction", "content": null})
                    .as_object()
                    .unwrap(),
            ),
        ]));
        assert!(provider_folded(&failed).is_none());
    }
}
