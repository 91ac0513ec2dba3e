//! A loaded conversation: its records in `seq` order, indexed by turn and
//! step.
//!
//! Turn rule (SPEC §2): a `turn_start` opens a new turn only if the current
//! turn already holds a conversation event; events before the first
//! `turn_start` form an implicit turn 0. Conversation events are the
//! `turn_start` itself, messages, reasoning, tool calls and results,
//! structured answers and inquiry events (so two `turn_start`s in a row make
//! two turns, as JP counts them). Other records (config deltas, overlays,
//! system prompts, unknown types) belong to the turn they were appended in
//! but never make a turn "hold an event".

use std::sync::OnceLock;

use serde::Serialize;

use crate::diagnostics::{ResultScan, ScanCell};
use crate::handle::Tag;
use crate::record::{Body, Kind, Record};

mod scans;

pub use scans::ResultScans;
use scans::{Cells, NO_CELL, carries_scan, is_result};

/// A conversation log with its turn index.
#[derive(Debug, Clone, Default)]
pub struct Log {
    records: Vec<Record>,
    /// Turn of each record, 0-based, parallel to `records`.
    turn_of: Vec<u32>,
    /// What the diagnostics recognizer found in each tool result (and an
    /// excerpt in each user message), filled when first asked for (see
    /// [`ScanCell`] for why here and not in the record). Made the first
    /// time one is asked for: a command whose view strips and clips
    /// nothing never needs them (32 bytes a record, 32 MB at a million).
    cells: OnceLock<Cells>,
    /// Scans made elsewhere, put in their cells when those are asked for.
    known: ResultScans,
    /// Index into `records` of the first record of each turn.
    turn_starts: Vec<usize>,
    /// Whether the current (last) turn holds a conversation event.
    current_holds_event: bool,
    /// Whether any turn exists (a `turn_start` or conversation event seen).
    any_turn: bool,
    /// The recall tag (see [`crate::handle`]), hashed once, from the first
    /// record, when it comes.
    tag: Option<Tag>,
    /// Index of each compaction and compaction reset record, in order.
    overlays: Vec<usize>,
}

/// Counts of what a log holds, in SPEC §2's vocabulary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// All records.
    pub records: usize,
    /// Turns, by the implicit-turn-0 rule.
    pub turns: usize,
    /// `turn_start` records.
    pub turn_start: usize,
    /// User messages.
    pub user: usize,
    /// Assistant messages.
    pub assistant: usize,
    /// Reasoning blocks.
    pub reasoning: usize,
    /// Tool calls.
    pub tool_call: usize,
    /// Tool results.
    pub tool_result: usize,
    /// Tool results with `is_error`.
    pub tool_errors: usize,
    /// Structured answers.
    pub structured: usize,
    /// Inquiry requests.
    pub inquiry_request: usize,
    /// Inquiry responses.
    pub inquiry_response: usize,
    /// Config deltas.
    pub config_delta: usize,
    /// Compaction records.
    pub compaction: usize,
    /// Conversation events: turn starts, messages, reasoning, tool calls and
    /// results, structured answers and inquiry events.
    pub conversation_events: usize,
}

/// A step: one model call's output inside a turn (assistant text, reasoning,
/// tool calls) and the results of those calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Turn, 0-based.
    pub turn: u32,
    /// Index of the step's first record.
    pub start: usize,
    /// Index one past the step's last record.
    pub end: usize,
    /// Whether every tool call in the step has its result.
    pub closed: bool,
}

/// Whether a record is a conversation event, which makes its turn "hold an
/// event" for the turn rule.
fn is_conversation_event(body: &Body) -> bool {
    body.is_model_visible()
        || matches!(
            body.kind(),
            Kind::TurnStart | Kind::InquiryRequest | Kind::InquiryResponse
        )
}

