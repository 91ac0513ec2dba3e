//! JP's own `compaction` records: imported as ctxfold compactions, applied
//! by the projection, and written back to JP unchanged. And the global
//! workspace, used when there is no `.ctxfold/` above the current folder.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::{command_in, stderr};
use serde_json::Value;

/// A JP conversation of three turns with four JP compaction records:
/// strip reasoning and tool requests over turn 0 (request only), a summary
/// of turn 1, omit over turn 2, and strip reasoning and responses over turn
/// 2 written unlike JP's own order (type first, fields ctxfold does not
/// know), which must come back byte for byte all the same. Written as JP writes (two-space pretty
/// JSON, base64 tool arguments and results).
fn jp_folder(dir: &std::path::Path) -> String {
    let turn = |n: usize| {
        format!(
            r#"  {{
    "timestamp": "2026-01-0{d} 10:00:00.0",
    "type": "turn_start"
  }},
  {{
    "timestamp": "2026-01-0{d} 10:00:01.0",
    "type": "chat_request",
    "content": "question {n}"
  }},
  {{
    "timestamp": "2026-01-0{d} 10:00:02.0",
    "type": "chat_response",
    "reasoning": "thinking about {n}",
    "metadata": {{
      "anthropic_thinking_signature": "c2lnbmF0dXJl"
    }}
  }},
  {{
    "timestamp": "2026-01-0{d} 10:00:03.0",
    "type": "tool_call_request",
    "id": "call{n}",
    "name": "fs_read_file",
    "arguments": {{
      "path": "c3JjL2xpYi5ycw=="
    }}
  }},
  {{
    "timestamp": "2026-01-0{d} 10:00:04.0",
    "type": "tool_call_response",
    "id": "call{n}",
    "content": "Zm4gbWFpbigpIHt9",
    "is_error": false
  }},
  {{
    "timestamp": "2026-01-0{d} 10:00:05.0",
    "type": "chat_response",
    "message": "answer {n}"
  }},
"#,
            d = n + 1
        )
    };
    let events = format!(
        r#"[
{}{}{}  {{
    "timestamp": "2026-01-04 10:00:00.0",
    "type": "compaction",
    "from_turn": 0,
    "to_turn": 0,
    "reasoning": "strip",
    "tool_calls": {{
      "policy": "strip",
      "request": true,
      "response": false
    }}
  }},
  {{
    "timestamp": "2026-01-04 10:00:01.0",
    "type": "compaction",
    "from_turn": 1,
    "to_turn": 1,
    "summary": {{
      "summary": "Turn two, summarized by JP."
    }}
  }},
  {{
    "timestamp": "2026-01-04 10:00:02.0",
    "type": "compaction",
    "from_turn": 2,
    "to_turn": 2,
    "tool_calls": {{
      "policy": "omit"
    }}
  }},
  {{
    "type": "compaction",
    "timestamp": "2026-01-04 10:00:03.0",
    "from_turn": 2,
    "to_turn": 2,
    "reasoning": "strip",
    "tool_calls": {{
      "policy": "strip",
      "response": true,
      "extra_flag": 1
    }},
    "jp_only_field": [
      1,
      2
    ]
  }}
]
"#,
        turn(0),
        turn(1),
        turn(2)
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("events.json"), &events).unwrap();
    std::fs::write(
        dir.join("metadata.json"),
        "{\n  \"title\": \"With compactions\"\n}\n",
    )
    .unwrap();
    events
}

#[test]
fn jp_compactions_import_apply_and_export_unchanged() {
    let s = common::Scratch::new();
    let src = s.path().join("jp");
    let events = jp_folder(&src);
    let id = s.import(&src);

    let shown = s.json(&["c", "show", &id]);
    let c = &shown["compactions"];
    assert_eq!(c.as_array().unwrap().len(), 4);
    assert_eq!(c[3]["tool_calls"], "strip-responses");
    assert_eq!(c[0]["reasoning"], "strip");
    assert_eq!(c[0]["tool_calls"], "strip-requests");
    assert_eq!(c[1]["summary"]["text"], "Turn two, summarized by JP.");
    assert_eq!(c[1]["summary"]["provenance"]["summarizer"], "jp");
    assert_eq!(c[2]["tool_calls"], "omit");
    // The omit over turn 3 is superseded: the newer policy over the same
    // turn decides its tool calls (see the view below).
    let status: Vec<&str> = (0..4).map(|k| c[k]["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["active", "active", "superseded by #4", "active"]);

    // The projection applies them by turn.
    let view = s.json(&["c", "print", &id, "--compacted"]);
    let kinds: Vec<String> = view["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            format!(
                "{}:{}",
                i["kind"].as_str().unwrap(),
                i["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "event:user",
            "stripped_call:tool_call",
            "event:tool_result",
            "event:assistant",
            "summary:",
            // Turn 3: the newer strip-responses wins over the older omit;
            // the result is too short to be worth stripping.
            "event:user",
            "event:tool_call",
            "event:tool_result",
            "event:assistant",
        ]
    );

    // Export gives back the same bytes, compaction records included.
    let out = s.path().join("back");
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        "jp",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(out.join("events.json")).unwrap(),
        events
    );

    // A revoked compaction is left out of a JP export (JP has no reset).
    s.ok(&["c", "compact", &id, "--reset=3"]);
    s.ok(&[
        "c",
        "export",
        &id,
        "--output-format",
        "jp",
        "-o",
        out.to_str().unwrap(),
    ]);
    let back: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("events.json")).unwrap()).unwrap();
    let compactions = back
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "compaction")
        .count();
    assert_eq!(compactions, 3);
}

#[test]
fn without_a_workspace_the_global_one_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let jp = dir.path().join("jp");
    jp_folder(&jp);
    // No `ctxfold init` here: the XDG data folder serves.
    let out = command_in(dir.path())
        .args(["c", "import", jp.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let global = dir.path().join("xdg-data/ctxfold/conversations").join(&id);
    assert!(
        global.join("events.jsonl").is_file(),
        "{}",
        global.display()
    );
    assert!(!dir.path().join(".ctxfold").exists());
    // A workspace made later takes over for this folder and those below it.
    let below = dir.path().join("project/src");
    std::fs::create_dir_all(&below).unwrap();
    assert!(
        command_in(&dir.path().join("project"))
            .arg("init")
            .status()
            .unwrap()
            .success()
    );
    let listed = command_in(&below)
        .args(["c", "ls", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(listed.stdout).unwrap().trim(), "[]");
}
