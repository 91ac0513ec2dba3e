//! JP conversations: a folder with `events.json` (a JSON array of records),
//! `metadata.json` and, in the newer layout, `base_config.json`. In the
//! legacy layout the first record is a config delta that holds the base
//! config inline.
//!
//! | JP record | ctxfold record |
//! | --- | --- |
//! | `turn_start` | `turn_start` |
//! | `chat_request {content, author}` | `user` |
//! | in a file without `turn_start`: `chat_request` after a conversation event, outside a tool call and its result | a synthesized `turn_start` (hint `synthesized`), then `user` |
//! | `chat_response {message}` | `assistant` |
//! | `chat_response {reasoning, metadata}` | `reasoning` |
//! | `chat_response {data}` | `structured` |
//! | `tool_call_request {id, name, arguments}` | `tool_call` |
//! | `tool_call_response {id, content, is_error}` | `tool_result` |
//! | `compaction {from_turn, to_turn, summary, reasoning, tool_calls}` | `compaction` |
//! | `config_delta`, `inquiry_request`, `inquiry_response` | kept, same type, fields verbatim |
//! | anything else, or a record that cannot be understood | `jp_record`, the whole JP object verbatim, with a warning |
//!
//! JP stores tool arguments (every string, recursively), tool results and
//! metadata strings base64-encoded. Import decodes them; a value that is not
//! base64 (or not UTF-8 once decoded) stays as it is. Values that do not
//! re-encode to the same bytes with the standard alphabet (URL-safe, no
//! padding, not base64 at all) get a hint in the record's `extra["jp"]` so
//! export writes them back exactly. Export of an imported conversation
//! reproduces `events.json` byte for byte, also after a trip through
//! ctxfold's log: every field is kept (a request's string `author` as the
//! user record's author, others in `extra`); fields whose names a log line
//! reads as its own (`seq`, `ts`, `type`, `metadata`, `jp`, the record's
//! body fields) wait in the hints (`fields`), as do a key order export
//! would not write (`order`) and a response without `is_error`.
//!
//! JP files written before JP recorded turns (the legacy layout, and some
//! early files of the newer one) have no `turn_start` record at all: every
//! `chat_request` was its own `jp query`, its own turn. Read as they are,
//! they would be one turn (SPEC §2), out of reach of every turn-based rule;
//! so when a file holds no `turn_start` (and no JP `compaction`, whose turn
//! numbers count the file's own `turn_start`s), import puts a `turn_start`
//! before each request that follows a conversation event, except a request
//! between a tool call and its result. These records carry the hint
//! `synthesized` and export leaves them out, so the round trip stays byte
//! for byte.
//!
//! ctxfold records JP cannot hold are left out of an export: `system`
//! prompts (JP keeps them in config), `compaction_reset` records (JP has no
//! undo record; revoked compactions are left out instead), and records that
//! came from other formats.
//!
//! The code is split by job: `encoding` (JP's base64 strings), `import`
//! (JP objects to records), `turns` (the turns of a file without any),
//! `compaction` (JP's compaction record), `export` (records back to JP).

mod compaction;
mod encoding;
mod export;
mod import;
mod turns;

pub use export::{events_json, export, export_protected};
pub use import::import;

/// Key of the hints object in a record's `extra`.
const HINTS: &str = "jp";
/// Hint: fields whose names ctxfold's log gives a meaning, kept aside.
const FIELDS: &str = "fields";
/// Hint: a tool response had no `is_error`.
const NO_IS_ERROR: &str = "no_is_error";
/// Hint: the record's key order, when export would write another.
const ORDER: &str = "order";
/// Hint: a `turn_start` the importer made for a request in a file without
/// any.
const SYNTHESIZED: &str = "synthesized";
/// Kind of a record kept whole because it was not understood.
const JP_RECORD: &str = "jp_record";
/// JP record types kept under their own names, fields verbatim.
const KEPT_TYPES: [&str; 3] = ["config_delta", "inquiry_request", "inquiry_response"];
