//! Answers in flight that may hold a compaction (a request that asked the
//! provider, or ctxfold's emulation of it, to compact). A client may send
//! its next request, whose history starts with that compaction, as soon
//! as it has the answer, before the proxy has recorded it; such a request
//! waits for them (briefly) before it is taken for a new conversation.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The count of answers in flight, and a signal when one is done.
#[derive(Debug, Default)]
pub(super) struct Pending {
    count: Mutex<usize>,
    done: Condvar,
}

/// One answer in flight: done when dropped (recorded, skipped or lost).
#[derive(Debug)]
pub struct InFlight(Arc<Pending>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut n = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        self.0.done.notify_all();
    }
}

impl Pending {
    /// An answer starts.
    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight(Arc::clone(self))
    }

    /// Wait until none is in flight, at most `max`.
    pub(super) fn wait(&self, max: Duration) {
        let until = Instant::now() + max;
        let mut n = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            n = match self.done.wait_timeout(n, left) {
                Ok((n, _)) => n,
                Err(e) => e.into_inner().0,
            };
        }
    }
}
