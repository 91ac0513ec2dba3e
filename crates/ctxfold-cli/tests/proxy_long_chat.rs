//! Issue 43, point 5: folds are bounded because they can be recalled.
//!
//! A plain chat (no tools) of 100 user messages of 1–4 KB each, the
//! assistant answering a few hundred characters each time, through the
//! real `ctxfold proxy` at a 20,000-token window with the defaults, against
//! the scripted upstream of ctxfold_testkit::upstream, which refuses a
//! request over the window as a provider would. No request may go over
//! the window or be refused, every firing ends at or under its target, the
//! newest user message always reaches the upstream whole, and every user
//! message is in the view byte for byte or named there by the handle of
//! its record, which recalls it exactly.
//!
//! The same chat typed into the real aider (`aider_with_…`, with an OpenAI
//! model and with an Anthropic one, ignored by a plain `cargo test`, run
//! by `scripts/test`): it stays in the window too, and although aider
//! rewrites its newest message on every request (a reminder it drops on
//! the next, its "chat files" messages moved after the answer) it is one
//! conversation, whose requests upstream change their prefix only where a
//! compaction fires (issue 44, see `ctxfold_proxy::reconcile`).
//!
//! Issue 44, point 4: a summary's lead never makes two user messages in a
//! row, and names the turns its digest covers (`a_summary_lead_…`).

// A test may panic on what it did not expect, and print.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::Scratch;
use common::proxy::Proxy;
use ctxfold_core::handle::{Handle, Tag};
use ctxfold_core::position::position;
use ctxfold_core::recall::recall;
use ctxfold_core::{Body, Log, Record};
use ctxfold_testkit::upstream::Upstream;
use serde_json::{Value, json};

const WINDOW: usize = 20_000;
const MESSAGES: usize = 100;

/// User message `i`: 1,000 to 4,000 bytes of varied lines (the same for
/// the same `i`), its first line a request naming it.
fn user_message(i: usize) -> String {
    const TOPICS: [&str; 8] = [
        "the parser",
        "the config loader",
        "the cache",
        "the scheduler",
        "the HTTP client",
        "the test suite",
        "the migration",
        "the release notes",
    ];
    const VERBS: [&str; 6] = [
        "rewrite", "explain", "speed up", "document", "split", "review",
    ];
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ (i as u64).wrapping_mul(0x0100_0000_01b3);
    let mut next = || {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        h
    };
    let len = 1_000 + (next() % 3_001) as usize;
    let mut out = format!(
        "Message {i}: please {} {} and keep what we agreed.\n",
        VERBS[(next() % 6) as usize],
        TOPICS[(next() % 8) as usize]
    );
    while out.len() < len {
        let n = next();
        let line = format!(
            "- {} {} must {} when item {} is {} ({:x})\n",
            TOPICS[(n % 8) as usize],
            ["step", "case", "path", "branch"][(n >> 8) as usize % 4],
            VERBS[(n >> 16) as usize % 6],
            (n >> 24) % 1_000,
            ["empty", "large", "stale", "missing", "new"][(n >> 40) as usize % 5],
            n >> 44
        );
        out.push_str(&line);
    }
    out.truncate(len);
    out.trim_end().to_owned()
}

