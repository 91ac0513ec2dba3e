//! Whether an answer reached the end its protocol gives it, watched as its
//! bytes pass to the client; and what can be read of a JSON answer that
//! was cut short.
//!
//! An upstream that closes its connection mid-answer, on a body with no
//! length and no chunking (delimited by the close, as HTTP/1.0 did), ends
//! the body as if it were whole: only the protocol says otherwise. A
//! stream ends with its last event (`data: [DONE]` or a `finish_reason`
//! for chat completions, `message_stop` for Anthropic,
//! `response.completed` for responses, or an error event), whatever its
//! framing; a JSON answer with its last closing bracket.

use ctxfold_core::{Body, Record};

use crate::protocol::Shape;

/// Watches an answer's bytes for its end.
#[derive(Debug)]
pub struct Ending {
    watch: Watch,
    ended: bool,
}

#[derive(Debug)]
enum Watch {
    /// A body whose framing (a length, chunks, HTTP/2) says where it ends.
    Framed,
    /// A JSON body: ended when its top-level value closes.
    Json(JsonDepth),
    /// Server-sent events of a shape.
    Sse(Shape, Sse),
}

impl Ending {
    /// A watch over an answer of `shape`: a stream of events when
    /// `streamed`, else a JSON body, whose end its framing vouches for
    /// when `framed`.
    pub fn new(shape: Shape, streamed: bool, framed: bool) -> Ending {
        let watch = match (streamed, framed) {
            (true, _) => Watch::Sse(shape, Sse::default()),
            (false, true) => Watch::Framed,
            (false, false) => Watch::Json(JsonDepth::default()),
        };
        Ending {
            ended: matches!(watch, Watch::Framed),
            watch,
        }
    }

    /// The next bytes of the answer.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.ended {
            return;
        }
        self.ended = match &mut self.watch {
            Watch::Framed => true,
            Watch::Json(j) => j.feed(bytes),
            Watch::Sse(shape, sse) => sse.feed(*shape, bytes),
        };
    }

    /// Whether the answer, as fed so far and with nothing more to come,
    /// reached its end.
    pub fn ended(&mut self) -> bool {
        if !self.ended
            && let Watch::Sse(shape, sse) = &mut self.watch
        {
            // The stream's readers take an event still open at the end.
            self.ended = sse.finish(*shape);
        }
        self.ended
    }
}

/// The brackets of a JSON text, counted as it comes.
#[derive(Debug, Default)]
struct JsonDepth {
    depth: usize,
    started: bool,
    in_string: bool,
    escaped: bool,
    closed: bool,
}

impl JsonDepth {
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if self.closed {
                break;
            }
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => {
                    self.started = true;
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.closed = self.started && self.depth == 0;
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                // A top-level scalar: not an answer, nothing to watch for.
                _ if !self.started => self.closed = true,
                _ => {}
            }
        }
        self.closed
    }
}

/// Server-sent events read as they come, as `ctxfold_providers::sse`
/// reads them: lines, `event:` and `data:` fields, a blank line ending an
/// event.
#[derive(Debug, Default)]
struct Sse {
    line: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl Sse {
    fn feed(&mut self, shape: Shape, bytes: &[u8]) -> bool {
        let mut rest = bytes;
        while let Some(n) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..n]);
            rest = &rest[n + 1..];
            let line = std::mem::take(&mut self.line);
            if self.take_line(shape, &line) {
                return true;
            }
        }
        self.line.extend_from_slice(rest);
        false
    }

    /// The stream ended: its last line and event count as they are.
    fn finish(&mut self, shape: Shape) -> bool {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() && self.take_line(shape, &line) {
            return true;
        }
        self.dispatch(shape)
    }

    /// One line; whether it ended the answer.
    fn take_line(&mut self, shape: Shape, line: &[u8]) -> bool {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return self.dispatch(shape);
        }
        let text = String::from_utf8_lossy(line);
        if text.starts_with(':') {
            return false;
        }
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*text, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        false
    }

    /// The event read so far; whether it ends the answer.
    fn dispatch(&mut self, shape: Shape) -> bool {
        let event = self.event.take();
        let Some(data) = self.data.take() else {
            return false;
        };
        ends(shape, event.as_deref(), &data)
    }
}

