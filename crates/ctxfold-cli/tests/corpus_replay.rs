//! The corpus replayed as a live agent would have grown it, with automatic
//! compaction (issue 24, "Corpus replay"; `docs/QUALITY.md`): `ctxfold
//! compact FILE --auto --window W`, W a quarter of the raw size, on every
//! corpus conversation over 50,000 tokens. After every firing the view fits
//! the window less the reply's reserve; no firing saves less than a tenth
//! of W; every firing's retention report holds real figures, the same as
//! `c show` reports for the same compactions in a stored copy of the
//! conversation. Prints the table `docs/QUALITY.md` holds.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{Scratch, compact_report, corpus_conversations};
use serde_json::{Value, json};

/// Conversations smaller than this (raw tokens) are not replayed.
const LARGE: u64 = 50_000;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The first `upto` of the replay's compaction records as records of the
/// transcript imported alone: the replayed log holds the transcript's
/// records with the compactions between them, so a transcript record's
/// seq there is its own plus the compactions before it. A range that ends
/// on an earlier compaction's record ends on the transcript record before
/// it. Their seqs start at `first`.
fn as_imported(compactions: &[Value], upto: usize, first: usize) -> String {
    let seqs: Vec<u64> = compactions.iter().map(|c| u(&c["seq"])).collect();
    let before = |s: u64| seqs.iter().filter(|&&x| x < s).count() as u64;
    let mut lines = String::new();
    for (n, c) in compactions[..upto].iter().enumerate() {
        let mut o = c.as_object().unwrap().clone();
        for k in ["effect", "kept", "seq"] {
            o.shift_remove(k);
        }
        o.insert("seq".into(), json!(first + n));
        o.insert("type".into(), json!("compaction"));
        o.insert("ts".into(), json!("2026-01-01 00:00:00.0"));
        if let Some(s) = o.get("from_seq").map(u) {
            o.insert("from_seq".into(), json!(s - before(s)));
        }
        if let Some(s) = o.get("to_seq").map(u) {
            let on_compaction = u64::from(seqs.contains(&s));
            o.insert("to_seq".into(), json!(s - before(s) - on_compaction));
        }
        lines.push_str(&serde_json::to_string(&o).unwrap());
        lines.push('\n');
    }
    lines
}

fn tally(k: &Value) -> String {
    if u(&k["total"]) == 0 {
        "–".into()
    } else {
        format!("{}/{}", k["kept"], k["total"])
    }
}

