//! Excerpts: an oversized tool output (or pasted message) as the model sees
//! it from the first request that carries it (SPEC §8).
//!
//! Folding an output some steps after it arrived rewrites the request's
//! prefix, and the provider's prompt cache misses from there on. An output
//! larger than a share of the window is therefore excerpted at once, by an
//! ordinary compaction over that one record (`excerpt_chars`, source
//! `auto`, undoable) appended before the request goes upstream: the text
//! the model sees for it never changes afterwards.
//!
//! An excerpt is a line saying what it is (the size, what it shows, the
//! recall handle that brings the whole text back), then the text's first
//! lines, every error-like line after them
//! ([`error_like_lines`](crate::diagnostics::error_like_lines): errors of
//! any format, failing tests, tracebacks, exit statuses, and lines naming
//! where a full output was saved) with a count of the lines left out
//! between them, and its last lines.
//!
//! This module is the excerpt's text, which the projection shows; which
//! records are excerpted as they arrive is [`crate::arrival`]'s.

use std::fmt::Write as _;

use crate::text::cut_chars;

/// An error-like line an excerpt shows is cut to about this many
/// characters.
pub const LINE_CHARS: usize = 300;

/// At most this many error-like lines an excerpt shows; the rest are
/// counted (and recalled with the whole text).
pub const MAX_LINES: usize = 40;

/// Characters of head and tail an excerpt keeps of a unit over
/// `over_chars`: a fifth of the threshold, between 400 and 1,600 (two
/// thirds head, one third tail, in whole lines where lines are short
/// enough). Small on purpose: every error-like line is kept besides, the
/// rest is one recall away, and each excerpt is carried (and billed) in
/// every request after it.
pub fn keep_chars(over_chars: usize) -> usize {
    (over_chars / 5).clamp(400, 1_600)
}

/// Whether `text` is long enough to be excerpted under a threshold of
/// `over_chars` characters.
pub fn is_over(text: &str, over_chars: usize) -> bool {
    crate::text::more_chars_than(text, over_chars)
}

/// The excerpt of `text` under a threshold of `over_chars` characters:
/// see the module docs. `marks` are the indices into `text.lines()` of the
/// lines to keep between head and tail (in order); `hint` the recall words
/// that bring the whole text back. Text not over the threshold comes back
/// whole.
pub fn excerpt_text(text: &str, over_chars: usize, marks: &[u32], hint: Option<&str>) -> String {
    if !is_over(text, over_chars) {
        return text.to_owned();
    }
    let keep = keep_chars(over_chars);
    let total_chars = text.chars().count();
    let lines: Vec<&str> = text.lines().collect();
    let len = |l: &str| l.chars().count() + 1;
    // Head: whole lines within two thirds of `keep`, at least the first
    // (cut when it alone is longer).
    let head_budget = keep * 2 / 3;
    let tail_budget = keep - head_budget;
    let mut head = 0;
    let mut used = 0;
    while head < lines.len() && used + len(lines[head]) <= head_budget {
        used += len(lines[head]);
        head += 1;
    }
    let mut tail = lines.len();
    let mut used_tail = 0;
    while tail > head && used_tail + len(lines[tail - 1]) <= tail_budget {
        used_tail += len(lines[tail - 1]);
        tail -= 1;
    }
    let mut out = String::new();
    let mut body = String::new();
    let mut shown_chars = 0;
    let push_line = |body: &mut String, line: &str| {
        body.push_str(line);
        body.push('\n');
    };
    for line in &lines[..head] {
        push_line(&mut body, line);
        shown_chars += len(line);
    }
    // A first line longer than the whole head budget: its start.
    let cut_head = head == 0 && !lines.is_empty();
    if cut_head {
        let part = cut_chars(lines[0], head_budget);
        shown_chars += part.chars().count();
        push_line(&mut body, &part);
    }
    let from = if cut_head { 1 } else { head };
    let inner: Vec<usize> = marks
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| i >= from && i < tail)
        .collect();
    let shown_marks = inner.len().min(MAX_LINES);
    let mut at = from;
    for &i in &inner[..shown_marks] {
        if i > at {
            gap(&mut body, i - at);
        }
        let line = cut_chars(lines[i], LINE_CHARS);
        shown_chars += line.chars().count();
        push_line(&mut body, &line);
        at = i + 1;
    }
    let cut_tail = tail == lines.len() && lines.len() > from;
    let tail_from = if cut_tail { lines.len() - 1 } else { tail };
    if tail_from > at {
        gap(&mut body, tail_from - at);
    }
    if cut_tail {
        // A last line longer than the tail budget: its end.
        let last = lines[lines.len() - 1];
        let n = last.chars().count();
        let part: String = last.chars().skip(n.saturating_sub(tail_budget)).collect();
        let part = if n > tail_budget {
            format!("…{part}")
        } else {
            part
        };
        shown_chars += part.chars().count();
        push_line(&mut body, &part);
    } else {
        for line in &lines[tail..] {
            push_line(&mut body, line);
            shown_chars += len(line);
        }
    }
    if !text.ends_with('\n') && body.ends_with('\n') {
        body.pop();
    }
    let more = inner.len() - shown_marks;
    let _ = write!(
        out,
        "[Excerpt of {total_chars} characters in {} lines, cut by compaction to fit the context window: the first lines, the last lines",
        lines.len()
    );
    match shown_marks {
        0 => out.push_str(" and no error-like line between them"),
        1 => out.push_str(" and the 1 error-like line between them"),
        n => {
            let _ = write!(out, " and the {n} error-like lines between them");
        }
    }
    if more > 0 {
        let _ = write!(out, " (and {more} more not shown)");
    }
    let _ = write!(
        out,
        "; {} characters left out",
        total_chars.saturating_sub(shown_chars)
    );
    match hint {
        Some(h) => {
            let _ = writeln!(out, "; {h} brings back the whole text.]");
        }
        None => out.push_str("; the log keeps the whole text.]\n"),
    }
    out.push_str(&body);
    out
}

