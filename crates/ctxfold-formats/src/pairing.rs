//! Tool-call ids on import: repeated ids and results without a call.
//!
//! The projection pairs a result with its call by id, so two calls sharing
//! an id (some models number calls per step) would lose one call and one
//! result from the view. The chat formats make every repeated call's id
//! unique instead: the first call keeps its id, later ones get
//! `ID_2`, `ID_3`, … (a suffix no other id in the transcript uses, in the
//! alphabet every format accepts: Anthropic wants `^[a-zA-Z0-9_-]+$`), and
//! results pair by position: each takes the id of the earliest call of its
//! id that has no result yet, so parallel calls and their results, both in
//! order, pair first with first and second with second. The original id is
//! kept in metadata `{format}_original_id`, so an export to the format it
//! came from writes the transcript back as it was; other formats get the
//! unique ids (Anthropic refuses two `tool_use` blocks with one id). A
//! result that no call answers is kept and reported: a compacted view
//! leaves it out.

use std::collections::{HashMap, HashSet, VecDeque};

use ctxfold_core::{Body, Record};
use serde_json::Value;

use crate::chat::{meta, set_meta};

/// The metadata key holding a renamed id's original, for `prefix`.
pub(crate) fn original_key(prefix: &str) -> String {
    format!("{prefix}_original_id")
}

/// The id to write for `r`, whose id in ctxfold is `id`.
pub(crate) fn export_id<'a>(r: &'a Record, id: &'a str, prefix: &str) -> &'a str {
    match meta(r, &original_key(prefix)) {
        Some(Value::String(orig)) => orig,
        _ => id,
    }
}

/// Make repeated call ids unique and pair results by position (see the
/// module docs); `prefix` `None` only reports (JP, whose export must stay byte-exact). Warnings go to `warnings`.
pub(crate) fn pair(records: &mut [Record], prefix: Option<&str>, warnings: &mut Vec<String>) {
    let mut calls_of: HashMap<String, usize> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    for r in records.iter() {
        match &r.body {
            Body::ToolCall { id, .. } => {
                *calls_of.entry(id.clone()).or_default() += 1;
                taken.insert(id.clone());
            }
            Body::ToolResult { id, .. } => {
                taken.insert(id.clone());
            }
            _ => {}
        }
    }
    // Calls of each original id still waiting for a result: their ids.
    let mut open: HashMap<String, VecDeque<String>> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut renamed: Vec<(String, Vec<String>)> = Vec::new();
    let mut orphans: Vec<String> = Vec::new();
    let mut second_results: Vec<String> = Vec::new();
    for r in records.iter_mut() {
        match &mut r.body {
            Body::ToolCall { id, .. } => {
                let original = id.clone();
                let n = seen.entry(original.clone()).or_default();
                *n += 1;
                let unique = match prefix {
                    Some(prefix) if *n > 1 => {
                        let mut k = *n;
                        let mut fresh = format!("{original}_{k}");
                        while taken.contains(&fresh) {
                            k += 1;
                            fresh = format!("{original}_{k}");
                        }
                        taken.insert(fresh.clone());
                        *id = fresh.clone();
                        set_meta(r, &original_key(prefix), Value::String(original.clone()));
                        match renamed.iter_mut().find(|(o, _)| *o == original) {
                            Some((_, v)) => v.push(fresh.clone()),
                            None => renamed.push((original.clone(), vec![fresh.clone()])),
                        }
                        fresh
                    }
                    _ => original.clone(),
                };
                open.entry(original).or_default().push_back(unique);
            }
            Body::ToolResult { id, .. } => {
                let original = id.clone();
                match open.get_mut(&original).and_then(VecDeque::pop_front) {
                    Some(unique) => {
                        if unique != original
                            && let Some(prefix) = prefix
                        {
                            *id = unique;
                            set_meta(r, &original_key(prefix), Value::String(original));
                        }
                    }
                    None if calls_of.contains_key(&original) => second_results.push(original),
                    None => orphans.push(original),
                }
            }
            _ => {}
        }
    }
    let format = match prefix {
        Some("openai") => "OpenAI",
        Some("anthropic") => "Anthropic",
        Some(other) => other,
        None => "",
    };
    for (id, fresh) in renamed {
        let n = calls_of.get(&id).copied().unwrap_or(0);
        let names = fresh
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ");
        warnings.push(format!(
            "tool call id `{id}` is used by {n} calls: all kept, the later ones as {names} (an export to {format} writes `{id}` back, other formats keep the unique ids); results are paired with those calls in order"
        ));
    }
    if prefix.is_none() {
        for (id, n) in calls_of.iter().filter(|(_, n)| **n > 1) {
            warnings.push(format!(
                "tool call id `{id}` is used by {n} calls; the view pairs each result with the latest call of that id, leaving the others out"
            ));
        }
    }
    for id in orphans {
        warnings.push(format!(
            "a tool result for `{id}` has no tool call before it: kept, but a compacted view leaves it out"
        ));
    }
    for id in second_results {
        warnings.push(format!(
            "a tool result for `{id}` answers a call that already has a result: kept, but a compacted view leaves it out"
        ));
    }
}

