//! How the overlay records' bodies ([`Compaction`], [`CompactionReset`])
//! are read from a record's fields and written back: by serde, both kinds
//! the same way. Here, with the record, rather than in `compaction`: the
//! record holds the overlay types, and they know nothing of records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Object, RecordError};
use crate::compaction::{Compaction, CompactionReset};

fn check<T: for<'de> Deserialize<'de>>(
    fields: &Object,
    kind: &'static str,
) -> Result<T, RecordError> {
    // serde's message names the field and what it expected: keep it.
    serde_json::from_value(Value::Object(fields.clone())).map_err(|e| RecordError::Fields {
        kind,
        detail: e.to_string(),
    })
}

/// An overlay record's body, read from and written to a record's fields
/// by serde (both kinds the same way).
pub(super) trait OverlayFields: Serialize + for<'de> Deserialize<'de> {
    /// The record's `type`.
    const KIND: &'static str;

    fn check_fields(fields: &Object) -> Result<(), RecordError> {
        check::<Self>(fields, Self::KIND).map(|_| ())
    }

    /// Only after [`OverlayFields::check_fields`] accepted `fields`.
    // Cannot fail: `record::take_body`, the only caller, runs after
    // `check_fields` accepted these very fields, and `check` is the same
    // deterministic deserialization.
    #[allow(clippy::expect_used)]
    fn take_fields(fields: &mut Object) -> Self {
        let taken = std::mem::take(fields);
        check(&taken, Self::KIND).expect("fields were checked")
    }

    fn write_fields(&self, obj: &mut Object) {
        if let Ok(Value::Object(m)) = serde_json::to_value(self) {
            obj.extend(m);
        }
    }
}

impl OverlayFields for Compaction {
    const KIND: &'static str = "compaction";
}

impl OverlayFields for CompactionReset {
    const KIND: &'static str = "compaction_reset";
}