impl Log {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Index `records`, which must be in append order. The vector is kept
    /// as it is: a million records are over 100 MB, and moving them into
    /// a new one costs as much as a fifth of loading them.
    pub fn from_records(records: Vec<Record>) -> Self {
        let mut log = Log {
            turn_of: Vec::with_capacity(records.len()),
            ..Log::default()
        };
        for (idx, r) in records.iter().enumerate() {
            log.index(idx, r);
        }
        log.records = records;
        log
    }

    /// [`from_records`](Log::from_records) with the scans of its tool
    /// results made elsewhere (as [`with_result_scans`](Log::with_result_scans)
    /// keeps them), in their small form: a store's snapshot keeps them.
    pub fn from_records_with_scans(records: Vec<Record>, mut scans: ResultScans) -> Self {
        scans.keep_results(&records);
        let mut log = Log::from_records(records);
        log.known = scans;
        log
    }

    /// Append one record, updating the index in constant time.
    pub fn push(&mut self, record: Record) {
        let idx = self.records.len();
        self.index(idx, &record);
        if let Some(cells) = self.cells.get_mut() {
            cells.add(idx, &record.body);
        }
        self.records.push(record);
    }

    /// The indices of the log's compaction and compaction reset records,
    /// in order: the few among a million records that say what the view
    /// folds, found without reading the others (each pass over a million
    /// records is some 10 ms, and the compaction listing made several).
    pub fn overlays(&self) -> &[usize] {
        &self.overlays
    }

    /// [`revoked_seqs`] of the log's records, reading only its overlays.
    pub fn revoked(&self) -> std::collections::HashSet<u64> {
        revoked_in(self.overlays.iter().map(|&i| &self.records[i]))
    }

    /// The log's recall tag: the conversation part of every handle its
    /// view's folds carry (see [`crate::handle`]); `None` while it is empty.
    pub fn tag(&self) -> Option<Tag> {
        self.tag
    }
}

// Here rather than in `handle`, beside the tag the log keeps: the handles'
// text sits below the log.
impl Tag {
    /// The tag of `log`: a hash of its first record (kept by the log, see
    /// [`Log::tag`]). `None` for an empty log.
    pub fn of(log: &Log) -> Option<Tag> {
        log.tag()
    }
}

impl Log {
    /// Index the record that is (or is about to be) at `idx`, the next
    /// place after those indexed so far.
    fn index(&mut self, idx: usize, record: &Record) {
        if idx == 0 {
            self.tag = Some(Tag::of_first(record));
        }
        if is_conversation_event(&record.body) {
            if !self.any_turn {
                // The first conversation event opens turn 0, which also
                // holds whatever came before it.
                self.turn_starts.push(0);
                self.any_turn = true;
            } else if matches!(record.body, Body::TurnStart) && self.current_holds_event {
                self.turn_starts.push(idx);
            }
            self.current_holds_event = true;
        }
        if matches!(record.body, Body::Compaction(_) | Body::CompactionReset(_)) {
            self.overlays.push(idx);
        }
        self.turn_of
            .push(self.turn_starts.len().saturating_sub(1) as u32);
    }

    /// What the diagnostics recognizer finds in the tool result at `idx`
    /// (its diagnostics and size): read the first time it is asked for,
    /// then kept for the life of this log. `None` when `idx` is not a tool
    /// result.
    pub fn result_scan(&self, idx: usize) -> Option<&ResultScan> {
        match &self.records.get(idx)?.body {
            Body::ToolResult {
                content, is_error, ..
            } => Some(self.scan_cell(idx).get_or_scan(content, *is_error)),
            _ => None,
        }
    }

    /// Keep `scans` as what [`result_scan`](Log::result_scan) gives for
    /// the tool results at their indices, instead of reading those results
    /// again: scans made of these very records by the same recognizer (a
    /// store's snapshot of the log keeps them; see `ctxfold-store`). An
    /// index that is not a tool result, or whose scan is made already,
    /// is passed over; of two for one index, the first is kept.
    pub fn with_result_scans(
        mut self,
        scans: impl IntoIterator<Item = (usize, ResultScan)>,
    ) -> Self {
        if self.cells.get().is_none() {
            self.known.extend(scans);
            self.known.keep_results(&self.records);
            return self;
        }
        for (idx, scan) in scans {
            if is_result(&self.records, idx) {
                self.scan_cell(idx).fill(scan);
            }
        }
        self
    }

