//! Reading the prose of messages: sentences, paragraphs, list and quote
//! markers, code fences, and the lists the sections print. The cuts they
//! print are in [`crate::text`].

use std::fmt::Write as _;

use crate::text::collapse;

/// `s` without trailing emphasis or quotes (`**`, `_`, `` ` ``, `"`), to see
/// how the sentence itself ends.
pub(super) fn trim_emphasis(s: &str) -> &str {
    s.trim_end_matches(['*', '_', '`', '"', ')', ' '])
}

/// Strip a list, quote or numbering marker from the start of a line.
pub(super) fn strip_marker(line: &str) -> &str {
    let mut t = line.trim_start();
    while let Some(rest) = t.strip_prefix('>') {
        t = rest.trim_start();
    }
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest.trim_start();
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "))
    {
        return rest.trim_start();
    }
    t
}

/// Whether a line opens or closes a fenced code block.
pub(super) fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Call `f` with every prose sentence of `text`: code blocks, headings and
/// table rows are skipped, list and quote markers stripped.
pub(super) fn for_each_sentence<'t>(text: &'t str, mut f: impl FnMut(&'t str)) {
    for t in prose_lines(text, |_| false).flatten() {
        split_sentences(strip_marker(t), &mut f);
    }
}

/// `text` on one line, each fenced code block replaced by a marker
/// naming its length.
pub(super) fn without_code(text: &str) -> String {
    let mut out = String::new();
    let mut code_lines: Option<usize> = None;
    let push = |out: &mut String, piece: &str| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(piece);
    };
    for line in text.lines() {
        if is_fence(line) {
            code_lines = match code_lines {
                None => Some(0),
                Some(n) => {
                    let s = if n == 1 { "" } else { "s" };
                    push(&mut out, &format!("[code block, {n} line{s}]"));
                    None
                }
            };
            continue;
        }
        match &mut code_lines {
            Some(n) => *n += 1,
            None => {
                let t = collapse(line);
                if !t.is_empty() {
                    push(&mut out, &t);
                }
            }
        }
    }
    if let Some(n) = code_lines {
        // An unclosed block: the text was cut inside it.
        let s = if n == 1 { "" } else { "s" };
        push(&mut out, &format!("[code block, {n} line{s}, unclosed]"));
    }
    out
}

/// The prose paragraphs of `text`, each on one line.
pub(super) fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut flush = |current: &mut String| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    for line in prose_lines(text, |_| false) {
        let Some(t) = line else {
            flush(&mut current);
            continue;
        };
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&collapse(t));
    }
    flush(&mut current);
    out
}

/// The lines of `text`, trimmed, with `None` for each that ends a
/// paragraph: a code fence and the lines of a code block, a blank line, a
/// heading, a table row, and a line `breaks` says ends one.
fn prose_lines(text: &str, breaks: impl Fn(&str) -> bool) -> impl Iterator<Item = Option<&str>> {
    let mut in_code = false;
    text.lines().map(move |line| {
        if is_fence(line) {
            in_code = !in_code;
            return None;
        }
        let t = line.trim();
        let prose =
            !(in_code || t.is_empty() || t.starts_with('#') || t.starts_with('|') || breaks(t));
        prose.then_some(t)
    })
}

/// Items (already formatted) as a comma-separated list, at most `cap` of
/// them.
pub(super) fn capped_list<S: AsRef<str>>(
    items: impl Iterator<Item = S>,
    len: usize,
    cap: usize,
) -> String {
    let mut out = String::new();
    for item in items.take(cap) {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(item.as_ref());
    }
    if len > cap {
        let _ = write!(out, ", and {} more", len - cap);
    }
    out
}

/// Call `f` with every sentence the user wrote in `text`, each on one
/// line (hard-wrapped lines joined): code blocks, quoted lines (`> …`, what
/// the user quotes back), headings and table rows are skipped; a list item
/// starts a new paragraph.
pub(super) fn for_each_user_sentence(text: &str, mut f: impl FnMut(&str)) {
    let mut paragraph = String::new();
    let mut flush = |paragraph: &mut String| {
        if !paragraph.is_empty() {
            split_sentences(paragraph, &mut f);
            paragraph.clear();
        }
    };
    for line in prose_lines(text, |t| t.starts_with('>')) {
        let Some(t) = line else {
            flush(&mut paragraph);
            continue;
        };
        let item = strip_marker(t);
        if item.len() != t.len() {
            flush(&mut paragraph);
        }
        if !paragraph.is_empty() {
            paragraph.push(' ');
        }
        paragraph.push_str(item);
    }
    flush(&mut paragraph);
}

/// Call `f` with each sentence of one line of prose.
pub(super) fn split_sentences<'t>(t: &'t str, f: &mut impl FnMut(&'t str)) {
    let mut start = 0;
    for (i, c) in t.char_indices() {
        if matches!(c, '.' | '!' | '?') && t[i + 1..].chars().next().is_none_or(char::is_whitespace)
        {
            let s = t[start..=i].trim();
            if !s.is_empty() {
                f(s);
            }
            start = i + 1;
        }
    }
    let s = t[start..].trim();
    if !s.is_empty() {
        f(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_stripped() {
        assert_eq!(strip_marker("  12. item"), "item");
    }
}
