//! A provider answered that the request is too long: one forced
//! compaction, one retry, never a loop (SPEC §10).

use ctxfold_core::Log;

use crate::{CompactError, Compactor, Context, Conversation, Outcome};

/// Why a request sent with [`retry_on_overflow`] failed.
#[derive(Debug, thiserror::Error)]
pub enum OverflowError<E> {
    /// The request failed (the second time, after an overflow; or for
    /// another reason; or compaction found nothing to fold).
    #[error(transparent)]
    Send(E),
    /// Compacting after the overflow failed.
    #[error(transparent)]
    Compact(CompactError),
}

/// Send the request built from the conversation's log with `send`; when
/// `is_overflow` says the answer is "context too long", compact what lies
/// before the retained tail once and send once more. Returns the answer
/// and, when it compacted, what it did. When nothing could be compacted
/// the first error is returned: sending the same request again would fail
/// the same way.
pub fn retry_on_overflow<T, E>(
    compactor: &dyn Compactor,
    conv: &mut Conversation<'_>,
    ctx: &Context,
    mut send: impl FnMut(&Log) -> Result<T, E>,
    is_overflow: impl Fn(&E) -> bool,
) -> Result<(T, Option<Outcome>), OverflowError<E>> {
    let first = match send(conv.log()) {
        Ok(t) => return Ok((t, None)),
        Err(e) => e,
    };
    if !is_overflow(&first) {
        return Err(OverflowError::Send(first));
    }
    tracing::info!(
        "the provider says the request is too long: compacting once, then retrying once"
    );
    let outcome = compactor
        .compact_for_overflow(conv, ctx)
        .map_err(OverflowError::Compact)?;
    if !outcome.compacted() {
        tracing::warn!(status = ?outcome.status, "nothing could be compacted after the overflow");
        return Err(OverflowError::Send(first));
    }
    send(conv.log())
        .map(|t| (t, Some(outcome)))
        .map_err(OverflowError::Send)
}
