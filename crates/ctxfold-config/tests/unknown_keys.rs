//! Issue 7 item 21: an unknown key is an error wherever it is (top level
//! included), naming the file, the line and the nearest known key; the
//! sections other crates read are checked layer by layer through
//! `SectionCheck`s, with the same wording.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::PathBuf;

use ctxfold_config::{
    ConfigError, Layers, SectionCheck, SectionProblem, TOP_LEVEL_KEYS, load, load_checked,
};
use tempfile::TempDir;
use toml::Value;

fn file(dir: &TempDir, text: &str) -> PathBuf {
    let p = dir.path().join("typo.toml");
    std::fs::write(&p, text).unwrap();
    p
}

fn error_with(text: &str, checks: &[SectionCheck]) -> (String, String) {
    let dir = TempDir::new().unwrap();
    let p = file(&dir, text);
    let layers = Layers {
        files: vec![p.clone()],
        ..Layers::default()
    };
    match load_checked(&layers, checks) {
        Ok(l) => panic!("{text:?} loaded: {:?}", l.merged()),
        Err(e) => (e.to_string(), p.display().to_string()),
    }
}

#[test]
fn top_level_typos_name_the_file_the_line_and_the_nearest_section() {
    for (text, key, line, nearest) in [
        (
            "[compation.auto]\nenabled = true\n",
            "compation",
            1,
            "compaction",
        ),
        (
            "# hints\n\n[tool.search]\ncompaction = \"strip-responses\"\n",
            "tool",
            3,
            "tools",
        ),
        (
            "[provider.work]\nkind = \"openai\"\n",
            "provider",
            1,
            "providers",
        ),
        ("Compaction = {}\n", "Compaction", 1, "compaction"),
    ] {
        let (msg, path) = error_with(text, &[]);
        let want = format!(
            "{path}:{line}: unknown key {key}: expected one of {}; did you mean {nearest}?",
            TOP_LEVEL_KEYS.join(", ")
        );
        assert_eq!(msg, want, "{text:?}");
    }
}

#[test]
fn an_unknown_section_with_no_near_key_lists_the_known_ones() {
    let (msg, path) = error_with("answer = 42\n[model]\nid = \"openai/gpt-4o\"\n", &[]);
    assert_eq!(
        msg,
        format!(
            "{path}:1: unknown key answer: expected one of compaction, prices, providers, proxy, query, store, tools"
        )
    );
}

#[test]
fn the_spec_sections_are_still_accepted() {
    // SPEC §5's example, [compaction.auto] included.
    let dir = TempDir::new().unwrap();
    let p = file(
        &dir,
        "[[compaction.rules]]\nkeep_first = 1\nkeep_last = 3\nreasoning = \"strip\"\ntool_calls = \"strip\"\n\
         [compaction.auto]\nenabled = false\ntrigger_ratio = 0.75\nmin_turns = 5\n\
         [compaction.auto.rule]\nkeep_first = 1\nkeep_last = 3\nreasoning = \"strip\"\ntool_calls = \"strip\"\n\
         [tools.search]\ncompaction = \"strip-responses\"\n[tools.\"*\"]\ncompaction = \"strip\"\n\
         [providers.work]\nkind = \"openai\"\n",
    );
    let l = load(&Layers {
        files: vec![p],
        ..Layers::default()
    })
    .unwrap();
    assert!(l.config.other.contains_key("providers"));
}

#[test]
fn typos_inside_sections_get_the_nearest_key_too() {
    for (text, nearest) in [
        ("[compaction.auto]\nenabeld = true\n", "enabled"),
        (
            "[compaction.auto]\ncompaction_retry = 2\n",
            "compaction_retries",
        ),
        ("[compaction]\nrule = []\n", "rules"),
        (
            "[[compaction.rules]]\nreasoning = \"strip\"\nkeep_lats = 3\n",
            "keep_last",
        ),
        (
            "[[compaction.rules]]\n[compaction.rules.summary]\nmodle = \"x\"\n",
            "model",
        ),
        ("[tools.search]\ncompacton = \"omit\"\n", "compaction"),
    ] {
        let (msg, _) = error_with(text, &[]);
        assert!(
            msg.ends_with(&format!("; did you mean {nearest}?")),
            "{text:?}: {msg}"
        );
    }
}

