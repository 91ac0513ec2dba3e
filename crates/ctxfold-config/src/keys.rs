//! Dotted key paths: `compaction.auto.enabled`, `tools."*".compaction`,
//! `compaction.rules[1].keep_last` (array elements numbered from 1, as
//! people count rules).

use toml::{Table, Value};

/// `prefix.key`, quoting `key` when it is not a bare TOML key.
pub(crate) fn join(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let seg = if bare {
        key.to_owned()
    } else {
        Value::String(key.to_owned()).to_string()
    };
    if prefix.is_empty() {
        seg
    } else {
        format!("{prefix}.{seg}")
    }
}

/// `prefix[i+1]`: element `i` (0-based) of an array.
pub(crate) fn index(prefix: &str, i: usize) -> String {
    format!("{prefix}[{}]", i + 1)
}

/// Whether `key` is `path` or lies beneath it.
pub(crate) fn is_under(key: &str, path: &str) -> bool {
    key.strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// The segments of a dotted TOML key (`a.b`, `tools."*".compaction`), or
/// `None` when `key` is not one.
pub(crate) fn split(key: &str) -> Option<Vec<String>> {
    if key.contains(['\n', '\r']) {
        return None;
    }
    // Let toml read the key: `KEY = 0` must be one chain of single-entry
    // tables ending in the value, and so must `KEY = 1` (which rules out a
    // "key" that is really an assignment followed by a comment).
    let zero = chain(key, 0)?;
    (chain(key, 1)? == zero).then_some(zero)
}

fn chain(key: &str, n: i64) -> Option<Vec<String>> {
    let doc: Table = format!("{key} = {n}").parse().ok()?;
    let mut segs = Vec::new();
    let mut cur = &doc;
    loop {
        if cur.len() != 1 {
            return None;
        }
        let (k, v) = cur.iter().next()?;
        segs.push(k.clone());
        match v {
            Value::Table(t) => cur = t,
            Value::Integer(i) if *i == n => return Some(segs),
            _ => return None,
        }
    }
}

/// The leaves of a value as `(path, value)`, in order: scalars, empty
/// tables and arrays, and arrays holding no table are leaves; tables and
/// arrays of tables are walked.
pub(crate) fn leaves<'v>(v: &'v Value, path: &str, f: &mut dyn FnMut(&str, &'v Value)) {
    match v {
        Value::Table(t) if !t.is_empty() => {
            for (k, v) in t {
                leaves(v, &join(path, k), f);
            }
        }
        Value::Array(a) if a.iter().any(Value::is_table) => {
            for (i, v) in a.iter().enumerate() {
                leaves(v, &index(path, i), f);
            }
        }
        _ => f(path, v),
    }
}

/// The leaves of a whole table.
pub(crate) fn table_leaves<'v>(t: &'v Table, f: &mut dyn FnMut(&str, &'v Value)) {
    for (k, v) in t {
        leaves(v, &join("", k), f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_quotes_keys_that_are_not_bare() {
        assert_eq!(join("", "compaction"), "compaction");
        assert_eq!(join("tools", "*"), "tools.\"*\"");
        assert_eq!(join("tools", "my tool"), "tools.\"my tool\"");
        assert_eq!(join("tools", "a\"b"), "tools.'a\"b'");
        assert_eq!(join("a", ""), "a.\"\"");
        assert_eq!(index("compaction.rules", 0), "compaction.rules[1]");
    }

    #[test]
    fn split_reads_toml_keys_and_refuses_the_rest() {
        let s = |k: &str| split(k).map(|v| v.join("|"));
        assert_eq!(
            s("compaction.auto.enabled").as_deref(),
            Some("compaction|auto|enabled")
        );
        assert_eq!(
            s("tools.\"*\".compaction").as_deref(),
            Some("tools|*|compaction")
        );
        assert_eq!(s(" tools . 'a.b' ").as_deref(), Some("tools|a.b"));
        for bad in [
            "", ".", "a.", "a = 0 #", "a = 1\nb", "[x]", "a[1]", "a = {b",
        ] {
            assert_eq!(s(bad), None, "{bad:?}");
        }
        // Whatever split accepts, join writes back the same segments.
        let segs = split("tools.\"a b\".compaction").unwrap();
        let joined = segs.iter().fold(String::new(), |acc, s| join(&acc, s));
        assert_eq!(split(&joined), Some(segs));
    }

    #[test]
    fn is_under_respects_segment_boundaries() {
        assert!(is_under("compaction.rules", "compaction.rules"));
        assert!(is_under(
            "compaction.rules[1].keep_last",
            "compaction.rules"
        ));
        assert!(is_under("tools.a.compaction", "tools.a"));
        assert!(!is_under("tools.ab.compaction", "tools.a"));
        assert!(!is_under("compaction", "compaction.rules"));
    }

    #[test]
    fn leaves_walk_tables_and_arrays_of_tables_only() {
        let t: Table = "a = [1, 2]\nb = []\nc = {}\n[[d]]\nx = 1\n[[d]]\n[e.f]\ng = \"h\"\n"
            .parse()
            .unwrap();
        let mut got = Vec::new();
        table_leaves(&t, &mut |p, _| got.push(p.to_owned()));
        assert_eq!(got, ["a", "b", "c", "d[1].x", "d[2]", "e.f.g"]);
    }
}