    /// The scan cell of the record at `idx`: its own for a tool result or
    /// a user message (the records a view item reads a scan of), one
    /// that stays empty for any other. A scan made elsewhere
    /// ([`with_result_scans`](Log::with_result_scans)) is put in it first.
    pub(crate) fn scan_cell(&self, idx: usize) -> &ScanCell {
        let cells = self.cells();
        match cells.slot(idx) {
            Some(slot) => {
                let cell = &cells.cells[slot];
                self.fill_known(idx, cell);
                cell
            }
            None => &NO_CELL,
        }
    }

    /// The scan cells, one for each record, in order (see
    /// [`scan_cell`](Log::scan_cell)): a view item that stands for a tool
    /// result carries its record's.
    pub(crate) fn scans(&self) -> impl Iterator<Item = &ScanCell> + '_ {
        let cells = self.cells();
        let mut next = cells.cells.iter();
        self.records.iter().enumerate().map(move |(idx, r)| {
            if !carries_scan(&r.body) {
                return &*NO_CELL;
            }
            match next.next() {
                Some(cell) => {
                    self.fill_known(idx, cell);
                    cell
                }
                None => &*NO_CELL,
            }
        })
    }

    fn cells(&self) -> &Cells {
        self.cells.get_or_init(|| {
            let mut cells = Cells::default();
            for (idx, r) in self.records.iter().enumerate() {
                cells.add(idx, &r.body);
            }
            cells
        })
    }

    /// Put in `cell`, the tool result at `idx`'s, the scan made elsewhere,
    /// if there is one and the cell is empty.
    fn fill_known(&self, idx: usize, cell: &ScanCell) {
        if self.known.is_empty() || cell.get().is_some() {
            return;
        }
        if let Some(scan) = self.known.get(idx) {
            cell.fill(scan);
        }
    }

    /// The records, in append order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Give the records back.
    pub fn into_records(self) -> Vec<Record> {
        self.records
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the log holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The `seq` the next appended record gets. A hand-edited log whose
    /// last `seq` is `u64::MAX` has no next one; this then stays at the
    /// maximum (the store refuses to append there).
    pub fn next_seq(&self) -> u64 {
        self.records.last().map_or(0, |r| r.seq.saturating_add(1))
    }

    /// Number of turns (0 when the log has no conversation event nor
    /// `turn_start`).
    pub fn turn_count(&self) -> usize {
        self.turn_starts.len()
    }

    /// Turn (0-based) of the record at `idx`.
    pub fn turn_of(&self, idx: usize) -> u32 {
        self.turn_of[idx]
    }

    /// The record indices of turn `turn` (0-based), as a half-open range.
    pub fn turn_range(&self, turn: u32) -> Option<std::ops::Range<usize>> {
        let t = turn as usize;
        let start = *self.turn_starts.get(t)?;
        let end = self
            .turn_starts
            .get(t + 1)
            .copied()
            .unwrap_or(self.records.len());
        Some(start..end)
    }

    /// The steps of turn `turn`, in order.
    pub fn steps(&self, turn: u32) -> Vec<Step> {
        let Some(range) = self.turn_range(turn) else {
            return Vec::new();
        };
        let mut steps = Vec::new();
        let mut current: Option<(usize, usize)> = None; // (start, open calls)
        let mut last_in_step = 0;
        let mut seen_result = false;
        let mut open: Vec<&str> = Vec::new();
        // A step ends after its last record; closed when no call in it
        // waits for its result.
        let close = |steps: &mut Vec<Step>, start: usize, last: usize, open: &[&str]| {
            steps.push(Step {
                turn,
                start,
                end: last + 1,
                closed: open.is_empty(),
            });
        };
        for idx in range {
            let body = &self.records[idx].body;
            if body.is_assistant_side() {
                // A model call's output after results (or after a user
                // message) is a new call: a new step.
                if current.is_some() && seen_result {
                    let (start, _) = current.take().unwrap_or_default();
                    close(&mut steps, start, last_in_step, &open);
                    open.clear();
                }
                if current.is_none() {
                    current = Some((idx, 0));
                    seen_result = false;
                }
                if let Body::ToolCall { id, .. } = body {
                    open.push(id);
                }
                last_in_step = idx;
            } else if let Body::ToolResult { id, .. } = body
                && current.is_some()
            {
                open.retain(|c| c != id);
                seen_result = true;
                last_in_step = idx;
            } else if matches!(body, Body::User { .. })
                && let Some((start, _)) = current.take()
            {
                close(&mut steps, start, last_in_step, &open);
                open.clear();
            }
        }
        if let Some((start, _)) = current {
            close(&mut steps, start, last_in_step, &open);
        }
        steps
    }

    /// What the log holds, counted.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            records: self.records.len(),
            turns: self.turn_count(),
            ..Counts::default()
        };
        for r in &self.records {
            match r.kind() {
                Kind::TurnStart => c.turn_start += 1,
                Kind::User => c.user += 1,
                Kind::Assistant => c.assistant += 1,
                Kind::Reasoning => c.reasoning += 1,
                Kind::ToolCall => c.tool_call += 1,
                Kind::ToolResult => {
                    c.tool_result += 1;
                    if matches!(r.body, Body::ToolResult { is_error: true, .. }) {
                        c.tool_errors += 1;
                    }
                }
                Kind::Structured => c.structured += 1,
                Kind::InquiryRequest => c.inquiry_request += 1,
                Kind::InquiryResponse => c.inquiry_response += 1,
                Kind::ConfigDelta => c.config_delta += 1,
                Kind::Compaction => c.compaction += 1,
                Kind::System | Kind::CompactionReset | Kind::Other => {}
            }
        }
        c.conversation_events = c.turn_start
            + c.user
            + c.assistant
            + c.reasoning
            + c.tool_call
            + c.tool_result
            + c.structured
            + c.inquiry_request
            + c.inquiry_response;
        c
    }
}

