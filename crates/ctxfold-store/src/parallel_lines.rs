//! Reading a log's lines on every core: the file is read in blocks cut at
//! line ends, each block parsed by a worker thread with its own
//! [`LineReader`] that knows where in the file the block starts, and the
//! parts joined in file order. What comes out is what one reader reading
//! the whole file would give (line numbers, offsets, notes, a torn last
//! line), so the loading policy stays the core's.
//!
//! Why: parsing the JSON of a long conversation is most of loading it
//! (hundreds of megabytes at a million records), and every command that
//! looks at a conversation loads it whole. Memory stays bounded: a few
//! blocks in flight, besides the records themselves.

use std::io::Read;
use std::sync::Mutex;
use std::sync::mpsc;

use ctxfold_core::log::{LineReader, ReadLines};

/// Bytes a worker is handed at a time (a block grows to the next line end).
/// Small enough that the blocks in flight (about two per thread) add little
/// to the peak: a few MiB besides the records.
const BLOCK: usize = 1 << 20;

/// Below this many bytes one thread reads it all: measured, a 10 MiB log
/// loaded slower in parts (starting threads, joining parts) and a 100 MiB
/// one faster (`cargo bench -p ctxfold-store --bench log -- load`).
const PARALLEL_FROM: u64 = 32 << 20;

/// One block of whole lines and where it starts.
struct Job {
    index: usize,
    lines_before: usize,
    /// Its lines: at most its records, room made for them at once.
    lines: usize,
    offset: u64,
    bytes: Vec<u8>,
}

/// Read every line of `input` (of about `size` bytes) with the one line
/// policy of [`LineReader`].
pub(crate) fn read_lines(input: impl Read, size: u64) -> std::io::Result<ReadLines> {
    read_lines_from(input, size, PARALLEL_FROM, (0, 0))
}

/// [`read_lines`] for the rest of a log, `input` starting after `lines`
/// lines of `offset` bytes (what a snapshot covered): line numbers and
/// offsets are the whole log's.
pub(crate) fn read_lines_after(
    input: impl Read,
    size: u64,
    lines: usize,
    offset: u64,
) -> std::io::Result<ReadLines> {
    read_lines_from(input, size, PARALLEL_FROM, (lines, offset))
}

