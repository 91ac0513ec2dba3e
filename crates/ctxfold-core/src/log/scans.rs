//! The scans of a log's tool results: the cells that keep them (made
//! the first time one is asked for, one for each record a view item can
//! read a scan of) and the scans made elsewhere, in their small form,
//! until their cells are made (issue 48: a million records loaded by a
//! command that needs none of them).

use std::sync::LazyLock;

use crate::diagnostics::{Findings, ResultScan, ScanCell};
use crate::record::{Body, Record};

/// The cell of every record that never gets a scan (see [`Log::scan_cell`]).
pub(super) static NO_CELL: LazyLock<ScanCell> = LazyLock::new(ScanCell::default);

/// Whether a view item can read a scan of the record: a tool result's
/// (a stripped result, an excerpt) or a user message's (an excerpt).
pub(super) fn carries_scan(body: &Body) -> bool {
    matches!(body, Body::ToolResult { .. } | Body::User { .. })
}

/// The scan cells of the records that carry one ([`carries_scan`]), in
/// order, and where each record's is: for each block of 64 records, the
/// cells before it and which of its records have one (a quarter of a
/// byte a record, where a cell for every record was 32 bytes).
#[derive(Debug, Clone, Default)]
pub(super) struct Cells {
    pub(super) cells: Vec<ScanCell>,
    blocks: Vec<(usize, u64)>,
}

impl Cells {
    /// The record at `idx`, the next after those added so far.
    pub(super) fn add(&mut self, idx: usize, body: &Body) {
        if idx.is_multiple_of(64) {
            self.blocks.push((self.cells.len(), 0));
        }
        if carries_scan(body)
            && let Some((_, bits)) = self.blocks.last_mut()
        {
            *bits |= 1 << (idx % 64);
            self.cells.push(ScanCell::default());
        }
    }

    /// Where the cell of the record at `idx` is, if it has one.
    pub(super) fn slot(&self, idx: usize) -> Option<usize> {
        let &(before, bits) = self.blocks.get(idx / 64)?;
        let bit = 1u64 << (idx % 64);
        (bits & bit != 0).then(|| before + (bits & (bit - 1)).count_ones() as usize)
    }
}

/// Scans of a log's tool results made elsewhere (a store's snapshot
/// keeps them), by record index, in a small form until their cells are
/// asked for: most results hold no diagnostic, and their scan is then
/// their length alone (8 bytes, where a scan is 40 and its cell's box as
/// much again: 30 MB at a million records).
#[derive(Debug, Clone, Default)]
pub struct ResultScans {
    /// Record index and characters of those with no diagnostics.
    clean: Vec<(u32, u32)>,
    /// The others.
    found: Vec<(usize, ResultScan)>,
    /// Whether both are in index order, each index once.
    sorted: bool,
}

/// Whether the record at `idx` is a tool result.
pub(super) fn is_result(records: &[Record], idx: usize) -> bool {
    matches!(
        records.get(idx),
        Some(Record {
            body: Body::ToolResult { .. },
            ..
        })
    )
}

impl ResultScans {
    /// None.
    pub fn new() -> Self {
        ResultScans::default()
    }

    /// Keep `scan`, the scan of the tool result at `idx`.
    pub fn push(&mut self, idx: usize, scan: ResultScan) {
        let last = |s: &Self| {
            let clean = s.clean.last().map(|c| c.0 as usize);
            let found = s.found.last().map(|f| f.0);
            clean.max(found)
        };
        let in_order = self.is_empty() || (self.sorted && last(self).is_some_and(|l| l < idx));
        match (u32::try_from(idx), u32::try_from(scan.chars)) {
            (Ok(i), Ok(chars)) if scan.diagnostics.is_empty() && scan.diagnostics.unkept == 0 => {
                self.clean.push((i, chars));
            }
            _ => self.found.push((idx, scan)),
        }
        self.sorted = in_order;
    }

    /// Room for `n` more without diagnostics.
    pub fn reserve(&mut self, n: usize) {
        self.clean.reserve(n);
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.clean.len() + self.found.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.clean.is_empty() && self.found.is_empty()
    }

    /// Each scan with its record's index, in index order.
    pub fn into_vec(self) -> Vec<(usize, ResultScan)> {
        let ResultScans { clean, found, .. } = self;
        let mut all: Vec<(usize, ResultScan)> = Vec::with_capacity(clean.len() + found.len());
        all.extend(
            clean
                .into_iter()
                .map(|(i, chars)| (i as usize, clean_scan(chars))),
        );
        all.extend(found);
        all.sort_by_key(|s| s.0);
        all
    }

    /// Those of tool results of `records` kept (others dropped), in index
    /// order, of two for one index the first.
    pub(super) fn keep_results(&mut self, records: &[Record]) {
        self.clean.retain(|c| is_result(records, c.0 as usize));
        self.found.retain(|f| is_result(records, f.0));
        if !self.sorted {
            self.clean.sort_by_key(|c| c.0);
            self.clean.dedup_by_key(|c| c.0);
            self.found.sort_by_key(|f| f.0);
            self.found.dedup_by_key(|f| f.0);
            self.sorted = true;
        }
    }

    /// The scan of the record at `idx`, if kept (once sorted).
    pub(super) fn get(&self, idx: usize) -> Option<ResultScan> {
        if let Ok(i) = u32::try_from(idx)
            && let Ok(k) = self.clean.binary_search_by_key(&i, |c| c.0)
        {
            return Some(clean_scan(self.clean[k].1));
        }
        let k = self.found.binary_search_by_key(&idx, |f| f.0).ok()?;
        Some(self.found[k].1.clone())
    }
}

/// The scan of a result of `chars` characters with no diagnostics.
fn clean_scan(chars: u32) -> ResultScan {
    ResultScan {
        chars: chars as usize,
        diagnostics: Findings::default(),
    }
}

impl Extend<(usize, ResultScan)> for ResultScans {
    fn extend<I: IntoIterator<Item = (usize, ResultScan)>>(&mut self, scans: I) {
        for (idx, scan) in scans {
            self.push(idx, scan);
        }
    }
}

impl FromIterator<(usize, ResultScan)> for ResultScans {
    fn from_iter<I: IntoIterator<Item = (usize, ResultScan)>>(scans: I) -> Self {
        let mut all = ResultScans::new();
        all.extend(scans);
        all
    }
}
