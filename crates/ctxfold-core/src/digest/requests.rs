//! The "What the user asked" section: every user message in the user's
//! own words, byte for byte up to a limit, quoted so that nothing in it
//! can break the list.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::kept::REQUEST_WORDS_MAX;
use crate::text::{head_at_word, tail_at_word};

use super::constraints::steer;
use super::scan::{Request, Scan};

/// A user message longer than [`REQUEST_WORDS_MAX`] keeps about this many
/// characters of its start…
pub(super) const REQUEST_HEAD: usize = 1_200;
/// …and about this many of its end.
pub(super) const REQUEST_TAIL: usize = 600;
pub(super) fn section_requests(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    if scan.requests.is_empty() {
        return out;
    }
    out.push_str("## What the user asked\n");
    for r in &scan.requests {
        out.push_str(&item_head(r));
        out.push_str(&spaced(quote_request(r.content)));
        out.push('\n');
    }
    out
}

/// The start of a request's item, up to its colon: `- Turn 3 (follow-up,
/// correction):`.
pub(super) fn item_head(r: &Request<'_>) -> String {
    let mut out = format!("- Turn {}", r.turn + 1);
    let mut notes: Vec<Cow<'_, str>> = Vec::new();
    match (r.author, r.follow_up) {
        (Some(a), true) => notes.push(format!("follow-up by {a}").into()),
        (Some(a), false) => notes.push(a.into()),
        (None, true) => notes.push("follow-up".into()),
        (None, false) => {}
    }
    match steer(r.content) {
        Some(true) => notes.push("correction".into()),
        Some(false) => notes.push("constraint".into()),
        None => {}
    }
    if !notes.is_empty() {
        let _ = write!(out, " ({})", notes.join(", "));
    }
    out.push(':');
    out
}

/// A user message byte for byte, however long: on the item's line when it
/// is one line with no surrounding whitespace, else in a fenced block.
pub(super) fn verbatim(content: &str) -> String {
    if content.is_empty() {
        return "(empty message)".to_owned();
    }
    if content.trim().len() == content.len() && !content.contains(['\n', '\r']) {
        return content.to_owned();
    }
    fenced(content)
}

/// A user message in the user's words, byte for byte up to
/// [`REQUEST_WORDS_MAX`] characters (whitespace included), else its start
/// and its end around a marker naming what was left out. One line with no
/// surrounding whitespace stays on the item's line; anything else goes in a
/// fenced block on the lines after it, which holds it verbatim (indenting
/// continuation lines to keep a list would change the user's bytes).
pub(super) fn quote_request(content: &str) -> String {
    let trimmed = content.trim();
    if trimmed.is_empty() {
        return "(empty message)".to_owned();
    }
    let n = trimmed.chars().count();
    if n <= REQUEST_WORDS_MAX {
        if trimmed.len() == content.len() && !content.contains(['\n', '\r']) {
            return content.to_owned();
        }
        return fenced(content);
    }
    let head = head_at_word(trimmed, REQUEST_HEAD);
    let tail = tail_at_word(trimmed, REQUEST_TAIL);
    let left_out = n - head.chars().count() - tail.chars().count();
    fenced(&format!(
        "{head}\n[… {left_out} of {n} characters left out …]\n{tail}"
    ))
}

/// A quote as it follows a colon: after a space on the same line, or a
/// block from the next line.
pub(super) fn spaced(quote: String) -> String {
    if quote.starts_with('\n') {
        quote
    } else {
        format!(" {quote}")
    }
}

/// `body` in a fenced block that starts on the next line: the fence is
/// longer than any run of backticks in `body`, so nothing in it closes the
/// block early, and `body` is inside it unchanged.
pub(super) fn fenced(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let end = if body.ends_with('\n') { "" } else { "\n" };
    format!("\n{fence}\n{body}{end}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, digest_all, said, sample, section, user};
    use crate::record::Body;

    #[test]
    fn short_request_is_verbatim() {
        let text = digest_all(&sample());
        assert_eq!(
            section(&text, "What the user asked"),
            [
                "- Turn 1: Fix the login bug in auth.rs",
                "- Turn 2: Now add a regression test"
            ]
        );
    }

    #[test]
    fn requests_are_whole_up_to_the_limit_then_start_and_end() {
        // Exactly at the limit, over several lines: whole, byte for byte
        // (in a fenced block: whitespace and line breaks as typed).
        let line = "word ".repeat(19) + "word\n";
        let at_limit: String = line.repeat(20);
        assert_eq!(at_limit.trim().chars().count(), REQUEST_WORDS_MAX - 1);
        let over: String = (0..600).map(|i| format!("w{i:03} ")).collect();
        let log = build(vec![user(&at_limit), said("ok"), user(&over), said("ok")]);
        let text = digest_all(&log);
        assert!(
            text.contains(&format!("- Turn 1:\n```\n{at_limit}```\n")),
            "{text}"
        );
        let lines = section(&text, "What the user asked");
        let long = lines.iter().position(|l| l.contains("w000")).unwrap();
        assert_eq!(lines[long - 2], "- Turn 1 (follow-up):", "{lines:#?}");
        assert_eq!(lines[long - 1], "```", "{lines:#?}");
        assert!(lines[long].starts_with("w000 w001"), "{lines:#?}");
        let n = over.trim().chars().count();
        let marker = lines[long + 1];
        assert!(
            marker.starts_with("[… ")
                && marker.ends_with(&format!(" of {n} characters left out …]")),
            "{marker}"
        );
        assert!(lines[long + 2].ends_with("w599"), "{lines:#?}");
        assert_eq!(lines[long + 3], "```", "{lines:#?}");
        // About the start and the end, cut at words.
        assert!(
            text.contains(" w239\n")
                && !text.contains("w240")
                && !text.contains("w479")
                && text.contains("\nw480 w481")
        );
        assert!(lines[long].chars().count() <= REQUEST_HEAD + 30);
    }

    #[test]
    fn interrupt_reply_is_kept_as_a_follow_up() {
        let log = build(vec![
            Body::TurnStart,
            user("Rename the module"),
            said("Renaming it now"),
            user("wait, keep the old name as an alias"),
            said("Sure, the alias stays."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "What the user asked"),
            [
                "- Turn 1: Rename the module",
                "- Turn 1 (follow-up, constraint): wait, keep the old name as an alias"
            ]
        );
    }

    #[test]
    fn a_quoted_request_holds_the_message_byte_for_byte() {
        let message = "  Look at this:\n\n```rust\nfn a() {}\n```\n\tand ``` this\n";
        let log = build(vec![user(message), said("ok")]);
        let text = digest_all(&log);
        // The fence is longer than any run of backticks in the message.
        assert!(
            text.contains(&format!("- Turn 1:\n````\n{message}````\n")),
            "{text}"
        );
        let one = build(vec![user("one line, as typed"), said("ok")]);
        assert!(digest_all(&one).contains("- Turn 1: one line, as typed\n"));
    }
}
