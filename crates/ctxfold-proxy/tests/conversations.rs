//! Which conversation a request belongs to, in-process over real HTTP
//! with the scripted upstream's agent: concurrent streaming conversations
//! each get their own complete log; two clients on one conversation keep
//! each history whole; twelve clients on one name each find their own.
//! (Moved from ctxfold-cli's tests/proxy.rs: none of them needs the
//! command line.)

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use std::sync::Arc;

use common::{InProcess, config};
use ctxfold_testkit::records::count;
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::tool_loop::{openai_agent, openai_agent_streaming};
use serde_json::{Value, json};

#[test]
fn concurrent_streaming_conversations_each_get_their_own_complete_log() {
    let up = Upstream::start(1_000_000);
    let p = Arc::new(InProcess::start(&config(&up, "")));
    let workers: Vec<_> = (0..100)
        .map(|i| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut messages = vec![json!({"role": "system", "content": "Agent."})];
                let header = format!("conv-{i}");
                let a = openai_agent_streaming(
                    &p.base,
                    &mut messages,
                    &format!("task {i} steps=2"),
                    200,
                    &[("x-ctxfold-conversation", &header)],
                    true,
                );
                (
                    i,
                    a.last()
                        .unwrap()
                        .header("x-ctxfold-conversation")
                        .unwrap()
                        .to_owned(),
                )
            })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for w in workers {
        let (i, id) = w.join().unwrap();
        let recs = p.records(&id);
        assert_eq!(count(&recs, "tool_call"), 2, "conversation {i}");
        assert_eq!(count(&recs, "tool_result"), 2, "conversation {i}");
        assert_eq!(count(&recs, "user"), 1, "conversation {i}");
        let user = recs.iter().find(|r| r["type"] == "user").unwrap();
        assert_eq!(user["content"], json!(format!("task {i} steps=2")));
        let seqs: Vec<u64> = recs.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        ids.insert(id);
    }
    assert_eq!(ids.len(), 100);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

#[test]
fn two_clients_on_one_conversation_keep_each_history_whole() {
    // Two agents name the same conversation and send at the same time:
    // their histories diverge, so one of them goes on in a fork; each
    // history ends up whole, in order, in the conversation its last
    // answer names, and there is one fork, not one per request.
    let up = Upstream::start(1_000_000);
    let p = Arc::new(InProcess::start(&config(&up, "")));
    let clients: Vec<_> = ["alpha", "beta"]
        .into_iter()
        .map(|who| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut messages = vec![json!({"role": "system", "content": "Agent."})];
                let a = openai_agent(
                    &p.base,
                    &mut messages,
                    &format!("{who} steps=4"),
                    300,
                    &[("x-ctxfold-conversation", "shared")],
                );
                let id = a
                    .last()
                    .unwrap()
                    .header("x-ctxfold-conversation")
                    .unwrap()
                    .to_owned();
                (who, id, messages)
            })
        })
        .collect();
    for c in clients {
        let (who, id, messages) = c.join().unwrap();
        let recs = p.records_when(&id, |r| {
            r.iter().any(|x| x["content"] == json!("done: 4 steps"))
        });
        // The client's messages, in order, as the log holds them.
        let users: Vec<&Value> = recs.iter().filter(|r| r["type"] == "user").collect();
        assert_eq!(users.len(), 1, "{who}: {users:?}");
        assert_eq!(users[0]["content"], json!(format!("{who} steps=4")));
        let results: Vec<&str> = recs
            .iter()
            .filter(|r| r["type"] == "tool_result")
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        let sent: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        assert_eq!(results, sent, "{who}");
    }
    // One fork, not one per request: each client finds its own again.
    assert_eq!(p.conversations(), 2);
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}

/// Twelve clients on one name (the same header), past the eight most
/// recent conversations a request is compared with, each in steps at the
/// same time: each finds its own conversation again by the answer it
/// sends back, so there are twelve (one each), not a fork per request.
#[test]
fn twelve_clients_on_one_name_each_find_their_own_conversation() {
    let up = Upstream::start(1_000_000);
    let p = Arc::new(InProcess::start(&config(&up, "")));
    let clients: Vec<_> = (0..12)
        .map(|i| {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut messages = vec![json!({"role": "system", "content": "Agent."})];
                let a = openai_agent(
                    &p.base,
                    &mut messages,
                    &format!("client {i} steps=5"),
                    200,
                    &[("x-ctxfold-conversation", "one-name")],
                );
                let id = a
                    .last()
                    .unwrap()
                    .header("x-ctxfold-conversation")
                    .unwrap()
                    .to_owned();
                (i, id, messages)
            })
        })
        .collect();
    let mut ids = std::collections::BTreeSet::new();
    for c in clients {
        let (i, id, messages) = c.join().unwrap();
        let recs = p.records(&id);
        let sent: Vec<&str> = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        let results: Vec<&str> = recs
            .iter()
            .filter(|r| r["type"] == "tool_result")
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(results, sent, "client {i}");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 12, "{ids:?}");
    let all = p.conversations();
    assert_eq!(all, 12, "one conversation a client, not a fork a request");
    assert!(up.problems().is_empty(), "{:?}", up.problems());
}
