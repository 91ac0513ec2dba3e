//! [`JsonText`]: JSON ctxfold carries but does not interpret (tool-call
//! arguments, structured answers), held as its compact text and parsed
//! only when something asks for its value.
//!
//! A log is mostly small records, and a parsed JSON value costs several
//! allocations and a map per object; the text costs one. Reading a log
//! therefore keeps the text, and the few callers that look inside (the
//! digest, stripping long arguments, exports) parse it then. The text is
//! always what serde_json writes for the value (compact, its own escapes
//! and number spelling), so it never breaks a JSONL line, counts the same
//! tokens however the input was spelled, and always parses back.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The compact JSON text of a value, parsed on demand.
///
/// Two are equal when they hold the same JSON, as two parsed values would
/// be (`{"a":1,"b":2}` equals `{"b":2,"a":1}`).
#[derive(Clone)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// The JSON text, compact.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The parsed value. Parses the text each time: callers that look
    /// inside more than once keep the result.
    pub fn value(&self) -> Value {
        // The text is what serde_json wrote for a value, which it always
        // reads back.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// The text of `value`.
    pub fn from_value(value: &Value) -> Self {
        // A `Value` always serializes, and its output is valid JSON.
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        JsonText::from_valid(text)
    }

    /// An empty object, `{}`.
    pub fn empty_object() -> Self {
        JsonText::from_valid("{}".to_owned())
    }

    /// The value `text` holds, or `None` when it is not JSON a `Value`
    /// reads (a lone surrogate escape, a number out of range): such text
    /// is refused as a parsed value would refuse it.
    pub fn parse(text: &str) -> Option<Self> {
        // The plain check assumes valid JSON; checking that allocates
        // nothing.
        if is_plain_compact(text) && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            return Some(JsonText::from_valid(text.to_owned()));
        }
        let value: Value = serde_json::from_str(text).ok()?;
        let compact = serde_json::to_string(&value).ok()?;
        // Most text is already compact: keep one copy either way.
        Some(JsonText::from_valid(if compact == text {
            text.to_owned()
        } else {
            compact
        }))
    }

    /// Whether the value is a JSON string; the text then starts with `"`.
    pub fn is_string(&self) -> bool {
        self.text().starts_with('"')
    }

    fn from_valid(text: String) -> Self {
        // Only called with text serde_json wrote.
        match RawValue::from_string(text) {
            Ok(raw) => JsonText(raw),
            Err(_) => JsonText(Box::<RawValue>::default()),
        }
    }
}

