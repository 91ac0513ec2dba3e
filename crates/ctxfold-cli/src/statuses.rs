//! The status words of compaction records, as `show` and `print` say them.

use ctxfold_core::projection::Inactive;
use ctxfold_core::{Body, Log};

/// Whether each compaction record (by index) is in force, in words:
/// `active`, `deferred until turn N`, `revoked`, `out of bounds`.
pub fn compaction_statuses(log: &Log) -> std::collections::HashMap<usize, String> {
    let (active, inactive) = ctxfold_core::projection::compaction_status(log);
    let mut out: std::collections::HashMap<usize, String> = active
        .into_iter()
        .map(|i| (i, "active".to_owned()))
        .collect();
    for (i, why) in inactive {
        let words = match why {
            Inactive::Revoked => "revoked".to_owned(),
            Inactive::Deferred => match &log.records()[i].body {
                Body::Compaction(c) => format!(
                    "deferred until turn {}",
                    u64::from(c.deferred_until_turn.unwrap_or_default()) + 1
                ),
                _ => "deferred".to_owned(),
            },
            Inactive::OutOfBounds => "out of bounds".to_owned(),
        };
        out.insert(i, words);
    }
    out
}
