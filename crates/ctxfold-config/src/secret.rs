//! Secrets kept out of what `config show` prints: the value of any key
//! named `url` or ending in `_url` (`[store] url`, a provider's `base_url`)
//! has its passwords replaced by `***` ([`ctxfold_core::secret`] finds
//! them, as for every other place that prints a URL); a key that names a
//! secret (`[proxy] token`, any `token`, `password`, `secret`, `api_key`
//! or a key ending in one of them) and a header that carries credentials
//! (`Authorization`, `X-Api-Key`, `Cookie`, …, under `headers`) show
//! `***` whole.

use toml::{Table, Value};

/// Whether a key of this name holds a URL that may hold a password.
pub(crate) fn is_url_key(name: &str) -> bool {
    name == "url" || name.ends_with("_url")
}

/// Whether a key of this name holds a secret whole (a token, a password).
pub(crate) fn is_secret_key(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["token", "password", "secret", "api_key", "apikey"]
        .iter()
        .any(|s| name == *s || name.ends_with(&format!("_{s}")))
}

/// Whether a header of this name carries credentials.
fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "x-api-key" | "api-key"
    ) || name.contains("token")
        || name.contains("secret")
}

/// `table` with the strings under URL keys masked and those under secret
/// keys replaced, at any depth.
pub(crate) fn masked(table: &Table) -> Table {
    masked_in(table, false)
}

fn masked_in(table: &Table, headers: bool) -> Table {
    table
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(_) if is_secret_key(k) || (headers && is_secret_header(k)) => {
                    Value::String("***".into())
                }
                Value::String(s) if is_url_key(k) => Value::String(mask_url(s)),
                Value::Table(t) => Value::Table(masked_in(t, k == "headers")),
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

    /// Tokens, passwords and credential headers show `***`; the names of
    /// variables that hold a key (`api_key_env`) and other headers show.
    #[test]
    fn secret_keys_and_credential_headers_are_replaced_whole() {
        let t: Table = toml::from_str(
            "[proxy]\ntoken = \"s3cret-token\"\nwindow = 1000\n[providers.p]\napi_key_env = \"P_KEY\"\n[providers.p.headers]\nAuthorization = \"Bearer sk-1\"\nx-api-key = \"sk-2\"\nX-Title = \"ctxfold\"\n",
        )
        .unwrap();
        let m = masked(&t);
        assert_eq!(m["proxy"]["token"].as_str(), Some("***"));
        assert_eq!(m["proxy"]["window"].as_integer(), Some(1000));
        assert_eq!(m["providers"]["p"]["api_key_env"].as_str(), Some("P_KEY"));
        let h = &m["providers"]["p"]["headers"];
        assert_eq!(h["Authorization"].as_str(), Some("***"));
        assert_eq!(h["x-api-key"].as_str(), Some("***"));
        assert_eq!(h["X-Title"].as_str(), Some("ctxfold"));
    }
}
