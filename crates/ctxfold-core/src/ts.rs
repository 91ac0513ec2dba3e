//! [`Ts`]: a record's timestamp, kept as the text it was written as.
//!
//! Nearly every record ctxfold writes has a UTC timestamp in one layout
//! (`2026-12-02T01:40:12.123456789Z`). Those are kept as numbers, which
//! writes them back to the same text without holding an allocation per
//! record; any other text (imported transcripts use their own formats)
//! is kept as it is.

use std::borrow::Cow;
use std::fmt;

use serde::{Serialize, Serializer};

/// A record's timestamp: its exact text, compactly held.
#[derive(Clone, PartialEq, Eq)]
pub struct Ts(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    /// `YYYY-MM-DDTHH:MM:SS[.f]Z` with 0 to 9 fraction digits, as
    /// seconds since 1970 and nanoseconds; `digits` says how many
    /// fraction digits the text had, trailing zeros included.
    Utc { secs: i64, nanos: u32, digits: u8 },
    /// Anything else, the empty text included.
    Text(Box<str>),
}

impl Ts {
    /// No timestamp (the empty text).
    pub fn empty() -> Ts {
        Ts(Repr::Text(Box::from("")))
    }

    /// The timestamp for `text`, which it writes back unchanged.
    pub fn new(text: &str) -> Ts {
        match parse_utc(text) {
            Some((secs, nanos, digits)) => Ts(Repr::Utc {
                secs,
                nanos,
                digits,
            }),
            None => Ts(Repr::Text(Box::from(text))),
        }
    }

    /// The text, as it was given.
    pub fn text(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Text(t) => Cow::Borrowed(t),
            Repr::Utc { .. } => Cow::Owned(self.to_string()),
        }
    }

    /// Whether there is no timestamp.
    pub fn is_empty(&self) -> bool {
        matches!(&self.0, Repr::Text(t) if t.is_empty())
    }

    /// The instant, when the text names one (see [`parse_ts`]).
    pub fn timestamp(&self) -> Option<jiff::Timestamp> {
        match &self.0 {
            Repr::Utc { secs, nanos, .. } => {
                jiff::Timestamp::new(*secs, i32::try_from(*nanos).ok()?).ok()
            }
            Repr::Text(t) => parse_ts(t),
        }
    }
}

/// The time a record was written, if its `ts` can be read: RFC 3339, or a
/// date and time without offset (JP's format), taken as UTC.
pub fn parse_ts(ts: &str) -> Option<jiff::Timestamp> {
    if let Ok(t) = ts.parse::<jiff::Timestamp>() {
        return Some(t);
    }
    let civil: jiff::civil::DateTime = ts.parse().ok()?;
    jiff::tz::TimeZone::UTC.to_timestamp(civil).ok()
}

impl Default for Ts {
    fn default() -> Ts {
        Ts::empty()
    }
}

impl From<&str> for Ts {
    fn from(text: &str) -> Ts {
        Ts::new(text)
    }
}

impl From<String> for Ts {
    fn from(text: String) -> Ts {
        match parse_utc(&text) {
            Some(_) => Ts::new(&text),
            None => Ts(Repr::Text(text.into_boxed_str())),
        }
    }
}

impl From<&String> for Ts {
    fn from(text: &String) -> Ts {
        Ts::new(text)
    }
}

impl PartialEq<str> for Ts {
    fn eq(&self, other: &str) -> bool {
        self.text() == other
    }
}

impl PartialEq<&str> for Ts {
    fn eq(&self, other: &&str) -> bool {
        self.text() == *other
    }
}

impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Text(t) => f.write_str(t),
            Repr::Utc {
                secs,
                nanos,
                digits,
            } => {
                // Made from a valid date and time, so always in range.
                let t = jiff::Timestamp::new(*secs, 0).unwrap_or_default();
                let c = jiff::tz::TimeZone::UTC.to_datetime(t);
                write!(
                    f,
                    "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
                    c.year(),
                    c.month(),
                    c.day(),
                    c.hour(),
                    c.minute(),
                    c.second()
                )?;
                if *digits > 0 {
                    let frac = nanos / 10u32.pow(9 - u32::from(*digits));
                    write!(f, ".{frac:0width$}", width = usize::from(*digits))?;
                }
                f.write_str("Z")
            }
        }
    }
}

