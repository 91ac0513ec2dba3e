//! A long session's packed hints held apart from its records, compressed,
//! while `ctxfold compact FILE` holds every record (issue 48).

use std::cell::RefCell;
use std::io::{Read, Write};

use ctxfold_core::{Body, Record};
use serde_json::Value;

use super::packed::{PACKED_FIELDS, packed_key};

/// What [`Aside`] holds of one record.
#[derive(Clone, Copy)]
enum Held {
    Nothing,
    /// Its packed hints, its only extra field.
    Hints,
    /// The packed fields of its line, kept whole.
    Fields,
}

/// Texts are gathered into chunks of about this size, each compressed
/// once full: the hints of a session's lines repeat the same keys and
/// values line after line (the session's id, its folder, the agent's
/// version), so they compress several times over, and a chunk is large
/// enough for that and small enough to inflate again for each record
/// written from it.
const CHUNK: usize = 1 << 20;

/// A long session's packed hints held apart from its records, by the
/// record's place in the session (issue 48): while `ctxfold compact FILE`
/// holds the records the compaction reads none of them, and a record
/// copied for the report or made into the output need not copy them.
/// Held compressed, in chunks, with 5 bytes of bookkeeping a record
/// instead of a map of its own; [`Aside::restore`] puts them back into a
/// record as it is written (records are written in the session's order,
/// so each chunk is inflated about once a pass).
pub struct Aside {
    key: &'static str,
    /// The chunks filled, compressed.
    sealed: Vec<Box<[u8]>>,
    /// The chunk being filled.
    open: String,
    /// By record: where its text ends in its chunk (it starts where the
    /// record before it ends, or at its chunk's start), and what it was.
    ends: Vec<u32>,
    held: Vec<Held>,
    /// The first record of each chunk after the first.
    firsts: Vec<u32>,
    /// The last chunk inflated, by number.
    inflated: RefCell<Option<(u32, String)>>,
}

impl Aside {
    /// Nothing set aside yet, for the hints under `key`.
    pub(crate) fn new(key: &'static str) -> Aside {
        Aside {
            key,
            sealed: Vec::new(),
            open: String::new(),
            ends: Vec::new(),
            held: Vec::new(),
            firsts: Vec::new(),
            inflated: RefCell::new(None),
        }
    }

    /// Take the packed text out of `r` ([`super::pack`]ed), the next
    /// record of the session: the hints when they are its only extra
    /// field, or the packed fields of a line kept whole. Anything else
    /// stays in `r`.
    pub(crate) fn take(&mut self, r: &mut Record) {
        let hints = packed_key(self.key);
        // Offsets are u32: a text over 4 GiB (no agent writes such a line)
        // stays in its record.
        let small = |v: &Value| v.as_str().is_some_and(|t| u32::try_from(t.len()).is_ok());
        let held = if r.extra.len() == 1 && r.extra.get(&hints).is_some_and(small) {
            Held::Hints
        } else if let Body::Other { kind, fields } = &r.body
            && kind == self.key
            && fields.len() == 1
            && fields.get(PACKED_FIELDS).is_some_and(small)
        {
            Held::Fields
        } else {
            Held::Nothing
        };
        let text = match held {
            Held::Hints => {
                ctxfold_core::Object::from(std::mem::take(&mut r.extra)).shift_remove(&hints)
            }
            // The map replaced by an empty one, not emptied: an emptied map
            // keeps its room (a third of the records of a Codex session keep
            // a line whole).
            Held::Fields => match &mut r.body {
                Body::Other { fields, .. } => {
                    std::mem::take(&mut **fields).shift_remove(PACKED_FIELDS)
                }
                _ => None,
            },
            Held::Nothing => None,
        };
        let held = match text {
            Some(Value::String(t)) => {
                if !self.open.is_empty() && self.open.len() + t.len() > CHUNK {
                    self.seal();
                    // Records are fewer than 4 Gi: their vector is in memory.
                    self.firsts.push(self.ends.len() as u32);
                }
                self.open.push_str(&t);
                held
            }
            _ => Held::Nothing,
        };
        // Within u32: a chunk is 1 MiB or one text, which `take` checked.
        self.ends.push(self.open.len() as u32);
        self.held.push(held);
    }

