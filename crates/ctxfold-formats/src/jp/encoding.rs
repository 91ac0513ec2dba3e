//! JP's base64 strings: decoded on import, each non-standard encoding
//! noted in a hint (by JSON pointer) so export writes the same bytes back.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use ctxfold_core::Object;
use serde_json::Value;

/// How a base64 string was written, when not standard and padded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Standard,
    UrlSafe,
    NoPad,
    UrlSafeNoPad,
    /// Not base64: the value is kept as it is.
    Raw,
}

impl Encoding {
    fn name(self) -> &'static str {
        match self {
            Encoding::Standard => "standard",
            Encoding::UrlSafe => "url",
            Encoding::NoPad => "nopad",
            Encoding::UrlSafeNoPad => "url_nopad",
            Encoding::Raw => "raw",
        }
    }
    fn from_name(s: &str) -> Encoding {
        match s {
            "url" => Encoding::UrlSafe,
            "nopad" => Encoding::NoPad,
            "url_nopad" => Encoding::UrlSafeNoPad,
            "raw" => Encoding::Raw,
            _ => Encoding::Standard,
        }
    }
    fn encode(self, text: &str) -> String {
        match self {
            Encoding::Standard => STANDARD.encode(text),
            Encoding::UrlSafe => URL_SAFE.encode(text),
            Encoding::NoPad => STANDARD_NO_PAD.encode(text),
            Encoding::UrlSafeNoPad => URL_SAFE_NO_PAD.encode(text),
            Encoding::Raw => text.to_owned(),
        }
    }
}

/// Decode one JP base64 string: the text and how it was written.
fn decode(s: &str) -> (String, Encoding) {
    let tries: [(&base64::engine::GeneralPurpose, Encoding); 4] = [
        (&STANDARD, Encoding::Standard),
        (&URL_SAFE, Encoding::UrlSafe),
        (&STANDARD_NO_PAD, Encoding::NoPad),
        (&URL_SAFE_NO_PAD, Encoding::UrlSafeNoPad),
    ];
    for (engine, enc) in tries {
        if let Ok(bytes) = engine.decode(s)
            && let Ok(text) = String::from_utf8(bytes)
            && engine.encode(&text) == s
        {
            return (text, enc);
        }
    }
    (s.to_owned(), Encoding::Raw)
}

fn pointer_push(base: &str, key: &str) -> String {
    format!("{base}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Decode every string in `v` in place, noting non-standard encodings.
pub(super) fn decode_tree(v: &mut Value, pointer: &str, hints: &mut Object) {
    each_string(v, pointer, &mut |s, at| {
        let (text, enc) = decode(s);
        if enc != Encoding::Standard {
            hints.insert(at.to_owned(), Value::String(enc.name().into()));
        }
        *s = text;
    });
}

/// Encode every string in `v` in place, as the hints say.
pub(super) fn encode_tree(v: &mut Value, pointer: &str, hints: Option<&Object>) {
    each_string(v, pointer, &mut |s, at| {
        let enc = hints
            .and_then(|h| h.get(at))
            .and_then(Value::as_str)
            .map_or(Encoding::Standard, Encoding::from_name);
        *s = enc.encode(s);
    });
}

/// Call `f` with every string in `v` and its JSON pointer (`pointer`
/// being `v`'s): the hints name a field by its pointer.
fn each_string(v: &mut Value, pointer: &str, f: &mut dyn FnMut(&mut String, &str)) {
    match v {
        Value::String(s) => f(s, pointer),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                each_string(item, &format!("{pointer}/{i}"), f);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                each_string(item, &pointer_push(pointer, k), f);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_accepts_both_alphabets_and_keeps_what_is_not_base64() {
        assert_eq!(decode("aGVsbG8=").0, "hello");
        assert!(decode("aGVsbG8=").1 == Encoding::Standard);
        // "??>" encodes to "Pz8+" (standard) and "Pz8-" (URL-safe).
        let (text, enc) = decode("Pz8-");
        assert_eq!(text, "??>");
        assert!(enc == Encoding::UrlSafe);
        let (text, enc) = decode("not base64!");
        assert_eq!(text, "not base64!");
        assert!(enc == Encoding::Raw);
        for enc in [
            Encoding::UrlSafe,
            Encoding::NoPad,
            Encoding::UrlSafeNoPad,
            Encoding::Raw,
        ] {
            let s = enc.encode("??>x");
            assert_eq!(
                decode(&s).0,
                if enc == Encoding::Raw {
                    s.clone()
                } else {
                    "??>x".into()
                }
            );
        }
    }
}
