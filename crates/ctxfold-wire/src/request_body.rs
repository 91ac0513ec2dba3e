//! A request body written straight from its typed messages.
//!
//! A conversation's messages are most of a request: thousands of them,
//! often a megabyte. Made into one JSON value they cost a map and a key
//! string for every field of every message, and as much again to free,
//! which was most of what the agent host spends per step. A
//! [`RequestBody`] keeps the messages typed and serializes them in place;
//! the request's other keys stay a small value the caller may still
//! change (a provider's extra keys, a default output limit).

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::{Object, Value};

/// The key the messages are written under.
const MESSAGES: &str = "messages";

/// A request ready to send: its keys, and its messages kept typed until
/// they are written (see the module). Serializes to the bytes the
/// request's value would.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestBody<M> {
    head: Object,
    messages: Vec<M>,
}

impl<M> RequestBody<M> {
    /// `head`, a request's keys, and its `messages`, written where `head`
    /// has the key `messages` (after its other keys when it has none).
    pub(crate) fn new(mut head: Object, messages: Vec<M>) -> RequestBody<M> {
        // An existing key keeps its place.
        head.insert(MESSAGES.to_owned(), Value::Null);
        RequestBody { head, messages }
    }

    /// The request's keys, to set, change or remove any of them.
    /// `messages` is among them as `null`, marking where the messages are
    /// written: another value put there is written instead of them, and
    /// without the key they are left out.
    pub fn head_mut(&mut self) -> &mut Object {
        &mut self.head
    }

    /// The messages.
    pub fn messages(&self) -> &[M] {
        &self.messages
    }
}

impl<M: Serialize> Serialize for RequestBody<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.head.len()))?;
        for (k, v) in &self.head {
            if k == MESSAGES && v.is_null() {
                map.serialize_entry(k, &self.messages)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{IntoValue, Value, anthropic, chat};

    const CHAT: &str = r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"fix it","name":"ann"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"run","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}],"tools":[{"type":"function","function":{"name":"run","parameters":{"type":"object"}}}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"temperature":0.2}"#;

    const MESSAGES: &str = r#"{"model":"claude","max_tokens":9,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"t","content":"r","is_error":true}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t","name":"n","input":{"a":1}}]}],"stream":true,"metadata":{"user_id":"u"}}"#;

    fn text(v: &impl serde::Serialize) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn a_body_writes_what_the_request_value_writes() {
        let chat: chat::Request = serde_json::from_str(CHAT).unwrap();
        assert_eq!(text(&chat.clone().into_body()), CHAT);
        assert_eq!(text(&chat.into_value()), CHAT);
        let messages: anthropic::Request = serde_json::from_str(MESSAGES).unwrap();
        assert_eq!(text(&messages.clone().into_body()), MESSAGES);
        assert_eq!(text(&messages.into_value()), MESSAGES);
    }

    #[test]
    fn keys_changed_in_the_head_are_written_in_place_and_the_messages_where_they_were() {
        let chat: chat::Request = serde_json::from_str(CHAT).unwrap();
        let mut expected: Value = serde_json::from_str(CHAT).unwrap();
        let mut body = chat.into_body();
        assert_eq!(body.messages().len(), 4);
        let head = body.head_mut();
        head.insert("max_tokens".into(), json!(8));
        head.shift_remove("stream_options");
        head.insert("seed".into(), json!(1));
        expected["max_tokens"] = json!(8);
        let o = expected.as_object_mut().unwrap();
        o.shift_remove("stream_options");
        o.insert("seed".into(), json!(1));
        assert_eq!(text(&body), text(&expected));
    }

    #[test]
    fn messages_replaced_or_removed_in_the_head_are_written_so() {
        let chat: chat::Request = serde_json::from_str(CHAT).unwrap();
        let mut replaced = chat.clone().into_body();
        replaced
            .head_mut()
            .insert("messages".into(), json!([{"role": "user", "content": "x"}]));
        let v: Value = serde_json::from_str(&text(&replaced)).unwrap();
        assert_eq!(v["messages"], json!([{"role": "user", "content": "x"}]));
        assert_eq!(v["model"], "m");
        let mut removed = chat.into_body();
        removed.head_mut().shift_remove("messages");
        let v: Value = serde_json::from_str(&text(&removed)).unwrap();
        assert!(v.get("messages").is_none());
        assert_eq!(v["temperature"], json!(0.2));
    }
}