impl fmt::Debug for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.text(), f)
    }
}

impl Serialize for Ts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Text(t) => s.serialize_str(t),
            // Needs no escaping: digits and `-T:.Z`.
            Repr::Utc { .. } => s.collect_str(self),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, a real date and time (no leap
/// second), as (seconds since 1970, nanoseconds, fraction digits).
fn parse_utc(t: &str) -> Option<(i64, u32, u8)> {
    let b = t.as_bytes();
    if b.len() < 20 || b.len() > 30 || b[b.len() - 1] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let n2 = |at: usize| num(at..at + 2).and_then(|n| i8::try_from(n).ok());
    let y = i16::try_from(num(0..4)?).ok()?;
    // jiff checks the date and time are real ones.
    let civil = jiff::civil::DateTime::new(y, n2(5)?, n2(8)?, n2(11)?, n2(14)?, n2(17)?, 0).ok()?;
    let secs = jiff::tz::TimeZone::UTC
        .to_timestamp(civil)
        .ok()?
        .as_second();
    let (nanos, digits) = match b.len() {
        20 => (0, 0),
        n if n >= 22 && b[19] == b'.' => {
            let digits = n - 21;
            let frac = num(20..n - 1)?;
            (frac * 10u32.pow(9 - digits as u32), digits as u8)
        }
        _ => return None,
    };
    Some((secs, nanos, digits))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn jp_timestamps_are_read_as_utc() {
        let t = parse_ts("2026-03-05 19:31:48.190208").unwrap();
        assert_eq!(t.to_string(), "2026-03-05T19:31:48.190208Z");
        assert!(parse_ts("not a time").is_none());
    }

    #[test]
    fn utc_times_are_held_as_numbers_and_written_back_unchanged() {
        for t in [
            "2026-12-02T01:40:12.123456789Z",
            "2026-12-02T01:40:12Z",
            "2026-12-02T01:40:12.500Z",
            "2024-02-29T23:59:59.0Z",
            "1970-01-01T00:00:00Z",
            "0001-01-01T00:00:00.000000001Z",
            "1969-12-31T23:59:59.9Z",
        ] {
            let ts = Ts::new(t);
            assert!(matches!(ts.0, Repr::Utc { .. }), "{t}");
            assert_eq!(ts.to_string(), t);
            assert_eq!(serde_json::to_string(&ts).unwrap(), format!("\"{t}\""));
            assert_eq!(ts.timestamp(), t.parse().ok(), "{t}");
        }
    }

    #[test]
    fn other_text_is_kept_as_it_is() {
        for t in [
            "",
            "t",
            "2026-12-02 01:40:12Z",
            "2026-12-02T01:40:12+01:00",
            "2026-02-30T00:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T01:40:60Z",
            "2026-12-02T01:40:12.Z",
            "2026-12-02T01:40:12.1234567890Z",
            "2026-12-02T01:40:12z",
            "+2026-12-02T01:40:12Z",
            "2026-12-02T01:40:1٣Z",
        ] {
            let ts = Ts::new(t);
            assert!(matches!(ts.0, Repr::Text(_)), "{t}");
            assert_eq!(ts.to_string(), t);
            assert_eq!(ts, t);
        }
        assert!(Ts::empty().is_empty());
        assert!(!Ts::new("1970-01-01T00:00:00Z").is_empty());
    }

    proptest! {
        /// Any text comes back as it was; UTC times agree with jiff.
        #[test]
        fn any_text_round_trips(
            secs in -62_135_596_800i64..253_402_300_799,
            nanos in 0u32..1_000_000_000,
            digits in 0usize..=9,
            noise in "[0-9TZ:.\\-]{0,30}",
        ) {
            let t = jiff::Timestamp::new(secs, nanos as i32).unwrap();
            let text = t.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            let frac = format!("{nanos:09}");
            let text = if digits == 0 {
                format!("{text}Z")
            } else {
                format!("{text}.{}Z", &frac[..digits])
            };
            let ts = Ts::new(&text);
            prop_assert!(matches!(ts.0, Repr::Utc { .. }), "{}", text);
            prop_assert_eq!(ts.to_string(), text.clone());
            prop_assert_eq!(ts.timestamp(), text.parse().ok());
            prop_assert_eq!(Ts::new(&noise).to_string(), noise);
        }
    }
}
