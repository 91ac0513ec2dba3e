//! The `-k/--compact=SPEC` language (SPEC §5): `POLICIES[:RANGE]`.
//!
//! - POLICIES: `r` (strip reasoning), `t` or `t=MODE` (tools; MODE is
//!   `strip`, `strip-requests`/`sreq`, `strip-responses`/`sres`, `omit`),
//!   `s` (summarize), joined with `+`.
//! - RANGE: `FROM..TO` with either side optional, or a single bound: a
//!   count from the end or a duration is an end (`-3` means `..-3`, `5h`
//!   means `..5h`), a turn number or `last-compaction` is a start (`5` means
//!   `5..`).
//! - No RANGE: the whole conversation.
//!
//! Examples: `r`, `r+t`, `t=sres:..-2`, `s:2..10`, `r+t=omit:last-compaction..`.

use std::fmt;

use crate::bounds::{Bound, BoundError};
use crate::compaction::{ReasoningPolicy, ToolPolicy};
use crate::planner::{Rule, SummaryRequest};

/// What is wrong with a spec, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DslError {
    /// The whole spec as given.
    pub spec: String,
    /// 0-based character position of the problem.
    pub position: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for DslError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compaction spec `{}`: {} (at character {})",
            self.spec,
            self.message,
            self.position + 1
        )
    }
}

impl std::error::Error for DslError {}

const EXPECTED_POLICY: &str = "expected r, t, t=MODE or s, joined with +";
const EXPECTED_MODE: &str = "expected strip, strip-requests (sreq), strip-responses (sres) or omit";

/// Parse a tool mode as written after `t=` (or in `--tools=MODE`).
pub fn parse_tool_mode(s: &str) -> Option<ToolPolicy> {
    Some(match s {
        "strip" => ToolPolicy::Strip,
        "strip-requests" | "sreq" => ToolPolicy::StripRequests,
        "strip-responses" | "sres" => ToolPolicy::StripResponses,
        "omit" => ToolPolicy::Omit,
        _ => return None,
    })
}

