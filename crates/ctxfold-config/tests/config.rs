//! Loading real files from a temporary directory.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};

use ctxfold_config::{AutoConfig, ConfigError, Layers, Loaded, Source, load, rule_to_toml};
use ctxfold_core::bounds::{Bound, Keep};
use ctxfold_core::compaction::{ReasoningPolicy, ToolOverride, ToolPolicy};
use ctxfold_core::planner::{Rule, SummaryRequest};
use tempfile::TempDir;

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Load a single file as the workspace file.
fn load_one(text: &str) -> (TempDir, PathBuf, Result<Loaded, ConfigError>) {
    let dir = TempDir::new().unwrap();
    let p = write(&dir, ".ctxfold/config.toml", text);
    let r = load(&Layers {
        workspace: Some(p.clone()),
        ..Layers::default()
    });
    (dir, p, r)
}

/// Load a file that must fail; return the message.
fn error_of(text: &str) -> (String, PathBuf, TempDir) {
    let (dir, p, r) = load_one(text);
    match r {
        Ok(l) => panic!("expected an error, loaded {:?}", l.config),
        Err(e) => (e.to_string(), p, dir),
    }
}

fn d(p: &Path) -> String {
    p.display().to_string()
}

fn keep(s: &str) -> Keep {
    s.parse().unwrap()
}

#[test]
fn no_files_gives_the_built_in_defaults() {
    let l = load(&Layers::default()).unwrap();
    assert_eq!(l.config.rules, None);
    assert_eq!(l.config.rules_or_builtin(), vec![Rule::builtin()]);
    assert_eq!(l.config.auto, AutoConfig::default());
    assert!(!l.config.auto.enabled);
    assert_eq!(l.config.auto.trigger_ratio, 0.75);
    assert_eq!(l.config.auto.min_turns, 5);
    assert_eq!(l.config.auto.compaction_retries, 1);
    assert_eq!(l.config.auto.retain_tokens, None);
    assert_eq!(l.config.auto.rule, Rule::builtin());
    assert!(l.config.hints.per_tool.is_empty() && l.config.hints.default.is_none());
    assert!(l.config.other.is_empty());
    assert_eq!(
        l.origin("compaction.rules[1].keep_last"),
        Some(&Source::Builtin)
    );
    assert_eq!(
        l.origin("compaction.auto.trigger_ratio"),
        Some(&Source::Builtin)
    );

    let text = l.show_text();
    for line in [
        "compaction.rules[1].keep_first = 1",
        "compaction.rules[1].keep_last = 3",
        "compaction.rules[1].reasoning = \"strip\"",
        "compaction.rules[1].tool_calls = \"strip\"",
        "compaction.auto.enabled = false",
        "compaction.auto.trigger_ratio = 0.75",
        "compaction.auto.min_turns = 5",
        "compaction.auto.rule.keep_last = 3",
    ] {
        let row = text
            .lines()
            .find(|r| r.starts_with(line))
            .unwrap_or_else(|| panic!("no `{line}` in\n{text}"));
        assert!(row.ends_with("# from built-in"), "{row}");
    }
}

#[test]
fn missing_user_and_workspace_files_are_fine() {
    let dir = TempDir::new().unwrap();
    let l = load(&Layers {
        user: Some(dir.path().join("nope/config.toml")),
        workspace: Some(dir.path().join(".ctxfold/config.toml")),
        ..Layers::default()
    })
    .unwrap();
    assert_eq!(l.config, Loaded::builtin().config);
}

