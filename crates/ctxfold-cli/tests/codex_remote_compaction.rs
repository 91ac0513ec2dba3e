//! The real Codex's remote compaction through `ctxfold proxy` emulating it
//! (issue 29): Codex compacts remotely only for the providers it takes for
//! OpenAI's or Azure's (`supports_remote_compaction` in its source: the
//! provider named `openai`, or `azure`, or an Azure base URL), so its
//! provider here is named `azure` and points at the proxy, which, with
//! `[proxy.upstreams.openai] context_management = "emulate"`, answers the
//! compaction itself in front of the scripted upstream (which has none).
//! Codex runs three tasks past its `model_auto_compact_token_limit`,
//! inside a network namespace with only loopback.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::Scratch;
use common::agent_run::{Agent, AgentHome, codex_session_runs, jsonl_files, run_agent, with_agent};
use common::proxy::Proxy;
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::agent::FINAL;

#[test]
#[ignore = "needs Codex (CTXFOLD_CODEX) and a loopback-only network namespace: scripts/test installs and runs it"]
fn codex_compacts_remotely_through_the_emulating_proxy() {
    with_agent(Agent::Codex, |exe| {
        let up = Upstream::agents(None);
        let s = Scratch::new();
        let p = Proxy::start(
            &s,
            &format!(
                "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\n\
                 [proxy.upstreams.openai]\ncontext_management = \"emulate\"\n",
                b = up.base
            ),
        );
        let home = AgentHome::new(
            Agent::Codex,
            &p.base,
            "model_auto_compact_token_limit = 40000\n",
        );
        let config = home.codex_home().join("config.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            text.replace("name = \"ctxfold\"", "name = \"azure\""),
        )
        .unwrap();
        for (args, prompt) in &codex_session_runs() {
            let ran = run_agent(Agent::Codex, exe, &home, &p.base, args, prompt);
            assert!(ran.ok(), "codex {args:?} {prompt}: {}", ran.describe());
            assert!(ran.stdout.contains(FINAL), "{}", ran.describe());
        }
        // Codex compacted, remotely: its rollout holds the compaction.
        let files = jsonl_files(&home.codex_home().join("sessions"));
        let rollout = std::fs::read_to_string(&files[0]).unwrap();
        assert!(
            rollout.contains("\"type\":\"compacted\"")
                || rollout.contains("\"type\":\"compaction\""),
            "Codex did not compact"
        );
        // The upstream, which has no context management, never saw it.
        for r in up.requests() {
            let body = String::from_utf8_lossy(&r.body);
            assert!(!body.contains("compaction_trigger"), "request {}", r.n);
            assert!(!body.contains("\"type\":\"compaction\""), "request {}", r.n);
            assert!(!r.path.ends_with("/compact"), "request {}", r.n);
        }
        // The compaction is ctxfold's, the client's: listed, undoable.
        let list = s.json(&["c", "ls"]);
        let ids: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        let compacted: Vec<Vec<serde_json::Value>> = ids
            .iter()
            .map(|id| s.json(&["c", "print", id]).as_array().unwrap().clone())
            .filter(|recs| {
                recs.iter()
                    .any(|r| r["type"] == "compaction" && r["source"] == "client")
            })
            .collect();
        assert!(
            !compacted.is_empty(),
            "no client compaction in {ids:?}: {}",
            p.log.lock().unwrap().join("\n")
        );
        // Codex asked for it as its source does (the trigger item, or the
        // compact endpoint), and went on after it in the same conversation:
        // the last task's request is recorded after the compaction.
        let recs = &compacted[0];
        let at = recs
            .iter()
            .position(|r| r["type"] == "compaction" && r["source"] == "client")
            .unwrap();
        let after = serde_json::Value::Array(recs[at..].to_vec()).to_string();
        assert!(after.contains("ctxfold-task=gamma"), "{after}");
        let kinds: Vec<&str> = recs
            .iter()
            .filter_map(|r| r["item"]["type"].as_str())
            .filter(|t| t.starts_with("compaction"))
            .collect();
        // Codex 0.171 sends the trigger on an ordinary streamed request and
        // keeps the one compaction item it gets back.
        assert_eq!(kinds, ["compaction_trigger", "compaction"], "{recs:#?}");
    });
}
