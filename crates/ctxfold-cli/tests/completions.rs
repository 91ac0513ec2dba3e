//! `ctxfold completions SHELL`, through the real binary.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

fn completions(shell: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    common::command_in(dir.path())
        .args(["completions", shell])
        .output()
        .unwrap()
}

fn script(shell: &str) -> String {
    let out = completions(shell);
    assert!(
        out.status.success(),
        "completions {shell}: {}",
        common::stderr(&out)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completions_know_the_commands_and_parse() {
    let s = script("bash");
    for word in ["conversation", "compact", "stats", "config", "completions"] {
        assert!(s.contains(word), "bash script lacks {word}");
    }
    // `bash -n` reads the script without running it.
    let mut bash = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    bash.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    let out = bash.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn zsh_and_fish_completions_name_the_commands() {
    let zsh = script("zsh");
    assert!(zsh.starts_with("#compdef ctxfold"), "{}", &zsh[..40]);
    let fish = script("fish");
    assert!(fish.contains("complete -c ctxfold"));
    for s in [&zsh, &fish] {
        assert!(s.contains("conversation") && s.contains("compact"));
    }
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = completions("tcsh");
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(
        err.contains("invalid value 'tcsh'") && err.contains("bash") && err.contains("zsh"),
        "{err}"
    );
}