fn gap(body: &mut String, lines: usize) {
    let _ = writeln!(
        body,
        "[… {lines} line{} left out …]",
        if lines == 1 { "" } else { "s" }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_lines(n: usize, error_at: usize) -> String {
        (0..n)
            .map(|i| {
                if i == error_at {
                    format!(
                        "2026-12-06T10:00:{:02}Z ERROR step {i}: disk quota exceeded",
                        i % 60
                    )
                } else {
                    format!(
                        "2026-12-06T10:00:{:02}Z INFO worker {i} finished its batch",
                        i % 60
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn an_excerpt_keeps_head_tail_and_the_marked_lines_and_counts_the_rest() {
        let text = log_lines(600, 301);
        let out = excerpt_text(&text, 8_000, &[301], Some("recall abcde:7"));
        let first = out.lines().next().unwrap();
        assert!(first.starts_with("[Excerpt of "), "{first}");
        assert!(
            first.contains("the 1 error-like line between them"),
            "{first}"
        );
        assert!(
            first.ends_with("recall abcde:7 brings back the whole text.]"),
            "{first}"
        );
        assert!(out.contains("ERROR step 301: disk quota exceeded"));
        assert!(out.contains("INFO worker 0 finished"), "the head");
        assert!(out.contains("INFO worker 599 finished"), "the tail");
        assert!(
            out.lines()
                .any(|l| l.starts_with("[… ") && l.ends_with(" lines left out …]"))
        );
        assert!(out.chars().count() < 1_600 + 400, "{}", out.chars().count());
        // The count of what was left out adds up with what is shown.
        let said: usize = first
            .split("; ")
            .find_map(|p| p.strip_suffix(" characters left out"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(said > 20_000 && said < text.chars().count());
    }

    #[test]
    fn short_text_and_text_of_one_long_line() {
        assert_eq!(excerpt_text("short", 100, &[], None), "short");
        let one = "x".repeat(50_000);
        let out = excerpt_text(&one, 8_000, &[0], None);
        assert!(out.chars().count() < 2_500, "{}", out.chars().count());
        assert!(out.contains("the log keeps the whole text"));
        let two = format!("{}\n{}", "a".repeat(30_000), "b".repeat(30_000));
        let out = excerpt_text(&two, 8_000, &[], None);
        assert!(out.contains("aaaa") && out.contains("bbbb"), "{out}");
        assert!(out.chars().count() < 2_500);
    }

    #[test]
    fn marks_past_the_cap_are_counted() {
        let text = (0..2_000)
            .map(|i| format!("E{i} failed"))
            .collect::<Vec<_>>()
            .join("\n");
        let marks: Vec<u32> = (0..2_000).collect();
        let out = excerpt_text(&text, 4_000, &marks, None);
        assert!(out.lines().next().unwrap().contains("not shown"), "{out}");
        assert!(out.lines().count() < 2 * MAX_LINES + 100);
    }
}
