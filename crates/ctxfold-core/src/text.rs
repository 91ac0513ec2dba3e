//! Text helpers shared by the core: collapsing whitespace, the keys text is
//! compared by, and every way the core cuts a text down.
//!
//! They were copies spread over the modules that use them, and the copies
//! did not all agree. Where two behaved the same for every input there is
//! one here now; where they differ (characters or words, where the
//! ellipsis goes, whether the limit holds the marker) both are here side by
//! side, each saying how it differs, and each caller keeps the one it had:
//! the output of the core does not change.
//!
//! Every length here counts characters (`char`s), never bytes, and every
//! cut falls on a character boundary.

use std::borrow::Cow;

// ---------------------------------------------------------------- comparing

/// Runs of whitespace to one space, trimmed; nothing else changes (how
/// diagnostics, digests and the retention report compare text).
pub(crate) fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4096));
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// Whitespace runs to one space, curly quotes to straight ones, trimmed.
///
/// Like `collapse` (in the same module), and it also makes `‘ ’ “ ”` plain; case and
/// punctuation are kept. How an anchor's quote is found in a view (see
/// [`crate::anchor`]). Compare `normalize_words` (in the same module),
/// which keeps only the words.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(match c {
            '\u{2018}' | '\u{2019}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            c => c,
        });
    }
    out
}

/// Lowercase words (letters and digits) separated by single spaces: the
/// key that finds duplicates.
///
/// Unlike [`normalize`], everything that is not a letter or a digit
/// (punctuation, quotes, symbols) is dropped as a word break, and the text
/// is lowercased: "The fix, done." and "the fix done" have the same key.
/// How the digest tells repeated sentences apart.
pub(crate) fn normalize_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.extend(c.to_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

/// Whether `s` holds more than `n` characters (a result's length is asked
/// on every projection): no count when its bytes decide it (a character
/// is 1 to 4 bytes), else a count of at most `4 * n` bytes.
pub(crate) fn more_chars_than(s: &str, n: usize) -> bool {
    s.len() > n && (s.len() / 4 > n || s.chars().count() > n)
}

// ---------------------------------------------------------------- cutting the end off

/// `s` cut to at most `max` characters in all, the last of them "…" when
/// anything was cut: the first `max - 1` characters and "…". `s` no longer
/// than `max` comes back whole. `max` must be at least 1.
///
/// Cuts anywhere, mid-word. Compare [`truncate_words`] (at a word, "…"
/// beyond the limit). Diagnostic lines and compaction notes are cut so.
pub(crate) fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `s` cut to about `max` characters at a word boundary, with "…".
///
/// Unlike [`cut_chars`], the cut goes back to the last whitespace when
/// there is one in the second half of the first `max` characters (else it
/// is at `max`), trailing whitespace goes, and "…" comes after: the result
/// is at most `max + 1` characters. Unlike [`head_at_word`], it adds the
/// "…" and trims a cut made at `max` too.
pub(crate) fn truncate_words(s: &str, max: usize) -> String {
    let Some((cut, _)) = s.char_indices().nth(max) else {
        return s.to_owned();
    };
    let head = &s[..cut];
    let end = match head.rfind(char::is_whitespace) {
        Some(i) if i >= cut / 2 => i,
        _ => cut,
    };
    format!("{}…", head[..end].trim_end())
}

/// About the first `max` characters of `s`, cut at a whitespace, with no
/// marker: a slice of `s`.
///
/// Cuts where [`truncate_words`] does, but adds nothing, and a cut made
/// at `max` (no whitespace in the second half) is not trimmed. For a quote
/// that says how much it left out in its own words.
pub(crate) fn head_at_word(s: &str, max: usize) -> &str {
    let Some((cut, _)) = s.char_indices().nth(max) else {
        return s;
    };
    let head = &s[..cut];
    match head.rfind(char::is_whitespace) {
        Some(i) if i >= cut / 2 => head[..i].trim_end(),
        _ => head,
    }
}

// ---------------------------------------------------------------- cutting the start off

/// The last `max` or so characters of `s`, starting at a word boundary,
/// with a leading "…".
///
/// The start moves on to the first whitespace when there is one in the
/// first half (by bytes) of the last `max` characters, and leading
/// whitespace goes. The mirror of [`truncate_words`]; at most `max + 1`
/// characters.
pub(crate) fn tail_words(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let start = s.char_indices().nth(n - max).map_or(0, |(i, _)| i);
    let tail = &s[start..];
    let begin = match tail.find(char::is_whitespace) {
        Some(i) if i < tail.len() / 2 => i,
        _ => 0,
    };
    format!("…{}", tail[begin..].trim_start())
}

/// About the last `max` characters of `s`, from a whitespace, with no
/// marker: a slice of `s`.
///
/// Starts where [`tail_words`] does but adds nothing, and a start kept at
/// the `max`-th last character is not trimmed. The mirror of
/// [`head_at_word`].
pub(crate) fn tail_at_word(s: &str, max: usize) -> &str {
    let n = s.chars().count();
    if n <= max {
        return s;
    }
    let start = s.char_indices().nth(n - max).map_or(0, |(i, _)| i);
    let tail = &s[start..];
    match tail.find(char::is_whitespace) {
        Some(i) if i < tail.len() / 2 => tail[i..].trim_start(),
        _ => tail,
    }
}

// ---------------------------------------------------------------- keeping the head and the tail

/// `text` cut to about `keep` characters: its first two thirds and its
/// last third, with a note between them naming how much was left out and
/// that the log keeps it. Text no longer than `keep` comes back whole.
///
/// The note is on top of `keep` (the result is longer than `keep` by
/// it); compare [`fit`](crate::summary_prompt::fit), whose limit holds
/// its marker, and `cut_head_tail`, whose sizes the caller gives. What a
/// clipped view item shows (a compaction's `clip_chars`).
pub fn clip_text(text: &str, keep: usize) -> String {
    clip_text_with(text, keep, None)
}

/// [`clip_text`] whose note ends with `hint` (a recall handle's words)
/// instead of saying only that the log keeps the text whole.
pub(crate) fn clip_text_with(text: &str, keep: usize, hint: Option<&str>) -> String {
    let total = text.chars().count();
    if total <= keep {
        return text.to_owned();
    }
    let head = keep * 2 / 3;
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    let whole = match hint {
        Some(h) => format!("{h} brings them back"),
        None => "the log keeps them whole".to_owned(),
    };
    format!(
        "{start}\n[… {} of {total} characters left out here by compaction to fit the context window; {whole} …]\n{end}",
        total - head - tail
    )
}

/// `text` cut to at most `budget` characters, keeping its start and end.
///
/// Unlike [`clip_text`](crate::projection::clip_text), the marker (`[… N characters, cut to fit …]`, on
/// its own line) counts within `budget`, and the room left is split three
/// quarters to the head and one to the tail. A prompt that must fit is cut
/// so.
pub fn fit(text: &str, budget: usize) -> String {
    let n = text.chars().count();
    if n <= budget {
        return text.to_owned();
    }
    let marker = format!("\n[… {n} characters, cut to fit …]\n");
    let room = budget.saturating_sub(marker.chars().count());
    let head: String = text.chars().take(room * 3 / 4).collect();
    let tail: String = text.chars().skip(n - room / 4).collect();
    format!("{head}{marker}{tail}")
}

/// `text` as its first `head` and last `tail` characters around a
/// `[… N characters cut …]` line, when it is longer than `over`
/// characters; else `text` itself, borrowed.
///
/// Unlike [`clip_text`] and [`fit`], the caller gives the threshold and
/// both sizes (`head + tail` must not exceed the length of a text longer
/// than `over`). How a summary prompt prunes the blocks of a range.
pub(crate) fn cut_head_tail(text: &str, over: usize, head: usize, tail: usize) -> Cow<'_, str> {
    let n = text.chars().count();
    if n <= over {
        return text.into();
    }
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}\n[… {} characters cut …]\n{end}", n - head - tail).into()
}