#[test]
fn every_firing_of_a_replay_fits_saves_and_reports_what_it_kept() {
    let s = Scratch::new();
    let mut table = String::from(
        "| conversation | raw | W | firings | least saved (of W) | largest view after a firing (of W; limit) | files | diagnostics | requests | shrink |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut replayed = 0;
    for dir in corpus_conversations() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let raw = u(&compact_report(&s, &dir, &[])["tokens"]["raw"]);
        if raw <= LARGE {
            continue;
        }
        replayed += 1;
        let w = raw / 4;
        let report = compact_report(&s, &dir, &["--auto", "--window", &w.to_string()]);
        assert_eq!(u(&report["tokens"]["raw"]), raw, "{name}");
        let firings = report["compactions"].as_array().unwrap();
        assert!(!firings.is_empty(), "{name}: no firing at W = {w}");
        let (mut least, mut largest, mut limit) = (u64::MAX, 0, 0);
        // Outputs excerpted as they arrived are compactions too, without
        // a budget: they are no firing.
        let fired: Vec<&Value> = firings.iter().filter(|c| !c["budget"].is_null()).collect();
        for c in firings.iter().filter(|c| c["budget"].is_null()) {
            assert!(
                c["excerpt_chars"].is_u64(),
                "{name}: a compaction without a budget: {c}"
            );
        }
        for (n, c) in fired.iter().enumerate() {
            let b = &c["budget"];
            let at = format!("{name}, firing {} of {}: {b}", n + 1, fired.len());
            assert_eq!(u(&b["window"]), w, "{at}");
            let (before, after) = (u(&b["before"]), u(&b["after"]));
            let fits = u(&b["window"]) - u(&b["reserve"]);
            assert!(
                after <= fits,
                "{at}: the view after it (~{after}) is over the window less the reserve ({fits})"
            );
            assert!(
                before - after >= w / 10,
                "{at}: saved ~{} tokens, under a tenth of the window ({})",
                before - after,
                w / 10
            );
            let kept = &c["kept"];
            assert!(
                u(&kept["tokens"][0]) > 0,
                "{at}: its range measures no tokens: {kept}"
            );
            least = least.min(before - after);
            largest = largest.max(after);
            limit = fits;
        }
        // The same compactions in a stored copy, as `c show` reports them.
        let id = s.import(&dir);
        let records: Vec<String> = std::fs::read_to_string(s.events_file(&id))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        // The view after each firing, recounted by `stats` on a copy that
        // holds the transcript's records before it and the compactions up
        // to it.
        for (n, c) in firings.iter().enumerate() {
            if c["budget"].is_null() {
                continue;
            }
            let upto = (u(&c["seq"]) as usize) - n;
            let mut lines = records[..upto].join("\n");
            lines.push('\n');
            lines.push_str(&as_imported(firings, n + 1, upto));
            let file = s.path().join(format!("{name}-{n}.jsonl"));
            std::fs::write(&file, lines).unwrap();
            let copy = s.import(&file);
            let view = u(&s.json(&["stats", &copy])["total"]["view"]);
            assert_eq!(
                view,
                u(&c["budget"]["after"]),
                "{name}, firing {}: the view after it, recounted",
                n + 1
            );
        }
        let appended = s.append_json(
            &id,
            &as_imported(firings, firings.len(), records.len()),
            &[],
        );
        assert_eq!(u(&appended["appended"]), firings.len() as u64, "{name}");
        let shown = s.json(&["c", "show", &id]);
        let listed = shown["compactions"].as_array().unwrap();
        assert_eq!(listed.len(), firings.len(), "{name}");
        for (n, (c, l)) in firings.iter().zip(listed).enumerate() {
            // A firing a later one's summary covers whole is superseded
            // by it, and one that leaves the view as it would be without
            // it (an excerpt a firing's rule already made) has no effect:
            // `show` gives no figure of their ranges (the view of them is
            // the others' doing).
            if l["status"] != "active" {
                let at = format!("{name}, firing {}: {l}", n + 1);
                assert_eq!(l["changes_view"], false, "{at}");
                assert!(l.get("kept").is_none(), "{at}");
                if l["status"] != "no effect" {
                    let by = l["superseded_by"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("{at}"));
                    assert!(by != n as u64 + 1, "{at}");
                }
                continue;
            }
            assert_eq!(
                c["kept"],
                l["kept"],
                "{name}, firing {}: the replay's retention report differs from `c show`'s",
                n + 1
            );
        }
        let files: u64 = firings
            .iter()
            .map(|c| u(&c["kept"]["files"]["total"]))
            .sum();
        assert!(files > 0, "{name}: no firing's range acted on a file");
        // Everything the firings folded together, in the final view.
        let r = &report["retention"];
        let most = firings
            .iter()
            .map(|c| u(&c["kept"]["files"]["total"]))
            .max()
            .unwrap();
        assert!(
            (most..=files).contains(&u(&r["files"]["total"])),
            "{name}: {r}"
        );
        let (rt, st) = (u(&r["tokens"][0]), u(&r["tokens"][1]));
        assert!(rt > 0 && st < rt, "{name}: {r}");
        table.push_str(&format!(
            "| {} | {raw} | {w} | {} | {:.1}% | {:.1}% ({after} of {limit}) | {} | {} | {} | {:.1}% |\n",
            &name[..name.len().min(40)],
            firings.len(),
            100.0 * least as f64 / w as f64,
            100.0 * largest as f64 / w as f64,
            tally(&r["files"]),
            tally(&r["diagnostics"]),
            tally(&r["requests"]),
            100.0 * (1.0 - st as f64 / rt as f64),
            after = largest,
        ));
    }
    assert!(replayed > 0, "no corpus conversation over {LARGE} tokens");
    println!("{table}");
}
