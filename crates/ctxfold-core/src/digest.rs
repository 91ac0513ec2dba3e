//! The offline digest (SPEC §6): a summarizer that needs no model.
//!
//! It reads the raw events of a range and keeps what a model needs to carry
//! on once the range is folded away:
//!
//! 1. a header naming the turns and how many model-visible events it covers;
//! 2. **what the user asked**, in the user's own words: every message byte
//!    for byte up to [`REQUEST_WORDS_MAX`](crate::kept::REQUEST_WORDS_MAX)
//!    characters (in a fenced block
//!    when it spans lines), a longer one by its start and its end around a
//!    marker saying how much was left out; a message that corrects or
//!    constrains is marked so, when one of its sentences does;
//! 3. **corrections and constraints**: the user's own sentences that correct
//!    or constrain, quoted: an imperative ("Don't…", "Only…", "Make
//!    sure…"), an obligation or a prohibition ("you must", "I don't
//!    want"), a correction ("Actually, …", "instead", "wrong"); not "I don't
//!    think" or "it must be" (what the user quotes back with `>`, code and
//!    questions left aside);
//! 4. **decisions and conclusions**: sentences of assistant text that decide
//!    or conclude (picked by key phrases; none that plans or doubts: "let
//!    me", "I'll", "maybe", "reconsider"), plus each turn's answer (the last
//!    paragraph of its last text, when no tool call followed it);
//! 5. **files**, from tool-call arguments: written or edited (created,
//!    deleted, or the edit failed), read, searched, and named otherwise (in
//!    a command, under a key that does not say);
//! 6. **tools and commands**: a count of calls and failures per tool and in
//!    all, and each distinct command run with its outcomes (failed when the
//!    tool said so or when its output holds an error, a panic, a failing
//!    test or a non-zero exit, whatever the tool said), all counted once
//!    (`Tally`) so that the numbers agree;
//! 7. **diagnostics** from every tool result, not only failed ones (found
//!    by [`crate::diagnostics`]): one entry per distinct failure, its
//!    headline with the other distinct errors, failing tests and panics of
//!    the same result (up to
//!    [`KEEP_DIAGNOSTICS`](crate::projection::KEEP_DIAGNOSTICS) in all, as a stripped
//!    result keeps them; each listed once over the range), with the fix
//!    that followed where the range shows one (a later run of the same
//!    command, or of a broader one, in which no diagnostic is recognized,
//!    and the edits before it; else a later edit of the file the
//!    diagnostic names). A run is not called clean: the recognizer may
//!    miss what it printed;
//! 8. **identifiers**: names the range defined or edited (definitions in the
//!    source code the tools wrote) and names that failed (in errors, failing
//!    tests); never search patterns, queries or hashes;
//! 9. **where it left off**: the last request, the tail of the last
//!    assistant text, command errors no later run or edit answered, and
//!    whether tool calls were still waiting.
//!
//! Within a budget ([`Digest::summarize_within`], what automatic
//! compaction keeps as its head summary) the user's words stay byte for
//! byte newest first and older ones become their first line and a recall
//! handle; the other sections shrink to the shorter forms first.
//!
//! Every section is omitted when empty; long lists are capped (commands and
//! constraints keep the latest, diagnostics the latest) and say how many
//! they leave out. The
//! text is deterministic (only ordered collections feed the output: same
//! input, same bytes) and the work is linear in the size of the range:
//! every tool result is read once, and only the lines that could start a
//! diagnostic (with the lines after them) go through the recognizer.
//! Reasoning is never quoted; tool results are read only for their
//! diagnostics.
//!
//! The code is laid out by job, a module each: `scan` reads the range
//! once; the sections are built by `requests`, `constraints`,
//! `decisions`, `files`, `tools`, `diagnostics` (with `fixes`),
//! `identifiers` and `left_off`; `forms` puts them together; `bounded`
//! fits them in a budget;
//! `vocabulary`, `arguments` and `prose` hold the word lists, the reading
//! of tool arguments and the reading of prose that they share.

mod arguments;
mod bounded;
mod constraints;
mod decisions;
mod diagnostics;
mod files;
mod fixes;
#[cfg(test)]
mod fixtures;
mod forms;
mod identifiers;
mod left_off;
mod prose;
mod requests;
mod scan;
mod tools;
mod vocabulary;

use crate::compaction::Provenance;
use crate::summarizer::{SummarizeError, Summarizer, SummaryInput, SummaryOutput};

pub use bounded::{BOUNDED_METHOD, Bounded, FIRST_LINE_CHARS, KeptWords, SUMMARY_FLOOR_CHARS};
use forms::{REQUEST_MINIMAL, Short, render_full, render_short};
use scan::scan;

/// The digest's version, recorded in provenance. Bump it whenever the output
/// for the same input changes, so a stored summary says which recipe made it.
pub const DIGEST_VERSION: &str = "3";

/// The digest's name, as recorded in provenance.
const NAME: &str = "digest";

/// The offline digest summarizer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest;

impl Digest {
    /// How a digest is recorded: derived, by `digest`, at [`DIGEST_VERSION`].
    pub fn provenance() -> Provenance {
        Provenance::Derived {
            summarizer: NAME.to_owned(),
            version: Some(DIGEST_VERSION.to_owned()),
            instructions: None,
            method: None,
        }
    }
}

impl Summarizer for Digest {
    fn name(&self) -> String {
        NAME.to_owned()
    }

    fn offline(&self) -> bool {
        true
    }

