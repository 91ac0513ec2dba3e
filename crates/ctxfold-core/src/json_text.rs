//! [`RawJson`]: JSON ctxfold carries but does not interpret (tool-call
//! arguments, structured answers), kept as the text it was read as and
//! parsed only when something asks for its value.
//!
//! A log is mostly small records, and a parsed JSON value costs several
//! allocations and a map per object; the text costs one. Reading a log
//! therefore keeps the text, and the few callers that look inside
//! (the digest, stripping long arguments, exports) parse it then.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// JSON text, valid by construction, parsed on demand.
///
/// Two values are equal when they hold the same JSON, however it is
/// spelled (`{"a":1}` equals `{ "a": 1 }`), as two parsed values would be.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The JSON text, as it was read or written.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The parsed value. Parses the text each time: callers that look
    /// inside more than once keep the result.
    pub fn value(&self) -> Value {
        // The text was valid JSON when it was made, and a `Value` reads any
        // valid JSON; `Null` cannot be reached.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The text of `value`, written compactly.
    pub fn from_value(value: &Value) -> Self {
        // A `Value` always serializes, and its output is valid JSON.
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        RawJson::from_valid(text)
    }

    /// An empty object, `{}`.
    pub fn empty_object() -> Self {
        RawJson::from_valid("{}".to_owned())
    }

    /// Keep `raw` as it is. JSON text that spans lines is written compactly
    /// instead, so it can never break a JSONL line.
    pub fn from_raw(raw: &RawValue) -> Self {
        let text = raw.get();
        if text.contains(['\n', '\r']) {
            // Only whitespace between tokens can hold a raw line break:
            // inside strings JSON escapes them.
            match serde_json::from_str::<Value>(text) {
                Ok(v) => RawJson::from_value(&v),
                Err(_) => RawJson::default(),
            }
        } else {
            RawJson(raw.to_owned())
        }
    }

    /// Whether the value is a JSON string; the text then starts with `"`.
    pub fn is_string(&self) -> bool {
        self.text().starts_with('"')
    }

    fn from_valid(text: String) -> Self {
        // Only called with text serde_json wrote or accepted.
        match RawValue::from_string(text) {
            Ok(raw) => RawJson(raw),
            Err(_) => RawJson(Box::<RawValue>::default()),
        }
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        RawJson::from_value(&value)
    }
}

impl From<&Value> for RawJson {
    fn from(value: &Value) -> Self {
        RawJson::from_value(value)
    }
}

impl Default for RawJson {
    /// `null`.
    fn default() -> Self {
        RawJson(Box::<RawValue>::default())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.text() == other.text() || self.value() == other.value()
    }
}

impl PartialEq<Value> for RawJson {
    fn eq(&self, other: &Value) -> bool {
        self.value() == *other
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// The JSON text.
impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_when_the_json_is_the_same_however_it_is_spelled() {
        let raw: Box<RawValue> = serde_json::from_str(r#"{ "a": [1, 2], "b": "x" }"#).unwrap();
        let spaced = RawJson::from_raw(&raw);
        assert_eq!(spaced.text(), r#"{ "a": [1, 2], "b": "x" }"#);
        assert_eq!(spaced, RawJson::from(json!({"b": "x", "a": [1, 2]})));
        assert_ne!(spaced, RawJson::from(json!({"a": [1, 2]})));
        assert_eq!(spaced.value(), json!({"a": [1, 2], "b": "x"}));
    }

    #[test]
    fn text_spanning_lines_is_written_compactly() {
        let raw: Box<RawValue> = serde_json::from_str("{\n  \"a\": \"x\\ny\"\n}").unwrap();
        let j = RawJson::from_raw(&raw);
        assert_eq!(j.text(), r#"{"a":"x\ny"}"#);
        assert!(!j.text().contains('\n'));
    }

    #[test]
    fn serializes_as_its_text() {
        let raw: Box<RawValue> = serde_json::from_str(r#"{"n":1.50}"#).unwrap();
        let j = RawJson::from_raw(&raw);
        // The text is kept as written: `1.50` stays, where a parsed value
        // would write `1.5`.
        assert_eq!(serde_json::to_string(&j).unwrap(), r#"{"n":1.50}"#);
        assert!(RawJson::from(json!("s")).is_string());
        assert!(!RawJson::empty_object().is_string());
    }
}