    /// Compress the chunk being filled and start another.
    fn seal(&mut self) {
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        // Writing to a Vec cannot fail.
        let _ = z.write_all(self.open.as_bytes());
        let packed = z.finish().unwrap_or_default();
        self.sealed.push(packed.into_boxed_slice());
        self.open.clear();
    }

    /// Put back into `r` what `Aside::take` took out of the session's
    /// record at `index` (its place in the session, 0-based): `r` is that
    /// record or one made from it. Nothing for an index past the
    /// session's records (a compaction the run appended).
    pub fn restore(&self, r: &mut Record, index: usize) {
        let Some(&held) = self.held.get(index) else {
            return;
        };
        if matches!(held, Held::Nothing) {
            return;
        }
        let Some(text) = self.text(index) else {
            return;
        };
        let text = Value::String(text);
        match held {
            Held::Nothing => {}
            Held::Hints => {
                r.extra.insert(packed_key(self.key), text);
            }
            Held::Fields => {
                if let Body::Other { fields, .. } = &mut r.body {
                    fields.insert(PACKED_FIELDS.into(), text);
                }
            }
        }
    }

    /// The text of record `index`, from the chunk being filled or a sealed
    /// one inflated (kept until another is asked for).
    fn text(&self, index: usize) -> Option<String> {
        let chunk = self.firsts.partition_point(|&f| f as usize <= index);
        let first = match chunk {
            0 => 0,
            c => self.firsts[c - 1] as usize,
        };
        let start = match index {
            i if i == first => 0,
            i => *self.ends.get(i - 1)? as usize,
        };
        let end = *self.ends.get(index)? as usize;
        let Some(packed) = self.sealed.get(chunk) else {
            return self.open.get(start..end).map(str::to_owned);
        };
        let mut inflated = self.inflated.borrow_mut();
        let n = chunk as u32;
        if inflated.as_ref().is_none_or(|(k, _)| *k != n) {
            let mut text = String::new();
            flate2::read::DeflateDecoder::new(&packed[..])
                .read_to_string(&mut text)
                .ok()?;
            *inflated = Some((n, text));
        }
        inflated
            .as_ref()
            .and_then(|(_, t)| t.get(start..end))
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use ctxfold_core::{Object, Record};
    use serde_json::{Value, json};

    use super::Aside;

    /// A record of a session line, its hints packed as `compact FILE`
    /// packs them.
    fn record(i: usize, line: Value) -> Record {
        let body = match i % 3 {
            0 => ctxfold_core::Body::Assistant {
                content: format!("answer {i}"),
            },
            1 => ctxfold_core::Body::Other {
                kind: "codex".into(),
                fields: Box::new(json!({"line": line.clone()}).as_object().cloned().unwrap()),
            },
            _ => ctxfold_core::Body::TurnStart,
        };
        let mut r = Record::new(i as u64, "2026-11-01T00:00:00.000Z", body);
        if i % 3 != 1 {
            let mut h = Object::new();
            h.insert("line".into(), line);
            r.extra.insert("codex".into(), Value::Object(h));
        }
        crate::session_lines::pack(&mut r, "codex");
        r
    }

    #[test]
    fn hints_set_aside_over_many_chunks_come_back_as_they_were() {
        // Several chunks' worth, with a text larger than a chunk among them.
        let records: Vec<Record> = (0..6_000)
            .map(|i| {
                let pad = if i == 2_500 { 3 << 20 } else { i % 700 };
                record(
                    i,
                    json!({"type": "event_msg", "n": i, "pad": "x".repeat(pad)}),
                )
            })
            .collect();
        let mut aside = Aside::new("codex");
        let mut taken = records.clone();
        for r in &mut taken {
            aside.take(r);
        }
        assert!(aside.sealed.len() >= 3, "{} chunks", aside.sealed.len());
        assert!(taken.iter().all(|r| r.extra.is_empty()));
        // In order, twice (an export's two passes), then out of order.
        for order in [
            (0..records.len()).collect::<Vec<_>>(),
            (0..records.len()).collect(),
            (0..records.len()).rev().collect(),
        ] {
            for i in order {
                let mut r = taken[i].clone();
                aside.restore(&mut r, i);
                assert!(r == records[i], "record {i}");
            }
        }
        // Past the session's records (a compaction the run appended):
        // nothing to put back.
        let mut r = taken[0].clone();
        aside.restore(&mut r, records.len());
        assert!(r == taken[0]);
    }
}