/// Give `records` the `seq`s 0, 1, 2, … in order, and rewrite what refers
/// to the old ones: compaction ranges (`from_seq` moves to the first record
/// at or after it, `to_seq` to the last at or before it) and reset targets
/// (a target that is not in `records` is dropped). Logs with gaps (lines
/// skipped on load, a slice of another log) stay consistent this way.
pub fn renumber(mut records: Vec<Record>) -> Vec<Record> {
    let old: Vec<u64> = records.iter().map(|r| r.seq).collect();
    if old.iter().enumerate().all(|(i, &s)| s == i as u64) {
        return records;
    }
    // `old` is in append order but may not be sorted if records came from
    // elsewhere: map exact seqs through a table, ranges by position.
    let exact: std::collections::HashMap<u64, u64> = old
        .iter()
        .enumerate()
        .map(|(i, &s)| (s, i as u64))
        .collect();
    let first_at_or_after = |s: u64| old.iter().position(|&o| o >= s).map(|i| i as u64);
    let last_at_or_before = |s: u64| old.iter().rposition(|&o| o <= s).map(|i| i as u64);
    for (i, r) in records.iter_mut().enumerate() {
        r.seq = i as u64;
        match &mut r.body {
            Body::Compaction(c) => {
                if let Some(s) = c.from_seq {
                    c.from_seq = Some(first_at_or_after(s).unwrap_or(old.len() as u64));
                }
                if let Some(s) = c.to_seq {
                    match last_at_or_before(s) {
                        Some(n) => c.to_seq = Some(n),
                        // Nothing at or before it: keep the range empty.
                        None => {
                            c.from_seq = Some(1);
                            c.to_seq = Some(0);
                        }
                    }
                }
            }
            Body::CompactionReset(reset) => {
                if let crate::compaction::ResetTargets::Some(targets) = &mut reset.targets {
                    *targets = targets
                        .iter()
                        .filter_map(|t| exact.get(t).copied())
                        .collect();
                }
            }
            _ => {}
        }
    }
    records
}

