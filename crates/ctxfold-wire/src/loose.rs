//! Lenient readers for the fields of a typed view: a request's field of
//! an unexpected type reads as absent, as a key-by-key reader took it,
//! rather than failing the whole view.

use serde::{Deserialize, Deserializer};

/// A text, borrowed from what is read; `None` for any other value.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    /// A text, or anything else.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Loose<'a> {
        Text(&'a str),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Option::<Loose<'de>>::deserialize(d)? {
        Some(Loose::Text(t)) => Some(t),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize)]
    struct View<'a> {
        #[serde(borrow, default, deserialize_with = "super::text")]
        name: Option<&'a str>,
    }

    #[test]
    fn a_text_is_read_and_anything_else_is_none() {
        let v = json!({"name": "a"});
        assert_eq!(View::deserialize(&v).unwrap().name, Some("a"));
        for other in [json!({"name": 3}), json!({"name": null}), json!({})] {
            assert_eq!(View::deserialize(&other).unwrap().name, None, "{other}");
        }
    }
}
