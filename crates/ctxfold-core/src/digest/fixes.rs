//! What followed a diagnostic: a later clean run of the same (or a
//! broader) command and the edits before it, else a later edit of the
//! file it names. Read by the diagnostics and the "where it left off"
//! sections.

use std::collections::BTreeMap;

use serde_json::Value;

use super::arguments::CallKind;
use super::files::Files;
use super::scan::{Outcome, Scan};

/// Edits named before a clean run.
pub(super) const FIX_EDITS_MAX: usize = 3;
/// What followed a diagnostic in the range.
pub(super) struct Fix<'s> {
    /// A later clean run of the same command: its record index and turn.
    pub(super) clean: Option<(usize, u32)>,
    /// The files written after the diagnostic (before the clean run, when
    /// there is one), each once, in order.
    pub(super) edits: Vec<&'s str>,
    /// More edits than listed.
    pub(super) more_edits: usize,
    /// Turn of the first edit.
    pub(super) edit_turn: Option<u32>,
}

/// The file a location names (`src/x.rs:3:5` → `src/x.rs`).
pub(super) fn location_file(loc: &str) -> &str {
    let mut f = loc;
    for _ in 0..2 {
        if let Some((head, tail)) = f.rsplit_once(':')
            && !tail.is_empty()
            && tail.bytes().all(|b| b.is_ascii_digit())
        {
            f = head;
        }
    }
    f
}

pub(super) fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    a == b
        || (a.len() > b.len() && a.ends_with(b) && a.as_bytes()[a.len() - b.len() - 1] == b'/')
        || (b.len() > a.len() && b.ends_with(a) && b.as_bytes()[b.len() - a.len() - 1] == b'/')
}

/// Whether a later call's arguments are within an earlier one's: the same
/// value, or an object whose every field the earlier one has alike (a
/// broader run: `{"package": "a"}` within `{"package": "a", "test": "t"}`).
pub(super) fn within(later: &Value, earlier: &Value) -> bool {
    match (later, earlier) {
        (Value::Object(l), Value::Object(e)) => l.iter().all(|(k, v)| e.get(k) == Some(v)),
        _ => later == earlier,
    }
}

/// The fix that followed each diagnostic, where the range shows one: a
/// later clean run of the same command (and the edits before it), else a
/// later edit of the file the diagnostic names.
pub(super) fn fixes<'s>(scan: &Scan<'_>, files: &'s Files<'_>) -> Vec<Option<Fix<'s>>> {
    // Clean runs of commands by tool, in order.
    let mut clean: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, c) in scan.calls.iter().enumerate() {
        if c.kind == CallKind::Command && matches!(c.outcome, Some(Outcome::Ok | Outcome::Warnings))
        {
            clean.entry(c.name).or_default().push(i);
        }
    }
    let writes = &files.writes;
    scan.seen
        .iter()
        .map(|s| {
            let after = writes.partition_point(|w| w.idx <= s.last);
            let run = s.call.and_then(|c| {
                let failed = &scan.calls[c];
                if failed.kind != CallKind::Command {
                    return None;
                }
                let runs = clean.get(failed.name)?;
                let from = runs.partition_point(|&k| scan.calls[k].idx <= s.last);
                runs[from..]
                    .iter()
                    .map(|&k| &scan.calls[k])
                    .find(|later| within(&later.arguments, &failed.arguments))
            });
            if let Some(run) = run {
                let until = writes.partition_point(|w| w.idx < run.idx);
                let mut edits: Vec<&str> = Vec::new();
                for w in &writes[after..until.max(after)] {
                    if !edits.contains(&w.path.as_ref()) {
                        edits.push(&w.path);
                    }
                }
                let more_edits = edits.len().saturating_sub(FIX_EDITS_MAX);
                edits.truncate(FIX_EDITS_MAX);
                return Some(Fix {
                    clean: Some((run.idx, run.turn)),
                    edits,
                    more_edits,
                    edit_turn: None,
                });
            }
            let file = location_file(s.diag.location.as_deref()?);
            let w = writes[after..].iter().find(|w| same_file(&w.path, file))?;
            Some(Fix {
                clean: None,
                edits: vec![&w.path],
                more_edits: 0,
                edit_turn: Some(w.turn),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_name_their_file() {
        assert_eq!(location_file("src/x.rs:3:5"), "src/x.rs");
        assert_eq!(location_file("app.py:2"), "app.py");
        assert!(same_file("/home/u/p/src/x.rs", "src/x.rs"));
        assert!(!same_file("src/ax.rs", "x.rs"));
    }
}
