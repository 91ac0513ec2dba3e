//! Telling a transcript's format from what it holds (`auto`): a folder
//! by its events file, a JSON file by its shape, JSON lines by their first
//! line; what was read on the way is handed to import, so nothing is read
//! or parsed twice.

use std::path::Path;

use ctxfold_wire::gemini::key as gemini_key;
use serde::Deserialize;
use serde_json::Value;

use crate::{
    BOM, Format, FormatError, chat, claude_code, codex, optional_file, read_bytes, utf8_text, wire,
};

/// What telling a file's format found, with what was read on the way so
/// import need not read or parse it again.
pub(crate) enum Sniffed {
    /// Told from the path alone.
    Format(Format),
    /// A ctxfold JSONL file, read (as bytes).
    Jsonl(Vec<u8>),
    /// A JSON file, parsed.
    Json(Format, Value),
    /// An agent's session file (JSONL), read (as bytes).
    Session(Format, Vec<u8>),
}

/// Tell the format of the transcript at `path` from what it holds.
pub fn detect(path: &Path) -> Result<Format, FormatError> {
    Ok(match sniff(path)? {
        Sniffed::Format(f) | Sniffed::Json(f, _) => f,
        Sniffed::Jsonl(_) => Format::Ctxfold,
        Sniffed::Session(f, _) => f,
    })
}

pub(crate) fn sniff(path: &Path) -> Result<Sniffed, FormatError> {
    if path.is_dir() {
        // A folder that cannot be listed, or whose events file cannot be
        // read, says so rather than that its format is unknown.
        std::fs::read_dir(path).map_err(|e| FormatError::io(path, e))?;
        if optional_file(&path.join("events.json"))? {
            return Ok(Sniffed::Format(Format::Jp));
        }
        if optional_file(&path.join("events.jsonl"))? {
            return Ok(Sniffed::Format(Format::Ctxfold));
        }
        return Err(FormatError::Undetected {
            path: path.to_owned(),
            detail: "a folder with neither events.json (JP) nor events.jsonl (ctxfold)".into(),
        });
    }
    if !path.exists() {
        return Err(FormatError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        ));
    }
    if path.file_name().is_some_and(|n| n == "events.json") {
        return Ok(Sniffed::Format(Format::Jp));
    }
    let mut bytes = read_bytes(path)?;
    // An agent's session keeps its mark (written back by an export); the
    // other formats are read without it.
    let bom = if bytes.starts_with(BOM) { BOM.len() } else { 0 };
    let start = bytes[bom..]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(bytes.len(), |p| p + bom);
    if start == bytes.len() {
        return Err(FormatError::Undetected {
            path: path.to_owned(),
            detail: "the file is empty".into(),
        });
    }
    // JSONL: the first line alone is an object with `seq` and `type`. It is
    // read as bytes: a later line that is not UTF-8 is one bad line of the
    // log, not a reason to refuse the file.
    let first = bytes[start..].split(|&b| b == b'\n').next().unwrap_or(&[]);
    let first = serde_json::from_slice::<Value>(first).ok();
    if let Some(Value::Object(o)) = &first {
        if o.contains_key("seq") && o.contains_key("type") {
            bytes.drain(..bom);
            return Ok(Sniffed::Jsonl(bytes));
        }
        if codex::looks_like(o) {
            return Ok(Sniffed::Session(Format::Codex, bytes));
        }
        if claude_code::looks_like(o) {
            return Ok(Sniffed::Session(Format::ClaudeCode, bytes));
        }
    }
    let text = utf8_text(path, bytes)?;
    let value: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        // A first line that is JSON on its own, and a file that is not:
        // JSONL, of a shape none of the formats has.
        Err(_) if first.is_some() => {
            return Err(FormatError::Undetected {
                path: path.to_owned(),
                detail: unknown_jsonl(first.as_ref()),
            });
        }
        Err(e) => return Err(FormatError::json(path, &e)),
    };
    match detect_value(&value) {
        Some(f) => Ok(Sniffed::Json(f, value)),
        None => Err(FormatError::Undetected {
            path: path.to_owned(),
            detail: "JSON that is neither OpenAI nor Anthropic messages, Gemini contents nor a JP event list".into(),
        }),
    }
}