/// Whether `text`, valid JSON, is surely what serde_json writes for its
/// value, without parsing it into one: no whitespace between tokens, no
/// escapes, no key twice in an object, and numbers only plain integers
/// short enough to be read exactly. Most tool arguments are; anything
/// else is checked by parsing.
fn is_plain_compact(text: &str) -> bool {
    // Bounded, so that the check allocates nothing: deeper or wider text
    // is checked by parsing.
    const DEPTH: usize = 16;
    const KEYS: usize = 32;
    let b = text.as_bytes();
    // The keys of the open objects, and where each open container's
    // start in it (`None` for an array).
    let mut keys: [&[u8]; KEYS] = [&[]; KEYS];
    let mut n_keys = 0;
    let mut open: [Option<usize>; DEPTH] = [None; DEPTH];
    let mut depth = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c @ (b'{' | b'[') => {
                if depth == DEPTH {
                    return false;
                }
                open[depth] = (c == b'{').then_some(n_keys);
                depth += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if let Some(start) = open[depth] {
                    n_keys = start;
                }
            }
            b'"' => {
                let start = i + 1;
                let Some(len) = b[start..].iter().position(|&c| c == b'"' || c == b'\\') else {
                    return false;
                };
                let end = start + len;
                if b[end] == b'\\' {
                    return false;
                }
                if b.get(end + 1) == Some(&b':') {
                    let Some(Some(first)) = depth.checked_sub(1).map(|d| open[d]) else {
                        return false;
                    };
                    let key = &b[start..end];
                    if n_keys == KEYS || keys[first..n_keys].contains(&key) {
                        return false;
                    }
                    keys[n_keys] = key;
                    n_keys += 1;
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let len = b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(b.len() - i);
                let number = &b[i..i + len];
                let digits = number.strip_prefix(b"-").unwrap_or(number);
                if len > 15
                    || !digits.iter().all(u8::is_ascii_digit)
                    || (digits.first() == Some(&b'0') && number.len() > 1)
                {
                    return false;
                }
                i += len - 1;
            }
            b',' | b':' | b't' | b'r' | b'u' | b'e' | b'f' | b'a' | b'l' | b's' | b'n' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

impl From<Value> for JsonText {
    fn from(value: Value) -> Self {
        JsonText::from_value(&value)
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        JsonText::from_value(value)
    }
}

impl Default for JsonText {
    /// `null`.
    fn default() -> Self {
        JsonText(Box::<RawValue>::default())
    }
}

impl PartialEq for JsonText {
    fn eq(&self, other: &JsonText) -> bool {
        self.text() == other.text() || self.value() == other.value()
    }
}

impl PartialEq<Value> for JsonText {
    fn eq(&self, other: &Value) -> bool {
        self.value() == *other
    }
}

impl fmt::Debug for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// The JSON text.
impl fmt::Display for JsonText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// What a JSON value is, in words for an error message ("a string",
/// "an array", …): the one naming every crate's messages use.
pub fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn held_compact_and_equal_when_the_json_is_the_same() {
        let spaced = JsonText::parse(r#"{ "a": [1, 2], "b": "\u00e9" }"#).unwrap();
        assert_eq!(spaced.text(), r#"{"a":[1,2],"b":"é"}"#);
        assert_eq!(spaced, JsonText::from(json!({"b": "é", "a": [1, 2]})));
        assert_ne!(spaced, JsonText::from(json!({"a": [1, 2]})));
        assert_eq!(spaced.value(), json!({"a": [1, 2], "b": "é"}));
        let lines = JsonText::parse("{\n  \"a\": \"x\\ny\"\n}").unwrap();
        assert_eq!(lines.text(), r#"{"a":"x\ny"}"#);
    }

    #[test]
    fn what_a_parsed_value_refuses_is_refused() {
        for bad in [r#"{"x":"\ud800"}"#, r#"{"x":1e400}"#, "{", ""] {
            assert!(JsonText::parse(bad).is_none(), "{bad}");
        }
    }

    /// JSON values of the shapes tool arguments have.
    fn values() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            // Fractions serde_json reads back exactly (it does not promise
            // that of every float).
            any::<i32>().prop_map(|n| Value::from(f64::from(n) / 8.0)),
            "[a-z \"\\\\é\n/]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::vec(("[a-c]{1,2}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// `text` as serde_json writes its value.
    fn canonical(text: &str) -> Option<String> {
        serde_json::from_str::<Value>(text)
            .ok()
            .map(|v| serde_json::to_string(&v).unwrap())
    }

    proptest::proptest! {
        /// What the plain check takes is exactly what parsing writes,
        /// whatever the spelling.
        #[test]
        fn the_plain_check_takes_only_compact_text(
            value in values(),
            text in r#"[\[\]{}",:0-9a-z\- .\\eE]{0,24}"#,
        ) {
            let compact = serde_json::to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            let dup = compact.replacen("{\"", "{\"a\":1,\"", 1).replacen("{\"", "{\"a\":1,\"", 1);
            for t in [&compact, &pretty, &dup, &text] {
                if serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok() && is_plain_compact(t) {
                    proptest::prop_assert_eq!(canonical(t), Some(t.clone()));
                }
            }
            let parsed = JsonText::parse(&pretty).unwrap();
            proptest::prop_assert_eq!(parsed.text(), compact.as_str());
            // Any text at all: taken exactly when a parsed value takes it.
            proptest::prop_assert_eq!(
                JsonText::parse(&text).map(|j| j.value()),
                serde_json::from_str::<Value>(&text).ok()
            );
        }
    }

    #[test]
    fn only_plain_compact_text_skips_parsing() {
        for plain in [
            r#"{"path":"src/a.rs","n":[1,-2,true,null]}"#,
            "[]",
            r#""é""#,
            "0",
            "-7",
            r#"{"a":{"b":1},"b":{"b":2}}"#,
        ] {
            assert!(is_plain_compact(plain), "{plain}");
        }
        for other in [
            r#"{"a":1,"a":2}"#,
            r#"{ "a":1}"#,
            r#"{"a":"\n"}"#,
            r#"{"a":1.5}"#,
            "1e3",
            "-0",
            "1234567890123456",
        ] {
            assert!(!is_plain_compact(other), "{other}");
        }
        assert_eq!(
            JsonText::parse(r#"{"a":1,"a":2}"#).unwrap().text(),
            r#"{"a":2}"#
        );
    }

    #[test]
    fn serializes_as_its_text() {
        let j = JsonText::parse(r#"{"n":1.50,"n2":2}"#).unwrap();
        assert_eq!(serde_json::to_string(&j).unwrap(), r#"{"n":1.5,"n2":2}"#);
        assert!(JsonText::from(json!("s")).is_string());
        assert!(!JsonText::empty_object().is_string());
    }
}
