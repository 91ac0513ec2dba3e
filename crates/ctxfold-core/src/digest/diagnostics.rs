//! The digest's "Diagnostics (from tool output)" section: one entry per
//! distinct failure with the fix that followed. The diagnostics
//! themselves are recognized by [`crate::diagnostics`].

use std::fmt::Write as _;

use super::fixes::Fix;
use super::scan::{Scan, Seen};

/// At most this many distinct failures (each a headline with the other
/// errors of its result), the latest.
pub(super) const DIAGNOSTICS_MAX: usize = 40;
/// A fix, as a diagnostic's line ends: ` → then …`.
pub(super) fn fix_note(s: &Seen<'_>, fix: &Fix<'_>) -> String {
    let edits = |fix: &Fix<'_>| {
        let mut list: Vec<String> = fix.edits.iter().map(|p| format!("`{p}`")).collect();
        if fix.more_edits > 0 {
            list.push(format!("{} more", fix.more_edits));
        }
        list.join(", ")
    };
    match fix.clean {
        Some((_, turn)) => {
            let tool = s.tool;
            if fix.edits.is_empty() {
                format!(
                    " → later {tool} ran again with no diagnostic recognized (turn {})",
                    turn + 1
                )
            } else {
                format!(
                    " → then edited {}; {tool} ran again with no diagnostic recognized (turn {})",
                    edits(fix),
                    turn + 1
                )
            }
        }
        None => format!(
            " → then edited {} (turn {})",
            edits(fix),
            fix.edit_turn.map_or(0, |t| t + 1)
        ),
    }
}

pub(super) fn section_diagnostics(scan: &Scan<'_>, fixes: &[Option<Fix<'_>>]) -> String {
    let mut out = String::new();
    if scan.seen.is_empty() {
        return out;
    }
    // One entry per failure (a headline with its result's other errors);
    // over the cap, the latest.
    let mut shown: Vec<usize> = (0..scan.seen.len()).collect();
    if shown.len() > DIAGNOSTICS_MAX {
        let mut by_priority = shown.clone();
        by_priority.sort_by_key(|&i| std::cmp::Reverse(scan.seen[i].last));
        by_priority.truncate(DIAGNOSTICS_MAX);
        by_priority.sort_unstable();
        shown = by_priority;
    }
    out.push_str("## Diagnostics (from tool output)\n");
    let hidden = scan.seen.len() - shown.len();
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        let _ = writeln!(out, "- ({hidden} earlier diagnostic{s} not shown)");
    }
    for i in shown {
        let s = &scan.seen[i];
        let times = if s.count > 1 {
            format!(", ×{}", s.count)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "- {} (turn {}{times}): {}",
            s.tool,
            s.last_turn + 1,
            s.diag.text
        );
        // Not "; ": a headline often ends with its own full stop.
        for d in &s.also {
            let _ = write!(out, " | {}", d.text);
        }
        if let Some(fix) = &fixes[i] {
            out.push_str(&fix_note(s, fix));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::fixtures::{build, call, digest_all, result, said, section, user};
    use crate::text::collapse;
    use serde_json::json;

    #[test]
    fn diagnostics_come_from_every_result_with_the_fix_that_followed() {
        let panic = "running 2 tests\ntest p::t ... FAILED\n\nthread 'p::t' panicked at src/p.rs:9:5:\nassertion failed: ok\ntest result: FAILED. 1 passed; 1 failed\n";
        let log = build(vec![
            user("make the tests pass"),
            // Not flagged as an error, but a test failed.
            call("1", "cargo_test", json!({"package": "p", "testname": "t"})),
            result("1", panic, false),
            call("2", "cargo_check", json!({})),
            result(
                "2",
                "error[E0425]: cannot find value `y` in this scope\n --> src/q.rs:3:5\n",
                false,
            ),
            call(
                "3",
                "fs_modify_file",
                json!({"path": "src/p.rs", "patterns": [{"old": "a", "new": "b"}]}),
            ),
            result("3", "ok", false),
            call(
                "4",
                "fs_modify_file",
                json!({"path": "./src/q.rs", "patterns": []}),
            ),
            result("4", "ok", false),
            // A broader run of the same command comes out clean.
            call("5", "cargo_test", json!({"package": "p"})),
            result("5", "test result: ok. 2 passed", false),
            call("6", "cargo_test", json!({"package": "other"})),
            result("6", "error: no tests to run\n", false),
            call("7", "cargo_test", json!({"package": "other"})),
            result("7", "error: no tests to run\n", false),
            said("Done."),
        ]);
        let text = digest_all(&log);
        assert_eq!(
            section(&text, "Diagnostics (from tool output)"),
            [
                // One failed run, one entry: the failing test, its panic
                // (with the test's thread) and the run's tally.
                "- cargo_test (turn 1): test p::t ... FAILED | thread 'p::t' panicked at src/p.rs:9:5: assertion failed: ok | test result: FAILED. 1 passed; 1 failed → then edited `src/p.rs`, `./src/q.rs`; cargo_test ran again with no diagnostic recognized (turn 1)",
                "- cargo_check (turn 1): error[E0425]: cannot find value `y` in this scope (src/q.rs:3:5) → then edited `./src/q.rs` (turn 1)",
                "- cargo_test (turn 1, ×2): error: no tests to run",
            ],
            "{text}"
        );
        assert!(text.contains("- Ran cargo_test `package=p testname=t` (turn 1): failed\n"));
        assert!(text.contains(
            "- Open: 1 command error with no fix seen after its last run (latest, turn 1: error: no tests to run).\n"
        ));
        // What the retention report counts is all there.
        let facts = crate::kept::facts(&log, 0, log.len() - 1);
        let k = crate::kept::kept(&facts, &collapse(&text));
        assert_eq!(
            k.diagnostics.kept, k.diagnostics.total,
            "{:?}",
            k.diagnostics.lost
        );
        // Every distinct one: the failing test, its panic, the run's
        // tally, the compiler error and the empty run.
        assert_eq!(k.diagnostics.total, 5);
    }

    #[test]
    fn diagnostics_are_capped_keeping_the_latest() {
        let mut bodies = vec![user("try")];
        for i in 0..DIAGNOSTICS_MAX + 20 {
            let id = i.to_string();
            bodies.push(call(&id, "run", json!({})));
            bodies.push(result(&id, &format!("boom {i}\nmore"), true));
        }
        let text = digest_all(&build(bodies));
        let lines = section(&text, "Diagnostics (from tool output)");
        assert_eq!(lines[0], "- (20 earlier diagnostics not shown)");
        assert_eq!(lines.len(), 1 + DIAGNOSTICS_MAX);
        assert_eq!(lines[1], "- run (turn 1): boom 20");
        assert_eq!(
            lines.last().unwrap(),
            &format!("- run (turn 1): boom {}", DIAGNOSTICS_MAX + 19)
        );
    }
}