/// Reads the lines of a ctxfold JSONL log with the one policy every reader
/// follows (the store loading a conversation, the transcript reader behind
/// `ctxfold compact FILE`), so what one accepts the other accepts too:
///
/// - a blank line is skipped silently;
/// - a complete line that is not a record is skipped with a note, and the
///   records around it still load;
/// - an unterminated last line that is not a record is a torn append: it is
///   left out and reported in [`ReadLines::torn`] (the caller says what
///   became of it);
/// - an unterminated last line that is a record only lost its newline, and
///   is read.
///
/// Lines are fed one at a time, so a large log need not be held in memory.
#[derive(Debug, Default)]
pub struct LineReader {
    out: ReadLines,
    line: usize,
    offset: u64,
}

/// What a [`LineReader`] read.
#[derive(Debug, Default)]
pub struct ReadLines {
    /// Every record, in file order.
    pub records: Vec<Record>,
    /// What the user should know, by line: lines skipped, records kept
    /// verbatim. A torn last line is not among them (see `torn`).
    pub notes: Vec<LineNote>,
    /// Complete lines skipped because they are not records.
    pub skipped: usize,
    /// The first line that is not a record (complete or torn), and why.
    pub first_bad: Option<LineNote>,
    /// An unterminated last line that is not a record.
    pub torn: Option<TornLine>,
    /// Lines read, the blank ones and a torn last line included; a reader
    /// started part way in (see [`LineReader::after`]) counts the lines
    /// before it too.
    pub lines: usize,
}

impl ReadLines {
    /// Add what a reader of the next part of the same log read (see
    /// [`LineReader::after`]): as if one reader had read both parts.
    pub fn join(&mut self, next: ReadLines) {
        self.records.extend(next.records);
        self.notes.extend(next.notes);
        self.skipped += next.skipped;
        if self.first_bad.is_none() {
            self.first_bad = next.first_bad;
        }
        // Only the last part can end without a newline.
        if next.torn.is_some() {
            self.torn = next.torn;
        }
        self.lines = self.lines.max(next.lines);
    }
}

/// A note about one line of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineNote {
    /// 1-based line number.
    pub line: usize,
    /// What was found (without the file and line).
    pub message: String,
    /// Whether the line was left out (else its record was read, and kept
    /// verbatim).
    pub skipped: bool,
}

/// An unterminated last line that is not a record: what a write cut short
/// leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornLine {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset where it starts.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

impl LineReader {
    /// A reader at the start of a log.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader that starts after `lines` lines of `offset` bytes: for one
    /// part of a log cut at line ends, read beside the others and joined
    /// with [`ReadLines::join`]. Its line numbers and offsets are the
    /// whole log's.
    pub fn after(lines: usize, offset: u64) -> Self {
        LineReader {
            out: ReadLines::default(),
            line: lines,
            offset,
        }
    }

    /// The same reader with room for `records` records made at once (a
    /// part whose lines are counted), so its records are not copied as
    /// they grow. Room the allocator refuses is not made: the records then
    /// grow as they come.
    pub fn with_capacity(mut self, records: usize) -> Self {
        let _ = self.out.records.try_reserve(records);
        self
    }