/// Parse one `-k` spec into a rule.
pub fn parse(spec: &str) -> Result<Rule, DslError> {
    let err = |position: usize, message: String| DslError {
        spec: spec.to_owned(),
        position,
        message,
    };
    let (policies, range, range_at) = match spec.find(':') {
        Some(i) => (&spec[..i], Some(&spec[i + 1..]), i + 1),
        None => (spec, None, spec.len()),
    };
    if policies.trim().is_empty() {
        return Err(err(
            0,
            format!("no policy before the range; {EXPECTED_POLICY}"),
        ));
    }
    let mut rule = Rule::default();
    let mut at = 0;
    for part in policies.split('+') {
        let here = at;
        at += part.len() + 1;
        let (name, mode) = match part.split_once('=') {
            Some((n, m)) => (n, Some(m)),
            None => (part, None),
        };
        match (name, mode) {
            ("", _) => return Err(err(here, format!("empty policy; {EXPECTED_POLICY}"))),
            ("r", None) => {
                if rule.reasoning.replace(ReasoningPolicy::Strip).is_some() {
                    return Err(err(here, "`r` given twice".into()));
                }
            }
            ("r", Some(_)) | ("s", Some(_)) => {
                return Err(err(here, format!("`{name}` takes no mode")));
            }
            ("t", mode) => {
                let policy = match mode {
                    None => ToolPolicy::Strip,
                    Some(m) => parse_tool_mode(m).ok_or_else(|| {
                        err(
                            here + 2,
                            format!("unknown tool mode `{m}`; {EXPECTED_MODE}"),
                        )
                    })?,
                };
                if rule.tool_calls.replace(policy).is_some() {
                    return Err(err(here, "`t` given twice".into()));
                }
            }
            ("s", None) => {
                let derive = SummaryRequest::Derive {
                    model: None,
                    instructions: None,
                };
                if rule.summary.replace(derive).is_some() {
                    return Err(err(here, "`s` given twice".into()));
                }
            }
            (other, _) => {
                return Err(err(
                    here,
                    format!("unknown policy `{other}`; {EXPECTED_POLICY}"),
                ));
            }
        }
    }
    if let Some(range) = range {
        let bound = |text: &str, offset: usize| -> Result<Bound, DslError> {
            text.parse::<Bound>()
                .map_err(|e: BoundError| err(range_at + offset, e.to_string()))
        };
        if range.is_empty() {
            return Err(err(
                range_at,
                "empty range after `:`; expected FROM..TO or one bound".into(),
            ));
        }
        match range.split_once("..") {
            Some((from, to)) => {
                if !from.is_empty() {
                    rule.from = Some(bound(from, 0)?);
                }
                if !to.is_empty() {
                    let b = bound(to, from.len() + 2)?;
                    if b == Bound::LastCompaction {
                        return Err(err(
                            range_at + from.len() + 2,
                            BoundError::LastCompactionAsEnd.to_string(),
                        ));
                    }
                    rule.to = Some(b);
                }
            }
            None => match bound(range, 0)? {
                b @ (Bound::FromEnd(_) | Bound::Ago(_)) => rule.to = Some(b),
                b @ (Bound::Turn(_) | Bound::LastCompaction) => rule.from = Some(b),
            },
        }
    }
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;

    fn derive() -> Option<SummaryRequest> {
        Some(SummaryRequest::Derive {
            model: None,
            instructions: None,
        })
    }

    #[test]
    fn policies() {
        let r = parse("r").unwrap();
        assert_eq!(r.reasoning, Some(ReasoningPolicy::Strip));
        assert_eq!(
            (r.tool_calls, r.summary, r.from, r.to),
            (None, None, None, None)
        );
        assert_eq!(parse("t").unwrap().tool_calls, Some(ToolPolicy::Strip));
        for (m, p) in [
            ("strip", ToolPolicy::Strip),
            ("strip-requests", ToolPolicy::StripRequests),
            ("sreq", ToolPolicy::StripRequests),
            ("strip-responses", ToolPolicy::StripResponses),
            ("sres", ToolPolicy::StripResponses),
            ("omit", ToolPolicy::Omit),
        ] {
            assert_eq!(parse(&format!("t={m}")).unwrap().tool_calls, Some(p), "{m}");
        }
        assert_eq!(parse("s").unwrap().summary, derive());
        let all = parse("r+t=omit+s").unwrap();
        assert_eq!(all.reasoning, Some(ReasoningPolicy::Strip));
        assert_eq!(all.tool_calls, Some(ToolPolicy::Omit));
        assert_eq!(all.summary, derive());
    }

    #[test]
    fn ranges() {
        let r = parse("r:2..10").unwrap();
        assert_eq!(
            (r.from, r.to),
            (Some(Bound::Turn(2)), Some(Bound::Turn(10)))
        );
        let r = parse("r:..-3").unwrap();
        assert_eq!((r.from, r.to), (None, Some(Bound::FromEnd(3))));
        let r = parse("r:-3..").unwrap();
        assert_eq!((r.from, r.to), (Some(Bound::FromEnd(3)), None));
        let r = parse("t:..").unwrap();
        assert_eq!((r.from, r.to), (None, None));
        // A single bound: -N and durations are ends, N and last-compaction starts.
        assert_eq!(parse("r:-3").unwrap().to, Some(Bound::FromEnd(3)));
        assert_eq!(parse("r:5").unwrap().from, Some(Bound::Turn(5)));
        assert_eq!(
            parse("r:5h").unwrap().to,
            Some(Bound::Ago(SignedDuration::from_hours(5)))
        );
        assert_eq!(
            parse("r:last-compaction").unwrap().from,
            Some(Bound::LastCompaction)
        );
        let r = parse("s:last-compaction..-2").unwrap();
        assert_eq!(
            (r.from, r.to),
            (Some(Bound::LastCompaction), Some(Bound::FromEnd(2)))
        );
        let r = parse("t=sres:30m..").unwrap();
        assert_eq!(r.from, Some(Bound::Ago(SignedDuration::from_mins(30))));
    }

    #[test]
    fn errors_say_what_and_where() {
        let cases = [
            ("", 0, "no policy before the range"),
            (":2..4", 0, "no policy before the range"),
            ("x", 0, "unknown policy `x`; expected r, t, t=MODE or s"),
            ("r+x", 2, "unknown policy `x`"),
            ("r+", 2, "empty policy"),
            (
                "t=shred",
                2,
                "unknown tool mode `shred`; expected strip, strip-requests (sreq), strip-responses (sres) or omit",
            ),
            ("r=strip", 0, "`r` takes no mode"),
            ("r+r", 2, "`r` given twice"),
            ("t+t=omit", 2, "`t` given twice"),
            ("r:", 2, "empty range"),
            ("r:abc", 2, "`abc` is not a bound"),
            ("r:2..zz", 5, "`zz` is not a bound"),
            ("r:0..3", 2, "turns are numbered from 1"),
            ("r:..last-compaction", 4, "can only start a range"),
        ];
        for (spec, position, needle) in cases {
            let e = parse(spec).unwrap_err();
            assert_eq!(e.position, position, "{spec}: {e}");
            assert!(e.message.contains(needle), "{spec}: {e}");
            assert!(e.to_string().contains(&format!("`{spec}`")), "{e}");
        }
    }
}
