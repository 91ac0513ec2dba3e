//! Anthropic prompt-cache markers (`cache_control`): read from a record,
//! and moved onto the nearest block still sent when the one carrying it
//! is folded away, so the cached prefix keeps its boundary.

use ctxfold_core::{Body, Object, Record};
use ctxfold_wire::anthropic::cache_control;
use serde_json::Value;

/// Where the Anthropic format keeps a block's unmapped fields.
const BLOCK_FIELDS: &str = "anthropic_block_fields";

/// A record's Anthropic prompt-cache marker (`cache_control`), if any.
pub(super) fn cache_marker(r: &Record) -> Option<&Value> {
    match &r.body {
        Body::Other { kind, fields } if kind == "anthropic_block" => {
            cache_control::of(fields.get("block")?.as_object()?)
        }
        _ => cache_control::of(r.metadata.as_ref()?.get(BLOCK_FIELDS)?.as_object()?),
    }
}

/// Whether the block `r` is written as may carry a prompt-cache marker
/// (thinking blocks may not; system records go to the top-level prompt).
pub(super) fn carries_marker(r: &Record) -> bool {
    match &r.body {
        Body::User { .. }
        | Body::Assistant { .. }
        | Body::ToolCall { .. }
        | Body::ToolResult { .. }
        | Body::Structured { .. } => r
            .metadata
            .as_ref()
            .and_then(|m| m.get(BLOCK_FIELDS))
            .is_none_or(Value::is_object),
        Body::Other { kind, fields } if kind == "anthropic_block" => {
            fields.get("block").is_some_and(Value::is_object)
        }
        _ => false,
    }
}

/// Put prompt-cache marker `m` on the block `r` is written as (one that
/// [`carries_marker`]).
pub(super) fn set_cache_marker(r: &mut Record, m: Value) {
    let fields = match &mut r.body {
        Body::Other { fields, .. } => fields.get_mut("block"),
        _ => Some(
            r.metadata
                .get_or_insert_default()
                .entry(BLOCK_FIELDS)
                .or_insert_with(|| Value::Object(Object::new())),
        ),
    };
    if let Some(Value::Object(f)) = fields {
        cache_control::set(f, m);
    }
}

/// Take the prompt-cache marker off the block `r` is written as, if it
/// has one.
pub(super) fn clear_cache_marker(r: &mut Record) {
    let fields = match &mut r.body {
        Body::Other { kind, fields } if kind == "anthropic_block" => fields.get_mut("block"),
        _ => r.metadata.as_mut().and_then(|m| m.get_mut(BLOCK_FIELDS)),
    };
    if let Some(Value::Object(f)) = fields {
        cache_control::clear(f);
    }
}