#[test]
fn each_layer_overrides_the_one_below() {
    let dir = TempDir::new().unwrap();
    let user = write(
        &dir,
        "user/config.toml",
        "[compaction.auto]\nenabled = true\ntrigger_ratio = 0.5\nmin_turns = 2\nretain_tokens = 100\ncompaction_retries = 4\n",
    );
    let ws = write(
        &dir,
        ".ctxfold/config.toml",
        "[compaction.auto]\ntrigger_ratio = 0.6\nmin_turns = 3\nretain_tokens = 200\n",
    );
    let c1 = write(&dir, "c1.toml", "compaction.auto.min_turns = 7\n");
    let c2 = write(
        &dir,
        "c2.toml",
        "[compaction.auto]\nmin_turns = 8\nretain_tokens = 300\n",
    );
    let l = load(&Layers {
        user: Some(user.clone()),
        workspace: Some(ws.clone()),
        files: vec![c1.clone(), c2.clone()],
        env: env(&[("CTXFOLD_COMPACTION_AUTO_ENABLED", "false")]),
    })
    .unwrap();
    let a = &l.config.auto;
    assert!(!a.enabled); // env over user
    assert_eq!(a.trigger_ratio, 0.6); // workspace over user
    assert_eq!(a.min_turns, 8); // second -c over first -c over workspace
    assert_eq!(a.retain_tokens, Some(300));
    assert_eq!(a.compaction_retries, 4); // user, untouched above
    assert_eq!(a.rule, Rule::builtin()); // built-in, untouched above

    assert_eq!(
        l.origin("compaction.auto.enabled"),
        Some(&Source::Env("CTXFOLD_COMPACTION_AUTO_ENABLED".into()))
    );
    assert_eq!(
        l.origin("compaction.auto.trigger_ratio"),
        Some(&Source::Workspace(ws.clone()))
    );
    assert_eq!(
        l.origin("compaction.auto.min_turns"),
        Some(&Source::File(c2.clone()))
    );
    assert_eq!(
        l.origin("compaction.auto.compaction_retries"),
        Some(&Source::User(user.clone()))
    );
    assert_eq!(
        l.origin("compaction.auto.rule.keep_first"),
        Some(&Source::Builtin)
    );

    let text = l.show_text();
    let row = |k: &str| {
        text.lines()
            .find(|r| r.starts_with(k))
            .unwrap_or_else(|| panic!("no {k} in\n{text}"))
            .to_owned()
    };
    assert!(
        row("compaction.auto.min_turns = 8").ends_with(&format!("# from file {} (-c)", d(&c2)))
    );
    assert!(
        row("compaction.auto.trigger_ratio = 0.6")
            .ends_with(&format!("# from workspace file {}", d(&ws)))
    );
    assert!(
        row("compaction.auto.enabled = false")
            .ends_with("# from environment CTXFOLD_COMPACTION_AUTO_ENABLED")
    );
    assert!(
        row("compaction.auto.compaction_retries = 4")
            .ends_with(&format!("# from user file {}", d(&user)))
    );
    // The comments line up.
    let cols: Vec<usize> = text
        .lines()
        .filter(|r| !r.starts_with("# compaction.auto."))
        .map(|r| r.find("# from").unwrap())
        .collect();
    assert!(cols.windows(2).all(|w| w[0] == w[1]), "{text}");
}

#[test]
fn a_layer_with_rules_replaces_the_rules_below_whole() {
    let dir = TempDir::new().unwrap();
    let user = write(
        &dir,
        "user.toml",
        r#"
[[compaction.rules]]
keep_last = 10
reasoning = "strip"

[[compaction.rules]]
to = -20
tool_calls = "omit"
"#,
    );
    let ws = write(
        &dir,
        "ws.toml",
        r#"
[[compaction.rules]]
keep_first = 2
keep_last = 4
tool_calls = "strip-responses"
"#,
    );

    // The user's two rules replace the built-in rule.
    let l = load(&Layers {
        user: Some(user.clone()),
        ..Layers::default()
    })
    .unwrap();
    let rules = l.config.rules.clone().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].keep_last, Some(Keep::Count(10)));
    assert_eq!(
        rules[0].keep_first, None,
        "no key-by-key merge with built-in"
    );
    assert_eq!(rules[0].tool_calls, None);
    assert_eq!(rules[1].to, Some(Bound::FromEnd(20)));
    assert_eq!(rules[1].tool_calls, Some(ToolPolicy::Omit));
    assert_eq!(l.config.rules_or_builtin(), rules);
    assert_eq!(
        l.origin("compaction.rules[2].tool_calls"),
        Some(&Source::User(user.clone()))
    );

    // The workspace's one rule replaces both.
    let l = load(&Layers {
        user: Some(user),
        workspace: Some(ws.clone()),
        ..Layers::default()
    })
    .unwrap();
    assert_eq!(
        l.config.rules,
        Some(vec![Rule {
            keep_first: Some(Keep::Count(2)),
            keep_last: Some(Keep::Count(4)),
            tool_calls: Some(ToolPolicy::StripResponses),
            ..Rule::default()
        }])
    );
    assert_eq!(
        l.origin("compaction.rules[1].keep_last"),
        Some(&Source::Workspace(ws.clone()))
    );
    assert_eq!(l.origin("compaction.rules[1].reasoning"), None);
    assert_eq!(l.origin("compaction.rules[2].tool_calls"), None);
    assert!(!l.show_text().contains("compaction.rules[2]"));
    assert!(
        l.show_text()
            .lines()
            .any(|r| r.starts_with("compaction.rules[1].keep_last = 4")
                && r.ends_with(&format!("# from workspace file {}", d(&ws))))
    );
}

