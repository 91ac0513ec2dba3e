//! The agents ctxfold knows by name: the ones `ctxfold run` can start and
//! point at a proxy, and the ones `ctxfold doctor` looks for on `PATH`.

/// The known agents: the command that starts each, and the name it is
/// shown by.
pub const KNOWN: &[(&str, &str)] = &[
    ("claude", "Claude Code"),
    ("codex", "Codex"),
    ("opencode", "opencode"),
    ("aider", "aider"),
];
