//! The recognizer against lines a human marked: for every tool output in
//! `tests/fixtures/error_lines` (see its README: `! ` marks an error-like
//! line), `error_like_lines` gives exactly the marked lines, and a fold of
//! the output (its stripped line) keeps what each of them says.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use ctxfold_core::diagnostics::{DiagnosticKind, error_like, error_like_lines};
use ctxfold_core::projection::stripped_result_line;

/// One fixture: its name, the output, and the marked lines' indices.
struct Fixture {
    name: String,
    text: String,
    marked: Vec<usize>,
}

fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/error_lines");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let raw = std::fs::read_to_string(&p).unwrap();
            let mut text = String::new();
            let mut marked = Vec::new();
            for (k, line) in raw.lines().enumerate() {
                let (mark, rest) = if line.is_empty() {
                    ("  ", "")
                } else {
                    assert!(
                        line.len() >= 2 && line.is_char_boundary(2),
                        "{name}:{}: no mark",
                        k + 1
                    );
                    line.split_at(2)
                };
                match mark {
                    "! " => marked.push(k),
                    "  " => {}
                    other => panic!("{name}:{}: unknown mark {other:?}", k + 1),
                }
                text.push_str(rest);
                text.push('\n');
            }
            Fixture { name, text, marked }
        })
        .collect()
}

#[test]
fn the_recognizer_finds_exactly_the_lines_marked_by_hand() {
    let all = fixtures();
    assert!(all.len() >= 12, "{} fixtures", all.len());
    let mut failures = Vec::new();
    for f in &all {
        let found = error_like_lines(&f.text);
        if found != f.marked {
            let lines: Vec<&str> = f.text.lines().collect();
            let show = |ks: Vec<&usize>| {
                ks.into_iter()
                    .map(|&k| format!("    {}: {}", k + 1, lines[k]))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            failures.push(format!(
                "{}:\n  found, not marked:\n{}\n  marked, not found:\n{}",
                f.name,
                show(found.iter().filter(|k| !f.marked.contains(k)).collect()),
                show(f.marked.iter().filter(|k| !found.contains(k)).collect()),
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The fixtures hold every kind the recognizer knows but a refusal of
    // another shape: each is marked somewhere.
    let kinds: std::collections::BTreeSet<DiagnosticKind> = all
        .iter()
        .flat_map(|f| error_like(&f.text))
        .map(|e| e.diagnostic.kind)
        .collect();
    for k in [
        DiagnosticKind::Error,
        DiagnosticKind::Warning,
        DiagnosticKind::Panic,
        DiagnosticKind::Exception,
        DiagnosticKind::TestFailure,
        DiagnosticKind::ExitStatus,
        DiagnosticKind::NotFound,
        DiagnosticKind::PermissionDenied,
        DiagnosticKind::LogError,
        DiagnosticKind::LogWarning,
        DiagnosticKind::SavedOutput,
    ] {
        assert!(kinds.contains(&k), "no fixture shows {k:?}");
    }
}

#[test]
fn a_fold_of_each_fixture_keeps_every_error_like_line_or_counts_it() {
    for f in fixtures() {
        let fold = stripped_result_line("Bash", &f.text, false);
        let found = error_like(&f.text);
        if found.is_empty() {
            assert!(!fold.contains("Diagnostics in it"), "{}: {fold}", f.name);
            continue;
        }
        // Each distinct diagnostic is shown (its text, or its line with
        // the others at the same place), or counted.
        let mut texts: Vec<&str> = Vec::new();
        for e in &found {
            if !texts.contains(&e.diagnostic.text.as_str()) {
                texts.push(&e.diagnostic.text);
            }
        }
        let missing = found
            .iter()
            .filter(|e| !fold.contains(&e.diagnostic.text) && !fold.contains(&e.diagnostic.line))
            .map(|e| e.diagnostic.text.as_str())
            .collect::<std::collections::BTreeSet<_>>();
        let counted = fold
            .rsplit_once("; and ")
            .and_then(|(_, n)| n.strip_suffix(" more]"))
            .map_or(0, |n| n.parse::<usize>().unwrap());
        assert!(
            missing.len() <= counted,
            "{}: {missing:?} neither shown nor counted in {fold}",
            f.name
        );
        // Where the output was saved is always shown.
        for e in found
            .iter()
            .filter(|e| e.diagnostic.kind == DiagnosticKind::SavedOutput)
        {
            assert!(fold.contains(&e.diagnostic.text), "{}: {fold}", f.name);
        }
    }
}