#[test]
fn an_empty_rules_array_means_no_rules() {
    let (_dir, _p, r) = load_one("compaction.rules = []\n");
    let l = r.unwrap();
    assert_eq!(l.config.rules, Some(vec![]));
    assert!(l.config.rules_or_builtin().is_empty());
    assert!(l.show_text().contains("compaction.rules = []"));
}

#[test]
fn the_auto_rule_is_replaced_whole() {
    let (_dir, p, r) =
        load_one("[compaction.auto.rule]\ntool_calls = \"omit\"\nkeep_last = \"2h\"\n");
    let l = r.unwrap();
    assert_eq!(
        l.config.auto.rule,
        Rule {
            tool_calls: Some(ToolPolicy::Omit),
            keep_last: Some(keep("2h")),
            ..Rule::default()
        }
    );
    assert_eq!(l.origin("compaction.auto.rule.reasoning"), None);
    assert_eq!(
        l.origin("compaction.auto.rule.keep_last"),
        Some(&Source::Workspace(p))
    );
    // The rest of [compaction.auto] still comes from the defaults.
    assert_eq!(l.config.auto.trigger_ratio, 0.75);
}

#[test]
fn counts_durations_bounds_and_summaries_are_parsed() {
    let (_dir, _p, r) = load_one(
        r#"
[[compaction.rules]]
keep_first = "2h"
keep_last = 3
from = "3"
to = "-2"
reasoning = "strip"

[[compaction.rules]]
keep_first = "4"
keep_last = "90m"
from = 5
to = -1
tool_calls = "strip-requests"

[[compaction.rules]]
from = "last-compaction"
to = "1d"
[compaction.rules.summary]
model = "openai/gpt-4o-mini"
instructions = "Be brief."

[[compaction.rules]]
from = "5h"
to = 7
summary = {}
"#,
    );
    let rules = r.unwrap().config.rules.unwrap();
    assert_eq!(rules.len(), 4);
    assert_eq!(
        rules[0],
        Rule {
            keep_first: Some(keep("2h")),
            keep_last: Some(Keep::Count(3)),
            from: Some(Bound::Turn(3)),
            to: Some(Bound::FromEnd(2)),
            reasoning: Some(ReasoningPolicy::Strip),
            ..Rule::default()
        }
    );
    assert!(matches!(rules[0].keep_first, Some(Keep::Duration(_))));
    assert_eq!(rules[1].keep_first, Some(Keep::Count(4)));
    assert_eq!(rules[1].keep_last, Some(keep("90m")));
    assert_eq!(rules[1].from, Some(Bound::Turn(5)));
    assert_eq!(rules[1].to, Some(Bound::FromEnd(1)));
    assert_eq!(rules[1].tool_calls, Some(ToolPolicy::StripRequests));
    assert_eq!(rules[2].from, Some(Bound::LastCompaction));
    assert_eq!(rules[2].to, Some("1d".parse().unwrap()));
    assert!(matches!(rules[2].to, Some(Bound::Ago(_))));
    assert_eq!(
        rules[2].summary,
        Some(SummaryRequest::Derive {
            model: Some("openai/gpt-4o-mini".into()),
            instructions: Some("Be brief.".into()),
        })
    );
    assert_eq!(rules[3].from, Some("5h".parse().unwrap()));
    assert_eq!(rules[3].to, Some(Bound::Turn(7)));
    assert_eq!(
        rules[3].summary,
        Some(SummaryRequest::Derive {
            model: None,
            instructions: None
        })
    );
}

#[test]
fn tool_hints_per_tool_and_star() {
    let dir = TempDir::new().unwrap();
    let user = write(
        &dir,
        "user.toml",
        r#"
[tools.search]
compaction = "strip-responses"
[tools.upload]
compaction = "strip-requests"
[tools."*"]
compaction = "strip"
"#,
    );
    let ws = write(
        &dir,
        "ws.toml",
        r#"
[tools.heartbeat]
compaction = "omit"
[tools.plan]
compaction = "keep"
[tools."*"]
compaction = "keep"
"#,
    );
    let l = load(&Layers {
        user: Some(user.clone()),
        workspace: Some(ws.clone()),
        ..Layers::default()
    })
    .unwrap();
    let h = &l.config.hints;
    assert_eq!(h.default, Some(ToolOverride::Keep));
    assert_eq!(h.per_tool.len(), 4, "{h:?}");
    assert_eq!(h.per_tool["search"], ToolOverride::StripResponses);
    assert_eq!(h.per_tool["upload"], ToolOverride::StripRequests);
    assert_eq!(h.per_tool["heartbeat"], ToolOverride::Omit);
    assert_eq!(h.per_tool["plan"], ToolOverride::Keep);
    assert!(!h.per_tool.contains_key("*"));
    assert_eq!(
        l.origin("tools.\"*\".compaction"),
        Some(&Source::Workspace(ws))
    );
    assert_eq!(
        l.origin("tools.search.compaction"),
        Some(&Source::User(user))
    );
    assert!(l.show_text().contains("tools.\"*\".compaction = \"keep\""));
}