fn post(url: &str, body: &Value) -> (u16, Option<String>, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent
        .post(url)
        .header("content-type", "application/json")
        .header("authorization", "Bearer sk-test-0123456789")
        .send(body.to_string().as_bytes())
        .unwrap();
    let id = resp
        .headers()
        .get("x-ctxfold-conversation")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = resp.body_mut().read_to_string().unwrap();
    let status = resp.status().as_u16();
    (
        status,
        id,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The conversation's log as the store holds it.
fn stored(s: &Scratch, id: &str) -> Log {
    let text = std::fs::read_to_string(s.events_file(id)).unwrap();
    Log::from_records(
        text.lines()
            .map(|l| Record::from_json_line(l).unwrap().0)
            .collect(),
    )
}

/// The text of every message of a chat request.
fn view_text(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Whether `text` names `handle` (not a longer number that starts so).
fn names(text: &str, handle: &Handle) -> bool {
    let h = handle.to_string();
    text.match_indices(&h).any(|(at, _)| {
        !text[at + h.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-')
    })
}

#[test]
fn a_long_plain_chat_stays_in_the_window_and_every_word_can_be_recalled() {
    let up = Upstream::start(WINDOW);
    let s = Scratch::new();
    let p = Proxy::start(
        &s,
        &format!("[proxy]\nopenai = \"{}\"\nwindow = {WINDOW}\n", up.base),
    );
    let mut messages = vec![json!({"role": "system", "content": "You are a careful assistant."})];
    let mut id = None;
    for i in 0..MESSAGES {
        messages.push(json!({"role": "user", "content": user_message(i)}));
        let body = json!({"model": "chatty-1", "messages": messages});
        let (status, conv, answer) = post(&p.url("/v1/chat/completions"), &body);
        assert_eq!(status, 200, "request {i}: {answer}");
        assert!(
            id.is_none() || id == conv,
            "one conversation: {id:?} {conv:?}"
        );
        id = conv;
        let reply = answer["choices"][0]["message"].clone();
        assert!(reply["content"].as_str().unwrap().len() >= 250, "{reply}");
        messages.push(reply);
    }
    let id = id.unwrap();

    // None over the window, none refused, one upstream request each.
    assert_eq!(up.problems(), Vec::<String>::new());
    let seen = up.requests();
    assert_eq!(seen.len(), MESSAGES);

    // The newest user message always went whole.
    for (i, r) in seen.iter().enumerate() {
        let req = r.json();
        let last = req["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "user");
        assert_eq!(
            last["content"].as_str(),
            Some(user_message(i).as_str()),
            "request {i}: the newest user message was changed"
        );
    }

    // Every firing at or under its target.
    let log = stored(&s, &id);
    let mut firings = 0;
    let (mut shortened, mut by_handle) = (0, 0);
    let mut largest_summary = 0;
    for r in log.records() {
        let Body::Compaction(c) = &r.body else {
            continue;
        };
        if let Some(text) = c.summary.as_ref().map(|s| s.text.chars().count()) {
            largest_summary = largest_summary.max(text);
        }
        let Some(f) = &c.budget else { continue };
        firings += 1;
        assert!(
            f.after <= f.budget.target,
            "a firing ended over its target: {}",
            f.line()
        );
        shortened = shortened.max(f.shortened);
        by_handle = by_handle.max(f.handles_only);
    }
    assert!(firings > 0, "a chat this long fires");

    // Every user message is whole in the last view, or named by its own
    // handle there, which recalls it byte for byte.
    let tag = Tag::of(&log).unwrap();
    let view = view_text(&seen.last().unwrap().json());
    let (mut whole, mut recalled) = (0, 0);
    for (i, r) in log.records().iter().enumerate() {
        let Body::User { content, .. } = &r.body else {
            continue;
        };
        if view.contains(content.as_str()) {
            whole += 1;
            continue;
        }
        let handle = Handle::record(tag, position(&log, i));
        assert!(
            names(&view, &handle),
            "user message {} is neither whole in the view nor named by {handle}",
            r.seq
        );
        assert_eq!(&recall(&log, &handle).unwrap().text, content);
        recalled += 1;
    }
    assert_eq!(whole + recalled, MESSAGES);
    assert!(
        recalled > 0,
        "a chat this long folds some of the user's words"
    );
    let sizes: Vec<usize> = seen.iter().map(|r| r.body.len()).collect();
    println!(
        "{MESSAGES} messages: {firings} firings, largest summary {largest_summary} characters \
         (at most {shortened} messages to a first line and handle, {by_handle} to a handle alone); \
         the last view: {whole} whole, {recalled} by handle; largest request {} bytes",
        sizes.iter().max().unwrap()
    );
}

/// What aider adds to its newest message (its edit format's rules).
const REMINDER: &str = "To suggest changes to a file you MUST return the entire content \
of the updated file. You MUST use this *file listing* format. Reply in English.";

/// Issue 44, point 5, without aider: requests shaped as aider's (its
/// example messages, the history, its "chat files" messages, then the
/// newest message with a reminder that is gone from it on the next
/// request), in both shapes, through the real proxy. One conversation;
/// every request the upstream gets is the one before plus new messages,
/// but where a compaction fired; the log keeps every message as the model
/// was sent it; and once a firing has changed the prefix, the older
/// messages go as the client now sends them.
#[test]
fn a_chat_that_rewrites_its_newest_message_is_one_conversation_whose_prefix_changes_at_firings() {
    for anthropic in [false, true] {
        let up = Upstream::start(WINDOW);
        let s = Scratch::new();
        let p = Proxy::start(
            &s,
            &format!(
                "[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\nwindow = {WINDOW}\n",
                up.base
            ),
        );
        let mut done: Vec<Value> = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for i in 0..30 {
            let mut messages = vec![
                json!({"role": "user", "content": "Change the greeting to be more casual"}),
                json!({"role": "assistant", "content": "Ok, I will: ..."}),
            ];
            messages.extend(done.iter().cloned());
            messages.extend([
                json!({"role": "user", "content": "I am not sharing any files that you can edit yet."}),
                json!({"role": "assistant", "content": "Ok."}),
                json!({"role": "user", "content": format!("{}\n\n{REMINDER}", user_message(i))}),
            ]);
            let system = "Act as an expert software developer.";
            let (path, body) = if anthropic {
                (
                    "/v1/messages",
                    json!({"model": "chatty-1", "max_tokens": 500, "system": system, "messages": messages}),
                )
            } else {
                messages.insert(0, json!({"role": "system", "content": system}));
                (
                    "/v1/chat/completions",
                    json!({"model": "chatty-1", "messages": messages}),
                )
            };
            let (status, id, answer) = post(&p.url(path), &body);
            assert_eq!(status, 200, "request {i}: {answer}");
            ids.insert(id.unwrap());
            let text = if anthropic {
                answer["content"][0]["text"].clone()
            } else {
                answer["choices"][0]["message"]["content"].clone()
            };
            done.push(json!({"role": "user", "content": user_message(i)}));
            done.push(json!({"role": "assistant", "content": text}));
        }
        assert_eq!(up.problems(), Vec::<String>::new());
        assert_eq!(ids.len(), 1, "anthropic: {anthropic}: one conversation");
        let id = ids.into_iter().next().unwrap();
        title_is_the_first_message_typed(&s, &id);
        let log = stored(&s, &id);
        let firings = log
            .records()
            .iter()
            .filter(|r| matches!(&r.body, Body::Compaction(c) if c.budget.is_some()))
            .count();
        let bodies: Vec<Value> = up.requests().iter().map(|r| r.json()).collect();
        let (breaks, first) = prefix_breaks(&bodies);
        assert!(firings > 0, "anthropic: {anthropic}: no firing");
        assert_eq!(
            breaks,
            firings,
            "anthropic: {anthropic}: {}",
            first.unwrap_or_default()
        );
        for (n, b) in bodies.iter().enumerate() {
            assert_eq!(user_after_user(b), None, "request {}", n + 1);
        }
        // The log keeps what the model was sent: every message with its
        // reminder, once.
        for i in 0..30 {
            let sent = format!("{}\n\n{REMINDER}", user_message(i));
            let times = log
                .records()
                .iter()
                .filter(|r| matches!(&r.body, Body::User { content, .. } if *content == sent))
                .count();
            assert_eq!(times, 1, "anthropic: {anthropic}: message {i}");
        }
        // After a firing, the messages it kept go as the client now sends
        // them: in the last request, no more user messages carry a
        // reminder than were rewritten since the last firing, and the
        // newest. (The digest quotes the messages as the log has them.)
        let reminders = upstream_messages(bodies.last().unwrap())
            .iter()
            .filter(|m| m["role"] == "user" && m["content"].to_string().contains(REMINDER))
            .count();
        let firing_requests: Vec<usize> = bodies
            .windows(2)
            .enumerate()
            .filter(|(_, w)| prefix_breaks(w).0 > 0)
            .map(|(n, _)| n + 1)
            .collect();
        let since = bodies.len() - 1 - firing_requests.last().unwrap();
        assert_eq!(
            reminders,
            since + 1,
            "anthropic: {anthropic}: {since} requests since the last firing"
        );
    }
}

/// The conversation's title is what was typed first (its first line's
/// first words), never aider's example exchange or its "I am not sharing
/// any files that you can edit yet." that come before it.
fn title_is_the_first_message_typed(s: &Scratch, id: &str) {
    let shown = s.json(&["c", "show", id]);
    let title = shown["title"].as_str().unwrap_or_default().to_owned();
    let typed = user_message(0);
    let first_words: String = typed.lines().next().unwrap().chars().take(20).collect();
    assert!(
        title.starts_with(&first_words),
        "title {title:?}, typed {first_words:?}"
    );
}

/// Issue 44, point 4: a summary's lead is never a user message right after
/// the client's own user message (aider's first messages are a user
/// message and an "Ok."; automatic compaction keeps the first user
/// message), nor after a user message and Claude Code's `role: system` at
/// `messages[1]`; and the turns it names are the ones its digest covers.
/// A chat long enough to fire, through the real proxy, in both shapes:
/// the upstream never gets two user messages in a row (system messages
/// aside), and every lead names the digest's turns.
#[test]
fn a_summary_lead_never_follows_a_user_message_and_names_the_digests_turns() {
    for anthropic in [true, false] {
        let up = Upstream::start(WINDOW);
        let s = Scratch::new();
        let p = Proxy::start(
            &s,
            &format!(
                "[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\nwindow = {WINDOW}\n",
                up.base
            ),
        );
        let mut messages = if anthropic {
            vec![
                // Claude Code's first user message: a reminder, then what
                // the user typed; its `role: system` message after it.
                json!({"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>Be careful.</system-reminder>"},
                    {"type": "text", "text": user_message(0)}]}),
                json!({"role": "system", "content": "You are Claude Code."}),
            ]
        } else {
            vec![
                json!({"role": "system", "content": "You are a careful assistant."}),
                json!({"role": "user", "content": "I am not sharing any files that you can edit yet."}),
                json!({"role": "assistant", "content": "Ok."}),
            ]
        };
        for i in 0..24 {
            if !(anthropic && i == 0) {
                messages.push(json!({"role": "user", "content": user_message(i)}));
            }
            let (path, body) = if anthropic {
                (
                    "/v1/messages",
                    json!({"model": "chatty-1", "max_tokens": 500, "messages": messages}),
                )
            } else {
                (
                    "/v1/chat/completions",
                    json!({"model": "chatty-1", "messages": messages}),
                )
            };
            let (status, _, answer) = post(&p.url(path), &body);
            assert_eq!(status, 200, "request {i}: {answer}");
            let text = if anthropic {
                answer["content"][0]["text"].clone()
            } else {
                answer["choices"][0]["message"]["content"].clone()
            };
            messages.push(json!({"role": "assistant", "content": text}));
        }
        assert_eq!(up.problems(), Vec::<String>::new());
        let mut leads = 0;
        for (n, r) in up.requests().iter().enumerate() {
            let req = r.json();
            assert_eq!(
                user_after_user(&req),
                None,
                "anthropic: {anthropic}, request {}: two user messages in a row: {}",
                n + 1,
                clip(&req["messages"].to_string())
            );
            leads += leads_name_their_digests(&req)
                .unwrap_or_else(|e| panic!("anthropic: {anthropic}, request {}: {e}", n + 1));
        }
        assert!(leads > 0, "anthropic: {anthropic}: no summary was sent");
    }
}

/// How many summaries `req` sends, each lead naming the turns of the
/// digest after it; else the first that does not.
fn leads_name_their_digests(req: &Value) -> Result<usize, String> {
    let all = req["messages"].to_string();
    let mut leads = 0;
    for (at, _) in all.match_indices("[The text that follows summarizes turn") {
        let lead = &all[at..];
        let Some(d) = lead.find("Digest of turn") else {
            return Err(format!("no digest after the lead {}", clip(lead)));
        };
        let digest = &lead[d..];
        if turns_named(lead) != turns_named(digest) {
            return Err(format!(
                "the lead and the digest name other turns: {} / {}",
                clip(lead),
                clip(digest)
            ));
        }
        leads += 1;
    }
    Ok(leads)
}

/// The turns a lead or a digest header names first: `turn N` or `turns
/// A–B`.
fn turns_named(text: &str) -> (u32, u32) {
    let at = text.find("turn").unwrap();
    let rest = text[at..]
        .trim_start_matches("turns ")
        .trim_start_matches("turn ");
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '–'))
        .unwrap_or(rest.len());
    let mut n = rest[..end].split('–').map(|n| n.parse::<u32>().unwrap());
    let first = n.next().unwrap();
    (first, n.next().unwrap_or(first))
}

/// Messages of the aider chat: enough for several firings at the window.
const AIDER_MESSAGES: usize = 30;

/// Which API aider's model is reached through.
#[derive(Clone, Copy, Debug)]
enum Api {
    /// `openai/chatty-1`: chat completions.
    OpenAi,
    /// `anthropic/chatty-1`: messages.
    Anthropic,
}

/// The same long chat typed into the real aider (PyPI `aider-chat`,
/// pinned by `scripts/aider`) with an OpenAI model, one `--message` at a
/// time with its chat history restored, through the proxy at the same
/// window, inside a network namespace with only loopback (see
/// [`aider_chat`] for what it checks).
#[test]
#[ignore = "needs aider (CTXFOLD_AIDER) and a loopback-only network namespace: scripts/test installs and runs it"]
fn aider_with_an_openai_model_is_one_conversation_in_the_window() {
    in_namespace(Api::OpenAi);
}

/// [`aider_with_an_openai_model_is_one_conversation_in_the_window`] with an
/// Anthropic model (issue 44: each of its requests was a conversation of
/// its own).
#[test]
#[ignore = "needs aider (CTXFOLD_AIDER) and a loopback-only network namespace: scripts/test installs and runs it"]
fn aider_with_an_anthropic_model_is_one_conversation_in_the_window() {
    in_namespace(Api::Anthropic);
}

fn in_namespace(api: Api) {
    let Some(aider) = std::env::var_os("CTXFOLD_AIDER").map(std::path::PathBuf::from) else {
        ctxfold_testkit::needs::missing(
            "aider test",
            "CTXFOLD_AIDER is not set (scripts/aider env)",
        );
        return;
    };
    let outcome = std::thread::spawn(move || {
        common::agent_run::enter_loopback_namespace()?;
        aider_chat(&aider, api);
        Ok::<(), String>(())
    })
    .join();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctxfold_testkit::needs::missing("aider test", &e),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The messages of an upstream request (Anthropic's `system` is a key of
/// its own).
fn upstream_messages(req: &Value) -> Vec<Value> {
    req["messages"].as_array().cloned().unwrap_or_default()
}

/// How many of `requests` are not the one before plus new messages (a
/// break of the provider's prompt cache), and the first such, described.
fn prefix_breaks(requests: &[Value]) -> (usize, Option<String>) {
    let mut breaks = 0;
    let mut first = None;
    for (n, pair) in requests.windows(2).enumerate() {
        let (a, b) = (upstream_messages(&pair[0]), upstream_messages(&pair[1]));
        let same_head = pair[0]["system"] == pair[1]["system"];
        let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
        if !same_head || at < a.len() {
            breaks += 1;
            first.get_or_insert_with(|| {
                format!(
                    "request {}: message {at} of {} differs: {} became {}",
                    n + 2,
                    a.len(),
                    a.get(at).map_or("nothing".into(), |m| clip(&m.to_string())),
                    b.get(at).map_or("nothing".into(), |m| clip(&m.to_string()))
                )
            });
        }
    }
    (breaks, first)
}

fn clip(s: &str) -> String {
    s.chars().take(160).collect()
}

/// Where a request sends two user messages in a row (with only system
/// messages between them).
fn user_after_user(req: &Value) -> Option<usize> {
    let roles: Vec<(usize, String)> = upstream_messages(req)
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_owned())
        .enumerate()
        .filter(|(_, r)| r != "system")
        .collect();
    roles
        .windows(2)
        .find(|w| w[0].1 == "user" && w[1].1 == "user")
        .map(|w| w[1].0)
}

/// aider, typed the long chat one `--message` at a time with its history
/// restored (each run a request): every run exits 0, no request goes
/// upstream over the window, every message the user typed is stored, and
/// (issue 44) the chat is one conversation although aider rewrites its
/// newest message on every request, the upstream's requests change their
/// prefix only where a compaction fires, and never send two user messages
/// in a row.
fn aider_chat(aider: &std::path::Path, api: Api) {
    let up = Upstream::start(WINDOW);
    let s = Scratch::new();
    let p = Proxy::start(
        &s,
        &format!(
            "[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\nwindow = {WINDOW}\n",
            up.base
        ),
    );
    let root = tempfile::tempdir().unwrap();
    let (home, work) = (root.path().join("home"), root.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let model = match api {
        Api::OpenAi => "openai/chatty-1",
        Api::Anthropic => "anthropic/chatty-1",
    };
    // aider sends `temperature: 0` unless the model's settings say not to;
    // the scripted upstream checks that the proxy passes a temperature on
    // unchanged, so this chat sends none.
    std::fs::write(
        work.join(".aider.model.settings.yml"),
        format!("- name: {model}\n  use_temperature: false\n"),
    )
    .unwrap();
    let (openai_base, anthropic_base) = (p.url("/v1"), p.base.clone());
    for i in 0..AIDER_MESSAGES {
        let mut cmd = std::process::Command::new(aider);
        cmd.current_dir(&work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .args(["--model", model]);
        match api {
            Api::OpenAi => cmd.args([
                "--openai-api-base",
                &openai_base,
                "--openai-api-key",
                "test",
            ]),
            Api::Anthropic => cmd
                .env("ANTHROPIC_API_BASE", &anthropic_base)
                .args(["--anthropic-api-key", "test"]),
        };
        let out = cmd
            .args([
                "--no-git",
                "--yes-always",
                "--no-check-update",
                "--analytics-disable",
                "--no-show-model-warnings",
                "--no-pretty",
                "--no-stream",
                "--restore-chat-history",
                "--map-tokens",
                "0",
                // aider would summarize its own history long before the
                // window; the chat is to reach the proxy's folding.
                "--max-chat-history-tokens",
                "200000",
                "--message",
                &user_message(i),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "aider run {i} exited {:?}: {}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // None over the window, none refused.
    assert_eq!(up.problems(), Vec::<String>::new());
    let seen = up.requests();
    assert!(seen.len() >= AIDER_MESSAGES, "{} requests", seen.len());
    let ids: Vec<String> = s
        .json(&["c", "ls"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    let logs: Vec<Log> = ids.iter().map(|id| stored(&s, id)).collect();
    title_is_the_first_message_typed(&s, &ids[0]);
    // Every message typed is stored, byte for byte.
    for i in 0..AIDER_MESSAGES {
        let typed = user_message(i);
        assert!(
            logs.iter().any(|log| log.records().iter().any(
                |r| matches!(&r.body, Body::User { content, .. } if content.contains(typed.trim()))
            )),
            "message {i} is in no stored conversation"
        );
    }
    // Firings: the compactions automatic compaction recorded to bring the
    // conversation under its budget (an excerpt of a new output, were
    // there one, changes no request the upstream had).
    let count = |firing: bool| -> usize {
        logs.iter()
            .map(|l| {
                l.records()
                    .iter()
                    .filter(
                        |r| matches!(&r.body, Body::Compaction(c) if !firing || c.budget.is_some()),
                    )
                    .count()
            })
            .sum()
    };
    let (firings, compactions) = (count(true), count(false));
    let bodies: Vec<Value> = seen.iter().map(|r| r.json()).collect();
    let (breaks, first_break) = prefix_breaks(&bodies);
    let largest = seen.iter().map(|r| r.body.len()).max().unwrap_or(0);
    eprintln!(
        "aider ({api:?}): {} requests, {} conversations, {firings} firings ({compactions} compactions \
         recorded), {breaks} prefix breaks, largest request {largest} bytes",
        seen.len(),
        ids.len()
    );
    assert_eq!(ids.len(), 1, "one conversation");
    assert!(firings >= 1, "no firing in {} requests", seen.len());
    let mut leads = 0;
    for (n, b) in bodies.iter().enumerate() {
        assert_eq!(
            user_after_user(b),
            None,
            "request {}: two user messages in a row",
            n + 1
        );
        leads += leads_name_their_digests(b).unwrap_or_else(|e| panic!("request {}: {e}", n + 1));
    }
    assert!(leads > 0, "no summary was sent");
    assert_eq!(
        breaks,
        firings,
        "prefix breaks are firings ({})",
        first_break.unwrap_or_default()
    );
}