/// About `max` characters of `hay` around the match at byte `at` of byte
/// length `len`, with "…" where it was cut (at either end, or after a
/// match longer than `max`, which is cut to its first `max` characters).
///
/// Unlike the other cuts here it keeps the middle: what an anchor's quote
/// matched, with as much context on each side.
pub(crate) fn excerpt(hay: &str, at: usize, len: usize, max: usize) -> String {
    let before: Vec<char> = hay[..at].chars().collect();
    let matched = &hay[at..at + len];
    let after: Vec<char> = hay[at + len..].chars().collect();
    let room = max.saturating_sub(matched.chars().count()) / 2;
    let lead: String = before[before.len().saturating_sub(room)..].iter().collect();
    let tail: String = after[..after.len().min(room)].iter().collect();
    let mut s = String::new();
    if before.len() > room {
        s.push('…');
    }
    s.push_str(&lead);
    if matched.chars().count() > max {
        let head: String = matched.chars().take(max).collect();
        s.push_str(&head);
        s.push('…');
        return s;
    }
    s.push_str(matched);
    s.push_str(&tail);
    if after.len() > room {
        s.push('…');
    }
    s
}

/// A regular expression written in the source: it compiles (the
/// `every_pattern_compiles` tests of the modules that hold them build them
/// all), so a failure here is a bug caught by the tests, never by input.
#[allow(clippy::expect_used)]
pub(crate) fn literal_pattern(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).expect("a literal pattern compiles")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_chars_than_counts_characters_not_bytes() {
        for s in [
            "",
            "a",
            "abc",
            "é",
            "ééé",
            "𝄞𝄞",
            "a𝄞é",
            &"é".repeat(200),
            &"𝄞".repeat(121),
        ] {
            for n in [0, 1, 2, 3, 4, 5, 8, 119, 120, 121, 200, 400] {
                assert_eq!(
                    more_chars_than(s, n),
                    s.chars().count() > n,
                    "{} chars, {} bytes, n = {n}",
                    s.chars().count(),
                    s.len()
                );
            }
        }
    }

    #[test]
    fn helpers_cut_on_char_boundaries() {
        let s = "é".repeat(500);
        assert_eq!(truncate_words(&s, 10).chars().count(), 11);
        assert!(tail_words(&s, 10).starts_with('…'));
        assert_eq!(head_at_word(&s, 10).chars().count(), 10);
        assert_eq!(tail_at_word(&s, 10).chars().count(), 10);
        assert_eq!(head_at_word("ab cd ef", 6), "ab cd");
        assert_eq!(tail_at_word("ab cd ef", 4), "ef");
    }
}
