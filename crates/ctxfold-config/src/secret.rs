//! Passwords kept out of what `config show` prints: the value of any key
//! named `url` or ending in `_url` (`[store] url`, a provider's `base_url`)
//! has its passwords replaced by `***` ([`ctxfold_core::secret`] finds
//! them, as for every other place that prints a URL).

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

pub use ctxfold_core::secret::mask_url;

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
        assert_eq!(
            mask_url("host=h password='se cret' dbname=d"),
            "host=h password=*** dbname=d"
        );
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
