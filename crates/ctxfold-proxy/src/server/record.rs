//! Recording an answer: its copy, gathered as it streamed, read as the
//! client received it; recorded whole, or what completed of it marked cut
//! short, or not at all (the outcome counted in `/metrics`).

use std::io::Read;

use axum::body::Bytes;

use super::Proxy;
use crate::book::AnswerSlot;
use crate::metrics::outcome;
use crate::reconcile::CUT_SHORT;

/// A piece of an answer on its way to the recorder.
pub(super) enum Chunk {
    Data(Bytes),
    /// The upstream broke off.
    Broken,
    /// The upstream's body ended before the answer's protocol end.
    Unfinished,
    /// The whole answer went to the client.
    End,
}

/// Reads the copy of an answer as the client received it; ends (EOF) when
/// the answer is whole, fails when it was cut short.
struct Copy {
    rx: std::vec::IntoIter<Chunk>,
    cur: Bytes,
    whole: bool,
    /// The answer's `Content-Length`, when it has one.
    length: Option<u64>,
    got: u64,
}

impl Read for Copy {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            if self.whole {
                return Ok(0);
            }
            match self.rx.next() {
                Some(Chunk::Data(b)) => {
                    self.got += b.len() as u64;
                    // With a length, the server stops reading the body at
                    // its last byte: that is the end.
                    self.whole |= self.length == Some(self.got);
                    self.cur = b;
                }
                Some(Chunk::End) => {
                    self.whole = true;
                    return Ok(0);
                }
                // Broken, unfinished, or the client hung up before the end.
                Some(Chunk::Broken | Chunk::Unfinished) | None => {
                    return Err(std::io::Error::other(
                        "the answer was cut short before it reached the client whole",
                    ));
                }
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        self.cur = self.cur.slice(n..);
        Ok(n)
    }
}

/// Read the copy of an answer and record it where `slot` says.
pub(super) fn record(
    p: &Proxy,
    name: &str,
    slot: AnswerSlot,
    chunks: Vec<Chunk>,
    streamed: bool,
    length: Option<u64>,
) {
    let mut copy = Copy {
        rx: chunks.into_iter(),
        cur: Bytes::new(),
        whole: false,
        length,
        got: 0,
    };
    let ts = ctxfold_store::now();
    let mut text = Vec::new();
    let mut whole = copy.read_to_end(&mut text).is_ok() && copy.whole;
    let cut = |mut records: Vec<ctxfold_core::Record>| {
        for r in &mut records {
            r.metadata
                .get_or_insert_default()
                .insert(CUT_SHORT.into(), true.into());
        }
        records
    };
    let records = if streamed {
        // A stream that reached its own end is whole, even when the
        // client hung up before the last bytes were passed on.
        let read = |cut_short| {
            slot.shape
                .streamed_answer(&text[..], &slot.model, &ts, cut_short)
        };
        match read(false) {
            Ok(records) => {
                whole = true;
                Ok(records)
            }
            Err(e) if whole => Err(e),
            // What completed of it is recorded, marked: the client saw it.
            Err(_) => read(true).map(cut),
        }
    } else {
        // A body that parses whole is whole, as above.
        match serde_json::from_slice(&text) {
            Ok(raw) => {
                whole = true;
                slot.shape.answer(raw, &slot.model, &ts)
            }
            Err(e) if whole => Err(format!("not JSON: {e}")),
            // What is readable of it (its text), marked.
            Err(_) => Ok(cut(crate::ending::cut_body(
                slot.shape,
                &text,
                &slot.model,
                &ts,
            ))),
        }
    };
    let status = match records {
        Ok(mut records) => {
            let cost = slot.annotate(&mut records);
            match p.book.record_answer(&slot, records) {
                Ok(true) => {
                    // Counted as `stats` and the pages count it: the
                    // figures just kept on the record.
                    if let Some(c) = cost {
                        p.metrics.add_cost(&c, &p.config.prices);
                    }
                    if whole { "recorded" } else { "cut_short" }
                }
                Ok(false) => "skipped",
                Err(e) => {
                    tracing::warn!("{name}: the answer could not be recorded: {e}");
                    "failed"
                }
            }
        }
        Err(e) => {
            tracing::info!("{name}: the answer was not recorded: {e}");
            "unreadable"
        }
    };
    p.metrics
        .answers
        .get_or_create(&outcome(name, status))
        .inc();
}