#[test]
fn a_typo_in_a_flag_key_or_an_environment_variable_is_named_too() {
    let mut l = load(&Layers::default()).unwrap();
    let e = l
        .set_flag("--set", "compation.auto.enabled", Value::Boolean(true))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "flag --set: unknown key compation: expected one of compaction, prices, providers, proxy, query, store, tools; did you mean compaction?"
    );
    let e = load(&Layers {
        env: vec![("CTXFOLD_COMPACTION_AUTO_ENABLE".into(), "1".into())],
        ..Layers::default()
    })
    .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("; did you mean CTXFOLD_COMPACTION_AUTO_ENABLED?"),
        "{e}"
    );
}

/// A stand-in for a section another crate reads: `[providers.NAME]` with
/// one known key, `kind`, that must be a string.
fn check_kinds(v: &Value) -> Result<(), SectionProblem> {
    let t = v.as_table().ok_or(SectionProblem::Invalid {
        key: vec![],
        expected: "a table".into(),
    })?;
    for (name, entry) in t {
        for (k, v) in entry.as_table().into_iter().flatten() {
            let key = vec![name.clone(), k.clone()];
            if k != "kind" {
                return Err(SectionProblem::UnknownKey {
                    key,
                    expected: vec!["kind"],
                });
            }
            if !v.is_str() {
                return Err(SectionProblem::Invalid {
                    key,
                    expected: "a string".into(),
                });
            }
        }
    }
    Ok(())
}

const CHECK: SectionCheck = SectionCheck {
    section: "providers",
    check: check_kinds,
};

#[test]
fn section_checks_run_on_each_file_with_its_lines() {
    let (msg, path) = error_with(
        "[providers.work]\nkind = \"openai\"\nknid = \"x\"\n",
        &[CHECK],
    );
    assert_eq!(
        msg,
        format!(
            "{path}:3: unknown key providers.work.knid: expected one of kind; did you mean kind?"
        )
    );
    let (msg, path) = error_with("\n[providers.\"my box\"]\nkind = 7\n", &[CHECK]);
    assert_eq!(
        msg,
        format!("{path}:3: providers.\"my box\".kind = 7: expected a string")
    );
    let (msg, path) = error_with("providers = 3\n", &[CHECK]);
    assert_eq!(msg, format!("{path}:1: providers = 3: expected a table"));
}

#[test]
fn section_checks_run_on_a_lower_layer_that_a_higher_one_overrides() {
    let dir = TempDir::new().unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(&user, "[providers.work]\nkind = 1\n").unwrap();
    let top = file(&dir, "[providers.work]\nkind = \"openai\"\n");
    let e = load_checked(
        &Layers {
            user: Some(user.clone()),
            files: vec![top],
            ..Layers::default()
        },
        &[CHECK],
    )
    .unwrap_err();
    assert!(matches!(e, ConfigError::Invalid { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(&format!("{}:2:", user.display())),
        "{e}"
    );
}

#[test]
fn where_set_names_the_file_and_line_of_a_table_or_a_leaf() {
    let dir = TempDir::new().unwrap();
    let p = file(
        &dir,
        "[compaction.auto]\nmin_turns = 2\n\n[providers.work]\nkind = \"openai\"\n",
    );
    let mut l = load_checked(
        &Layers {
            files: vec![p.clone()],
            ..Layers::default()
        },
        &[CHECK],
    )
    .unwrap();
    let at = |l: &ctxfold_config::Loaded, k: &str| l.where_set(k);
    assert_eq!(at(&l, "providers.work"), Some(format!("{}:4", p.display())));
    assert_eq!(
        at(&l, "providers.work.kind"),
        Some(format!("{}:5", p.display()))
    );
    assert_eq!(at(&l, "providers.other"), None);
    assert_eq!(
        at(&l, "compaction.auto.enabled").as_deref(),
        Some("built-in defaults")
    );
    l.set_flag(
        "--min-turns",
        "compaction.auto.min_turns",
        Value::Integer(9),
    )
    .unwrap();
    assert_eq!(
        at(&l, "compaction.auto.min_turns").as_deref(),
        Some("flag --min-turns")
    );
}
