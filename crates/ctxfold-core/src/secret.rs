//! Passwords in URLs and connection strings, found once for every place
//! that prints one (`config show`, store messages, errors): the password
//! of a URL's user part (`postgres://user:***@host/db`), `password=`
//! parameters of its query, `password=` keywords of a libpq `key=value`
//! string (bare or quoted with `'…'`), and the `user:***@host` of a text
//! that was meant to be a URL but is not one (`postgresql:/u:pw@h/db`).
//! Masking too much beats showing a password.

use std::ops::Range;

/// `text` with every password it holds replaced by `***`.
pub fn mask_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in secret_spans(text) {
        out.push_str(&text[at..span.start]);
        out.push_str("***");
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `message` (an error a library wrote about `url`) with every password
/// of `url` replaced by `***`, as written and percent-decoded.
pub fn scrub(message: &str, url: &str) -> String {
    let mut out = message.to_owned();
    for span in secret_spans(url) {
        let raw = &url[span];
        let decoded = percent_encoding::percent_decode_str(raw).decode_utf8_lossy();
        for secret in [raw, decoded.as_ref()] {
            if !secret.is_empty() {
                out = out.replace(secret, "***");
            }
        }
    }
    out
}

/// Byte ranges of the passwords in `text`, in order, not overlapping.
pub fn secret_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    match text.find("://") {
        Some(scheme_end) => url_spans(text, scheme_end + 3, &mut spans),
        None => {
            keyword_spans(text, &mut spans);
            user_part_spans(text, &mut spans);
        }
    }
    spans.sort_by_key(|s| s.start);
    let mut kept: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for s in spans {
        match kept.last_mut() {
            Some(last) if s.start < last.end => last.end = last.end.max(s.end),
            _ => kept.push(s),
        }
    }
    kept
}

/// A URL's user-part password and its query's `password=` values.
fn url_spans(url: &str, rest: usize, spans: &mut Vec<Range<usize>>) {
    let query = url[rest..].find(['?', '#']).map_or(url.len(), |i| rest + i);
    // The last `@` before the query ends the user part, even when an
    // unencoded `/` in the password hides it from a strict parser.
    if let Some(at) = url[rest..query].rfind('@').map(|i| rest + i)
        && let Some(colon) = url[rest..at].find(':').map(|i| rest + i)
        && colon + 1 < at
    {
        spans.push(colon + 1..at);
    }
    if url[query..].starts_with('?') {
        let end = url[query..].find('#').map_or(url.len(), |i| query + i);
        let mut start = query + 1;
        for pair in url[query + 1..end].split('&') {
            if let Some(value) = pair.strip_prefix("password=")
                && !value.is_empty()
            {
                let from = start + "password=".len();
                spans.push(from..from + value.len());
            }
            start += pair.len() + 1;
        }
    }
}

/// `password = VALUE` keywords of a libpq `key=value` string: VALUE bare
/// (up to white space) or quoted with `'…'`, `\` escaping the next byte.
fn keyword_spans(s: &str, spans: &mut Vec<Range<usize>>) {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find("password").map(|i| from + i) {
        from = i + "password".len();
        // A keyword, not the tail of another word (`mypassword=`).
        if i > 0 && !bytes[i - 1].is_ascii_whitespace() {
            continue;
        }
        let mut j = from;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if bytes.get(j) != Some(&b'=') {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        let start = j;
        if bytes.get(j) == Some(&b'\'') {
            j += 1;
            while j < bytes.len() && bytes[j] != b'\'' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            j = (j + 1).min(bytes.len());
        } else {
            while j < bytes.len() && !bytes[j].is_ascii_whitespace() {
                j += 1;
            }
        }
        if j > start {
            spans.push(start..j);
        }
        from = j;
    }
}

/// In a word that is not a URL but reads like one with its `//` mistyped:
/// between the `:` that starts a password and the last `@`.
fn user_part_spans(s: &str, spans: &mut Vec<Range<usize>>) {
    let mut offset = 0;
    for word in s.split(|c: char| c.is_ascii_whitespace()) {
        if let Some(at) = word.rfind('@')
            && let Some(colon) = word[..at].rfind(':')
            && colon + 1 < at
            && !word[colon + 1..at].contains('=')
        {
            spans.push(offset + colon + 1..offset + at);
        }
        offset += word.len() + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn urls_with_and_without_passwords() {
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
        assert_eq!(
            mask_url("postgres://u:p%40ss%20w@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            mask_url("postgres://h/db?mypassword=x"),
            "postgres://h/db?mypassword=x"
        );
    }

    #[test]
    fn libpq_keywords_bare_and_quoted() {
        assert_eq!(mask_url("host=h password=x"), "host=h password=***");
        assert_eq!(
            mask_url("host=h password='se cret' dbname=d"),
            "host=h password=*** dbname=d"
        );
        assert_eq!(
            mask_url(r"password = 'it\'s here' user=u"),
            "password = *** user=u"
        );
        assert_eq!(mask_url("host=h mypassword=x"), "host=h mypassword=x");
        assert_eq!(mask_url("password='unclosed"), "password=***");
    }

    #[test]
    fn a_mistyped_url_still_hides_its_password() {
        assert_eq!(
            mask_url("postgresql:/user:pw@host/db"),
            "postgresql:/user:***@host/db"
        );
        assert_eq!(mask_url("/home/me/work"), "/home/me/work");
    }

    #[test]
    fn scrub_hides_the_password_as_written_and_decoded() {
        let url = "postgres://u:p%40ss@h/db";
        assert_eq!(
            scrub("password p@ss rejected; url had p%40ss", url),
            "password *** rejected; url had ***"
        );
    }

    proptest! {
        /// Whatever the password, neither it nor its percent-encoded form
        /// shows (it starts with a digit so as not to match the text
        /// around it by chance).
        #[test]
        fn no_password_shows(pw in "[0-9][A-Za-z0-9!$%^*()_+ -]{3,19}") {
            let quoted = pw.replace('\\', "\\\\").replace('\'', "\\'");
            let encoded: String = pw.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
            for text in [
                format!("host=h password='{quoted}' dbname=d"),
                format!("postgres://u:{encoded}@h/db"),
                format!("postgres://h/db?password={encoded}&x=1"),
            ] {
                let masked = mask_url(&text);
                prop_assert!(!masked.contains(&pw) && !masked.contains(&encoded), "{masked}");
            }
        }
    }
}
