//! Making the summary a planned compaction derives, the same way for
//! automatic and manual compaction: a slow summarizer (a model) is
//! bracketed by a `compaction_started` record written before it is called;
//! a dry run never calls one and says who would write the summary.

use ctxfold_core::Record;
use ctxfold_core::attempt::{Finished, Started};
use ctxfold_core::compaction::{Provenance, Summary};
use ctxfold_core::planner::Planned;
use ctxfold_core::summarizer::SummaryInput;

use crate::{CompactError, Conversation, Summarizers};

/// What deriving gave: the summary (or why there is none), and the `seq`
/// of the `compaction_started` written for it, which the caller closes.
pub(crate) struct Derived {
    pub summary: Result<Summary, String>,
    pub started: Option<u64>,
}

/// Derive `planned`'s summary (its `derive` must be set).
pub(crate) fn derive(
    conv: &mut Conversation<'_>,
    planned: &Planned,
    summarizers: &dyn Summarizers,
    dry_run: bool,
) -> Result<Derived, CompactError> {
    let (model, instructions) = planned.derive.clone().unwrap_or_default();
    let s = match summarizers.get(model.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            return Ok(Derived {
                summary: Err(e),
                started: None,
            });
        }
    };
    if dry_run && !s.offline() {
        // A preview never pays for a model call: say who would write it.
        return Ok(Derived {
            summary: Ok(Summary {
                text: format!(
                    "[a summary by {}, written when this runs without --dry-run]",
                    s.name()
                ),
                provenance: Provenance::Derived {
                    summarizer: s.name(),
                    version: None,
                    instructions: None,
                    method: Some("dry run".into()),
                },
            }),
            started: None,
        });
    }
    let mut started = None;
    if !s.offline() && !dry_run {
        let c = &planned.compaction;
        let log = conv.log();
        let rec = Started {
            from_turn: c.from_turn,
            to_turn: c.to_turn,
            from_seq: log.records()[planned.range.0].seq,
            to_seq: log.records()[planned.range.1].seq,
            source: c.source,
            summarizer: s.name(),
        };
        let seq = conv
            .append(vec![Record::new(0, ctxfold_store::now(), rec.body())])?
            .start;
        started = Some(seq);
    }
    let made = s.summarize(SummaryInput {
        log: conv.log(),
        range: planned.range,
        instructions: instructions.as_deref(),
    });
    Ok(Derived {
        summary: made
            .map(|out| Summary {
                text: out.text,
                provenance: out.provenance,
            })
            .map_err(|e| e.to_string()),
        started,
    })
}

/// Close the attempts `started` (their `compaction_started` seqs), each
/// naming its compaction or the error.
pub(crate) fn close(
    conv: &mut Conversation<'_>,
    started: &[(u64, Option<u64>)],
    error: Option<&str>,
) -> Result<(), CompactError> {
    if started.is_empty() {
        return Ok(());
    }
    let records = started
        .iter()
        .map(|&(started, compaction)| {
            let error = match compaction {
                Some(_) => None,
                None => Some(
                    error
                        .unwrap_or("it would change nothing in the view")
                        .to_owned(),
                ),
            };
            Record::new(
                0,
                ctxfold_store::now(),
                Finished {
                    started,
                    compaction,
                    error,
                }
                .body(),
            )
        })
        .collect();
    conv.append(records)?;
    Ok(())
}
