//! Store URLs: the form, parsing with messages that never show the
//! password, and the masker re-exported for the store's callers.

use std::str::FromStr;

use ::postgres::Config;
use ::postgres::config::SslMode;

use crate::StoreError;

/// The form of a PostgreSQL store URL, for messages and docs.
pub const URL_FORM: &str = "postgres://user[:password]@host[:port]/database";

/// Parse a store URL, with messages that say what was expected and never
/// show the password.
pub(super) fn parse_url(url: &str, masked: &str) -> Result<Config, StoreError> {
    let bad = |detail: String| StoreError::BadUrl {
        url: masked.to_owned(),
        detail,
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(bad(
            "it does not start with postgres:// or postgresql://".to_owned()
        ));
    }
    let config = Config::from_str(url).map_err(|e| {
        let mut text = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        bad(scrub(&text, url))
    })?;
    if config.get_user().is_none_or(str::is_empty) {
        return Err(bad("it names no user (postgres://USER@…)".to_owned()));
    }
    if config.get_hosts().is_empty() {
        return Err(bad("it names no host (…@HOST…)".to_owned()));
    }
    if config.get_dbname().is_none_or(str::is_empty) {
        return Err(bad(
            "it names no database (…/DATABASE at the end)".to_owned()
        ));
    }
    if config.get_ssl_mode() == SslMode::Require {
        return Err(bad(
            "sslmode=require, but this ctxfold connects without TLS (use sslmode=disable or prefer, or a TLS-terminating proxy)".to_owned(),
        ));
    }
    Ok(config)
}

/// `url` with its password replaced by `***` (the one masker of
/// [`ctxfold_core::secret`], re-exported for the store's callers).
pub use ctxfold_core::secret::mask_url;
use ctxfold_core::secret::scrub;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_password_of_a_url() {
        assert_eq!(
            mask_url("postgres://ctxfold:ctxfold-test@127.0.0.1:5432/ctxfold"),
            "postgres://ctxfold:***@127.0.0.1:5432/ctxfold"
        );
        assert_eq!(
            mask_url("postgresql://u@h/db"),
            "postgresql://u@h/db",
            "no password: unchanged"
        );
        assert_eq!(
            mask_url("postgres://u:p%40ss@h/db?sslmode=disable&password=two#x"),
            "postgres://u:***@h/db?sslmode=disable&password=***#x"
        );
        assert_eq!(
            mask_url("postgres://u:pa/ss@word@h:1/db"),
            "postgres://u:***@h:1/db",
            "an unencoded / or @ in the password is masked too"
        );
        assert_eq!(
            mask_url("host=h user=u password='a b\\'c' dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            mask_url("host=h password = s3cret"),
            "host=h password = ***"
        );
        assert_eq!(mask_url(""), "");
        assert_eq!(mask_url("postgres://"), "postgres://");
    }

    #[test]
    fn bad_urls_say_what_was_expected_and_hide_the_password() {
        for (url, what) in [
            ("mysql://u:hunter2secret@h/db", "does not start with"),
            ("postgres://u:hunter2secret@h:notaport/db", "port"),
            ("postgres://:hunter2secret@h/db", "no user"),
            ("postgres://u:hunter2secret@h", "no database"),
            (
                "postgres://u:hunter2secret@h/db?sslmode=require",
                "without TLS",
            ),
        ] {
            let e = parse_url(url, &mask_url(url)).expect_err(url);
            let text = e.to_string();
            assert!(text.contains(what), "{url}: {text}");
            assert!(text.contains(URL_FORM), "{url}: {text}");
            assert!(!text.contains("hunter2secret"), "{url}: {text}");
        }
    }
}
