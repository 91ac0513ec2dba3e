//! What a tool run gives back to the turn loop: the result the model
//! reads and, from a built-in tool, what the loop records with it. Below
//! both the built-in tools that make it and the turn loop that takes it.

use ctxfold_compactor::assistant::Proposal;
use ctxfold_core::Compaction;

/// What a tool run gives back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// Whether the tool failed (or was declined, timed out, interrupted).
    pub is_error: bool,
    /// What the turn loop records with the result (built-in tools only:
    /// the `compact` tool's approved compactions).
    pub effects: Vec<HostEffect>,
}

impl ToolOutput {
    /// A result with no effects.
    pub fn text(content: impl Into<String>, is_error: bool) -> Self {
        ToolOutput {
            content: content.into(),
            is_error,
            effects: Vec::new(),
        }
    }
}

/// What a built-in tool asks the turn loop to do besides recording its
/// result. Only built-in tools return these.
#[derive(Debug, Clone, PartialEq)]
pub enum HostEffect {
    /// Record the compactions the user approved, with the call's result.
    Compact {
        /// The rules, to plan again under the lock against the log as it
        /// then is.
        proposals: Vec<Proposal>,
        /// What they gave when approved: what is recorded, provided
        /// planning again gives the same (else nothing is).
        approved: Vec<Compaction>,
    },
}