    /// Digest the range. Instructions are ignored: the digest has one
    /// recipe, named by its version.
    ///
    /// A short range can be about as large as its full digest; when the
    /// full form is more than half the range's size, the digest falls back
    /// to a terse form (the header, each request as the full form quotes
    /// it, the files acted on, the diagnostics and the last answer) and
    /// records `method: "terse"`. When that is not smaller than the range
    /// either, it falls back to the smallest form (each request's opening
    /// and the last answer, a line each), `method: "minimal"`, unless that
    /// would cut a request and the terse form without the last answer is
    /// smaller than the range (a range of little but the user's words).
    fn summarize(&self, input: SummaryInput<'_>) -> Result<SummaryOutput, SummarizeError> {
        let (lo, hi) = input.range;
        let scan = scan(input.log, lo, hi)?;
        let full = render_full(input.log, &scan, lo, hi);
        let raw_chars: usize = input.log.records()[lo..=hi]
            .iter()
            .map(|r| crate::estimate::record_tokens(r) * 4)
            .sum();
        if full.chars().count() * 2 <= raw_chars {
            return Ok(SummaryOutput {
                text: full,
                provenance: Digest::provenance(),
            });
        }
        // The terse form; else the minimal one when it cuts no request,
        // else the terse form without the last answer; the first smaller
        // than the range, else the minimal one.
        let terse = render_short(input.log, &scan, Short::Terse);
        let cuts = scan
            .requests
            .iter()
            .any(|r| r.content.trim().chars().count() > REQUEST_MINIMAL);
        let (text, how) = if terse.chars().count() < raw_chars {
            (terse, "terse")
        } else if !cuts {
            (render_short(input.log, &scan, Short::Minimal), "minimal")
        } else {
            let facts = render_short(input.log, &scan, Short::Facts);
            if facts.chars().count() < raw_chars {
                (facts, "terse")
            } else {
                (render_short(input.log, &scan, Short::Minimal), "minimal")
            }
        };
        let mut provenance = Digest::provenance();
        if let Provenance::Derived { method, .. } = &mut provenance {
            *method = Some(how.into());
        }
        Ok(SummaryOutput { text, provenance })
    }
}

fn failure(message: impl Into<String>) -> SummarizeError {
    SummarizeError {
        summarizer: NAME.to_owned(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, call, digest_all, result, said, user};
    use crate::record::Body;
    use serde_json::json;

    #[test]
    fn small_ranges_get_a_shorter_form() {
        let log = build(vec![
            user("Why is the build red?"),
            said("A missing semicolon in main.rs; fixed."),
        ]);
        let out = Digest
            .summarize(SummaryInput {
                log: &log,
                range: (0, 1),
                instructions: None,
            })
            .unwrap();
        assert_eq!(
            out.text,
            "Digest of turn 1\n- Turn 1 asked: Why is the build red?\n- Last answer: A missing semicolon in main.rs; fixed.\n"
        );
        assert!(
            matches!(out.provenance, Provenance::Derived { method: Some(ref m), .. } if m == "minimal")
        );
        // A range a little larger keeps the request whole, the files and
        // the diagnostics.
        let ask = "Please fix the failing parser test; the fixture is in tests/data.";
        let log = build(vec![
            user(ask),
            call("a", "cargo_test", json!({"package": "parser"})),
            result(
                "a",
                &format!(
                    "{}\ntest p::t ... FAILED\n",
                    "test other ... ok\n".repeat(20)
                ),
                false,
            ),
            call("b", "fs_read_file", json!({"path": "src/parse.rs"})),
            result("b", &"fn parse() {}\n".repeat(20), false),
            said("The parser drops the last line; fixed."),
        ]);
        let out = Digest
            .summarize(SummaryInput {
                log: &log,
                range: (0, 5),
                instructions: None,
            })
            .unwrap();
        assert!(
            matches!(out.provenance, Provenance::Derived { method: Some(ref m), .. } if m == "terse"),
            "{}",
            out.text
        );
        assert_eq!(
            out.text,
            format!(
                "Digest of turn 1\n- Turn 1 asked: {ask}\n- Files: `src/parse.rs`\n- cargo_test: test p::t ... FAILED\n- Last answer: The parser drops the last line; fixed.\n"
            )
        );
    }

    #[test]
    fn name_and_provenance() {
        assert_eq!(Digest.name(), "digest");
        assert_eq!(
            Digest::provenance(),
            Provenance::Derived {
                summarizer: "digest".into(),
                version: Some(DIGEST_VERSION.into()),
                instructions: None,
                method: None,
            }
        );
        assert_eq!(DIGEST_VERSION, "3");
    }

    #[test]
    fn a_big_tool_heavy_range_digests_small() {
        let mut bodies = vec![Body::TurnStart, user("refactor everything")];
        let blob = "fn x() { let a = 1; }\n".repeat(400);
        for i in 0..120 {
            let id = format!("c{i}");
            bodies.push(said(&format!("Reading file {i}; the fix should be small.")));
            bodies.push(call(
                &id,
                "fs_read_file",
                json!({"path": format!("src/m{}.rs", i % 30)}),
            ));
            bodies.push(result(&id, &blob, false));
        }
        let log = build(bodies);
        let raw: usize = log
            .records()
            .iter()
            .map(|r| match &r.body {
                Body::ToolResult { content, .. } | Body::Assistant { content } => content.len(),
                _ => 0,
            })
            .sum();
        assert!(raw > 1_000_000);
        let text = digest_all(&log);
        assert!(text.len() * 20 < raw, "{} of {raw}", text.len());
        assert!(text.contains("- Calls: fs_read_file ×120 (120 calls, 0 failed)"));
    }
}
