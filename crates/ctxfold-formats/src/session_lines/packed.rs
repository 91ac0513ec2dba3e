//! A session's records packed while `ctxfold compact FILE` holds them all
//! (issue 48): the hints each keeps of its line, and the fields of a line
//! kept whole, as JSON text rather than a tree several times its size;
//! unpacked one record at a time as the export writes it.

use ctxfold_core::{Body, Object, Record};
use serde_json::Value;

/// Where a record keeps its hints under `key` as their JSON text while
/// packed ([`pack`]).
pub(super) fn packed_key(key: &str) -> String {
    format!("{key}~packed")
}

/// The field an opaque record of the agent's kind keeps its fields in, as
/// their JSON text, while packed.
pub(super) const PACKED_FIELDS: &str = "~packed";

/// Hold `r`'s hints under `key` (and, for a record keeping a line whole,
/// its fields) as their JSON text rather than as a JSON tree, which takes
/// several times the text's memory: what a long session's records are
/// packed into while `ctxfold compact FILE` holds them all, the compaction
/// reading none of it. [`unpacked`] gives them back. A tree whose text
/// would not read back as the same tree (a float serde_json does not
/// round-trip) stays a tree.
pub(crate) fn pack(r: &mut Record, key: &str) {
    if let Some(Value::Object(h)) = r.extra.get(key)
        && let Some(text) = packed_text(h)
    {
        // A map of exactly its size: the records are many, and a map grown
        // one key at a time has room for several.
        let mut extra = Object::with_capacity(r.extra.len());
        let mut text = Some(text);
        for (k, v) in std::mem::take(&mut *r.extra) {
            match text.take_if(|_| k == key) {
                Some(t) => extra.insert(packed_key(key), Value::String(t)),
                None => extra.insert(k, v),
            };
        }
        r.extra = extra.into();
    }
    if let Body::Other { kind, fields } = &mut r.body
        && kind == key
        && !fields.is_empty()
        && let Some(text) = packed_text(fields)
    {
        let mut o = Object::with_capacity(1);
        o.insert(PACKED_FIELDS.into(), Value::String(text));
        **fields = o;
    }
}

/// `o` as JSON text, if it reads back as `o`.
fn packed_text(o: &Object) -> Option<String> {
    fn has_float(v: &Value) -> bool {
        match v {
            Value::Number(n) => n.is_f64(),
            Value::Array(a) => a.iter().any(has_float),
            Value::Object(o) => o.values().any(has_float),
            _ => false,
        }
    }
    let mut text = serde_json::to_string(o).ok()?;
    text.shrink_to_fit();
    if o.values().any(has_float) && serde_json::from_str::<Object>(&text).ok().as_ref() != Some(o) {
        return None;
    }
    Some(text)
}

/// `r` with its hints under `key` unpacked ([`pack`]), when they were
/// packed.
pub(crate) fn unpacked(r: &Record, key: &str) -> Option<Record> {
    let packed = r.extra.get(&packed_key(key)).and_then(Value::as_str);
    let fields = match &r.body {
        Body::Other { kind, fields } if kind == key => {
            fields.get(PACKED_FIELDS).and_then(Value::as_str)
        }
        _ => None,
    };
    if packed.is_none() && fields.is_none() {
        return None;
    }
    let mut out = r.clone();
    if let Some(text) = packed
        && let Ok(h) = serde_json::from_str::<Object>(text)
    {
        out.extra.shift_remove(&packed_key(key));
        out.extra.insert(key.to_owned(), Value::Object(h));
    }
    if let (Some(text), Body::Other { fields, .. }) = (fields, &mut out.body)
        && let Ok(o) = serde_json::from_str::<Object>(text)
    {
        **fields = o;
    }
    Some(out)
}
