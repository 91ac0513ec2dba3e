//! Passwords kept out of what `config show` prints: the value of any key
//! named `url` or ending in `_url` (`[store] url`, a provider's `base_url`)
//! has the password of its user part and any `password=` parameter
//! replaced by `***`.

use toml::{Table, Value};

/// Whether a key of this name holds a URL that may hold a password.
pub(crate) fn is_url_key(name: &str) -> bool {
    name == "url" || name.ends_with("_url")
}

/// `table` with the strings under URL keys masked, at any depth.
pub(crate) fn masked(table: &Table) -> Table {
    table
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) if is_url_key(k) => Value::String(mask_url(s)),
                Value::Table(t) => Value::Table(masked(t)),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// `url` with its passwords replaced by `***`: the user part's
/// (`scheme://user:***@host`) and `password=` parameters in the query.
pub fn mask_url(url: &str) -> String {
    let mut spans = Vec::new();
    if let Some(scheme_end) = url.find("://") {
        let rest = scheme_end + 3;
        let query = url[rest..].find(['?', '#']).map_or(url.len(), |i| rest + i);
        // The last `@` before the query ends the user part, even when an
        // unencoded `/` in the password hides it from a strict parser:
        // masking too much beats showing a password.
        if let Some(at) = url[rest..query].rfind('@').map(|i| rest + i)
            && let Some(colon) = url[rest..at].find(':').map(|i| rest + i)
        {
            spans.push(colon + 1..at);
        }
    }
    let mut from = 0;
    while let Some(i) = url[from..].find("password=").map(|i| from + i) {
        let start = i + "password=".len();
        let end = url[start..]
            .find(['&', '#', ' '])
            .map_or(url.len(), |j| start + j);
        // A parameter, not the tail of another word (`mypassword=`).
        let bounded = i == 0 || matches!(url.as_bytes()[i - 1], b'?' | b'&' | b' ');
        if bounded && end > start {
            spans.push(start..end);
        }
        from = end.max(start);
    }
    spans.sort_by_key(|s| s.start);
    let mut out = String::with_capacity(url.len());
    let mut at = 0;
    for span in spans {
        if span.start < at {
            continue;
        }
        out.push_str(&url[at..span.start]);
        out.push_str("***");
        at = span.end;
    }
    out.push_str(&url[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_passwords_and_nothing_else() {
        assert_eq!(
            mask_url("postgres://u:s3cret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(mask_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            mask_url("postgres://u:pa/ss@word@h/db?sslmode=disable&password=two"),
            "postgres://u:***@h/db?sslmode=disable&password=***"
        );
        assert_eq!(
            mask_url("https://api.example.com/v1"),
            "https://api.example.com/v1"
        );
        assert_eq!(mask_url("host=h password=x"), "host=h password=***");
        assert!(is_url_key("url"));
        assert!(is_url_key("base_url"));
        assert!(!is_url_key("urls_note"));
        let t: Table = toml::from_str(
            "[store]\nurl = \"postgres://u:pw@h/d\"\n[providers.p]\nbase_url = \"http://a:b@h\"\nkey_note = \"a:b@h\"\n",
        )
        .unwrap();
        let m = masked(&t);
        assert_eq!(m["store"]["url"].as_str(), Some("postgres://u:***@h/d"));
        assert_eq!(
            m["providers"]["p"]["base_url"].as_str(),
            Some("http://a:***@h")
        );
        assert_eq!(m["providers"]["p"]["key_note"].as_str(), Some("a:b@h"));
    }
}