#[test]
fn other_tables_pass_through_and_merge() {
    let dir = TempDir::new().unwrap();
    let user = write(
        &dir,
        "user.toml",
        "[providers.openai]\nbase_url = \"https://a\"\nkey_env = \"OPENAI_KEY\"\n",
    );
    let ws = write(
        &dir,
        "ws.toml",
        "[providers.openai]\nbase_url = \"https://b\"\n[providers.ollama]\nurl = \"http://localhost:11434\"\n",
    );
    let l = load(&Layers {
        user: Some(user.clone()),
        workspace: Some(ws.clone()),
        ..Layers::default()
    })
    .unwrap();
    let o = &l.config.other;
    let openai = o["providers"]["openai"].as_table().unwrap();
    assert_eq!(openai["base_url"].as_str(), Some("https://b"));
    assert_eq!(openai["key_env"].as_str(), Some("OPENAI_KEY"));
    assert_eq!(
        o["providers"]["ollama"]["url"].as_str(),
        Some("http://localhost:11434")
    );
    assert!(!o.contains_key("compaction") && !o.contains_key("tools"));
    assert_eq!(
        l.origin("providers.openai.base_url"),
        Some(&Source::Workspace(ws))
    );
    assert_eq!(
        l.origin("providers.openai.key_env"),
        Some(&Source::User(user))
    );
}

#[test]
fn environment_overrides_files() {
    let dir = TempDir::new().unwrap();
    let ws = write(
        &dir,
        "ws.toml",
        "[compaction.auto]\nenabled = false\ntrigger_ratio = 0.9\nmin_turns = 10\n",
    );
    let l = load(&Layers {
        workspace: Some(ws.clone()),
        env: env(&[
            ("CTXFOLD_COMPACTION_AUTO_ENABLED", "true"),
            ("CTXFOLD_COMPACTION_AUTO_TRIGGER_RATIO", "0.8"),
            ("CTXFOLD_COMPACTION_AUTO_MIN_TURNS", "3"),
            ("CTXFOLD_COMPACTION_AUTO_RETAIN_TOKENS", "20480"),
            ("CTXFOLD_COMPACTION_AUTO_COMPACTION_RETRIES", "2"),
            // Not ours: ignored.
            ("CTXFOLD_HOME", "/somewhere"),
            ("PATH", "/bin"),
        ]),
        ..Layers::default()
    })
    .unwrap();
    let a = &l.config.auto;
    assert!(a.enabled);
    assert_eq!(a.trigger_ratio, 0.8);
    assert_eq!(a.min_turns, 3);
    assert_eq!(a.retain_tokens, Some(20480));
    assert_eq!(a.compaction_retries, 2);
    assert_eq!(
        l.origin("compaction.auto.min_turns"),
        Some(&Source::Env("CTXFOLD_COMPACTION_AUTO_MIN_TURNS".into()))
    );
    assert!(!l.config.other.contains_key("home"));

    // An empty variable is unset: the file's value stands.
    let l = load(&Layers {
        workspace: Some(ws.clone()),
        env: env(&[("CTXFOLD_COMPACTION_AUTO_MIN_TURNS", "")]),
        ..Layers::default()
    })
    .unwrap();
    assert_eq!(l.config.auto.min_turns, 10);
    assert_eq!(
        l.origin("compaction.auto.min_turns"),
        Some(&Source::Workspace(ws))
    );
    // Other spellings of booleans.
    for (raw, want) in [("1", true), ("off", false), ("YES", true)] {
        let l = load(&Layers {
            env: env(&[("CTXFOLD_COMPACTION_AUTO_ENABLED", raw)]),
            ..Layers::default()
        })
        .unwrap();
        assert_eq!(l.config.auto.enabled, want, "{raw}");
    }
}

