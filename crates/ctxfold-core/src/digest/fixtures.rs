//! Logs and helpers shared by the digest's unit tests.

use serde_json::{Value, json};

use crate::digest::forms::render;
use crate::log::Log;
use crate::record::{Body, Record};

pub(super) fn build(bodies: Vec<Body>) -> Log {
    Log::from_records(
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, b)| Record::new(i as u64, "2026-01-01T00:00:00Z", b))
            .collect(),
    )
}

pub(super) fn user(s: &str) -> Body {
    Body::User {
        content: s.into(),
        author: None,
    }
}

pub(super) fn said(s: &str) -> Body {
    Body::Assistant { content: s.into() }
}

pub(super) fn call(id: &str, name: &str, arguments: Value) -> Body {
    Body::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub(super) fn result(id: &str, content: &str, is_error: bool) -> Body {
    Body::ToolResult {
        id: id.into(),
        content: content.into(),
        is_error,
    }
}

/// The full digest (these logs are small enough that `summarize`
/// would choose the terse form).
pub(super) fn digest_all(log: &Log) -> String {
    render(log, 0, log.len() - 1).unwrap()
}

/// The lines of one section (without its heading).
pub(super) fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| *l != format!("## {heading}"));
    lines.next();
    lines.take_while(|l| !l.is_empty()).collect()
}

pub(super) fn sample() -> Log {
    build(vec![
        Body::TurnStart,
        user("Fix the login bug in auth.rs"),
        Body::Reasoning {
            content: "the decided root cause is secret reasoning".into(),
        },
        said("Let me look at the code first."),
        call("c1", "fs_read_file", json!({"path": "src/auth.rs"})),
        result("c1", "fn login() {}", false),
        call("c2", "cargo_check", json!({"package": "auth"})),
        result(
            "c2",
            r#"{"message":"Cargo command failed: error[E0433]: failed to resolve: use of undeclared type `Session`\n --> src/auth.rs:3:5\n  |\n3 | Session::new()","trace":[]}"#,
            true,
        ),
        said(
            "The root cause is a missing import of `Session` in the login path. I'll add it.\n\nI fixed the import and the check passes now.\n\nWould you like me to add a test?",
        ),
        Body::TurnStart,
        user("Now add a regression test"),
        call(
            "c3",
            "fs_modify_file",
            json!({"json": {"edits": [{"path": "tests/auth_test.rs", "old": "a", "new": "src/not_a_path.rs"}]}, "pattern": "fn login"}),
        ),
        result("c3", "ok", false),
        call(
            "c4",
            "cargo_test",
            json!({"package": "auth", "testname": "login"}),
        ),
    ])
}
