//! The example tools shipped in `docs/tools.example.toml` load as config
//! and work, run as the host runs them, on real files.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use ctxfold_config::{Layers, RunMode, ToolDecl, load};
use ctxfold_host::tools::{Outcome, ToolResult, run_tool};
use serde_json::{Value, json};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.example.toml")
}

fn tools() -> BTreeMap<String, ToolDecl> {
    load(&Layers {
        files: vec![example()],
        ..Layers::default()
    })
    .unwrap()
    .config
    .tools
}

fn run(name: &str, args: Value) -> ToolResult {
    run_tool(&tools()[name], &args, &AtomicBool::new(false), &[])
}

/// A small project: `src/lib.rs`, `README.md`, and a `.git` folder that
/// listing and searching skip.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join("src/lib.rs"), "fn alpha() {}\nfn beta() {}\n").unwrap();
    std::fs::write(p.join("README.md"), "# Demo\nalpha and beta\n").unwrap();
    std::fs::write(p.join(".git/config"), "alpha\n").unwrap();
    dir
}

fn at(dir: &tempfile::TempDir, rel: &str) -> String {
    dir.path().join(rel).display().to_string()
}

#[test]
fn the_examples_declare_four_tools() {
    let t = tools();
    assert_eq!(
        t.keys().collect::<Vec<_>>(),
        ["grep", "list_files", "read_file", "run_command"]
    );
    assert_eq!(t["run_command"].run, RunMode::Ask);
    assert!(t.values().all(|d| !d.description.is_empty()));
    assert_eq!(t["read_file"].parameters["required"], json!(["path"]));
}

#[test]
fn read_file_numbers_the_lines() {
    let p = project();
    let r = run("read_file", json!({"path": at(&p, "src/lib.rs")}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        ("1\tfn alpha() {}\n2\tfn beta() {}\n", Outcome::Success)
    );
    let r = run(
        "read_file",
        json!({"path": at(&p, "src/lib.rs"), "start_line": 2}),
    );
    assert_eq!(r.content, "2\tfn beta() {}\n");
    let r = run("read_file", json!({"path": at(&p, "nope.rs")}));
    assert_eq!(r.outcome, Outcome::Failed);
    assert!(
        r.content
            .contains("FileNotFoundError: [Errno 2] No such file or directory"),
        "{}",
        r.content
    );
}

#[test]
fn list_files_skips_hidden_folders() {
    let p = project();
    let r = run("list_files", json!({"path": p.path()}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        ("README.md\nsrc/lib.rs\n", Outcome::Success)
    );
}

#[test]
fn grep_finds_matches_and_says_when_there_are_none() {
    let p = project();
    let r = run(
        "grep",
        json!({"pattern": "alpha|beta", "path": at(&p, "src")}),
    );
    let lib = at(&p, "src/lib.rs");
    assert_eq!(
        (r.content, r.outcome),
        (
            format!("{lib}:1:fn alpha() {{}}\n{lib}:2:fn beta() {{}}\n"),
            Outcome::Success
        )
    );
    let r = run("grep", json!({"pattern": "gamma", "path": p.path()}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        ("no matches\n", Outcome::Success)
    );
}

#[test]
fn run_command_returns_both_streams_and_fails_with_the_command() {
    let r = run("run_command", json!({"command": "echo out; echo err >&2"}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        ("out\nerr\n", Outcome::Success)
    );
    let r = run("run_command", json!({"command": "echo broken; exit 2"}));
    assert_eq!(
        (r.content.as_str(), r.outcome),
        (
            "run_command failed: exit status 2.\nStandard output:\nbroken\n",
            Outcome::Failed
        )
    );
}