#[test]
fn flags_are_the_top_layer() {
    let (_dir, _p, r) = load_one("[compaction.auto]\nenabled = false\n");
    let mut l = r.unwrap();
    l.set_flag(
        "--auto",
        "compaction.auto.enabled",
        toml::Value::Boolean(true),
    )
    .unwrap();
    assert!(l.config.auto.enabled);
    assert_eq!(
        l.origin("compaction.auto.enabled"),
        Some(&Source::Flag("--auto".into()))
    );
    assert!(
        l.show_text()
            .lines()
            .any(|r| r.starts_with("compaction.auto.enabled = true")
                && r.ends_with("# from flag --auto"))
    );

    // Whole rules, as -k would give them.
    let rule = Rule {
        keep_last: Some(Keep::Count(6)),
        tool_calls: Some(ToolPolicy::Omit),
        ..Rule::default()
    };
    l.set_flag(
        "-k",
        "compaction.rules",
        toml::Value::Array(vec![toml::Value::Table(rule_to_toml(&rule))]),
    )
    .unwrap();
    assert_eq!(l.config.rules, Some(vec![rule]));
    assert_eq!(
        l.origin("compaction.rules[1].keep_last"),
        Some(&Source::Flag("-k".into()))
    );

    // Quoted keys work.
    l.set_flag(
        "--tool-hint",
        "tools.\"*\".compaction",
        toml::Value::String("omit".into()),
    )
    .unwrap();
    assert_eq!(l.config.hints.default, Some(ToolOverride::Omit));
}

#[test]
fn a_bad_flag_value_or_key_is_refused_and_changes_nothing() {
    let mut l = load(&Layers::default()).unwrap();
    let before = l.config.clone();
    let e = l
        .set_flag(
            "--ratio",
            "compaction.auto.trigger_ratio",
            toml::Value::Float(2.0),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "flag --ratio: compaction.auto.trigger_ratio = 2.0: expected a number greater than 0 and at most 1 (such as 0.75)"
    );
    let e = l
        .set_flag("--x", "compaction.auto.enabeld", toml::Value::Boolean(true))
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("flag --x: unknown key compaction.auto.enabeld: expected one of"),
        "{e}"
    );
    for bad in ["", "a..b", "a = 0 #", "compaction.rules[1]", "a\nb"] {
        let e = l
            .set_flag("--x", bad, toml::Value::Boolean(true))
            .unwrap_err();
        assert!(matches!(e, ConfigError::BadKey { .. }), "{bad:?}: {e}");
    }
    assert_eq!(l.config, before);
    assert_eq!(
        l.origin("compaction.auto.trigger_ratio"),
        Some(&Source::Builtin)
    );
}

#[test]
fn show_json_has_config_and_origins() {
    let (_dir, p, r) =
        load_one("[compaction.auto]\nmin_turns = 9\n[tools.search]\ncompaction = \"omit\"\n");
    let j = r.unwrap().show_json();
    assert_eq!(j["config"]["compaction"]["auto"]["min_turns"], 9);
    assert_eq!(j["config"]["compaction"]["auto"]["trigger_ratio"], 0.75);
    assert_eq!(j["config"]["compaction"]["rules"][0]["keep_last"], 3);
    assert_eq!(j["config"]["tools"]["search"]["compaction"], "omit");
    assert_eq!(
        j["origins"]["compaction.auto.min_turns"],
        serde_json::json!({"layer": "workspace", "path": d(&p)})
    );
    assert_eq!(
        j["origins"]["compaction.rules[1].keep_last"],
        serde_json::json!({"layer": "built-in"})
    );
    assert_eq!(
        j["origins"]["tools.search.compaction"]["layer"],
        "workspace"
    );
}

// ---- errors: each names the file (and line), the key and what was expected

#[test]
fn unknown_enum_value_names_file_line_key_and_choices() {
    let (msg, p, _dir) = error_of(
        "[[compaction.rules]]\nreasoning = \"strip\"\n\n[[compaction.rules]]\nkeep_last = 2\ntool_calls = \"shred\"\n",
    );
    assert_eq!(
        msg,
        format!(
            "{}:6: compaction.rules[2].tool_calls = \"shred\": expected one of strip, strip-requests, strip-responses, omit",
            d(&p)
        )
    );
    let (msg, p, _dir) = error_of("[compaction.auto.rule]\nreasoning = \"keep\"\n");
    assert_eq!(
        msg,
        format!(
            "{}:2: compaction.auto.rule.reasoning = \"keep\": expected one of strip",
            d(&p)
        )
    );
    let (msg, p, _dir) = error_of("[tools.search]\ncompaction = \"strip-response\"\n");
    assert_eq!(
        msg,
        format!(
            "{}:2: tools.search.compaction = \"strip-response\": expected one of keep, strip, strip-requests, strip-responses, omit",
            d(&p)
        )
    );
}

