//! Undo and redo of compactions: the one `compaction_reset` record that
//! `conversation compact --reset` / `--restore` and the browser pages append
//! (SPEC §4: undo is an append too; nothing is deleted).
//!
//! Compactions are named by number, counted from 1 in log order as
//! `conversation show` lists them; numbers never change, since the log only
//! grows.

use ctxfold_core::compaction::{AllMarker, CompactionReset, ResetTargets};
use ctxfold_core::projection::{Inactive, Standing, compaction_status, project, standings};
use ctxfold_core::{Body, Log, Object, Record};
use ctxfold_store::{Store, StoreError};

/// Compaction records of `log` in order, numbered from 1 as `show` lists
/// them: (number, record index).
pub fn numbered_compactions(log: &Log) -> Vec<(usize, usize)> {
    log.records()
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.body, Body::Compaction(_)))
        .enumerate()
        .map(|(n, (i, _))| (n + 1, i))
        .collect()
}

/// Why a reset could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    /// Reading or writing the conversation failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The number names no compaction.
    #[error(
        "no compaction {number}: this conversation has {count} (see `ctxfold conversation show`)"
    )]
    NoSuchCompaction {
        /// The number asked for.
        number: usize,
        /// How many compactions the conversation has.
        count: usize,
    },
    /// Another process holds the compaction lock.
    #[error("conversation {0} is being compacted by another process; try again when it is done")]
    Busy(String),
}

/// What a reset does: the record to append, how many compactions it
/// names, and whether what the model sees changes. `record` is `None`
/// when there is nothing to revoke or restore.
#[derive(Debug, Clone, PartialEq)]
pub struct Reset {
    /// The `compaction_reset` record (its `seq` is given by the store).
    pub record: Option<Record>,
    /// How many compactions it revokes or restores.
    pub count: usize,
    /// Whether it restores (else it revokes).
    pub restore: bool,
    /// Whether the model's view changes: a superseded compaction revoked
    /// (or restored under the one that supersedes it) leaves it as it is.
    pub view_changes: bool,
    /// The one compaction named (`--reset N`), by number, and where it
    /// stands: before a revoke, after a restore (what a person is told
    /// when the view does not change).
    pub named: Option<(usize, Standing)>,
}

/// Why revoking (or restoring) compaction `number`, standing as `s` (see
/// [`Reset::named`]), leaves the view as it is; `None` when it would not.
pub fn unchanged_because(number: usize, s: Standing, restore: bool) -> Option<String> {
    Some(match s {
        Standing::Active => return None,
        Standing::Superseded { by, more } => {
            let (who, them) = if more > 0 {
                (format!("#{by} and {more} more, which decide"), "they are")
            } else {
                (format!("#{by}, which decides"), "it is")
            };
            let then = if restore {
                "it comes back into force if"
            } else {
                "it stays revoked if"
            };
            format!("#{number} is superseded by {who} everything it covers; {then} {them} revoked")
        }
        Standing::NoEffect => format!(
            "#{number} has no effect on the view (nothing in its range it acts on, or what it does is done under it too)"
        ),
        Standing::Revoked if restore => format!("#{number} is still revoked"),
        Standing::Revoked => format!("#{number} was revoked already"),
        Standing::Deferred(t) => format!(
            "#{number} is deferred until turn {} and not in force yet",
            u64::from(t) + 1
        ),
        Standing::OutOfBounds => format!("#{number}'s range lies outside the log"),
    })
}

/// The reset that revokes (`restore == false`) or restores compaction
/// number `which`, or, with `None`, every compaction (revoke) or every
/// revoked one (restore). `ts` is the record's timestamp.
pub fn plan_reset(
    log: &Log,
    restore: bool,
    which: Option<usize>,
    ts: &str,
) -> Result<Reset, ResetError> {
    let numbered = numbered_compactions(log);
    let targets = match which {
        Some(n) => {
            let (_, i) =
                numbered
                    .iter()
                    .find(|(k, _)| *k == n)
                    .ok_or(ResetError::NoSuchCompaction {
                        number: n,
                        count: numbered.len(),
                    })?;
            ResetTargets::Some(vec![log.records()[*i].seq])
        }
        None if !restore => ResetTargets::All(AllMarker::All),
        None => {
            let (_, inactive) = compaction_status(log);
            ResetTargets::Some(
                inactive
                    .iter()
                    .filter(|(_, why)| *why == Inactive::Revoked)
                    .map(|(i, _)| log.records()[*i].seq)
                    .collect(),
            )
        }
    };
    let count = match &targets {
        ResetTargets::All(_) => numbered.len(),
        ResetTargets::Some(v) => v.len(),
    };
    let record = (count > 0).then(|| {
        Record::new(
            0,
            ts,
            Body::CompactionReset(Box::new(CompactionReset {
                targets,
                restore,
                extra: Object::new(),
            })),
        )
    });
    // What the model sees, with the record and without: a reset of a
    // compaction another decides over changes nothing, and says so.
    let (view_changes, named) = match &record {
        None => (false, None),
        Some(r) => {
            let mut after = log.clone();
            after.push(Record {
                seq: log.next_seq(),
                ..r.clone()
            });
            let sent = |l: &Log| ctxfold_core::materialize::materialize(l, &project(l));
            let changes = sent(log) != sent(&after);
            let named = which.and_then(|n| {
                let (_, i) = numbered.iter().find(|(k, _)| *k == n)?;
                let s = if restore {
                    standings(&after)
                } else {
                    standings(log)
                };
                Some((n, *s.get(i)?))
            });
            (changes, named)
        }
    };
    Ok(Reset {
        record,
        count,
        restore,
        view_changes,
        named,
    })
}

