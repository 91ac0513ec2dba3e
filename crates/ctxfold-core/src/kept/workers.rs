//! The helper threads a retention read keeps for its whole length
//! (`own.rs` reads the view's items, `batch.rs` the records' facts, a
//! chunk at a time on every core).
//!
//! A thread started for each chunk and ended after it left what it had
//! allocated and freed in its own allocator heap, which no other thread
//! reuses: 30–40 MB more at the peak of `compact FILE` on a 61 MB session
//! than on one thread. Threads kept for the read reuse their memory from
//! one chunk to the next. The result is the same as reading the chunk on
//! one thread: parts are given out and put back in order.

use std::sync::mpsc::{Receiver, Sender, channel};

/// How many threads read: the cores, at most eight.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// A helper: where its parts go, and where what it read comes back.
type Helper<I, O> = (Sender<Vec<I>>, Receiver<Vec<O>>);

/// Chunks shorter than this are read on the calling thread alone.
const SPLIT_FROM: usize = 1024;

/// Call `body` with a function that reads a chunk: `each` over parts of
/// it, one on the calling thread and one on each helper, the outputs put
/// together in the chunk's order. The helpers live as long as `body`
/// runs. A helper's panic is the caller's.
pub(super) fn with_workers<I, O, R>(
    each: impl Fn(&[I]) -> Vec<O> + Sync,
    body: impl FnOnce(&mut dyn FnMut(Vec<I>) -> Vec<O>) -> R,
) -> R
where
    I: Send,
    O: Send,
{
    let each = &each;
    std::thread::scope(|s| {
        // Started with the first chunk long enough to split: a short log's
        // report starts no thread.
        let mut helpers: Vec<Helper<I, O>> = Vec::new();
        let mut run = |mut chunk: Vec<I>| -> Vec<O> {
            if chunk.len() < SPLIT_FROM {
                return each(&chunk);
            }
            if helpers.is_empty() {
                helpers = (1..threads())
                    .map(|_| {
                        let (parts, part) = channel::<Vec<I>>();
                        let (read, reads) = channel::<Vec<O>>();
                        s.spawn(move || {
                            for p in part {
                                if read.send(each(&p)).is_err() {
                                    break;
                                }
                            }
                        });
                        (parts, reads)
                    })
                    .collect();
            }
            if helpers.is_empty() {
                return each(&chunk);
            }
            let per = chunk.len().div_ceil(helpers.len() + 1);
            // The parts after the first, cut from the end, each to its
            // helper; the first is read here meanwhile.
            let mut given = Vec::new();
            for (k, (parts, _)) in helpers.iter().enumerate().rev() {
                let from = (k + 1) * per;
                if from < chunk.len() {
                    let part = chunk.split_off(from);
                    // A helper that stopped has panicked: the scope
                    // raises its panic when it ends.
                    if parts.send(part).is_ok() {
                        given.push(k);
                    }
                }
            }
            let mut out = each(&chunk);
            for k in given.into_iter().rev() {
                match helpers[k].1.recv() {
                    Ok(read) => out.extend(read),
                    Err(_) => panic!("a retention reader thread stopped"),
                }
            }
            out
        };
        body(&mut run)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_read_on_helpers_come_back_whole_and_in_order() {
        for len in [0, 1, 1023, 1024, 1025, 5000, 16_384] {
            let input: Vec<usize> = (0..len).collect();
            let got = with_workers(
                |part: &[usize]| part.iter().map(|i| i * 2).collect(),
                |run| (0..3).map(|_| run(input.clone())).collect::<Vec<_>>(),
            );
            let expected: Vec<usize> = input.iter().map(|i| i * 2).collect();
            assert_eq!(got, vec![expected; 3], "{len}");
        }
    }
}