#[test]
fn wrong_types_are_errors() {
    for (text, key, value, expected) in [
        (
            "[compaction.auto]\nenabled = \"yes\"\n",
            "compaction.auto.enabled",
            "\"yes\"",
            "true or false",
        ),
        (
            "[compaction.auto]\nmin_turns = -1\n",
            "compaction.auto.min_turns",
            "-1",
            "a whole number >= 0",
        ),
        (
            "[compaction.auto]\nmin_turns = 2.5\n",
            "compaction.auto.min_turns",
            "2.5",
            "a whole number >= 0",
        ),
        (
            "[compaction.auto]\nretain_tokens = \"lots\"\n",
            "compaction.auto.retain_tokens",
            "\"lots\"",
            "a number of tokens >= 0",
        ),
        (
            "[compaction.auto]\ncompaction_retries = true\n",
            "compaction.auto.compaction_retries",
            "true",
            "a whole number >= 0",
        ),
        (
            "[compaction]\nrules = 3\n",
            "compaction.rules",
            "3",
            "an array of rule tables ([[compaction.rules]])",
        ),
        (
            "[[compaction.rules]]\nkeep_last = -1\nreasoning = \"strip\"\n",
            "compaction.rules[1].keep_last",
            "-1",
            "a number of turns (3) or a duration (\"2h\", \"30m\", \"2d\")",
        ),
        (
            "[[compaction.rules]]\nkeep_first = \"lots\"\nreasoning = \"strip\"\n",
            "compaction.rules[1].keep_first",
            "\"lots\"",
            "a number of turns (3) or a duration (\"2h\", \"30m\", \"2d\")",
        ),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nsummary = true\n",
            "compaction.rules[1].summary",
            "true",
            "a table (model, instructions), possibly empty",
        ),
        (
            "[[compaction.rules]]\nsummary = { model = 4 }\n",
            "compaction.rules[1].summary.model",
            "4",
            "a string",
        ),
        (
            "tools = \"all\"\n",
            "tools",
            "\"all\"",
            "a table of tools ([tools.NAME])",
        ),
        (
            "[tools]\nsearch = \"omit\"\n",
            "tools.search",
            "\"omit\"",
            "a table (command, description, parameters, run, timeout, max_output_bytes, compaction)",
        ),
        (
            "compaction = 1\n",
            "compaction",
            "1",
            "a table ([compaction])",
        ),
    ] {
        let (msg, p, _dir) = error_of(text);
        let head = format!("{}:", d(&p));
        let tail = format!(" {key} = {value}: expected {expected}");
        assert!(
            msg.starts_with(&head) && msg.ends_with(&tail),
            "{text:?}\ngot:  {msg}\nwant: {head}N:{tail}"
        );
    }
}

#[test]
fn unknown_keys_are_errors() {
    for (text, key, line) in [
        (
            "[compaction.auto]\nenabeld = true\n",
            "compaction.auto.enabeld",
            2,
        ),
        ("[compaction]\nrule = []\n", "compaction.rule", 2),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nkeep_lats = 3\n",
            "compaction.rules[1].keep_lats",
            3,
        ),
        (
            "[compaction.auto.rule]\nreasoning = \"strip\"\ntools = \"strip\"\n",
            "compaction.auto.rule.tools",
            3,
        ),
        (
            "[[compaction.rules]]\n[compaction.rules.summary]\nmodle = \"x\"\n",
            "compaction.rules[1].summary.modle",
            3,
        ),
        (
            "[tools.search]\ncompact = \"omit\"\n",
            "tools.search.compact",
            2,
        ),
    ] {
        let (msg, p, _dir) = error_of(text);
        let want = format!("{}:{line}: unknown key {key}: expected one of ", d(&p));
        assert!(
            msg.starts_with(&want),
            "{text:?}\ngot:  {msg}\nwant: {want}…"
        );
    }
    let (msg, _, _dir) = error_of("[compaction.auto]\nenabeld = true\n");
    assert!(
        msg.ends_with("expected one of band_steps, compaction_retries, enabled, excerpt_share, min_turns, reserve_tokens, retain_tokens, rule, summary_share, target_ratio, trigger_ratio; did you mean enabled?"),
        "{msg}"
    );
}