/// What [`reset`] did.
#[derive(Debug)]
pub struct ResetDone {
    /// The reset made (appended unless it was a dry run).
    pub reset: Reset,
    /// What loading the log had to say (torn tail, lines not understood).
    pub warnings: Vec<String>,
}

/// Revoke or restore compactions of conversation `id` in `store` (see
/// [`plan_reset`]): under the conversation's compaction lock, so no
/// compaction lands between reading the log and appending. A dry run
/// takes no lock and writes nothing.
pub fn reset(
    store: &dyn Store,
    id: &str,
    restore: bool,
    which: Option<usize>,
    dry_run: bool,
) -> Result<ResetDone, ResetError> {
    // Held until the reset is appended.
    let _lock = if dry_run {
        None
    } else {
        match store.try_compaction_lock(id)? {
            Some(lock) => Some(lock),
            None => return Err(ResetError::Busy(id.to_owned())),
        }
    };
    let mut loaded = store.load(id)?;
    let warnings = std::mem::take(&mut loaded.warnings);
    let log = loaded.into_log();
    let reset = plan_reset(&log, restore, which, &ctxfold_store::now())?;
    if !dry_run && let Some(r) = &reset.record {
        store.append(id, vec![r.clone()])?;
    }
    Ok(ResetDone { reset, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfold_core::compaction::Source;
    use ctxfold_core::{Compaction, Record};

    fn log_with(n: usize) -> Log {
        let mut log = Log::new();
        log.push(Record::new(0, "t", Body::TurnStart));
        for k in 0..n {
            let seq = log.next_seq();
            log.push(Record::new(
                seq,
                "t",
                Body::Compaction(Box::new(Compaction::new(0, 0, Source::User))),
            ));
            let _ = k;
        }
        log
    }

    #[test]
    fn one_names_its_seq_all_says_all() {
        let log = log_with(2);
        let one = plan_reset(&log, false, Some(2), "t").unwrap();
        let Body::CompactionReset(r) = &one.record.unwrap().body else {
            panic!("not a reset")
        };
        assert_eq!(r.targets, ResetTargets::Some(vec![2]));
        assert!(!r.restore);
        let all = plan_reset(&log, false, None, "t").unwrap();
        assert_eq!(all.count, 2);
        assert!(matches!(
            all.record.unwrap().body,
            Body::CompactionReset(r) if matches!(r.targets, ResetTargets::All(_))
        ));
    }

    #[test]
    fn restore_all_names_the_revoked_and_nothing_is_nothing() {
        let mut log = log_with(2);
        let none = plan_reset(&log, true, None, "t").unwrap();
        assert_eq!((none.count, none.record), (0, None));
        let revoke = plan_reset(&log, false, Some(1), "t")
            .unwrap()
            .record
            .unwrap();
        let seq = log.next_seq();
        log.push(Record { seq, ..revoke });
        let back = plan_reset(&log, true, None, "t").unwrap();
        let Body::CompactionReset(r) = &back.record.unwrap().body else {
            panic!("not a reset")
        };
        assert_eq!(r.targets, ResetTargets::Some(vec![1]));
        assert!(r.restore);
    }

    #[test]
    fn revoking_a_superseded_compaction_says_the_view_stays() {
        use ctxfold_core::compaction::{Provenance, Summary};
        let mut log = Log::new();
        for b in [
            Body::TurnStart,
            Body::User {
                content: "question".into(),
                author: None,
            },
            Body::Assistant {
                content: "answer".into(),
            },
        ] {
            let seq = log.next_seq();
            log.push(Record::new(seq, "t", b));
        }
        for text in ["first", "second"] {
            let mut c = Compaction::new(0, 0, Source::User);
            c.summary = Some(Summary {
                text: text.into(),
                provenance: Provenance::Supplied {
                    author: Source::User,
                },
            });
            let seq = log.next_seq();
            log.push(Record::new(seq, "t", Body::Compaction(Box::new(c))));
        }
        let first = plan_reset(&log, false, Some(1), "t").unwrap();
        assert!(!first.view_changes);
        let (n, s) = first.named.unwrap();
        assert_eq!((n, s), (1, Standing::Superseded { by: 2, more: 0 }));
        let why = unchanged_because(n, s, false).unwrap();
        assert!(why.contains("superseded by #2"), "{why}");
        assert!(why.contains("stays revoked if it is revoked"), "{why}");
        let second = plan_reset(&log, false, Some(2), "t").unwrap();
        assert!(second.view_changes);
        assert_eq!(unchanged_because(2, second.named.unwrap().1, false), None);
    }

    #[test]
    fn unknown_number_is_an_error() {
        let e = plan_reset(&log_with(1), false, Some(5), "t").unwrap_err();
        assert!(e.to_string().contains("no compaction 5"), "{e}");
    }
}
