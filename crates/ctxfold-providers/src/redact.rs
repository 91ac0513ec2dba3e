//! Keeping API keys out of what ctxfold prints or stores.
//!
//! An upstream (a proxy, a misconfigured gateway, a debugging server) may
//! echo the request's headers, `Authorization: Bearer KEY` included, in an
//! error body or a stream's error event, and that text becomes an error
//! message that is printed, or recorded in a `compaction_finished` record.
//! [`Provider`](crate::Provider) therefore replaces every secret it sends
//! (the key, and the values of configured headers whose name says they
//! carry a credential) with [`REDACTED`] in every error it returns and in
//! the summaries its summarizer hands back.
//!
//! Messages quote long bodies cut at a fixed length and end the cut with
//! `…`: a key that straddles the cut is only partly there, so the part of
//! a key that ends just before a `…` is redacted too.

use std::io;

use crate::error::ProviderError;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest secret redacted: replacing a one- or two-letter "key" (a local
/// server that wants any value) everywhere would garble every message.
const MIN_SECRET_CHARS: usize = 4;

/// The secrets a provider sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    /// Secrets `values`, the longest first (so a secret that holds another
    /// is replaced whole). Short and repeated values are dropped.
    pub(crate) fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut v: Vec<String> = values
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| s.chars().count() >= MIN_SECRET_CHARS)
            .collect();
        v.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        v.dedup();
        Secrets(v)
    }

    /// `text` with every secret replaced by [`REDACTED`], and the start of
    /// a secret that runs into a `…` cut too.
    pub(crate) fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.0 {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
            out = redact_cut(&out, s);
        }
        out
    }

    /// `e` with every secret in its text redacted.
    pub(crate) fn error(&self, mut e: ProviderError) -> ProviderError {
        if self.0.is_empty() {
            return e;
        }
        let t = |s: &mut String| *s = self.text(s);
        use ProviderError as E;
        // Every variant named: a new one must say which of its fields hold
        // text that may quote a key.
        match &mut e {
            E::UnknownProvider { name, .. } | E::BadModelName { name, .. } => t(name),
            E::Config { message, .. }
            | E::Auth { message, .. }
            | E::ContextOverflow { message }
            | E::RateLimited { message, .. }
            | E::Server { message, .. }
            | E::Rejected { message, .. }
            | E::Malformed { detail: message } => t(message),
            E::UnknownModel { model, message } => {
                t(model);
                t(message);
            }
            E::Unreachable { url, source } => {
                t(url);
                *source = io::Error::new(source.kind(), self.text(&source.to_string()));
            }
            E::Timeout { url, .. } => t(url),
            E::MissingKey { .. } => {}
        }
        e
    }
}

/// `text` with the start of `secret` (at least [`MIN_SECRET_CHARS`]) that
/// ends right before a `…` replaced.
fn redact_cut(text: &str, secret: &str) -> String {
    if !text.contains('…') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('…') {
        let before = &rest[..i];
        // The longest proper prefix of the secret that `before` ends with.
        let cut = secret
            .char_indices()
            .map(|(j, _)| j)
            .skip(MIN_SECRET_CHARS)
            .filter(|&j| before.ends_with(&secret[..j]))
            .max();
        match cut {
            Some(j) => {
                out.push_str(&before[..before.len() - j]);
                out.push_str(REDACTED);
            }
            None => out.push_str(before),
        }
        out.push('…');
        rest = &rest[i + '…'.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// Whether a header named `name` carries a credential.
pub(crate) fn is_credential_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "password"]
        .iter()
        .any(|w| n.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_replaced_longest_first() {
        let s = Secrets::new(["sk-abcdef".to_owned(), "abcdef".to_owned(), "ab".to_owned()]);
        assert_eq!(
            s.text("key sk-abcdef and abcdef, ab stays"),
            "key [redacted] and [redacted], ab stays"
        );
    }

    #[test]
    fn the_start_of_a_key_cut_by_a_quote_is_replaced() {
        let s = Secrets::new(["sk-0123456789".to_owned()]);
        assert_eq!(s.text("body: Bearer sk-01234…"), "body: Bearer [redacted]…");
        // Fewer than four characters of it say nothing.
        assert_eq!(s.text("a sk-… b"), "a sk-… b");
        assert_eq!(s.text("no key… here"), "no key… here");
    }

    #[test]
    fn errors_are_redacted_in_every_field_that_holds_text() {
        let s = Secrets::new(["sk-secret-1".to_owned()]);
        let e = s.error(ProviderError::Unreachable {
            url: "http://h/?k=sk-secret-1".into(),
            source: io::Error::other("sent sk-secret-1"),
        });
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("sk-secret-1"), "{shown}");
        assert!(shown.contains(REDACTED));
    }

    #[test]
    fn credential_headers() {
        for h in ["Authorization", "x-api-key", "X-Auth-Token", "api-secret"] {
            assert!(is_credential_header(h), "{h}");
        }
        for h in ["anthropic-version", "X-Title", "anthropic-beta"] {
            assert!(!is_credential_header(h), "{h}");
        }
    }
}
