//! The circuit breaker: automatic compaction that keeps failing, or keeps
//! gaining nothing, stops for the rest of the turn instead of retrying
//! before every step (users of other tools report dozens of attempts an
//! hour when nothing stops them).

/// Failed attempts within one turn, and whether compaction is stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breaker {
    failed: u32,
    tripped: bool,
    said: bool,
}

impl Breaker {
    /// A closed breaker.
    pub fn new() -> Self {
        Breaker::default()
    }

    /// A new turn starts: attempts are allowed again.
    pub fn reset(&mut self) {
        *self = Breaker::default();
    }

    /// Whether automatic compaction is stopped for this turn.
    pub fn is_open(&self) -> bool {
        self.tripped
    }

    /// An attempt failed (the summarizer failed, or what it made was
    /// refused) or gained nothing. With `allowed` further attempts per
    /// turn (`compaction_retries`), the breaker opens once the failures
    /// exceed them. Returns whether it is open now.
    pub fn failed(&mut self, allowed: u32) -> bool {
        self.failed += 1;
        if self.failed > allowed {
            self.tripped = true;
        }
        self.tripped
    }

    /// Failed attempts this turn.
    pub fn failures(&self) -> u32 {
        self.failed
    }

    /// True the first time it is asked after the breaker opened: say so
    /// once, not before every step.
    pub fn first_notice(&mut self) -> bool {
        if self.tripped && !self.said {
            self.said = true;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_the_allowed_failures_and_says_so_once() {
        let mut b = Breaker::new();
        assert!(!b.failed(1));
        assert!(!b.first_notice());
        assert!(b.failed(1));
        assert!(b.first_notice());
        assert!(!b.first_notice());
        b.reset();
        assert!(!b.is_open());
    }
}
