//! The agent host of ctxfold (SPEC §10): the turn loop behind `ctxfold
//! query`, and the parts it runs a turn with.
//!
//! - [`turn`]: per step, ask the compaction service whether the request
//!   must be compacted (seed 002's pre-step seam), derive the request from
//!   the projected view once, call the model (streaming), record every
//!   event as it completes, run the tool calls, and repeat until the model
//!   answers without tools; then the between-turn trigger (seed 004). What
//!   it shows goes through [`turn::Ui`], tool calls through
//!   [`turn::ToolRunner`].
//! - [`tools`]: local tools declared in config (`[tools.NAME]`), run as
//!   commands with the call's JSON arguments on standard input, their
//!   output bounded; and their specs for the model.
//! - [`builtin`]: the tools ctxfold answers itself, one module each, and
//!   when each is offered: [`builtin::compact`], the assistant's `compact`
//!   tool (when named: quote anchors, the preview the user approves, and
//!   the compactions it hands the turn loop to record with its result, in
//!   effect from the next turn); [`builtin::recall`] and
//!   [`builtin::search`] (while a compaction is in force, unless switched
//!   off: what a fold's handle stands for, byte for byte, and where a text
//!   occurs in the raw log, read from the host's own log, no approval).
//! - [`output`]: what a tool run gives back to the turn loop
//!   ([`output::ToolOutput`]), and what a built-in tool asks it to record
//!   with the result ([`output::HostEffect`]).
//! - [`approval`]: whether a tool call runs, asked on the terminal for
//!   `run = "ask"` tools (`y`, `n` with a reason, `e` to edit the arguments
//!   in `$EDITOR`, `?`).
//! - [`reaper`] (Unix): a tool's process group dies with the host, even
//!   one killed outright.

pub mod approval;
pub mod builtin;
pub mod output;
#[cfg(unix)]
pub mod reaper;
pub mod request_cache;
pub mod tools;
pub mod turn;
