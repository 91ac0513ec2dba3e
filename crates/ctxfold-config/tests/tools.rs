//! `[tools.NAME]` local tool declarations, read from real files.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::PathBuf;
use std::time::Duration;

use ctxfold_config::{
    ConfigError, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT, Layers, Loaded, RunMode, load,
};
use ctxfold_core::compaction::ToolOverride;
use serde_json::json;
use tempfile::TempDir;

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load_one(text: &str) -> (TempDir, PathBuf, Result<Loaded, ConfigError>) {
    let dir = TempDir::new().unwrap();
    let p = write(&dir, "config.toml", text);
    let r = load(&Layers {
        workspace: Some(p.clone()),
        ..Layers::default()
    });
    (dir, p, r)
}

fn error_of(text: &str) -> (String, String) {
    let (_dir, p, r) = load_one(text);
    match r {
        Ok(l) => panic!("{text:?}: expected an error, loaded {:?}", l.config.tools),
        Err(e) => (e.to_string(), p.display().to_string()),
    }
}

const READ_FILE: &str = r#"
[tools.read_file]
command = ["sh", "-c", "jq -r .path | xargs cat"]
description = "Read a file"
run = "unattended"
timeout = 5
max_output_bytes = 2000
compaction = "strip-responses"
[tools.read_file.parameters]
required = ["path"]
[tools.read_file.parameters.properties.path]
type = "string"
description = "The file"
"#;

#[test]
fn a_declared_tool_is_read_with_every_key() {
    let (_dir, _p, r) = load_one(READ_FILE);
    let l = r.unwrap();
    let d = &l.config.tools["read_file"];
    assert_eq!(d.name, "read_file");
    assert_eq!(d.command, ["sh", "-c", "jq -r .path | xargs cat"]);
    assert_eq!(d.description, "Read a file");
    assert_eq!(d.run, RunMode::Unattended);
    assert_eq!(d.timeout, Duration::from_secs(5));
    assert_eq!(d.max_output_bytes, 2000);
    // The schema becomes JSON, with the object type models need added.
    assert_eq!(
        d.parameters,
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The file"}},
            "required": ["path"],
        })
    );
    // The compaction hint is still a hint.
    assert_eq!(
        l.config.hints.per_tool["read_file"],
        ToolOverride::StripResponses
    );
}

#[test]
fn a_tool_gets_the_defaults_it_does_not_set() {
    let (_dir, _p, r) = load_one("[tools.ls]\ncommand = [\"ls\"]\n");
    let l = r.unwrap();
    let d = &l.config.tools["ls"];
    assert_eq!(d.run, RunMode::Ask);
    assert_eq!(d.timeout, DEFAULT_TIMEOUT);
    assert_eq!(d.max_output_bytes, DEFAULT_MAX_OUTPUT_BYTES);
    assert_eq!(d.description, "");
    assert_eq!(d.parameters, json!({"type": "object", "properties": {}}));
    // Fractions of a second are accepted.
    let (_dir, _p, r) = load_one("[tools.ls]\ncommand = [\"ls\"]\ntimeout = 0.5\n");
    assert_eq!(
        r.unwrap().config.tools["ls"].timeout,
        Duration::from_millis(500)
    );
}

#[test]
fn hints_alone_declare_no_tool() {
    let (_dir, _p, r) = load_one(
        "[tools.search]\ncompaction = \"omit\"\n[tools.\"*\"]\ncompaction = \"strip\"\n[tools.compact]\ncompaction = \"keep\"\n[tools.\"odd name\"]\ncompaction = \"keep\"\n",
    );
    let l = r.unwrap();
    assert!(l.config.tools.is_empty(), "{:?}", l.config.tools);
    assert_eq!(l.config.hints.per_tool.len(), 3);
}

#[test]
fn the_compact_tool_takes_a_run_mode_and_asks_by_default() {
    let (_dir, _p, r) = load_one("[tools.compact]\ncompaction = \"keep\"\n");
    assert_eq!(r.unwrap().config.compact_run, RunMode::Ask);
    let (_dir, _p, r) = load_one("[tools.compact]\nrun = \"unattended\"\n");
    let l = r.unwrap();
    assert_eq!(l.config.compact_run, RunMode::Unattended);
    assert!(
        l.config.tools.is_empty(),
        "run alone declares no local tool"
    );
    let (_dir, p, r) = load_one("[tools.compact]\nrun = \"sometimes\"\n");
    let e = r.unwrap_err().to_string();
    assert!(
        e.contains(&format!("{}", p.display())) && e.contains("one of ask, unattended, edit"),
        "{e}"
    );
}

#[test]
fn a_higher_layer_changes_one_key_and_replaces_a_schema_whole() {
    let dir = TempDir::new().unwrap();
    let user = write(&dir, "user.toml", READ_FILE);
    let ws = write(
        &dir,
        "ws.toml",
        "[tools.read_file]\nrun = \"ask\"\n[tools.read_file.parameters.properties.file]\ntype = \"string\"\n",
    );
    let l = load(&Layers {
        user: Some(user),
        workspace: Some(ws),
        ..Layers::default()
    })
    .unwrap();
    let d = &l.config.tools["read_file"];
    assert_eq!(d.run, RunMode::Ask);
    assert_eq!(d.command, ["sh", "-c", "jq -r .path | xargs cat"]);
    assert_eq!(d.timeout, Duration::from_secs(5));
    // Not a blend of the two schemas (which would require `path` but only
    // describe `file`).
    assert_eq!(
        d.parameters,
        json!({"type": "object", "properties": {"file": {"type": "string"}}})
    );
}

