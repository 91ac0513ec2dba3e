//! Range bounds (SPEC §5), as typed on the command line, in the DSL and in
//! config, and their resolution to 0-based turns against a log.
//!
//! - `N`: turn N, 1-based, inclusive.
//! - `-N` as a start: the N-th turn from the end (`-3..` is the last three).
//! - `-N` as an end: leaves the last N turns out (`..-3`).
//! - a duration (`5h`, `30m`, `2d`): the first turn at or after that long
//!   ago. As an end it stops before that turn, so `..5h` is everything older
//!   than five hours.
//! - `last-compaction` (start only): the turn after the furthest turn any
//!   active compaction covers.

use std::fmt;
use std::str::FromStr;

use jiff::{SignedDuration, Span, SpanRelativeTo, Timestamp};

use crate::log::Log;
use crate::projection::{compaction_status, covered_indices};
use crate::record::Body;
// Where the formats crate reads it (a timestamp is the model's: `ts`).
pub use crate::ts::parse_ts;

/// One side of a turn range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Turn N, 1-based.
    Turn(u32),
    /// `-N`: counted from the end.
    FromEnd(u32),
    /// A duration ago.
    Ago(SignedDuration),
    /// The turn after the furthest turn any active compaction covers.
    LastCompaction,
}

/// How many turns a rule keeps at one end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// This many turns.
    Count(u32),
    /// The turns within this long of that end: of the conversation's start
    /// for `keep_first`, of now for `keep_last`.
    Duration(SignedDuration),
}

/// Why a bound could not be read or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundError {
    /// The text is not a bound.
    #[error(
        "`{0}` is not a bound: expected a turn number (3), a count from the end (-3), a duration (5h, 30m, 2d) or last-compaction"
    )]
    Invalid(String),
    /// Turn 0 does not exist: turns are 1-based.
    #[error("`{0}`: turns are numbered from 1")]
    Zero(String),
    /// `last-compaction` only makes sense as a start.
    #[error("`last-compaction` can only start a range")]
    LastCompactionAsEnd,
    /// A duration bound needs the current time.
    #[error("`{0}` is a duration, but no current time was given")]
    NoClock(String),
    /// A duration bound needs turn timestamps.
    #[error("`{bound}`: turn {turn} has no readable timestamp (`{ts}`)")]
    NoTimestamp {
        /// The bound as typed.
        bound: String,
        /// The turn, 1-based.
        turn: u32,
        /// What its timestamp says.
        ts: String,
    },
    /// A duration bound on a log with no readable timestamp at all.
    #[error(
        "`{0}` is a duration, but this transcript has no timestamps (OpenAI and Anthropic messages carry none unless they have a `timestamp`): use turn numbers instead, e.g. 3 or -2"
    )]
    NoTimes(String),
    /// A keep value that is neither a count nor a duration.
    #[error(
        "`{0}` is not a keep value: expected a number of turns (3) or a duration (5h, 30m, 2d)"
    )]
    InvalidKeep(String),
}

/// Parse a duration: `5h`, `30m`, `1h30m`, `2d`, `1w` (a day is 24 hours).
pub fn parse_duration(s: &str) -> Option<SignedDuration> {
    // Plain numbers are turn counts, not durations.
    if s.is_empty() || s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let span: Span = s.parse().ok()?;
    let d = span.to_duration(SpanRelativeTo::days_are_24_hours()).ok()?;
    (!d.is_negative()).then_some(d)
}

impl FromStr for Bound {
    type Err = BoundError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t == "last-compaction" {
            return Ok(Bound::LastCompaction);
        }
        if let Some(rest) = t.strip_prefix('-') {
            return match rest.parse::<u32>() {
                Ok(0) => Err(BoundError::Zero(s.to_owned())),
                Ok(n) => Ok(Bound::FromEnd(n)),
                Err(_) => Err(BoundError::Invalid(s.to_owned())),
            };
        }
        if let Ok(n) = t.parse::<u32>() {
            return if n == 0 {
                Err(BoundError::Zero(s.to_owned()))
            } else {
                Ok(Bound::Turn(n))
            };
        }
        parse_duration(t)
            .map(Bound::Ago)
            .ok_or_else(|| BoundError::Invalid(s.to_owned()))
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::Turn(n) => write!(f, "{n}"),
            Bound::FromEnd(n) => write!(f, "-{n}"),
            Bound::Ago(d) => write!(f, "{d:#}"),
            Bound::LastCompaction => f.write_str("last-compaction"),
        }
    }
}

impl FromStr for Keep {
    type Err = BoundError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Ok(n) = t.parse::<u32>() {
            return Ok(Keep::Count(n));
        }
        parse_duration(t)
            .map(Keep::Duration)
            .ok_or_else(|| BoundError::InvalidKeep(s.to_owned()))
    }
}

/// What resolving a bound needs besides the log.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The current time, for duration bounds.
    pub now: Option<Timestamp>,
}