    /// Read the next line, with its newline if it has one (only the last
    /// line of a log lacks it).
    pub fn push(&mut self, line: &[u8]) {
        self.line += 1;
        let start = self.offset;
        self.offset += line.len() as u64;
        let terminated = line.ends_with(b"\n");
        let body = if terminated {
            &line[..line.len() - 1]
        } else {
            line
        };
        let parsed = match std::str::from_utf8(body) {
            Ok(t) if t.trim().is_empty() => return,
            Ok(t) => Record::from_json_line(t).map_err(|e| e.to_string()),
            Err(e) => Err(format!("not UTF-8 ({e})")),
        };
        let out = &mut self.out;
        match parsed {
            Ok((rec, warning)) => {
                if let Some(w) = warning {
                    out.notes.push(LineNote {
                        line: self.line,
                        message: w.to_string(),
                        skipped: false,
                    });
                }
                out.records.push(rec);
            }
            Err(e) => {
                out.first_bad.get_or_insert_with(|| LineNote {
                    line: self.line,
                    message: e.clone(),
                    skipped: terminated,
                });
                if terminated {
                    out.skipped += 1;
                    out.notes.push(LineNote {
                        line: self.line,
                        message: format!("skipped, not a ctxfold record ({e})"),
                        skipped: true,
                    });
                } else {
                    out.torn = Some(TornLine {
                        line: self.line,
                        offset: start,
                        len: line.len() as u64,
                    });
                }
            }
        }
    }

    /// What was read.
    pub fn finish(mut self) -> ReadLines {
        self.out.records.shrink_to_fit();
        self.out.lines = self.line;
        self.out
    }
}

/// Read a whole log held in memory; see [`LineReader`].
pub fn read_lines(text: &[u8]) -> ReadLines {
    let mut r = LineReader::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        r.push(line);
    }
    r.finish()
}

/// The `seq`s of the compactions that `compaction_reset` records in
/// `records` leave revoked, applying the resets in log order (a restore
/// undoes a revocation).
pub fn revoked_seqs(records: &[Record]) -> std::collections::HashSet<u64> {
    revoked_in(records.iter())
}

