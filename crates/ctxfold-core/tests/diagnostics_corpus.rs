//! The diagnostic recognizer on real tool output from the JP corpus, and
//! on output that must not count. Set `CTXFOLD_DIAGNOSTICS_PRINT=1` to
//! print every result's diagnostics.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod jp;

use std::collections::{BTreeMap, HashMap};

use ctxfold_core::Body;
use ctxfold_core::diagnostics::{DiagnosticKind, diagnostics, headline, result_diagnostics};
use jp::{corpus_dir, load};

/// Every tool result of the corpus: (conversation, tool, is_error, content).
fn results() -> Vec<(String, String, bool, String)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("events.json").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        let log = load(&d);
        let mut names = HashMap::new();
        for r in log.records() {
            match &r.body {
                Body::ToolCall { id, name, .. } => {
                    names.insert(id.clone(), name.clone());
                }
                Body::ToolResult {
                    id,
                    content,
                    is_error,
                } => out.push((
                    d.file_name().unwrap().to_string_lossy().into_owned(),
                    names.get(id).cloned().unwrap_or_default(),
                    *is_error,
                    content.clone(),
                )),
                _ => {}
            }
        }
    }
    out
}

#[test]
fn the_corpus_diagnostics() {
    let print = std::env::var_os("CTXFOLD_DIAGNOSTICS_PRINT").is_some();
    let mut by_kind: BTreeMap<DiagnosticKind, usize> = BTreeMap::new();
    let all = results();
    assert!(all.len() > 400, "the corpus has its tool results");
    for (conv, tool, is_error, content) in &all {
        let found = diagnostics(content);
        for d in &found {
            *by_kind.entry(d.kind).or_default() += 1;
        }
        if print && !found.is_empty() {
            println!("=== {conv} {tool} error={is_error}");
            for d in &found {
                println!("  {:?}: {}", d.kind, d.text);
            }
        }
    }
    println!("{by_kind:?}");

    let found_in = |needle: &str| -> Vec<String> {
        all.iter()
            .filter(|(_, _, _, c)| c.contains(needle))
            .flat_map(|(_, _, _, c)| diagnostics(c))
            .map(|d| d.text)
            .collect()
    };
    // A compiler error with the location rustc gives on the next line,
    // inside a JSON-wrapped result.
    assert!(
        found_in("E0639").contains(
            &"error[E0639]: cannot create non-exhaustive struct using struct expression (crates/jp_mcp/src/client.rs:140:28)".to_owned()
        ),
        "{:?}",
        found_in("E0639")
    );
    // A test run the tool reported as a success, that failed: the failure
    // and the panic, with its message from the next line.
    let failing: Vec<_> = all
        .iter()
        .filter(|(_, tool, is_error, c)| {
            tool == "cargo_test" && !is_error && c.contains("of which 1 failed")
        })
        .collect();
    assert!(!failing.is_empty());
    for (_, _, _, c) in &failing {
        let d = diagnostics(c);
        assert_eq!(d[0].kind, DiagnosticKind::TestFailure, "{d:?}");
        assert!(
            d.iter().any(|d| d.kind == DiagnosticKind::Panic
                && d.text.contains("panicked at crates/contrib/grizzly/src/")
                && d.text.contains("assertion")),
            "{d:?}"
        );
        assert_eq!(headline(c).unwrap().kind, DiagnosticKind::TestFailure);
    }
    // Files read are source code and documents: full of `Error` and
    // `error`, but no compiler diagnostic, panic or failing test. (A
    // document may quote an exception or a log line, as an RFD of the
    // corpus quotes the CLI's `WARN Trashed corrupt conversation …`.)
    for (conv, tool, _, c) in &all {
        if tool.ends_with("read_file") {
            let wrong: Vec<_> = diagnostics(c)
                .into_iter()
                .filter(|d| {
                    !matches!(
                        d.kind,
                        DiagnosticKind::Exception
                            | DiagnosticKind::LogError
                            | DiagnosticKind::LogWarning
                    )
                })
                .collect();
            assert!(wrong.is_empty(), "{conv} {tool}: {wrong:?}");
        }
    }
    // Every failed result has a diagnostic.
    for (conv, tool, is_error, c) in &all {
        if *is_error {
            assert!(!result_diagnostics(c, true).is_empty(), "{conv} {tool}");
        }
    }
}

/// What a stripped result says of real output: a test run the tool called
/// a success that failed, by what it printed, with the failing test's name
/// and its assertion's values; a wrapped failure by its cause.
#[test]
fn stripped_results_of_the_corpus_keep_names_values_and_causes() {
    use ctxfold_core::projection::stripped_result_line;
    let all = results();
    // `Ran 30/30 tests, of which 1 failed.` with a panic of a named test
    // and its compared values after it.
    let failing: Vec<_> = all
        .iter()
        .filter(|(_, tool, is_error, c)| {
            tool == "cargo_test" && !is_error && c.contains(" panicked at ")
        })
        .collect();
    assert!(failing.len() >= 3, "the corpus has failing test runs");
    let mut compared = 0;
    for (conv, tool, _, c) in failing {
        let line = stripped_result_line(tool, c, false);
        // The count the run printed, read from the output here.
        let failed = c
            .split("of which ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .unwrap();
        let tests = if failed == "1" { "test" } else { "tests" };
        assert!(
            line.starts_with(&format!("[{tool}: {failed} {tests} failed; ")),
            "{conv}: {line}"
        );
        // The thread's name is the failing test's, the location follows.
        let panic_line = c.lines().find(|l| l.contains(" panicked at ")).unwrap();
        let name = panic_line.split('\'').nth(1).unwrap();
        let at = panic_line
            .split(" panicked at ")
            .nth(1)
            .unwrap()
            .trim_end_matches(':');
        assert!(
            line.contains(&format!("thread '{name}' panicked at {at}")),
            "{conv}: {line}"
        );
        let value = |side: &str| {
            c.lines()
                .map(str::trim)
                .find(|l| l.starts_with(&format!("{side}: ")))
                .map(str::to_owned)
        };
        // An assertion's values, where the panic was one.
        if let (Some(left), Some(right)) = (value("left"), value("right")) {
            assert!(
                line.contains(&format!("({left}, {right})")),
                "{conv}: {line}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 2, "the corpus has failed assertions");
    // A failure whose first line is the tool's generic wrapper is named by
    // the cause in its trace, not by the wrapper.
    let wrapped: Vec<_> = all
        .iter()
        .filter(|(_, _, is_error, c)| *is_error && c.contains("An error occurred while running"))
        .collect();
    assert!(!wrapped.is_empty());
    let mut named_by_trace = 0;
    for (conv, tool, _, c) in wrapped {
        let line = stripped_result_line(tool, c, true);
        let v: serde_json::Value = serde_json::from_str(c).unwrap();
        let trace = v["trace"][0].as_str().unwrap_or_default();
        assert!(!line.contains("An error occurred"), "{conv}: {line}");
        if !trace.is_empty() && !trace.contains('\n') {
            assert!(
                line.ends_with(&format!("Diagnostics in it: {trace}]")),
                "{conv}: {line}"
            );
            named_by_trace += 1;
        }
    }
    assert!(named_by_trace >= 1, "a one-line cause in the corpus");
}