#[test]
fn config_show_lists_tools_and_their_defaults() {
    let (_dir, p, r) = load_one(
        "[tools.ls]\ncommand = [\"ls\", \"-1\"]\ndescription = \"List files\"\ntimeout = 3\n",
    );
    let l = r.unwrap();
    let text = l.show_text();
    assert!(
        text.contains("tools.ls.command = [\"ls\", \"-1\"]")
            && text.contains(&format!("# from workspace file {}", p.display())),
        "{text}"
    );
    assert!(
        text.contains("# tools.ls: run = \"ask\", max_output_bytes = 100000 (defaults)"),
        "{text}"
    );
    let j = l.show_json();
    assert_eq!(
        j["tools"]["ls"],
        json!({
            "command": ["ls", "-1"],
            "description": "List files",
            "parameters": {"type": "object", "properties": {}},
            "run": "ask",
            "timeout": 3.0,
            "max_output_bytes": 100000,
        })
    );
}

#[test]
fn bad_tool_values_name_the_file_line_and_key() {
    for (text, line, key, expected) in [
        (
            "[tools.x]\ncommand = \"ls -l\"\n",
            2,
            "tools.x.command = \"ls -l\"",
            "an array of strings: the program, then its arguments",
        ),
        (
            "[tools.x]\ncommand = []\n",
            2,
            "tools.x.command = []",
            "an array of strings",
        ),
        (
            "[tools.x]\ncommand = [\"\"]\n",
            2,
            "tools.x.command = [\"\"]",
            "an array of strings",
        ),
        (
            "[tools.x]\ncommand = [\"ls\", 1]\n",
            2,
            "tools.x.command = [\"ls\", 1]",
            "an array of strings",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\nrun = \"always\"\n",
            3,
            "tools.x.run = \"always\"",
            "one of ask, unattended, edit",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\ntimeout = 0\n",
            3,
            "tools.x.timeout = 0",
            "a number of seconds > 0",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\ntimeout = \"1m\"\n",
            3,
            "tools.x.timeout = \"1m\"",
            "a number of seconds > 0",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\nmax_output_bytes = 0\n",
            3,
            "tools.x.max_output_bytes = 0",
            "a whole number of bytes >= 1",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\ndescription = 3\n",
            3,
            "tools.x.description = 3",
            "a string",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\nparameters = \"{}\"\n",
            3,
            "tools.x.parameters = \"{}\"",
            "a JSON schema of the arguments, as a table",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\n[tools.x.parameters]\ntype = \"string\"\n",
            4,
            "tools.x.parameters.type = \"string\"",
            "\"object\": a tool's arguments are a JSON object",
        ),
        (
            "[tools.x]\ncommand = [\"ls\"]\n[tools.x.parameters]\nrequired = \"path\"\n",
            4,
            "tools.x.parameters.required = \"path\"",
            "an array of argument names",
        ),
        (
            "[tools.\"*\"]\ncommand = [\"ls\"]\n",
            2,
            "tools.\"*\".command = [\"ls\"]",
            "no such key here: [tools.\"*\"] only sets compaction",
        ),
        (
            "[tools.compact]\ncommand = [\"ls\"]\n",
            2,
            "tools.compact.command = [\"ls\"]",
            "no such key here: compact is ctxfold's own tool",
        ),
        (
            "[tools.\"list files\"]\ncommand = [\"ls\"]\n",
            1,
            "tools.\"list files\" = { command = [\"ls\"] }",
            "a tool name of letters, digits, _ and - (1 to 64 characters)",
        ),
    ] {
        let (msg, p) = error_of(text);
        let want = format!("{p}:{line}: {key}: expected {expected}");
        assert!(
            msg.starts_with(&want),
            "{text:?}\ngot:  {msg}\nwant: {want}…"
        );
    }
}

#[test]
fn a_typo_in_a_tool_key_is_named_with_the_nearest_key() {
    let (msg, p) = error_of("[tools.x]\ncomand = [\"ls\"]\n");
    assert_eq!(
        msg,
        format!(
            "{p}:2: unknown key tools.x.comand: expected one of command, compaction, description, max_output_bytes, parameters, run, timeout; did you mean command?"
        )
    );
}

#[test]
fn a_tool_without_a_command_in_any_layer_is_an_error() {
    let (msg, p) = error_of("[tools.x]\ndescription = \"does things\"\n");
    assert_eq!(
        msg,
        format!(
            "{p}: tools.x = {{ description = \"does things\" }}: expected command = [\"program\", \"argument\", …] for this tool (a table with only compaction = … is a hint for a tool ctxfold does not run)"
        )
    );
}