/// Whether an event ends an answer of `shape` (as its reader ends it:
/// whole, or with an error). Only events that may end one are parsed:
/// most are deltas.
fn ends(shape: Shape, event: Option<&str>, data: &str) -> bool {
    shape.ends(event, data)
}

/// The records of what is readable of a whole (non-streamed) answer of
/// `shape` that was cut short, stamped `ts`: the text that arrived, the
/// body closed where it broke off ([`close_truncated`]). Tool calls and
/// reasoning are left out (the cut may fall inside them, and a call's
/// arguments or a signature cut short must not be sent again); one empty
/// text when nothing of it is readable.
pub fn cut_body(shape: Shape, body: &[u8], model: &str, ts: &str) -> Vec<Record> {
    let mut records: Vec<Record> = close_truncated(body)
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|raw| shape.answer(raw, model, ts).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|r| matches!(&r.body, Body::Assistant { content } if !content.is_empty()))
        .collect();
    crate::protocol::stamped(&mut records, ts);
    records
}

/// A JSON text cut short, closed where it can be: a string value left
/// open ends where the text does (an escape or character cut in half left
/// out); anything else open (a key, a number, a member without its value)
/// is dropped back to the last complete value; then every open array and
/// object is closed. `None` when nothing of a value is there.
pub fn close_truncated(text: &[u8]) -> Option<Vec<u8>> {
    #[derive(Clone, Copy)]
    enum Open {
        Object { key_next: bool },
        Array,
    }
    let mut stack: Vec<Open> = Vec::new();
    // The longest prefix that is complete values inside open containers,
    // with the containers open after it.
    let mut safe: Option<(usize, Vec<Open>)> = None;
    let mut in_string = false;
    let mut key = false;
    let mut escaped = false;
    let mut string_start = 0;
    let mut last_escape = None;
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => {
                    escaped = true;
                    last_escape = Some(i);
                }
                (false, b'"') => {
                    in_string = false;
                    if !key && !stack.is_empty() {
                        safe = Some((i + 1, stack.clone()));
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_start = i;
                key = matches!(stack.last(), Some(Open::Object { key_next: true }));
                if let Some(Open::Object { key_next }) = stack.last_mut() {
                    *key_next = false;
                }
            }
            b'{' | b'[' => {
                stack.push(if b == b'{' {
                    Open::Object { key_next: true }
                } else {
                    Open::Array
                });
                safe = Some((i + 1, stack.clone()));
            }
            b'}' | b']' => {
                stack.pop();
                if stack.is_empty() {
                    return Some(text[..=i].to_vec());
                }
                safe = Some((i + 1, stack.clone()));
            }
            b',' => {
                safe = Some((i, stack.clone()));
                if let Some(Open::Object { key_next }) = stack.last_mut() {
                    *key_next = true;
                }
            }
            _ => {}
        }
    }
    let (mut out, open) = if in_string && !key && !stack.is_empty() {
        let mut end = text.len();
        if escaped {
            end -= 1;
        }
        // A `\uXXXX` escape cut inside its digits.
        if let Some(at) = last_escape
            && at > string_start
            && text.get(at + 1) == Some(&b'u')
            && text.len() - at < 6
        {
            end = at;
        }
        // A character cut inside its bytes.
        if let Err(e) = std::str::from_utf8(&text[..end])
            && e.error_len().is_none()
        {
            end = e.valid_up_to();
        }
        let mut out = text[..end].to_vec();
        out.push(b'"');
        (out, stack)
    } else {
        let (at, open) = safe?;
        (text[..at].to_vec(), open)
    };
    for o in open.iter().rev() {
        out.push(match o {
            Open::Object { .. } => b'}',
            Open::Array => b']',
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn closed(text: &str) -> Option<Value> {
        close_truncated(text.as_bytes()).map(|b| {
            serde_json::from_slice(&b)
                .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&b)))
        })
    }

    #[test]
    fn a_json_answer_cut_short_is_closed_where_it_can_be() {
        assert_eq!(
            closed(r#"{"choices":[{"message":{"role":"assistant","content":"Hello wo"#),
            Some(
                serde_json::json!({"choices":[{"message":{"role":"assistant","content":"Hello wo"}}]})
            )
        );
        // A key, a number, a member without its value: dropped.
        assert_eq!(
            closed(r#"{"a":"x","b":12"#),
            Some(serde_json::json!({"a":"x"}))
        );
        assert_eq!(
            closed(r#"{"a":["x",{"k"#),
            Some(serde_json::json!({"a":["x",{}]}))
        );
        assert_eq!(closed(r#"{"a":"x","#), Some(serde_json::json!({"a":"x"})));
        // Escapes and characters cut in half.
        assert_eq!(closed(r#"{"t":"a\"#), Some(serde_json::json!({"t":"a"})));
        assert_eq!(closed(r#"{"t":"a\u00"#), Some(serde_json::json!({"t":"a"})));
        assert_eq!(
            closed(r#"{"t":"a\\u00"#),
            Some(serde_json::json!({"t":"a\\u00"}))
        );
        assert_eq!(
            closed(r#"{"t":"a\\\u00"#),
            Some(serde_json::json!({"t":"a\\"}))
        );
        let cut = "{\"t\":\"caf\u{e9}";
        let bytes = &cut.as_bytes()[..cut.len() - 1];
        let v: Value = serde_json::from_slice(&close_truncated(bytes).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"t": "caf"}));
        assert_eq!(closed(""), None);
        assert_eq!(closed("  "), None);
    }

    fn fed(shape: Shape, streamed: bool, pieces: &[&str]) -> bool {
        let mut e = Ending::new(shape, streamed, false);
        for p in pieces {
            e.feed(p.as_bytes());
        }
        e.ended()
    }

    #[test]
    fn a_stream_ends_with_its_last_event_however_it_is_split() {
        let chat = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
        assert!(!fed(&crate::protocol::chat::Chat, true, &[chat]));
        assert!(fed(
            &crate::protocol::chat::Chat,
            true,
            &[chat, "data: [DO", "NE]\n\n"]
        ));
        // Without a blank line after it, as the readers take it.
        assert!(fed(
            &crate::protocol::chat::Chat,
            true,
            &[chat, "data: [DONE]"]
        ));
        let stop =
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n";
        assert!(fed(&crate::protocol::chat::Chat, true, &[chat, stop]));
        let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n";
        assert!(!fed(&crate::protocol::messages::Messages, true, &[delta]));
        assert!(fed(
            &crate::protocol::messages::Messages,
            true,
            &[
                delta,
                "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
            ]
        ));
        // Named, but its data cut short: the reader would not take it.
        assert!(!fed(
            &crate::protocol::messages::Messages,
            true,
            &[delta, "event: message_stop\ndata: {\"ty"]
        ));
        assert!(fed(
            &crate::protocol::messages::Messages,
            true,
            &["event: error\ndata: {\"type\":\"error\",\"error\":{}}\n\n"]
        ));
        assert!(!fed(
            &crate::protocol::responses::Responses,
            true,
            &[
                "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\"}\n\n"
            ]
        ));
        assert!(fed(
            &crate::protocol::responses::Responses,
            true,
            &["event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n"]
        ));
    }

    #[test]
    fn a_json_body_ends_with_its_last_bracket_unless_framed() {
        assert!(!fed(
            &crate::protocol::chat::Chat,
            false,
            &["{\"a\": \"}\", \"b\": [1"]
        ));
        assert!(fed(
            &crate::protocol::chat::Chat,
            false,
            &["{\"a\": \"}\\\"\", ", "\"b\": [1]}\n"]
        ));
        assert!(!fed(&crate::protocol::chat::Chat, false, &[]));
        assert!(Ending::new(&crate::protocol::chat::Chat, false, true).ended());
    }
}
