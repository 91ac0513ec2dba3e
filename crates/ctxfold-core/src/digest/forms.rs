//! The digest's forms: the full one (header and every section in order)
//! and the shorter ones a small range falls back to.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::log::Log;
use crate::text::{collapse, tail_words, truncate_words};

use super::constraints::section_constraints;
use super::decisions::{section_decisions, turn_answers};
use super::diagnostics::{DIAGNOSTICS_MAX, section_diagnostics};
use super::files::{FILES_MAX, files, section_files};
use super::fixes::fixes;
use super::identifiers::section_identifiers;
use super::left_off::section_left_off;
use super::prose::capped_list;
use super::requests::{quote_request, section_requests, spaced};
use super::scan::Scan;
use super::tools::section_tools;

/// In the smallest form, a request is cut to about this many characters.
pub(super) const REQUEST_MINIMAL: usize = 100;
/// The header: `Digest of turns 2–5 (40 events)`.
pub(super) fn header(log: &Log, scan: &Scan<'_>, events: bool) -> String {
    let first = log.turn_of(scan.first_visible) + 1;
    let last = log.turn_of(scan.last_visible) + 1;
    let mut out = if first == last {
        format!("Digest of turn {first}")
    } else {
        format!("Digest of turns {first}–{last}")
    };
    if events {
        let s = if scan.visible == 1 { "" } else { "s" };
        let _ = write!(out, " ({} event{s})", scan.visible);
    }
    out.push('\n');
    out
}

/// The full digest of `records[lo..=hi]`.
pub(super) fn render_full(log: &Log, scan: &Scan<'_>, lo: usize, hi: usize) -> String {
    render_full_with(log, scan, lo, hi, section_requests(scan))
}

/// The full digest of `records[lo..=hi]` with `requests` as its "What the
/// user asked" section (empty: none).
pub(super) fn render_full_with(
    log: &Log,
    scan: &Scan<'_>,
    lo: usize,
    hi: usize,
    requests: String,
) -> String {
    let mut out = header(log, scan, true);
    let answers = turn_answers(scan);
    let files = files(scan);
    let fixes = fixes(scan, &files);
    for section in [
        requests,
        section_constraints(scan),
        section_decisions(scan, &answers),
        section_files(&files),
        section_tools(scan),
        section_diagnostics(scan, &fixes),
        section_identifiers(scan),
        section_left_off(log, scan, &answers, &fixes, lo, hi),
    ] {
        if !section.is_empty() {
            out.push('\n');
            out.push_str(&section);
        }
    }
    out
}

/// The digest of `records[lo..=hi]` (a range checked here).
#[cfg(test)]
pub(super) fn render(
    log: &Log,
    lo: usize,
    hi: usize,
) -> Result<String, crate::summarizer::SummarizeError> {
    let scan = super::scan::scan(log, lo, hi)?;
    Ok(render_full(log, &scan, lo, hi))
}

/// The shorter forms of the digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Short {
    /// The header, each request as the full form quotes it, the files acted
    /// on, the diagnostics and the last answer.
    Terse,
    /// The same without the last answer.
    Facts,
    /// The header, each request's opening and the last answer.
    Minimal,
    /// The header and the requests alone (only within a budget).
    Bare,
}

pub(super) fn render_short(log: &Log, scan: &Scan<'_>, form: Short) -> String {
    render_short_with(log, scan, form, None)
}

/// A shorter form; `requests`, when given, in place of its request lines.
pub(super) fn render_short_with(
    log: &Log,
    scan: &Scan<'_>,
    form: Short,
    requests: Option<&str>,
) -> String {
    let minimal = matches!(form, Short::Minimal | Short::Bare);
    let mut out = header(log, scan, false);
    if let Some(lines) = requests {
        out.push_str(lines);
    }
    for r in scan.requests.iter().filter(|_| requests.is_none()) {
        // The minimal form cuts only what is over its limit: a short
        // request stays byte for byte there too.
        let quoted = if minimal && r.content.trim().chars().count() > REQUEST_MINIMAL {
            format!(" {}", truncate_words(&collapse(r.content), REQUEST_MINIMAL))
        } else {
            spaced(quote_request(r.content))
        };
        let _ = writeln!(out, "- Turn {} asked:{quoted}", r.turn + 1);
    }
    if !minimal {
        let files = files(scan);
        let paths: BTreeSet<&str> = files.uses.keys().map(|(_, p)| p.as_ref()).collect();
        if !paths.is_empty() {
            let list = paths.iter().map(|p| format!("`{p}`"));
            let _ = writeln!(
                out,
                "- Files: {}",
                capped_list(list, paths.len(), FILES_MAX)
            );
        }
        for s in scan.seen.iter().take(DIAGNOSTICS_MAX) {
            let _ = writeln!(out, "- {}: {}", s.tool, s.diag.text);
        }
    }
    if let Some(t) = scan.texts.last()
        && !matches!(form, Short::Facts | Short::Bare)
    {
        let _ = writeln!(
            out,
            "- Last answer: {}",
            tail_words(&collapse(&t.content), 160)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{digest_all, sample, user};
    use crate::record::Record;

    #[test]
    fn sections_come_in_order() {
        let mut bodies = sample().into_records();
        bodies.push(Record::new(
            99,
            "2026-01-01T00:00:00Z",
            user("Don't change the public API."),
        ));
        let text = digest_all(&Log::from_records(bodies));
        let pos = |h: &str| text.find(&format!("## {h}\n")).expect(h);
        let order = [
            pos("What the user asked"),
            pos("Corrections and constraints (the user's words)"),
            pos("Decisions and conclusions"),
            pos("Files"),
            pos("Tools and commands"),
            pos("Diagnostics (from tool output)"),
            pos("Identifiers"),
            pos("Where it left off"),
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn same_input_same_bytes() {
        let log = sample();
        let a = digest_all(&log);
        let b = digest_all(&log.clone());
        assert_eq!(a.as_bytes(), b.as_bytes());
    }

    #[test]
    fn header_names_turns_and_events() {
        let log = sample();
        let text = digest_all(&log);
        assert!(
            text.starts_with("Digest of turns 1–2 (12 events)\n"),
            "{text}"
        );
        let one = render(&log, 0, 8).unwrap();
        assert!(one.starts_with("Digest of turn 1 (8 events)\n"));
    }
}
