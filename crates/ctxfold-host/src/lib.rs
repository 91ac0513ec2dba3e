//! The agent host of ctxfold (SPEC §10): the parts `ctxfold query` runs a
//! turn with.
//!
//! - [`tools`]: local tools declared in config (`[tools.NAME]`), run as
//!   commands with the call's JSON arguments on standard input, their
//!   output bounded; and their specs for the model.
//! - [`approval`]: whether a tool call runs, asked on the terminal for
//!   `run = "ask"` tools (`y`, `n` with a reason, `e` to edit the arguments
//!   in `$EDITOR`, `?`).

#![warn(missing_docs)]

pub mod approval;
pub mod tools;