/// [`pair`] as records come, one at a time, for a session file read line
/// by line: a call whose id an earlier call already has (as its own or as
/// the id it was given) gets `ID_2`, `ID_3`, … (a suffix no id read so far
/// uses), results pair with the open calls of their id in order, and the
/// warnings are [`pair`]'s, said once every record is in. Only what pairing
/// needs is kept (ids, not records).
pub(crate) struct Pairing {
    prefix: &'static str,
    /// Calls of each original id so far.
    calls_of: HashMap<String, usize>,
    /// Every id read or given so far.
    taken: HashSet<String>,
    /// Ids given to calls.
    given: HashSet<String>,
    /// Calls of each original id still waiting for a result: their ids.
    open: HashMap<String, VecDeque<String>>,
    renamed: Vec<(String, Vec<String>)>,
    /// Results no open call answered, in order.
    unanswered: Vec<String>,
}

impl Pairing {
    /// For records whose renamed ids keep their original in metadata
    /// `{prefix}_original_id`.
    pub(crate) fn new(prefix: &'static str) -> Pairing {
        Pairing {
            prefix,
            calls_of: HashMap::new(),
            taken: HashSet::new(),
            given: HashSet::new(),
            open: HashMap::new(),
            renamed: Vec::new(),
            unanswered: Vec::new(),
        }
    }

    /// Pair the next record.
    pub(crate) fn push(&mut self, r: &mut Record) {
        match &mut r.body {
            Body::ToolCall { id, .. } => {
                let original = id.clone();
                let n = self.calls_of.entry(original.clone()).or_default();
                *n += 1;
                let n = *n;
                self.taken.insert(original.clone());
                let unique = if n > 1 || self.given.contains(&original) {
                    let mut k = n.max(2);
                    let mut fresh = format!("{original}_{k}");
                    while self.taken.contains(&fresh) {
                        k += 1;
                        fresh = format!("{original}_{k}");
                    }
                    self.taken.insert(fresh.clone());
                    self.given.insert(fresh.clone());
                    *id = fresh.clone();
                    set_meta(
                        r,
                        &original_key(self.prefix),
                        Value::String(original.clone()),
                    );
                    match self.renamed.iter_mut().find(|(o, _)| *o == original) {
                        Some((_, v)) => v.push(fresh.clone()),
                        None => self.renamed.push((original.clone(), vec![fresh.clone()])),
                    }
                    fresh
                } else {
                    original.clone()
                };
                self.open.entry(original).or_default().push_back(unique);
            }
            Body::ToolResult { id, .. } => {
                let original = id.clone();
                self.taken.insert(original.clone());
                let unique = match self.open.get_mut(&original) {
                    Some(q) => {
                        let u = q.pop_front();
                        if q.is_empty() {
                            self.open.remove(&original);
                        }
                        u
                    }
                    None => None,
                };
                match unique {
                    Some(unique) => {
                        if unique != original {
                            *id = unique;
                            set_meta(r, &original_key(self.prefix), Value::String(original));
                        }
                    }
                    None => self.unanswered.push(original),
                }
            }
            _ => {}
        }
    }

