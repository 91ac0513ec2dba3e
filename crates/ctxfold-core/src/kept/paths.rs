//! The files a tool call acted on: the strings of its arguments under a
//! key naming a path, read straight from the arguments' JSON text (a
//! parsed value costs a map per object, and the retention report reads
//! every call of a long log, some twice).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::json_text::JsonText;
use crate::projection::KEEP_ARGUMENT_CHARS;

/// Keys whose string values are paths a tool acted on.
pub(super) const PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "file_path",
    "filepath",
    "dir",
    "directory",
    "prefixes",
    "file_diffs",
    "target_file",
];

/// The paths `arguments` names, in order, each with whether a stripped
/// call still shows it: one of the strings it was read from is at most
/// [`KEEP_ARGUMENT_CHARS`] characters, which stripping keeps as they are
/// (the path is that string trimmed, and holds no whitespace).
/// Arguments that are not JSON name none.
pub(super) fn call_paths(arguments: &JsonText) -> BTreeMap<Cow<'_, str>, bool> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_str(arguments.text());
    if (Paths {
        under: false,
        out: &mut found,
    })
    .deserialize(&mut de)
    .is_err()
    {
        return BTreeMap::new();
    }
    let mut out: BTreeMap<Cow<'_, str>, bool> = BTreeMap::new();
    for (s, short) in found {
        let p = match s {
            Cow::Borrowed(b) => Cow::Borrowed(b.trim()),
            Cow::Owned(o) if o.trim().len() == o.len() => Cow::Owned(o),
            Cow::Owned(o) => Cow::Owned(o.trim().to_owned()),
        };
        // `.` and `..` name no file; a path is one word.
        let only_dots = p.chars().all(|c| c == '.' || c == '/');
        if !only_dots && p.len() <= 300 && !p.contains(char::is_whitespace) {
            *out.entry(p).or_default() |= short;
        }
    }
    out
}

/// Collects the strings under a path key, with whether each is short
/// enough for a stripped call to keep.
struct Paths<'o, 'de> {
    under: bool,
    out: &'o mut Vec<(Cow<'de, str>, bool)>,
}

impl<'o, 'de> Paths<'o, 'de> {
    fn at(&mut self, under: bool) -> Paths<'_, 'de> {
        Paths {
            under,
            out: self.out,
        }
    }

    fn push(self, s: Cow<'de, str>) {
        if self.under {
            let short = !crate::text::more_chars_than(&s, KEEP_ARGUMENT_CHARS);
            self.out.push((s, short));
        }
    }
}

impl<'de> DeserializeSeed<'de> for Paths<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Paths<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.push(Cow::Borrowed(v));
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.push(Cow::Owned(v.to_owned()));
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let under = self.under;
        while seq.next_element_seed(self.at(under))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key_seed(Key)? {
            let under = self.under || PATH_KEYS.iter().any(|k| k.eq_ignore_ascii_case(&key));
            map.next_value_seed(self.at(under))?;
        }
        Ok(())
    }
}

/// An object's key, borrowed when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_path_keys_at_any_depth_with_whether_a_strip_keeps_them() {
        let long = format!("src/{}.rs", "x".repeat(KEEP_ARGUMENT_CHARS));
        let args = JsonText::from(serde_json::json!({
            "PATH": " src/lib.rs ",
            "edits": [{"file_path": "src/a\u{e9}.rs", "text": "src/not_a_path.rs"}],
            "files": [long, "..", "two words", "src/lib.rs"],
            "command": "cat src/main.rs",
        }));
        let found: BTreeMap<String, bool> = (call_paths(&args).into_iter())
            .map(|(p, short)| (p.into_owned(), short))
            .collect();
        let expected: BTreeMap<String, bool> = [
            ("src/lib.rs".to_owned(), true),
            ("src/a\u{e9}.rs".to_owned(), true),
            (long.clone(), false),
        ]
        .into_iter()
        .collect();
        assert_eq!(found, expected);
        // Escapes in keys and values are read as the JSON means them.
        let escaped = JsonText::parse(r#"{"p\u0061th": "src\/b.rs"}"#).unwrap();
        let found = call_paths(&escaped).into_iter().collect::<Vec<_>>();
        assert_eq!(found, [(Cow::Borrowed("src/b.rs"), true)]);
        // One read as it is written is borrowed, not copied.
        assert!(matches!(
            call_paths(&JsonText::from(serde_json::json!({"path": " src/c.rs"})))
                .into_keys()
                .next(),
            Some(Cow::Borrowed("src/c.rs"))
        ));
    }
}
