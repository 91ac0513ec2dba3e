//! `[tools.NAME]` local tools in `ctxfold config show`, through the real
//! binary.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::Path;

use common::Scratch;

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/tools.example.toml")
        .display()
        .to_string()
}

#[test]
fn config_show_lists_the_declared_tools() {
    let s = Scratch::new();
    let text = s.ok(&["-c", &example(), "config", "show"]);
    assert!(
        text.contains("tools.run_command.command = [\"python3\", \"-c\", "),
        "{text}"
    );
    assert!(text.contains("tools.grep.run = \"unattended\""));
    assert!(
        text.contains("# tools.run_command: max_output_bytes = 100000 (defaults)"),
        "{text}"
    );
    let j = s.json(&["-c", &example(), "config", "show"]);
    assert_eq!(j["tools"]["run_command"]["run"], "ask");
    assert_eq!(j["tools"]["run_command"]["timeout"], 300.0);
    assert_eq!(
        j["tools"]["read_file"]["parameters"]["properties"]["path"]["type"],
        "string"
    );
}

#[test]
fn a_bad_tool_declaration_is_refused_naming_file_line_and_key() {
    let s = Scratch::new();
    let cfg = s.path().join(".ctxfold/config.toml");
    std::fs::write(
        &cfg,
        "[tools.ls]\ncommand = [\"ls\"]\nrun = \"sometimes\"\n",
    )
    .unwrap();
    let out = s.run(&["config", "show"]);
    assert!(!out.status.success());
    assert_eq!(
        common::stderr(&out).trim_end(),
        format!(
            "error: {}:3: tools.ls.run = \"sometimes\": expected one of ask, unattended, edit",
            cfg.display()
        )
    );
}