    /// The warnings [`pair`] gives, to `warnings`.
    pub(crate) fn finish(self, warnings: &mut Vec<String>) {
        for (id, fresh) in self.renamed {
            let n = self.calls_of.get(&id).copied().unwrap_or(0);
            let names = fresh
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ");
            warnings.push(format!(
                "tool call id `{id}` is used by {n} calls: all kept, the later ones as {names} (an export to {} writes `{id}` back, other formats keep the unique ids); results are paired with those calls in order",
                self.prefix
            ));
        }
        let (second, orphans): (Vec<String>, Vec<String>) = self
            .unanswered
            .into_iter()
            .partition(|id| self.calls_of.contains_key(id));
        for id in orphans {
            warnings.push(format!(
                "a tool result for `{id}` has no tool call before it: kept, but a compacted view leaves it out"
            ));
        }
        for id in second {
            warnings.push(format!(
                "a tool result for `{id}` answers a call that already has a result: kept, but a compacted view leaves it out"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: Value::Null.into(),
        }
    }
    fn result(id: &str, content: &str) -> Body {
        Body::ToolResult {
            id: id.into(),
            content: content.into(),
            is_error: false,
        }
    }
    fn ids(records: &[Record]) -> Vec<&str> {
        records
            .iter()
            .filter_map(|r| match &r.body {
                Body::ToolCall { id, .. } | Body::ToolResult { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn repeated_ids_become_unique_and_results_pair_with_open_calls_in_order() {
        // `c1_2` is taken by another call already: the suffix skips it.
        let bodies = [
            call("c1"),
            call("c1"),
            call("c1_2"),
            result("c1", "second"),
            result("c1_2", "third"),
            result("c1", "first"),
            call("c1"),
            result("c1", "fourth"),
        ];
        let mut recs: Vec<Record> = bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| Record::new(i as u64, "", b))
            .collect();
        let mut w = Vec::new();
        pair(&mut recs, Some("openai"), &mut w);
        assert_eq!(
            ids(&recs),
            ["c1", "c1_3", "c1_2", "c1", "c1_2", "c1_3", "c1_4", "c1_4"]
        );
        assert_eq!(export_id(&recs[1], "c1_3", "openai"), "c1");
        // Another format's export keeps the unique id.
        assert_eq!(export_id(&recs[1], "c1_3", "anthropic"), "c1_3");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("`c1` is used by 3 calls"), "{w:?}");
    }

    #[test]
    fn results_without_a_call_are_reported_and_kept_on_the_chat_path_too() {
        // The OpenAI/Anthropic path renames repeated calls; results with no
        // open call must still be reported, and left as they are.
        let mut recs = vec![
            Record::new(0, "", result("x", "?")),
            Record::new(1, "", call("y")),
            Record::new(2, "", result("y", "ok")),
            Record::new(3, "", result("y", "again")),
            Record::new(4, "", call("z")),
            Record::new(5, "", call("z")),
            Record::new(6, "", result("z", "one")),
            Record::new(7, "", result("z", "two")),
            Record::new(8, "", result("z", "three")),
        ];
        let mut w = Vec::new();
        pair(&mut recs, Some("openai"), &mut w);
        assert_eq!(
            ids(&recs),
            ["x", "y", "y", "y", "z", "z_2", "z", "z_2", "z"]
        );
        for i in [0, 3, 8] {
            assert_eq!(meta(&recs[i], &original_key("openai")), None, "{i}");
        }
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].contains("`z` is used by 2 calls"), "{w:?}");
        assert!(w[1].contains("`x` has no tool call"), "{w:?}");
        let again: Vec<_> = w[2..]
            .iter()
            .filter(|m| m.contains("answers a call that already has a result"))
            .collect();
        assert_eq!(again.len(), 2, "{w:?}");
        assert!(
            again[0].contains("`y`") && again[1].contains("`z`"),
            "{w:?}"
        );
    }

    #[test]
    fn results_without_a_call_are_reported() {
        let mut recs = vec![
            Record::new(0, "", result("x", "?")),
            Record::new(1, "", call("y")),
            Record::new(2, "", result("y", "ok")),
            Record::new(3, "", result("y", "again")),
        ];
        let mut w = Vec::new();
        pair(&mut recs, None, &mut w);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("`x` has no tool call"), "{w:?}");
        assert!(w[1].contains("`y` answers a call that already has a result"));
    }
}
