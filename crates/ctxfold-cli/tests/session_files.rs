//! The agents' session files through the command line, on the small
//! sessions in ctxfold-formats' test data (cut from files the real agents
//! wrote; tests/agent_sessions.rs runs the agents themselves): `c import
//! --from claude-code|codex PROJECT` (new sessions, then only what grew),
//! `ctxfold compact SESSION.jsonl` (a new session beside it, the command
//! that resumes it), and what detection says of JSONL it does not know.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::path::{Path, PathBuf};

use common::{Scratch, stderr};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ctxfold-formats/tests/data/agents")
        .join(name)
}

/// The working folder the test sessions were recorded in.
const PROJECT: &str = "/home/dev/proj/work";

#[test]
fn claude_code_sessions_of_a_project_import_once_then_what_grew() {
    let s = Scratch::new();
    let full = std::fs::read_to_string(data("claude-code.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let folder = s.path().join(".claude/projects/-home-dev-proj-work");
    std::fs::create_dir_all(&folder).unwrap();
    let id = "50bd4b88-6cc9-4887-974d-9b1c1ca43f67";
    let file = folder.join(format!("{id}.jsonl"));
    let head = format!("{}\n", lines[..40].join("\n"));
    std::fs::write(&file, &head).unwrap();

    let first = s.json(&["c", "import", "--from", "claude-code", PROJECT]);
    let sessions = first["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{first}");
    assert_eq!(sessions[0]["session_id"], id);
    assert_eq!(sessions[0]["status"], "imported");
    let conv = sessions[0]["conversation"].as_str().unwrap().to_owned();

    let again = s.json(&["c", "import", "--from", "claude-code", PROJECT]);
    assert_eq!(again["sessions"][0]["status"], "unchanged", "{again}");
    assert_eq!(again["sessions"][0]["conversation"], conv.as_str());

    // The agent went on: the rest of the session is appended, nothing else.
    std::fs::write(&file, &full).unwrap();
    let grew = s.json(&["c", "import", "--from", "claude-code", PROJECT]);
    assert_eq!(grew["sessions"][0]["status"], "grew", "{grew}");
    assert!(grew["sessions"][0]["records"].as_u64().unwrap() > 0);
    assert_eq!(grew["sessions"][0]["conversation"], conv.as_str());
    assert_eq!(s.json(&["c", "ls"]).as_array().unwrap().len(), 1);
    // The conversation is the whole session, byte for byte, with the
    // agent's compaction read from the part it gained.
    let out = s.path().join("back.jsonl");
    s.ok(&[
        "c",
        "export",
        &conv,
        "--output-format",
        "claude-code",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), full);
    let show = s.json(&["c", "show", &conv]);
    assert_eq!(show["compactions"][0]["source"], "agent", "{show}");
    assert_eq!(show["counts"]["tool_call"], 6);
}

#[test]
fn codex_sessions_of_a_project_are_found_by_their_working_folder() {
    let s = Scratch::new();
    let day = s.path().join(".codex/sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    let file = day.join("rollout-2026-12-03T13-15-00-01a23c0b-a2d0-7df0-8baf-accbde3f604b.jsonl");
    std::fs::copy(data("codex.jsonl"), &file).unwrap();
    // Another project's rollout is left alone.
    let other = std::fs::read_to_string(data("codex.jsonl"))
        .unwrap()
        .replace(PROJECT, "/somewhere/else");
    std::fs::write(day.join("rollout-2026-12-03T14-00-00-other.jsonl"), other).unwrap();
    let v = s.json(&["c", "import", "--from", "codex", PROJECT]);
    let sessions = v["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    assert_eq!(sessions[0]["status"], "imported");
    let conv = sessions[0]["conversation"].as_str().unwrap();
    let show = s.json(&["c", "show", conv]);
    assert_eq!(show["imported_from"]["format"], "codex");
    assert_eq!(show["counts"]["reasoning"], 3);
    let again = s.json(&["c", "import", "--from", "codex", PROJECT]);
    assert_eq!(again["sessions"][0]["status"], "unchanged");
}

#[test]
fn compact_writes_a_new_session_beside_the_original_and_says_how_to_resume_it() {
    let s = Scratch::new();
    let folder = s.path().join("projects/-home-dev-proj-work");
    std::fs::create_dir_all(&folder).unwrap();
    let file = folder.join("50bd4b88-6cc9-4887-974d-9b1c1ca43f67.jsonl");
    std::fs::copy(data("claude-code.jsonl"), &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let out = s.run(&["compact", file.to_str().unwrap(), "--keep-last", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the original changed"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("resume it with: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(&format!("cd {PROJECT} && claude --resume ")),
        "{line}"
    );
    let id = line.rsplit(' ').next().unwrap();
    let new = folder.join(format!("{id}.jsonl"));
    let written = std::fs::read_to_string(&new).unwrap();
    assert!(written.contains(&format!("\"sessionId\":\"{id}\"")));
    assert!(!written.contains("50bd4b88-6cc9-4887-974d-9b1c1ca43f67\""));
    assert!(text.contains(&format!("wrote {}", new.display())), "{text}");

    // Codex: named as Codex names its rollouts, beside the original.
    let day = s.path().join("sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    let rollout =
        day.join("rollout-2026-12-03T13-15-00-01a23c0b-a2d0-7df0-8baf-accbde3f604b.jsonl");
    std::fs::copy(data("codex.jsonl"), &rollout).unwrap();
    let v = s.json(&["compact", rollout.to_str().unwrap()]);
    let resume = v["resume"].as_str().unwrap();
    assert!(resume.starts_with("codex resume "), "{v}");
    let id = resume.rsplit(' ').next().unwrap();
    let out = PathBuf::from(v["output"].as_str().unwrap());
    assert_eq!(out.parent().unwrap(), day);
    let name = out.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("rollout-") && name.ends_with(&format!("-{id}.jsonl")),
        "{name}"
    );
}

#[test]
fn jsonl_of_an_unknown_shape_names_the_formats_tried_and_its_keys() {
    let s = Scratch::new();
    let f = s.path().join("events.log.jsonl");
    std::fs::write(
        &f,
        "{\"event\":\"start\",\"at\":1}\n{\"event\":\"stop\",\"at\":2}\n",
    )
    .unwrap();
    for cmd in [&["c", "import"][..], &["compact"][..]] {
        let mut a = cmd.to_vec();
        a.push(f.to_str().unwrap());
        let out = s.run(&a);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(
            err.contains("cannot tell the transcript format: tried ctxfold, JP, OpenAI, Anthropic, Claude Code, Codex, Gemini; use --input-format"),
            "{err}"
        );
        assert!(err.contains("keys event, at"), "{err}");
        assert!(!err.contains("trailing characters"), "{err}");
    }
    // Named, the format reads it as what it says it is.
    let v: Value = s.json(&[
        "c",
        "import",
        data("codex.jsonl").to_str().unwrap(),
        "--input-format",
        "codex",
    ]);
    assert_eq!(v["format"], "codex");
}

#[test]
fn undoing_the_agents_compaction_gives_a_session_of_the_whole_history() {
    let s = Scratch::new();
    let id = s.import(&data("claude-code.jsonl"));
    let raw = "ctxfold-step beta 1/3";
    let out = s.path().join("whole.jsonl");
    let export = |s: &Scratch| {
        s.ok(&[
            "c",
            "export",
            &id,
            "--compacted",
            "--output-format",
            "claude-code",
            "-o",
            out.to_str().unwrap(),
        ]);
        std::fs::read_to_string(&out).unwrap()
    };
    let compacted = export(&s);
    assert!(
        !compacted.contains(raw),
        "the agent's summary stands for it"
    );
    s.ok(&["c", "compact", &id, "--reset"]);
    let whole = export(&s);
    assert!(whole.contains(raw));
    assert!(!whole.contains("compact_boundary"));
    assert!(!whole.contains("\"isCompactSummary\":true"));
    // One chain: every parent is a line written before.
    let mut seen = std::collections::HashSet::new();
    for line in whole.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(p) = v["parentUuid"].as_str() {
            assert!(seen.contains(p), "{line}");
        }
        if let Some(u) = v["uuid"].as_str() {
            seen.insert(u.to_owned());
        }
    }
}

/// What no session file holds: stands for `/etc/shadow` in the tests
/// below (a file the user can read that no agent wrote).
const SECRET: &str = "root:$6$not-a-session$secret-hash:19000:0:99999:7:::";

/// Every file of the workspace holding `needle`.
fn stored_with(s: &Scratch, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![s.path().join(".ctxfold")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
            {
                found.push(p);
            }
        }
    }
    found
}

/// `c import --from claude-code|codex` reads only regular files of the
/// agent's folders: a link named like a session (to a secret file, or to a
/// session elsewhere) is passed over with a warning naming it, a linked
/// folder is not entered, and a named pipe does not block the import.
#[test]
fn links_and_pipes_in_an_agents_folders_are_not_read() {
    let s = Scratch::new();
    let secret = s.path().join("shadow");
    // The secret as a session would look, so only the link stops it.
    let line = std::fs::read_to_string(data("claude-code.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .replace("50bd4b88-6cc9-4887-974d-9b1c1ca43f67", "linked-session")
        .replacen(
            "{",
            &format!("{{\"secret\":{},", serde_json::json!(SECRET)),
            1,
        );
    std::fs::write(&secret, format!("{line}\n")).unwrap();
    let folder = s.path().join(".claude/projects/-home-dev-proj-work");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        data("claude-code.jsonl"),
        folder.join("50bd4b88-6cc9-4887-974d-9b1c1ca43f67.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, folder.join("linked-session.jsonl")).unwrap();
    let fifo = folder.join("pipe.jsonl");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let out = s.run(&[
        "c",
        "import",
        "--from",
        "claude-code",
        PROJECT,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessions"].as_array().unwrap().len(), 1, "{v}");
    let err = stderr(&out);
    assert!(
        err.contains("linked-session.jsonl") && err.contains("symbolic link"),
        "{err}"
    );
    assert!(err.contains("pipe.jsonl"), "{err}");
    assert_eq!(stored_with(&s, "secret-hash"), Vec::<PathBuf>::new());

    // Codex: a linked rollout and a linked folder of rollouts.
    let day = s.path().join(".codex/sessions/2026/12/03");
    std::fs::create_dir_all(&day).unwrap();
    let rollout = std::fs::read_to_string(data("codex.jsonl"))
        .unwrap()
        .replacen(
            "{",
            &format!("{{\"secret\":{},", serde_json::json!(SECRET)),
            1,
        );
    let elsewhere = s.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let target = elsewhere.join("rollout-2026-12-03T13-15-00-linked.jsonl");
    std::fs::write(&target, rollout).unwrap();
    std::os::unix::fs::symlink(
        &target,
        day.join("rollout-2026-12-03T13-15-00-linked.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&elsewhere, day.join("more")).unwrap();
    let out = s.run(&[
        "c", "import", "--from", "codex", PROJECT, "--format", "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessions"].as_array().unwrap().len(), 0, "{v}");
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_eq!(stored_with(&s, "secret-hash"), Vec::<PathBuf>::new());
}

/// A session file that starts with a byte-order mark (an editor saved it)
/// exports with it, byte for byte, for both agents.
#[test]
fn a_byte_order_mark_is_kept_through_import_and_export() {
    let s = Scratch::new();
    for (name, format) in [
        ("claude-code.jsonl", "claude-code"),
        ("codex.jsonl", "codex"),
    ] {
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend(std::fs::read(data(name)).unwrap());
        let file = s.path().join(format!("bom-{name}"));
        std::fs::write(&file, &bytes).unwrap();
        let id = s
            .ok(&["c", "import", file.to_str().unwrap()])
            .trim()
            .to_owned();
        let show = s.json(&["c", "show", &id]);
        assert_eq!(show["imported_from"]["format"], format, "{show}");
        let out = s.path().join(format!("back-{name}"));
        s.ok(&[
            "c",
            "export",
            &id,
            "--output-format",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(
            std::fs::read(&out).unwrap() == bytes,
            "{format}: not the same bytes"
        );
    }
}