/// [`read_lines`], in parts from `parallel_from` bytes on (the tests read
/// small logs in parts), `input` starting after `start`'s lines and bytes.
fn read_lines_from(
    mut input: impl Read,
    size: u64,
    parallel_from: u64,
    start: (usize, u64),
) -> std::io::Result<ReadLines> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads == 1 || size < parallel_from {
        return read_on_this_thread(input, start);
    }
    let (jobs, queue) = mpsc::sync_channel::<Job>(threads);
    let queue = Mutex::new(queue);
    let (parts, done) = mpsc::channel::<(usize, usize, ReadLines)>();
    // Blocks parsed come back to be read into again: a fresh megabyte per
    // block was a page fault per page and its clearing, on the thread
    // that reads (a third of its time at 1,000,000 events).
    let (spare, spares) = mpsc::channel::<Vec<u8>>();
    // A worker that panics (a bug, not bad input: bad lines are notes) keeps
    // taking jobs and drops them, so the reader never waits on a full queue;
    // the panic is passed on once every block is sent.
    let panicked: Mutex<Option<Box<dyn std::any::Any + Send>>> = Mutex::new(None);
    let all = std::thread::scope(|s| {
        for _ in 0..threads {
            let (parts, spare) = (parts.clone(), spare.clone());
            let (queue, panicked) = (&queue, &panicked);
            s.spawn(move || {
                loop {
                    // The lock is held only while taking a job.
                    let job = match queue.lock() {
                        Ok(q) => q.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    // Room for every line's record at once: grown by
                    // doubling, each part's records were copied and fresh
                    // pages cleared several times over (an eighth of
                    // `c show`'s time at 1,000,000 events).
                    let reader =
                        LineReader::after(job.lines_before, job.offset).with_capacity(job.lines);
                    let bytes = job.bytes.len();
                    let part = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        parse(reader, &job.bytes)
                    }));
                    // The reader may have stopped: then the block is freed.
                    let _ = spare.send(job.bytes);
                    match part {
                        Ok(part) => {
                            if parts.send((job.index, bytes, part)).is_err() {
                                return;
                            }
                        }
                        Err(panic) => {
                            if let Ok(mut p) = panicked.lock() {
                                p.get_or_insert(panic);
                            }
                        }
                    }
                }
            });
        }
        drop(parts);
        // Joined in file order as the parts come in, each freed once
        // joined: holding them all until the end would hold every record
        // twice for a moment.
        let mut all = ReadLines::default();
        let mut pending: std::collections::BTreeMap<usize, ReadLines> = Default::default();
        let mut next = 0;
        let mut take = |i: usize, bytes: usize, part: ReadLines, all: &mut ReadLines| {
            // Room for every record at once, guessed from the first part:
            // grown by doubling, the vector of a million records was
            // copied and its fresh pages cleared several times over (a
            // third of `c show`'s time at 1,000,000 events). A guess that
            // falls short grows as before; one over is given back below;
            // one the allocator refuses (a first part of tiny lines in a
            // huge file) is not made.
            if i == 0 && bytes > 0 {
                let per_byte = part.records.len() as f64 / bytes as f64;
                let guess = (size as f64 * per_byte * 1.1) as usize + 1024;
                let _ = all.records.try_reserve(guess);
            }
            pending.insert(i, part);
            while let Some(p) = pending.remove(&next) {
                all.join(p);
                next += 1;
            }
        };
        drop(spare);
        let fresh = || spares.try_recv().unwrap_or_default();
        let sent = split_into_blocks(&mut input, start, fresh, |job| {
            // Join what is done while reading on, so parts do not pile up.
            while let Ok((i, bytes, part)) = done.try_recv() {
                take(i, bytes, part, &mut all);
            }
            jobs.send(job).is_ok()
        });
        // Workers stop once the queue is empty and closed.
        drop(jobs);
        for (i, bytes, part) in done.iter() {
            take(i, bytes, part, &mut all);
        }
        sent?;
        all.records.shrink_to_fit();
        Ok(all)
    });
    if let Some(panic) = panicked.into_inner().ok().flatten() {
        std::panic::resume_unwind(panic);
    }
    all
}

/// One line at a time, through a buffer: no more of the file in memory
/// than its longest line.
fn read_on_this_thread(
    input: impl Read,
    (lines, offset): (usize, u64),
) -> std::io::Result<ReadLines> {
    let mut input = std::io::BufReader::with_capacity(1 << 20, input);
    let mut reader = LineReader::after(lines, offset);
    let mut line = Vec::new();
    loop {
        line.clear();
        if std::io::BufRead::read_until(&mut input, b'\n', &mut line)? == 0 {
            return Ok(reader.finish());
        }
        reader.push(&line);
    }
}

fn parse(mut reader: LineReader, bytes: &[u8]) -> ReadLines {
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        reader.push(line);
    }
    reader.finish()
}