/// [`revoked_seqs`] of `records`, in log order (records other than
/// compactions and resets are passed over).
fn revoked_in<'r>(records: impl Iterator<Item = &'r Record>) -> std::collections::HashSet<u64> {
    let mut revoked = std::collections::HashSet::new();
    let mut seen: Vec<u64> = Vec::new();
    for r in records {
        match &r.body {
            Body::Compaction(_) => seen.push(r.seq),
            Body::CompactionReset(reset) => {
                let targets: &[u64] = match &reset.targets {
                    crate::compaction::ResetTargets::All(_) => &seen,
                    crate::compaction::ResetTargets::Some(v) => v,
                };
                for &t in targets {
                    if reset.restore {
                        revoked.remove(&t);
                    } else {
                        revoked.insert(t);
                    }
                }
            }
            _ => {}
        }
    }
    revoked
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(seq: u64, body: Body) -> Record {
        Record::new(seq, "", body)
    }
    fn user(s: &str) -> Body {
        Body::User {
            content: s.into(),
            author: None,
        }
    }
    fn call(id: &str) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: json!({}).into(),
        }
    }
    fn result(id: &str) -> Body {
        Body::ToolResult {
            id: id.into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    fn build(bodies: Vec<Body>) -> Log {
        Log::from_records(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| rec(i as u64, b))
                .collect(),
        )
    }

    #[test]
    fn scans_made_elsewhere_are_kept_for_tool_results_only() {
        let kept = ResultScan {
            chars: 7,
            diagnostics: Default::default(),
        };
        let log = build(vec![user("a"), call("c"), result("c")]).with_result_scans([
            (0, kept.clone()),
            (2, kept.clone()),
            (9, kept.clone()),
        ]);
        // What was given, not what the recognizer would find in "ok".
        assert_eq!(log.result_scan(2), Some(&kept));
        assert_eq!(log.result_scan(0), None);
        assert_eq!(log.result_scan(1), None);
        // A scan made already stays.
        let log = build(vec![result("c")]);
        let made = log.result_scan(0).cloned();
        let log = log.with_result_scans([(0, kept)]);
        assert_eq!(log.result_scan(0).cloned(), made);
    }

    #[test]
    fn scan_cells_are_made_when_asked_for_and_follow_pushes() {
        let mut log = build(vec![user("a"), call("c"), result("c")]);
        assert!(log.cells.get().is_none(), "no cell made by loading");
        assert_eq!(log.result_scan(2).map(|s| s.chars), Some(2));
        // One cell for each result and user message; others share one.
        let cells: Vec<*const ScanCell> = log.scans().map(|c| c as *const _).collect();
        assert_eq!(cells.len(), 3);
        assert!(std::ptr::eq(cells[1], &*NO_CELL));
        assert!(!std::ptr::eq(cells[0], cells[2]));
        assert!(std::ptr::eq(cells[2], log.scan_cell(2)));
        for k in 3..200 {
            log.push(rec(k, if k % 3 == 0 { result("c") } else { call("c") }));
        }
        assert_eq!(log.scans().count(), 200);
        for k in 0..200 {
            let own = !std::ptr::eq(log.scan_cell(k), &*NO_CELL);
            assert_eq!(own, k == 0 || k == 2 || (k >= 3 && k % 3 == 0), "{k}");
            assert!(std::ptr::eq(log.scans().nth(k).unwrap(), log.scan_cell(k)));
        }
        assert_eq!(log.result_scan(198).map(|s| s.chars), Some(2));
    }

    #[test]
    fn scans_made_elsewhere_in_their_small_form_read_back_the_same() {
        let found = ResultScan::new("error[E0308]: mismatched types", true);
        assert!(!found.diagnostics.is_empty());
        let clean = ResultScan {
            chars: 7,
            diagnostics: Default::default(),
        };
        let scans: ResultScans = [(4, found.clone()), (2, clean.clone()), (0, clean.clone())]
            .into_iter()
            .collect();
        assert_eq!(
            scans.clone().into_vec(),
            [(0, clean.clone()), (2, clean.clone()), (4, found.clone())]
        );
        let bodies = vec![user("a"), call("c"), result("c"), call("d"), result("d")];
        let log = Log::from_records_with_scans(
            bodies
                .into_iter()
                .enumerate()
                .map(|(i, b)| rec(i as u64, b))
                .collect(),
            scans,
        );
        assert_eq!(log.result_scan(2), Some(&clean));
        assert_eq!(log.result_scan(4), Some(&found));
        assert_eq!(log.result_scan(0), None);
    }

    #[test]
    fn implicit_turn_zero_and_leading_turn_start_do_not_double_count() {
        // Events before the first turn_start form turn 0.
        let log = build(vec![user("a"), Body::TurnStart, user("b")]);
        assert_eq!(log.turn_count(), 2);
        assert_eq!(log.turn_of(0), 0);
        assert_eq!(log.turn_of(2), 1);
        // A turn_start on an empty turn does not open another one; a config
        // delta does not make the turn hold an event.
        let delta = Body::Other {
            kind: "config_delta".into(),
            fields: Default::default(),
        };
        let log = build(vec![delta.clone(), Body::TurnStart, user("a")]);
        assert_eq!(log.turn_count(), 1);
        assert_eq!(log.turn_of(2), 0);
        // A turn_start is itself an event: two in a row make two turns.
        let log = build(vec![
            delta,
            Body::TurnStart,
            user("a"),
            Body::TurnStart,
            Body::TurnStart,
        ]);
        assert_eq!(log.turn_count(), 3);
        assert_eq!(log.turn_of(0), 0);
        assert_eq!(log.turn_of(2), 0);
        assert_eq!(log.turn_of(3), 1);
        assert_eq!(log.turn_of(4), 2);
    }

    #[test]
    fn renumbering_keeps_compaction_ranges_and_reset_targets() {
        use crate::compaction::{Compaction, CompactionReset, ResetTargets, Source};
        let mut c = Compaction::new(0, 0, Source::User);
        c.from_seq = Some(11);
        c.to_seq = Some(14); // 14 is missing: the range ends at 13
        let recs = vec![
            rec(10, user("a")),
            rec(11, user("b")),
            rec(13, user("c")),
            rec(15, user("d")),
            rec(16, Body::Compaction(Box::new(c))),
            rec(
                17,
                Body::CompactionReset(Box::new(CompactionReset {
                    targets: ResetTargets::Some(vec![16, 99]),
                    restore: false,
                    extra: Default::default(),
                })),
            ),
        ];
        let out = renumber(recs);
        assert_eq!(
            out.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        let Body::Compaction(c) = &out[4].body else {
            panic!()
        };
        assert_eq!((c.from_seq, c.to_seq), (Some(1), Some(2)));
        let Body::CompactionReset(r) = &out[5].body else {
            panic!()
        };
        assert_eq!(
            r.targets,
            ResetTargets::Some(vec![4]),
            "16 is now 4; 99 never existed"
        );
        // Already 0, 1, 2, …: unchanged.
        let same = vec![rec(0, user("a")), rec(1, user("b"))];
        assert_eq!(renumber(same.clone()), same);
    }

    #[test]
    fn empty_log_has_no_turns() {
        assert_eq!(Log::new().turn_count(), 0);
    }

    #[test]
    fn steps_split_at_model_calls_and_know_if_closed() {
        let log = build(vec![
            Body::TurnStart,
            user("go"),
            Body::Reasoning {
                content: "r".into(),
            },
            call("1"),
            call("2"),
            result("1"),
            result("2"),
            Body::Assistant {
                content: "done?".into(),
            },
            call("3"),
        ]);
        let steps = log.steps(0);
        assert_eq!(steps.len(), 2);
        assert_eq!(
            (steps[0].start, steps[0].end, steps[0].closed),
            (2, 7, true)
        );
        assert_eq!(
            (steps[1].start, steps[1].end, steps[1].closed),
            (7, 9, false)
        );
    }

    #[test]
    fn counts_classify_every_kind() {
        let log = build(vec![
            Body::TurnStart,
            user("go"),
            call("1"),
            Body::ToolResult {
                id: "1".into(),
                content: "boom".into(),
                is_error: true,
            },
            Body::Other {
                kind: "inquiry_request".into(),
                fields: Default::default(),
            },
        ]);
        let c = log.counts();
        assert_eq!(
            (c.records, c.turns, c.tool_errors, c.inquiry_request),
            (5, 1, 1, 1)
        );
        assert_eq!(c.conversation_events, 5);
    }

    #[test]
    fn one_line_policy_for_every_reader() {
        let text = b"{\"seq\":0,\"ts\":\"\",\"type\":\"user\",\"content\":\"a\"}\n\n{not json}\n\xff\n{\"seq\":1,\"ts\":\"\",\"type\":\"user\",\"content\":\"b\"}\n{\"seq\":2,\"ty";
        let r = read_lines(text);
        assert_eq!(r.records.len(), 2);
        assert_eq!(r.skipped, 2);
        let lines: Vec<usize> = r.notes.iter().map(|n| n.line).collect();
        assert_eq!(lines, [3, 4]);
        assert!(
            r.notes[0]
                .message
                .starts_with("skipped, not a ctxfold record (invalid JSON")
        );
        assert!(r.notes[1].message.contains("not UTF-8"));
        assert_eq!(r.first_bad.as_ref().map(|n| n.line), Some(3));
        let torn = r.torn.expect("unterminated last line");
        assert_eq!(torn.line, 6);
        assert_eq!(torn.offset + torn.len, text.len() as u64);
        assert_eq!(&text[torn.offset as usize..], b"{\"seq\":2,\"ty");
    }

    #[test]
    fn a_record_that_lost_its_newline_is_read() {
        let r = read_lines(b"{\"seq\":4,\"ts\":\"\",\"type\":\"turn_start\"}");
        assert_eq!(r.records.len(), 1);
        assert!(r.torn.is_none() && r.notes.is_empty() && r.first_bad.is_none());
    }

    #[test]
    fn next_seq_does_not_wrap() {
        let log = Log::from_records(vec![rec(u64::MAX, user("x"))]);
        assert_eq!(log.next_seq(), u64::MAX);
    }
}
