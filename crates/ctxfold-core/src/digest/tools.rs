//! The calls of a range counted once (`Tally`), each distinct command's
//! label and runs, and the "Tools and commands" section that prints them,
//! so that every count the digest prints agrees.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::text::truncate_words;

use super::arguments::{CallKind, KeyClass, classify, walk_strings};
use super::scan::{Call, Outcome, Scan};

/// At most this many distinct commands (the latest).
pub(super) const COMMANDS_MAX: usize = 30;
/// A command is cut to this many characters.
pub(super) const COMMAND_CHARS: usize = 100;
/// An argument value in a command's label is cut to this many characters.
pub(super) const ARG_CHARS: usize = 40;
/// The calls of a range counted once: every number of calls, failures and
/// runs the digest prints is read from here, so the totals, the per-tool
/// counts and the per-command counts agree.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) calls: usize,
    /// Calls whose outcome is [`Outcome::Failed`]: the tool said so, or its
    /// output holds an error (the same word as a command's "failed").
    pub(super) failed: usize,
    /// Calls and failed calls per tool name.
    pub(super) by_tool: BTreeMap<String, (usize, usize)>,
    /// Each distinct command (by its label) and its runs, in order of first
    /// run.
    pub(super) commands: Vec<(String, Runs)>,
}

impl Tally {
    pub(super) fn new(calls: &[Call<'_>]) -> Self {
        let mut out = Tally::default();
        let mut by_label: BTreeMap<String, usize> = BTreeMap::new();
        for c in calls {
            let failed = c.outcome == Some(Outcome::Failed);
            out.calls += 1;
            out.failed += usize::from(failed);
            let t = out.by_tool.entry(c.name.to_owned()).or_default();
            t.0 += 1;
            t.1 += usize::from(failed);
            if c.kind != CallKind::Command {
                continue;
            }
            let label = command_label(c);
            let i = *by_label.entry(label.clone()).or_insert_with(|| {
                out.commands.push((
                    label,
                    Runs {
                        first_turn: c.turn,
                        ..Runs::default()
                    },
                ));
                out.commands.len() - 1
            });
            let r = &mut out.commands[i].1;
            r.last_turn = c.turn;
            r.last = Some(c.outcome);
            match c.outcome {
                Some(Outcome::Failed) => r.failed += 1,
                Some(Outcome::Ok) => r.ok += 1,
                Some(Outcome::Warnings) => r.warnings += 1,
                None => r.no_result += 1,
            }
        }
        out
    }
}

/// A command's label: its command string, else its scalar arguments.
pub(super) fn command_label(call: &Call<'_>) -> String {
    let mut command: Option<&str> = None;
    walk_strings(&call.arguments, KeyClass::Other, &mut |class, s| {
        if class == KeyClass::Command && command.is_none() && !s.trim().is_empty() {
            command = Some(s);
        }
    });
    if let Some(c) = command {
        let line = c.trim().lines().next().unwrap_or_default();
        let more = if c.trim().contains('\n') { " …" } else { "" };
        return format!(
            "{} `{}{more}`",
            call.name,
            truncate_words(line, COMMAND_CHARS)
        );
    }
    let mut args: Vec<String> = Vec::new();
    if let Value::Object(map) = &call.arguments {
        for (k, v) in map {
            if matches!(classify(k), KeyClass::Content) {
                continue;
            }
            let v = match v {
                Value::String(s) if !s.contains('\n') => truncate_words(s.trim(), ARG_CHARS),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            args.push(format!("{k}={v}"));
        }
    }
    if args.is_empty() {
        call.name.to_owned()
    } else {
        format!("{} `{}`", call.name, args.join(" "))
    }
}

/// One distinct command and its runs.
#[derive(Default)]
pub(super) struct Runs {
    pub(super) first_turn: u32,
    pub(super) last_turn: u32,
    pub(super) failed: usize,
    pub(super) ok: usize,
    pub(super) warnings: usize,
    pub(super) no_result: usize,
    pub(super) last: Option<Option<Outcome>>,
}

pub(super) fn section_tools(scan: &Scan<'_>) -> String {
    let mut out = String::new();
    let tally = &scan.tally;
    if tally.calls == 0 {
        return out;
    }
    out.push_str("## Tools and commands\n");
    let list: Vec<String> = tally
        .by_tool
        .iter()
        .map(|(name, &(n, failed))| match failed {
            0 => format!("{name} ×{n}"),
            f => format!("{name} ×{n} ({f} failed)"),
        })
        .collect();
    let (calls, failed) = (tally.calls, tally.failed);
    let s = if calls == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "- Calls: {} ({calls} call{s}, {failed} failed)",
        list.join(", ")
    );

    let hidden = tally.commands.len().saturating_sub(COMMANDS_MAX);
    if hidden > 0 {
        let s = if hidden == 1 { "" } else { "s" };
        let _ = writeln!(out, "- ({hidden} earlier command{s} not shown)");
    }
    let word = |o: Option<Outcome>| match o {
        Some(Outcome::Failed) => "failed",
        Some(Outcome::Ok) => "ok",
        Some(Outcome::Warnings) => "ok with warnings",
        None => "no result yet",
    };
    for (label, r) in tally.commands.iter().skip(hidden) {
        let n = r.failed + r.ok + r.warnings + r.no_result;
        let turns = if r.first_turn == r.last_turn {
            format!("turn {}", r.first_turn + 1)
        } else {
            format!("turns {}–{}", r.first_turn + 1, r.last_turn + 1)
        };
        let last = r.last.flatten();
        if n == 1 {
            let _ = writeln!(out, "- Ran {label} ({turns}): {}", word(last));
            continue;
        }
        let mut counts: Vec<String> = Vec::new();
        for (k, what) in [
            (r.failed, "failed"),
            (r.ok, "ok"),
            (r.warnings, "ok with warnings"),
            (r.no_result, "no result yet"),
        ] {
            if k > 0 {
                counts.push(format!("{k} {what}"));
            }
        }
        let _ = writeln!(
            out,
            "- Ran {label} ×{n} ({turns}): {}; last {}",
            counts.join(", "),
            word(last)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::digest::fixtures::{build, call, digest_all, result, sample, section, user};
    use serde_json::json;

    #[test]
    fn tools_are_counted_and_commands_named_with_their_outcome() {
        let text = digest_all(&sample());
        assert_eq!(
            section(&text, "Tools and commands"),
            [
                "- Calls: cargo_check ×1 (1 failed), cargo_test ×1, fs_modify_file ×1, fs_read_file ×1 (4 calls, 1 failed)",
                "- Ran cargo_check `package=auth` (turn 1): failed",
                "- Ran cargo_test `package=auth testname=login` (turn 2): no result yet",
            ]
        );
        let mut bodies = vec![user("test it")];
        for (i, out) in [
            "ok",
            "test a ... FAILED",
            "warning: unused import: `x`",
            "ok",
        ]
        .iter()
        .enumerate()
        {
            let id = i.to_string();
            bodies.push(call(&id, "cargo_test", json!({"package": "p"})));
            bodies.push(result(&id, out, false));
        }
        let text = digest_all(&build(bodies));
        assert!(
            text.contains(
                "- Ran cargo_test `package=p` ×4 (turn 1): 1 failed, 2 ok, 1 ok with warnings; last ok\n"
            ),
            "{text}"
        );
    }
}
