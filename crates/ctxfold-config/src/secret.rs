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

    /// How a URL is masked is the core's (`ctxfold_core::secret`, tested
    /// there); here: which keys are masked, at any depth, and no others.
    #[test]
    fn url_keys_are_masked_at_any_depth_and_no_others() {
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
