//! The agent host (SPEC §10): the turn loop behind `ctxfold query`. Per
//! step it asks the compaction service whether the request must be
//! compacted (seed 002's pre-step seam), derives the request from the
//! projected view once, calls the model (streaming), records every event
//! as it completes, runs the tool calls, and repeats until the model
//! answers without tools; then the between-turn trigger (seed 004).
//!
//! The loop knows nothing of terminals or commands: what it shows goes
//! through [`turn::Ui`], and tool calls through [`turn::ToolRunner`].

#![warn(missing_docs)]

pub mod turn;