/// What the first line of a JSONL file of unknown shape holds.
fn unknown_jsonl(first: Option<&Value>) -> String {
    match first {
        Some(Value::Object(o)) => {
            let keys: Vec<&str> = o.keys().map(String::as_str).take(12).collect();
            let more = if o.len() > keys.len() { ", …" } else { "" };
            format!(
                "JSON lines whose first line has the keys {}{more}",
                keys.join(", ")
            )
        }
        Some(v) => format!(
            "JSON lines whose first line is {}",
            ctxfold_core::json_text::describe(v)
        ),
        None => "JSON lines".into(),
    }
}

/// What detection reads of a request body besides its messages.
#[derive(Deserialize)]
struct SniffedBody<'a> {
    #[serde(default, borrow)]
    system: chat::Field<'a>,
}

/// What detection reads of a message: the keys that tell the formats
/// apart, and the types of its content blocks.
#[derive(Default, Deserialize)]
#[serde(default)]
struct SniffedMessage<'a> {
    #[serde(rename = "type", borrow)]
    kind: chat::Field<'a>,
    #[serde(borrow)]
    timestamp: chat::Field<'a>,
    #[serde(borrow)]
    role: chat::Field<'a>,
    #[serde(borrow)]
    tool_calls: chat::Field<'a>,
    #[serde(borrow)]
    reasoning_content: chat::Field<'a>,
    #[serde(borrow)]
    content: Option<chat::Loose<Vec<chat::Loose<SniffedBlock<'a>>>>>,
}

/// A content block's type.
#[derive(Deserialize)]
struct SniffedBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: chat::Field<'a>,
}

/// Tell the format of a parsed JSON transcript.
fn detect_value(value: &Value) -> Option<Format> {
    let messages = match value {
        Value::Array(a) => a,
        Value::Object(o) if o.contains_key(gemini_key::CONTENTS) => return Some(Format::Gemini),
        // The messages themselves, not a copy: the key, named once, by
        // `Wire`.
        Value::Object(o) => match o.get(wire::Wire::OpenAi.messages_key()) {
            Some(Value::Array(a)) => {
                if SniffedBody::deserialize(o).is_ok_and(|b| b.system.present()) {
                    return Some(Format::Anthropic);
                }
                a
            }
            _ => return None,
        },
        _ => return None,
    };
    // An empty transcript is valid; read it as the common case.
    if messages.is_empty() {
        return Some(Format::Openai);
    }
    let mut saw_message = false;
    for m in messages {
        let Value::Object(m) = m else { return None };
        let m = SniffedMessage::deserialize(m).unwrap_or_default();
        if m.kind.present() && m.timestamp.present() && !m.role.present() {
            return Some(Format::Jp);
        }
        match m.role {
            // Anthropic has `system` messages too (Claude Code sends one
            // inside `messages`): not a sign either way.
            chat::Field::Str("developer" | "tool") => return Some(Format::Openai),
            chat::Field::Str(_) => saw_message = true,
            _ => return None,
        }
        if m.tool_calls.present() || m.reasoning_content.present() {
            return Some(Format::Openai);
        }
        if let Some(chat::Loose::Is(blocks)) = m.content {
            for b in blocks {
                let chat::Loose::Is(b) = b else { continue };
                match b.kind.str() {
                    Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking") => {
                        return Some(Format::Anthropic);
                    }
                    Some("image_url" | "input_audio") => return Some(Format::Openai),
                    _ => {}
                }
            }
        }
    }
    // Plain user/assistant text is valid in both; OpenAI is the common case.
    saw_message.then_some(Format::Openai)
}