/// When turn `turn` (0-based) started: the timestamp of its first record
/// that has a readable one.
fn turn_time(log: &Log, turn: u32) -> Option<Timestamp> {
    let range = log.turn_range(turn)?;
    log.records()[range].iter().find_map(|r| r.ts.timestamp())
}

/// The first turn (0-based) that started at or after `t`; `turn_count` if
/// none did.
fn first_turn_at_or_after(log: &Log, t: Timestamp, bound: &str) -> Result<u32, BoundError> {
    require_times(log, bound)?;
    let n = log.turn_count() as u32;
    for turn in 0..n {
        match turn_time(log, turn) {
            Some(tt) if tt >= t => return Ok(turn),
            Some(_) => {}
            None => {
                let ts = log
                    .turn_range(turn)
                    .and_then(|r| log.records().get(r.start))
                    .map(|r| r.ts.clone())
                    .unwrap_or_default();
                return Err(BoundError::NoTimestamp {
                    bound: bound.to_owned(),
                    turn: turn + 1,
                    ts: ts.to_string(),
                });
            }
        }
    }
    Ok(n)
}

/// Refuse a duration `bound` up front when no record has a readable time,
/// rather than naming the first turn as if only it lacked one.
fn require_times(log: &Log, bound: &str) -> Result<(), BoundError> {
    if log.records().iter().any(|r| r.ts.timestamp().is_some()) {
        Ok(())
    } else {
        Err(BoundError::NoTimes(bound.to_owned()))
    }
}