#[test]
fn bad_bounds_are_errors() {
    for (text, key, value) in [
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nfrom = \"yesterday\"\n",
            "compaction.rules[1].from",
            "\"yesterday\"",
        ),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nfrom = 0\n",
            "compaction.rules[1].from",
            "0",
        ),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nto = \"-0\"\n",
            "compaction.rules[1].to",
            "\"-0\"",
        ),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nto = 1.5\n",
            "compaction.rules[1].to",
            "1.5",
        ),
        (
            "[compaction.auto.rule]\nreasoning = \"strip\"\nfrom = \"-x\"\n",
            "compaction.auto.rule.from",
            "\"-x\"",
        ),
    ] {
        let (msg, p, _dir) = error_of(text);
        let want = format!(
            "{}:3: {key} = {value}: expected a turn number from 1 (3), a count from the end (-3 or \"-3\"), a duration (\"5h\", \"30m\", \"2d\") or \"last-compaction\"",
            d(&p)
        );
        assert_eq!(msg, want, "{text:?}");
    }
    let (msg, p, _dir) =
        error_of("[[compaction.rules]]\nreasoning = \"strip\"\nto = \"last-compaction\"\n");
    assert_eq!(
        msg,
        format!(
            "{}:3: compaction.rules[1].to = \"last-compaction\": expected an end bound: a turn number, a count from the end or a duration (\"last-compaction\" can only start a range)",
            d(&p)
        )
    );
}

#[test]
fn bad_ratios_are_errors() {
    for v in ["0", "0.0", "1.5", "-0.5", "\"high\"", "nan", "inf"] {
        let (msg, p, _dir) = error_of(&format!("[compaction.auto]\ntrigger_ratio = {v}\n"));
        assert!(
            msg.starts_with(&format!("{}:2: compaction.auto.trigger_ratio = ", d(&p)))
                && msg.ends_with(": expected a number greater than 0 and at most 1 (such as 0.75)"),
            "{v}: {msg}"
        );
    }
    // 1 (an integer) is a fine ratio.
    let (_dir, _p, r) = load_one("[compaction.auto]\ntrigger_ratio = 1\n");
    assert_eq!(r.unwrap().config.auto.trigger_ratio, 1.0);
}

#[test]
fn a_rule_without_a_policy_is_an_error() {
    let (msg, p, _dir) = error_of("[[compaction.rules]]\nkeep_last = 3\n");
    assert_eq!(
        msg,
        format!(
            "{}:1: compaction.rules[1] = {{ keep_last = 3 }}: expected a rule that says how to compact: reasoning, tool_calls or a [summary] table",
            d(&p)
        )
    );
}