/// Cut `input` into blocks of whole lines (the last may end without a
/// newline) and hand each to `send`; stop early if it returns false.
/// Returns how many blocks were sent.
fn split_into_blocks(
    input: &mut impl Read,
    (mut lines_before, mut offset): (usize, u64),
    mut fresh: impl FnMut() -> Vec<u8>,
    mut send: impl FnMut(Job) -> bool,
) -> std::io::Result<usize> {
    let mut index = 0;
    let mut carry: Vec<u8> = Vec::new();
    loop {
        // A line longer than a block grows in `carry` itself; otherwise
        // the tail of the last block starts a buffer `fresh` gives back.
        let mut block = if carry.len() >= BLOCK {
            std::mem::take(&mut carry)
        } else {
            let mut b = fresh();
            b.clear();
            b.extend_from_slice(&carry);
            carry.clear();
            b
        };
        // Read into the room left, not zeroed first.
        block.reserve(BLOCK);
        let n = (&mut *input).take(BLOCK as u64).read_to_end(&mut block)?;
        let at_end = n == 0;
        if !at_end {
            // Keep what follows the last line end for the next block; a
            // block without one grows until it has one.
            match memchr::memrchr(b'\n', &block) {
                Some(i) => {
                    carry.extend_from_slice(&block[i + 1..]);
                    block.truncate(i + 1);
                }
                None => {
                    carry = block;
                    continue;
                }
            }
        }
        if block.is_empty() {
            return Ok(index);
        }
        let lines =
            memchr::memchr_iter(b'\n', &block).count() + usize::from(!block.ends_with(b"\n"));
        let len = block.len() as u64;
        let job = Job {
            index,
            lines_before,
            lines,
            offset,
            bytes: block,
        };
        if !send(job) {
            return Ok(index);
        }
        index += 1;
        lines_before += lines;
        offset += len;
        if at_end {
            return Ok(index);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of every kind the policy treats apart: records, blank lines,
    /// a line that is not a record, a record without its newline or a torn
    /// tail at the end.
    fn log(records: usize, ending: &str) -> Vec<u8> {
        let mut s = String::new();
        for i in 0..records {
            match i % 97 {
                13 => s.push('\n'),
                41 => s.push_str("not a record\n"),
                _ => s.push_str(&format!(
                    "{{\"seq\":{i},\"ts\":\"t\",\"type\":\"user\",\"content\":\"{}\"}}\n",
                    "x".repeat(i % 300)
                )),
            }
        }
        s.push_str(ending);
        s.into_bytes()
    }

    /// Everything a reader reports but the records themselves.
    fn summary(r: &ReadLines) -> String {
        let seqs: Vec<u64> = r.records.iter().map(|r| r.seq).collect();
        let notes: Vec<_> = r
            .notes
            .iter()
            .map(|n| (n.line, &n.message, n.skipped))
            .collect();
        let torn = r.torn.map(|t| (t.line, t.offset, t.len));
        format!(
            "{seqs:?} {notes:?} {} {:?} {torn:?}",
            r.skipped, r.first_bad
        )
    }

    #[test]
    fn reading_in_parts_gives_what_one_reader_gives() {
        for ending in [
            "",
            "{\"seq\":1,\"ts\":\"t\",\"type\":\"user\",\"content\":\"no newline\"}",
            "{\"seq\":1,\"ts\":\"t\",\"ty",
        ] {
            // About 12 MiB: a dozen blocks.
            let bytes = log(60_000, ending);
            let one = parse(LineReader::new(), &bytes);
            let parts = read_lines_from(&bytes[..], bytes.len() as u64, 0, (0, 0)).unwrap();
            assert_eq!(summary(&parts), summary(&one), "ending {ending:?}");
            assert_eq!(parts.records, one.records);
        }
    }

    #[test]
    fn reading_on_from_a_line_gives_what_one_reader_gives_from_there() {
        let bytes = log(60_000, "{\"seq\":1,\"ts\":\"t\",\"ty");
        let one = parse(LineReader::new(), &bytes);
        // Start after the first 20,000 lines, as after a snapshot.
        let cut = bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(19_999)
            .unwrap()
            .0
            + 1;
        let rest = &bytes[cut..];
        let parts = read_lines_from(rest, rest.len() as u64, 0, (20_000, cut as u64)).unwrap();
        let first = parse(LineReader::new(), &bytes[..cut]);
        let mut joined = first;
        joined.join(parts);
        assert_eq!(summary(&joined), summary(&one));
        assert_eq!(joined.records, one.records);
        assert_eq!(joined.lines, one.lines);
    }

    #[test]
    fn a_line_longer_than_a_block_is_read_whole() {
        let mut bytes = log(100, "");
        let long = format!(
            "{{\"seq\":100,\"ts\":\"t\",\"type\":\"user\",\"content\":\"{}\"}}\n",
            "y".repeat(3 * BLOCK)
        );
        bytes.extend_from_slice(long.as_bytes());
        bytes.extend_from_slice(&log(100, ""));
        let one = parse(LineReader::new(), &bytes);
        let parts = read_lines_from(&bytes[..], bytes.len() as u64, 0, (0, 0)).unwrap();
        assert_eq!(summary(&parts), summary(&one));
        assert_eq!(parts.records.len(), one.records.len());
    }
}