/// The turn after the furthest turn any active compaction covers (0 when
/// there is none).
pub fn after_last_compaction(log: &Log) -> u32 {
    let (active, _) = compaction_status(log);
    active
        .iter()
        .filter_map(|&i| match &log.records()[i].body {
            // An excerpt folds no band (see `Compaction::is_excerpt`).
            Body::Compaction(c) if !c.is_excerpt() => {
                covered_indices(log, c).map(|(_, hi)| log.turn_of(hi) + 1)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

impl Bound {
    fn ago(&self, d: SignedDuration, clock: Clock) -> Result<Timestamp, BoundError> {
        let now = clock
            .now
            .ok_or_else(|| BoundError::NoClock(self.to_string()))?;
        Ok(now.checked_sub(d).unwrap_or(Timestamp::MIN))
    }

    /// Resolve as the start of a range: the first turn (0-based) it
    /// includes. May be past the last turn (an empty range).
    pub fn resolve_start(&self, log: &Log, clock: Clock) -> Result<i64, BoundError> {
        let n = log.turn_count() as i64;
        Ok(match *self {
            Bound::Turn(t) => t as i64 - 1,
            Bound::FromEnd(k) => (n - k as i64).max(0),
            Bound::Ago(d) => {
                first_turn_at_or_after(log, self.ago(d, clock)?, &self.to_string())? as i64
            }
            Bound::LastCompaction => after_last_compaction(log) as i64,
        })
    }

    /// Resolve as the end of a range: the last turn (0-based) it includes.
    /// May be -1 (an empty range).
    pub fn resolve_end(&self, log: &Log, clock: Clock) -> Result<i64, BoundError> {
        let n = log.turn_count() as i64;
        Ok(match *self {
            Bound::Turn(t) => (t as i64 - 1).min(n - 1),
            Bound::FromEnd(k) => n - 1 - k as i64,
            Bound::Ago(d) => {
                first_turn_at_or_after(log, self.ago(d, clock)?, &self.to_string())? as i64 - 1
            }
            Bound::LastCompaction => return Err(BoundError::LastCompactionAsEnd),
        })
    }
}

impl Keep {
    /// Turns kept at the start, as the first turn (0-based) not kept.
    pub fn first_not_kept(&self, log: &Log) -> Result<i64, BoundError> {
        match *self {
            Keep::Count(k) => Ok(k as i64),
            Keep::Duration(d) => {
                require_times(log, &format!("{d:#}"))?;
                let Some(start) = turn_time(log, 0) else {
                    return Ok(0);
                };
                let until = start.checked_add(d).unwrap_or(Timestamp::MAX);
                let label = format!("{d:#}");
                // Kept: the turns that started before `until`.
                Ok(first_turn_at_or_after(log, until, &label)? as i64)
            }
        }
    }

    /// Turns kept at the end, as the last turn (0-based) not kept.
    pub fn last_not_kept(&self, log: &Log, clock: Clock) -> Result<i64, BoundError> {
        let n = log.turn_count() as i64;
        match *self {
            Keep::Count(k) => Ok(n - 1 - k as i64),
            Keep::Duration(d) => Bound::Ago(d).resolve_end(log, clock),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Body, Record};

    /// A log of `n` turns, turn k started at hour k of 2026-01-01.
    fn log(n: u32) -> Log {
        let mut recs = Vec::new();
        for t in 0..n {
            let ts = format!("2026-01-01T{t:02}:00:00Z");
            recs.push(Record::new(recs.len() as u64, ts.clone(), Body::TurnStart));
            recs.push(Record::new(
                recs.len() as u64,
                ts,
                Body::User {
                    content: format!("q{t}"),
                    author: None,
                },
            ));
        }
        Log::from_records(recs)
    }

    fn clock(hour: u32) -> Clock {
        Clock {
            now: Some(format!("2026-01-01T{hour:02}:00:00Z").parse().unwrap()),
        }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!("3".parse::<Bound>(), Ok(Bound::Turn(3)));
        assert_eq!("-3".parse::<Bound>(), Ok(Bound::FromEnd(3)));
        assert_eq!(
            "last-compaction".parse::<Bound>(),
            Ok(Bound::LastCompaction)
        );
        assert_eq!(
            "5h".parse::<Bound>(),
            Ok(Bound::Ago(SignedDuration::from_hours(5)))
        );
        assert_eq!(
            "30m".parse::<Bound>(),
            Ok(Bound::Ago(SignedDuration::from_mins(30)))
        );
        assert_eq!(
            "2d".parse::<Bound>(),
            Ok(Bound::Ago(SignedDuration::from_hours(48)))
        );
        assert_eq!("0".parse::<Bound>(), Err(BoundError::Zero("0".into())));
        assert_eq!("-0".parse::<Bound>(), Err(BoundError::Zero("-0".into())));
        assert!(matches!(
            "yesterday".parse::<Bound>(),
            Err(BoundError::Invalid(_))
        ));
        assert!(matches!("-x".parse::<Bound>(), Err(BoundError::Invalid(_))));
        assert_eq!("4".parse::<Keep>(), Ok(Keep::Count(4)));
        assert_eq!(
            "1h".parse::<Keep>(),
            Ok(Keep::Duration(SignedDuration::from_hours(1)))
        );
        assert!(matches!(
            "many".parse::<Keep>(),
            Err(BoundError::InvalidKeep(_))
        ));
    }

    #[test]
    fn numbers_and_counts_from_the_end() {
        let l = log(10);
        let c = clock(23);
        assert_eq!(Bound::Turn(3).resolve_start(&l, c), Ok(2));
        assert_eq!(Bound::Turn(3).resolve_end(&l, c), Ok(2));
        // -3 as a start: the last three turns (7, 8, 9).
        assert_eq!(Bound::FromEnd(3).resolve_start(&l, c), Ok(7));
        // -3 as an end: all but the last three (..6).
        assert_eq!(Bound::FromEnd(3).resolve_end(&l, c), Ok(6));
        // Past the end is clamped as an end, empty as a start.
        assert_eq!(Bound::Turn(50).resolve_end(&l, c), Ok(9));
        assert_eq!(Bound::Turn(50).resolve_start(&l, c), Ok(49));
    }

    #[test]
    fn durations_find_the_first_turn_at_or_after() {
        let l = log(10); // turns at 00:00 … 09:00
        let c = clock(10); // now 10:00
        // 5h ago = 05:00: turn index 5.
        let b = Bound::Ago(SignedDuration::from_hours(5));
        assert_eq!(b.resolve_start(&l, c), Ok(5));
        assert_eq!(b.resolve_end(&l, c), Ok(4));
        // Keep the last 2h (turns at 08:00 and 09:00): compact up to turn 7.
        assert_eq!(
            Keep::Duration(SignedDuration::from_hours(2)).last_not_kept(&l, c),
            Ok(7)
        );
        // Keep the first 3h (00:00, 01:00, 02:00).
        assert_eq!(
            Keep::Duration(SignedDuration::from_hours(3)).first_not_kept(&l),
            Ok(3)
        );
        assert!(matches!(
            b.resolve_start(&l, Clock { now: None }),
            Err(BoundError::NoClock(_))
        ));
    }

    #[test]
    fn a_log_without_any_time_refuses_durations_up_front() {
        let recs = (0..4)
            .map(|i| {
                Record::new(
                    i,
                    "",
                    if i % 2 == 0 {
                        Body::TurnStart
                    } else {
                        Body::User {
                            content: "q".into(),
                            author: None,
                        }
                    },
                )
            })
            .collect();
        let l = Log::from_records(recs);
        let b = Bound::Ago(SignedDuration::from_hours(2));
        let e = b.resolve_start(&l, clock(5)).unwrap_err();
        assert!(matches!(e, BoundError::NoTimes(_)), "{e}");
        assert!(e.to_string().contains("turn numbers"), "{e}");
        let k = Keep::Duration(SignedDuration::from_hours(1));
        assert!(matches!(k.first_not_kept(&l), Err(BoundError::NoTimes(_))));
        assert!(matches!(
            k.last_not_kept(&l, clock(5)),
            Err(BoundError::NoTimes(_))
        ));
    }

    #[test]
    fn last_compaction_is_a_start_only() {
        let l = log(4);
        assert_eq!(Bound::LastCompaction.resolve_start(&l, clock(5)), Ok(0));
        assert_eq!(
            Bound::LastCompaction.resolve_end(&l, clock(5)),
            Err(BoundError::LastCompactionAsEnd)
        );
    }
}