#[test]
fn toml_syntax_errors_name_the_file_and_line() {
    let (msg, p, _dir) = error_of("[compaction.auto]\nenabled = true\nmin_turns = = 3\n");
    assert!(msg.starts_with(&format!("{}: ", d(&p))), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
    let (_dir, _p, r) = load_one("[compaction.auto\n");
    match r {
        Err(ConfigError::Syntax { path, line, .. }) => {
            assert!(path.ends_with(".ctxfold/config.toml"));
            assert_eq!(line, Some(1));
        }
        other => panic!("{other:?}"),
    }
    // A key defined twice is a TOML error too.
    let (msg, _p, _dir) = error_of("[compaction.auto]\nenabled = true\nenabled = false\n");
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn a_missing_dash_c_file_is_an_error_naming_it() {
    let dir = TempDir::new().unwrap();
    let there = write(&dir, "there.toml", "[compaction.auto]\nenabled = true\n");
    let gone = dir.path().join("gone.toml");
    let e = load(&Layers {
        files: vec![there, gone.clone()],
        ..Layers::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: no such config file (named with -c)", d(&gone))
    );
}

#[test]
fn unreadable_files_are_errors_naming_them() {
    let dir = TempDir::new().unwrap();
    let bin = dir.path().join("bin.toml");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let e = load(&Layers {
        user: Some(bin.clone()),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", d(&bin)))
    );
    // A directory where the workspace file should be.
    let e = load(&Layers {
        workspace: Some(dir.path().to_owned()),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&d(dir.path())), "{e}");
}

#[test]
fn errors_from_the_user_file_and_dash_c_name_those_files() {
    let dir = TempDir::new().unwrap();
    let user = write(&dir, "u.toml", "[compaction.auto]\nmin_turns = \"five\"\n");
    let e = load(&Layers {
        user: Some(user.clone()),
        ..Layers::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: compaction.auto.min_turns = \"five\": expected a whole number >= 0",
            d(&user)
        )
    );
    let good = write(&dir, "good.toml", "");
    let bad = write(&dir, "bad.toml", "\n\n[tools.x]\ncompaction = 1\n");
    let e = load(&Layers {
        files: vec![good, bad.clone()],
        ..Layers::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:4: tools.x.compaction = 1: expected one of keep, strip, strip-requests, strip-responses, omit",
            d(&bad)
        )
    );
}

#[test]
fn bad_environment_values_name_the_variable() {
    let e = load(&Layers {
        env: env(&[("CTXFOLD_COMPACTION_AUTO_TRIGGER_RATIO", "high")]),
        ..Layers::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "environment variable CTXFOLD_COMPACTION_AUTO_TRIGGER_RATIO: compaction.auto.trigger_ratio = \"high\": expected a number greater than 0 and at most 1 (such as 0.75)"
    );
    let e = load(&Layers {
        env: env(&[("CTXFOLD_COMPACTION_AUTO_ENABLED", "maybe")]),
        ..Layers::default()
    })
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "environment variable CTXFOLD_COMPACTION_AUTO_ENABLED: compaction.auto.enabled = \"maybe\": expected true or false"
    );
    let e = load(&Layers {
        env: env(&[("CTXFOLD_COMPACTION_AUTO_MIN_TURNS", "-2")]),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "environment variable CTXFOLD_COMPACTION_AUTO_MIN_TURNS: compaction.auto.min_turns = -2"
        ),
        "{e}"
    );
    let e = load(&Layers {
        env: env(&[("CTXFOLD_COMPACTION_AUTO_ENABLE", "true")]),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "environment variable CTXFOLD_COMPACTION_AUTO_ENABLE: not a ctxfold setting: expected one of CTXFOLD_COMPACTION_AUTO_ENABLED, "
        ),
        "{e}"
    );
}

#[test]
fn a_bad_value_is_an_error_even_when_a_higher_layer_overrides_it() {
    let dir = TempDir::new().unwrap();
    let user = write(&dir, "u.toml", "[compaction.auto]\nmin_turns = \"x\"\n");
    let ws = write(&dir, "w.toml", "[compaction.auto]\nmin_turns = 4\n");
    let e = load(&Layers {
        user: Some(user.clone()),
        workspace: Some(ws),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(e.to_string().starts_with(&d(&user)), "{e}");
}

#[test]
fn rule_to_toml_round_trips_through_the_reader() {
    let rules = vec![
        Rule::builtin(),
        Rule {
            from: Some("last-compaction".parse().unwrap()),
            to: Some("90m".parse().unwrap()),
            keep_first: Some(keep("1d")),
            keep_last: Some(keep("2h30m")),
            tool_calls: Some(ToolPolicy::StripResponses),
            summary: Some(SummaryRequest::Derive {
                model: Some("anthropic/claude".into()),
                instructions: Some("Keep file names.".into()),
            }),
            ..Rule::default()
        },
        Rule {
            from: Some(Bound::FromEnd(4)),
            to: Some(Bound::Turn(9)),
            reasoning: Some(ReasoningPolicy::Strip),
            tool_calls: Some(ToolPolicy::StripRequests),
            ..Rule::default()
        },
    ];
    let mut l = load(&Layers::default()).unwrap();
    l.set_flag(
        "-k",
        "compaction.rules",
        toml::Value::Array(
            rules
                .iter()
                .map(|r| toml::Value::Table(rule_to_toml(r)))
                .collect(),
        ),
    )
    .unwrap();
    assert_eq!(l.config.rules, Some(rules));
}

#[test]
fn a_rule_sets_how_many_diagnostics_a_stripped_result_keeps() {
    let (_dir, _p, r) =
        load_one("[[compaction.rules]]\ntool_calls = \"strip\"\nkeep_diagnostics = 4\n");
    let rules = r.unwrap().config.rules.unwrap();
    assert_eq!(rules[0].keep_diagnostics, Some(4));
    // It reads back what it prints.
    let t = ctxfold_config::rule_to_toml(&rules[0]);
    assert_eq!(t["keep_diagnostics"].as_integer(), Some(4));
    // More than a result yields, or not a count: refused, with the range.
    for bad in ["101", "-1", "\"all\""] {
        let (e, _, _) = error_of(&format!(
            "[[compaction.rules]]\ntool_calls = \"strip\"\nkeep_diagnostics = {bad}\n"
        ));
        assert!(
            e.contains("compaction.rules[1].keep_diagnostics")
                && e.contains("a whole number of diagnostics from 0 to 100"),
            "{e}"
        );
    }
}
