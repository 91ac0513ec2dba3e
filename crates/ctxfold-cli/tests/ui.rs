//! `ctxfold ui` and the proxy's `/ui`, through the real binary and a real
//! headless Chromium (see `common/browser.rs`): the list of imported corpus
//! conversations; a conversation compacted three times (manual, auto,
//! assistant) drawn as three bands; undo and restore from the page; a page
//! left open updating while the proxy records; and cross-site posts
//! refused. Each browser test writes screenshots for a person to look at
//! (the folder is printed). The browser tests are ignored by a plain
//! `cargo test` (reported as skipped) and run by `scripts/test`'s pass over
//! ignored tests, which installs Chromium.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::browser::browser;
use common::model::{Say, events, model, workspace};
use common::proxy::{Options, Proxy};
use common::{Scratch, corpus_conversations, records, stderr};
use ctxfold_testkit::client::agent_without_redirects as agent;
use ctxfold_testkit::upstream::Upstream;
use serde_json::{Value, json};

/// Start `ctxfold ARGS --listen 127.0.0.1:0` in `s` (`ui` or `proxy`).
fn serve(s: &Scratch, args: &[&str]) -> Proxy {
    Proxy::serve(s, args, Options::default())
}

/// The number in an element's text (`12,345` → 12345).
fn number(text: &str) -> u64 {
    text.chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number in {text:?}"))
}

/// The `name=value` of a response's `Set-Cookie`.
fn set_cookie(headers: &ureq::http::HeaderMap) -> String {
    let v = headers["set-cookie"].to_str().unwrap();
    v.split(';').next().unwrap().to_owned()
}

/// The form token a page's form carries.
fn form_token(html: &str) -> String {
    html.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("a form token in the page")
        .to_owned()
}

#[test]
#[ignore = "needs Chromium and ChromeDriver (CTXFOLD_TEST_CHROMIUM, CTXFOLD_TEST_CHROMEDRIVER): scripts/test installs them"]
fn the_list_shows_the_imported_corpus_conversations() {
    let Some(b) = browser() else { return };
    let s = Scratch::new();
    let ids: Vec<String> = corpus_conversations().iter().map(|d| s.import(d)).collect();
    let ui = serve(&s, &["ui"]);
    b.goto(&format!("{}/", ui.base));
    let shown: Vec<String> = b
        .attrs("tr.conversation", "data-id")
        .into_iter()
        .flatten()
        .collect();
    let mut want = ids.clone();
    want.sort();
    let mut got = shown.clone();
    got.sort();
    assert_eq!(got, want, "every imported conversation is listed once");
    assert_eq!(b.count("tr.conversation .origin.imported"), ids.len());
    // Figures a person compares: turns and tokens, as `show` and `stats`
    // count them.
    let first = &shown[0];
    let row = format!("tr.conversation[data-id='{first}']");
    let show = s.json(&["c", "show", first]);
    let stats = s.json(&["stats", first]);
    assert_eq!(
        number(&b.text(&format!("{row} td:nth-child(3)"))),
        show["counts"]["turns"].as_u64().unwrap()
    );
    assert_eq!(
        number(&b.text(&format!("{row} td:nth-child(4)"))),
        stats["total"]["raw"].as_u64().unwrap()
    );
    assert_eq!(
        number(&b.text(&format!("{row} td:nth-child(5)"))),
        stats["total"]["view"].as_u64().unwrap()
    );
    b.screenshot("list");

    // The filter box, as one types (script) and as a form (no script).
    let title = b.text(&format!("{row} td:first-child a"));
    let word = title
        .split_whitespace()
        .max_by_key(|w| w.len())
        .unwrap()
        .to_lowercase();
    let matching = shown
        .iter()
        .filter(|id| {
            let t = s.json(&["c", "show", id])["title"]
                .as_str()
                .unwrap_or("")
                .to_lowercase();
            t.contains(&word) || id.contains(&word)
        })
        .count();
    assert!(
        matching >= 1 && matching < shown.len(),
        "{word}: {matching}"
    );
    b.type_into("#q", &word);
    b.wait_for("the filter", 5, |b| {
        b.run("return document.querySelectorAll('tr.conversation:not([hidden])').length")
            == json!(matching)
    });
    b.screenshot("list-filtered");
    b.goto(&format!("{}/?q={word}", ui.base));
    assert_eq!(b.count("tr.conversation"), matching);
}

/// A conversation made by `ctxfold query` against a scripted model: three
/// turns, then a turn in which the assistant compacts the first two with
/// the `compact` tool, then turns appended until automatic compaction
/// fires, with a manual compaction in between. Returns the workspace and
/// the conversation's id.
fn compacted_three_ways() -> (Scratch, String) {
    let summary = "We set up the repo and fixed the divider bug in pane.rs; all tests pass.";
    let (base, _seen) = model(
        "openai",
        vec![
            Say::Text("The repo is set up: cargo init made the crate."),
            Say::Text("Fixed the divider bug in pane.rs."),
            Say::Tool("echo_args", json!({"path": "x".repeat(3000)})),
            Say::Text("All 12 tests pass."),
            Say::Tool(
                "compact",
                json!({"rules": [{"keep_last": 1, "summary": summary, "note": "Everything is in the files."}]}),
            ),
            Say::Text("Folded the first turns."),
        ],
    );
    let s = workspace("openai", &base, "");
    for (k, m) in [
        "set up the repo",
        "fix the divider bug in pane.rs",
        "run the tests",
    ]
    .iter()
    .enumerate()
    {
        let mut args = vec!["q"];
        if k == 0 {
            args.extend(["-m", "fake/m", "--new"]);
        }
        args.push(m);
        let out = s.run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = s.run(&["q", "-t", "compact", "--yes", "fold the first two turns"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = s.json(&["c", "show"])["id"].as_str().unwrap().to_owned();

    let turn = |k: usize| -> String {
        [
            json!({"type": "turn_start"}),
            json!({"type": "user", "content": format!("Turn {k}: what does module {k} do?")}),
            json!({"type": "tool_call", "id": format!("t{k}"), "name": "read_file",
                "arguments": {"path": format!("src/m{k}.rs")}}),
            json!({"type": "tool_result", "id": format!("t{k}"),
                "content": "let value = compute(input);\n".repeat(60), "is_error": false}),
            json!({"type": "assistant", "content": format!("Module {k} computes values.")}),
        ]
        .iter()
        .map(|r| format!("{r}\n"))
        .collect()
    };
    let append = |lines: String, extra: &[&str]| -> Value { s.append_json(&id, &lines, extra) };
    for k in 0..5 {
        append(turn(k), &[]);
    }
    // A person strips the tool output of the middle turns.
    let v = s.json(&[
        "c",
        "compact",
        &id,
        "-t",
        "strip-responses",
        "--from",
        "5",
        "--to",
        "7",
    ]);
    assert_eq!(v["compactions"].as_array().unwrap().len(), 1, "{v}");
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        std::fs::read_to_string(s.path().join(".ctxfold/config.toml")).unwrap()
            + "\n[compaction.auto]\nenabled = true\n",
    )
    .unwrap();
    let mut k = 5;
    loop {
        let v = append(turn(k), &["--window", "6000"]);
        k += 1;
        if v["auto"]["committed"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            break;
        }
        assert!(k < 40, "automatic compaction never fired: {v}");
    }
    let sources: Vec<Value> = events(&s)
        .into_iter()
        .filter(|r| r["type"] == "compaction")
        .map(|r| r["source"].clone())
        .collect();
    assert_eq!(sources, [json!("assistant"), json!("user"), json!("auto")]);
    (s, id)
}

#[test]
#[ignore = "needs Chromium and ChromeDriver (CTXFOLD_TEST_CHROMIUM, CTXFOLD_TEST_CHROMEDRIVER): scripts/test installs them"]
fn three_compactions_are_three_bands_and_undo_from_the_page_appends_a_reset() {
    let Some(b) = browser() else { return };
    let (s, id) = compacted_three_ways();
    let ui = serve(&s, &["ui"]);
    let page = format!("{}/c/{id}", ui.base);
    b.goto(&page);
    let mut sources: Vec<String> = b
        .attrs("svg.timeline rect.band", "data-source")
        .into_iter()
        .flatten()
        .collect();
    sources.sort();
    assert_eq!(sources, ["assistant", "auto", "manual"]);
    assert_eq!(b.count("table.compactions tr.compaction"), 3);
    let in_view = number(&b.text("#in-view-tokens"));
    assert_eq!(
        in_view,
        s.json(&["stats", &id])["total"]["view"].as_u64().unwrap(),
        "the page counts as `stats` does"
    );
    // The curve is a picture of its own: it loads, and it is drawn.
    b.wait_for("the curve", 10, |b| {
        b.run("const i = document.getElementById('curve'); return i.complete && i.naturalWidth > 0")
            == json!(true)
    });
    b.screenshot("conversation");

    // Select the automatic compaction's band: its details.
    b.click("svg.timeline rect.band[data-source='auto']");
    b.wait_for("the details", 5, |b| b.count("#details") == 1);
    assert_eq!(b.attr("#details", "data-source").as_deref(), Some("auto"));
    let details = b.text("#details");
    assert!(
        details.contains("Does: strip reasoning, strip tool calls"),
        "{details}"
    );
    assert!(details.contains("What it keeps and loses"), "{details}");
    b.screenshot("conversation-selected");

    // Undo it: a confirmation, then the reset the command line appends.
    let before = records(&s, &id);
    let auto_seq = before
        .iter()
        .find(|r| r["type"] == "compaction" && r["source"] == "auto")
        .unwrap()["seq"]
        .clone();
    b.click("#details a.button.undo");
    b.wait_for("the confirmation", 5, |b| b.count("form.confirm") == 1);
    b.screenshot("confirm-undo");
    assert_eq!(
        records(&s, &id).len(),
        before.len(),
        "nothing before confirming"
    );
    b.click("#confirm");
    b.wait_for("the page again", 5, |b| b.url().contains("c=3"));
    let after = records(&s, &id);
    assert_eq!(after.len(), before.len() + 1);
    let reset = after.last().unwrap();
    assert_eq!(reset["type"], "compaction_reset");
    assert_eq!(reset["targets"], json!([auto_seq]));
    assert!(reset.get("restore").is_none(), "{reset}");
    let undone = number(&b.text("#in-view-tokens"));
    assert!(undone > in_view, "in view: {in_view} → {undone}");
    assert_eq!(b.attr("#details", "data-number").as_deref(), Some("3"));
    assert!(b.text("#details h3").contains("revoked"));
    b.screenshot("after-undo");

    // The same record `conversation compact --reset 3` appends; and
    // restore brings the view back.
    let cli = s.json(&["c", "compact", &id, "--reset", "3", "--dry-run"]);
    assert_eq!(cli["would revoke"], 1, "{cli}");
    b.click("#details a.button.restore");
    b.wait_for("the confirmation", 5, |b| b.count("form.confirm") == 1);
    b.click("#confirm");
    b.wait_for("the restored page", 5, |b| {
        b.count("#details a.button.undo") == 1
    });
    let restore = records(&s, &id).last().unwrap().clone();
    assert_eq!(restore["targets"], json!([auto_seq]));
    assert_eq!(restore["restore"], true);
    assert_eq!(number(&b.text("#in-view-tokens")), in_view);
}

#[test]
#[ignore = "needs Chromium and ChromeDriver (CTXFOLD_TEST_CHROMIUM, CTXFOLD_TEST_CHROMEDRIVER): scripts/test installs them"]
fn an_open_page_updates_when_the_proxy_records_a_turn() {
    let Some(b) = browser() else { return };
    let up = Upstream::start_deterministic(1_000_000);
    let s = Scratch::new();
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        format!("[proxy]\nopenai = \"{0}\"\nanthropic = \"{0}\"\n", up.base),
    )
    .unwrap();
    let proxy = serve(&s, &["proxy"]);
    let chat = |messages: Value| -> (String, String) {
        let mut r = agent()
            .post(&format!("{}/v1/chat/completions", proxy.base))
            .header("authorization", "Bearer sk-test-0123456789")
            .header("content-type", "application/json")
            .send(json!({"model": "gpt-4o-mini", "messages": messages}).to_string())
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let id = r.headers()["x-ctxfold-conversation"]
            .to_str()
            .unwrap()
            .to_owned();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        (
            id,
            v["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    };
    let first = json!({"role": "user", "content": "hello, what is in src/main.rs?"});
    let (id, answer) = chat(json!([first]));
    // The proxy serves the pages under /ui.
    b.goto(&format!("{}/ui/c/{id}", proxy.base));
    assert_eq!(number(&b.text("#turns")), 1);
    b.wait_for("the live stream", 5, |b| {
        b.text("#live-status").starts_with("Live")
    });
    // A mark that a reload would wipe.
    b.run("window.__left_open = true; return null");
    b.screenshot("live-before");

    let (same, _) = chat(json!([first, {"role": "assistant", "content": answer},
        {"role": "user", "content": "and in src/lib.rs?"}]));
    assert_eq!(same, id, "the proxy continued the conversation");
    b.wait_for("the page to show the new turn", 10, |b| {
        number(&b.text("#turns")) == 2
    });
    assert_eq!(
        b.run("return window.__left_open === true"),
        json!(true),
        "updated in place"
    );
    assert!(b.text("table.view").contains("and in src/lib.rs?"));
    b.screenshot("live-after");
}

/// Forms are refused from another site or origin, without the session's
/// form token, and without the server's token when one is set; nothing is
/// appended then. The same form from the page itself works.
#[test]
fn cross_site_posts_are_refused() {
    let s = Scratch::new();
    let f = s.path().join("t.jsonl");
    let lines: String = (0..6)
        .flat_map(|k| {
            [
                json!({"type": "turn_start"}),
                json!({"type": "user", "content": format!("question {k}")}),
                json!({"type": "reasoning", "content": "thinking ".repeat(50)}),
                json!({"type": "assistant", "content": format!("answer {k}")}),
            ]
        })
        .enumerate()
        .map(|(i, mut v)| {
            v["seq"] = json!(i);
            v["ts"] = json!("2026-01-01T00:00:00Z");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&f, lines).unwrap();
    let id = s.import(&f);
    s.json(&["c", "compact", &id, "-r"]);
    let count = || records(&s, &id).len();
    let n = count();

    let ui = serve(&s, &["ui"]);
    let a = agent();
    // A session and its form token, as the page gives them.
    let mut r = a
        .get(&format!("{}/c/{id}/reset?n=1", ui.base))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let cookie = set_cookie(r.headers());
    let html = r.body_mut().read_to_string().unwrap();
    let csrf = form_token(&html);
    let post = |base: &str, headers: &[(&str, &str)], form: &str| -> (u16, String) {
        let mut req = a
            .post(&format!("{base}/c/{id}/reset"))
            .header("content-type", "application/x-www-form-urlencoded");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut r = req.send(form.to_owned()).unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    };
    let form = format!("n=1&restore=0&csrf={csrf}");
    let refused = [
        post(
            &ui.base,
            &[("cookie", &cookie), ("sec-fetch-site", "cross-site")],
            &form,
        ),
        post(
            &ui.base,
            &[("cookie", &cookie), ("sec-fetch-site", "same-site")],
            &form,
        ),
        post(
            &ui.base,
            &[("cookie", &cookie), ("origin", "http://evil.example")],
            &form,
        ),
        post(
            &ui.base,
            &[("cookie", &cookie), ("sec-fetch-site", "same-origin")],
            "n=1&restore=0",
        ),
        post(&ui.base, &[("sec-fetch-site", "same-origin")], &form),
    ];
    for (k, (status, body)) in refused.iter().enumerate() {
        assert_eq!(*status, 403, "case {k}: {body}");
    }
    assert_eq!(count(), n, "nothing appended");
    // Another site's page rebinding its name to 127.0.0.1 gets nothing.
    let r = a
        .get(&format!("{}/", ui.base))
        .header("host", "evil.example")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // Bad input: a clear answer, no panic.
    assert_eq!(
        post(
            &ui.base,
            &[("cookie", &cookie), ("sec-fetch-site", "same-origin")],
            &format!("n=x&csrf={csrf}")
        )
        .0,
        400
    );
    assert_eq!(
        a.get(&format!("{}/c/no-such-id", ui.base))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        404
    );
    assert_eq!(
        a.get(&format!("{}/c/{id}?c=zz", ui.base))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        400
    );
    assert_eq!(
        post(
            &ui.base,
            &[("cookie", &cookie), ("sec-fetch-site", "same-origin")],
            &format!("n=9&csrf={csrf}")
        )
        .0,
        404
    );
    // The page's own form, same origin: appended.
    let origin = ui.base.clone();
    let (status, _) = post(&ui.base, &[("cookie", &cookie), ("origin", &origin)], &form);
    assert_eq!(status, 303);
    assert_eq!(count(), n + 1);
    assert_eq!(records(&s, &id).last().unwrap()["type"], "compaction_reset");
    drop(ui);

    // With a token: nothing without it, and a form needs it too.
    std::fs::write(
        s.path().join(".ctxfold/config.toml"),
        "[proxy]\ntoken = \"0123456789abcdef-ui-test\"\n",
    )
    .unwrap();
    let ui = serve(&s, &["ui"]);
    assert_eq!(
        a.get(&format!("{}/", ui.base))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    assert_eq!(
        a.get(&format!("{}/?token=wrong", ui.base))
            .call()
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    let r = a
        .get(&format!(
            "{}/c/{id}?token=0123456789abcdef-ui-test",
            ui.base
        ))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], format!("/c/{id}").as_str());
    // A path of `//host` stays on this server, and the key however it is
    // spelled leaves the address (else the redirect would loop).
    let r = a
        .get(&format!(
            "{}//evil.example/?tok%65n=0123456789abcdef-ui-test&x=1",
            ui.base
        ))
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/evil.example/?x=1");
    let auth = set_cookie(r.headers());
    let mut r = a
        .get(&format!("{}/c/{id}/reset?n=1&restore=1", ui.base))
        .header("cookie", &auth)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = set_cookie(r.headers());
    let html = r.body_mut().read_to_string().unwrap();
    let csrf = form_token(&html);
    let form = format!("n=1&restore=1&csrf={csrf}");
    let without = post(
        &ui.base,
        &[("cookie", &session), ("sec-fetch-site", "same-origin")],
        &form,
    );
    assert_eq!(without.0, 401, "{}", without.1);
    assert_eq!(count(), n + 1);
    let both = format!("{auth}; {session}");
    assert_eq!(
        post(
            &ui.base,
            &[("cookie", &both), ("sec-fetch-site", "same-origin")],
            &form
        )
        .0,
        303
    );
    assert_eq!(count(), n + 2);
    assert_eq!(records(&s, &id).last().unwrap()["restore"], true);
}

/// SIGTERM stops `ctxfold ui` and the proxy at once, even with a page open
/// (its live-update stream never ends by itself, and a graceful shutdown
/// waits for open responses).
#[test]
fn an_open_page_does_not_hold_up_shutdown() {
    let s = Scratch::new();
    let id = s.import(&corpus_conversations()[0]);
    for (args, prefix) in [(&["ui"][..], ""), (&["proxy"][..], "/ui")] {
        let mut server = serve(&s, args);
        let url = format!("{}{prefix}/c/{id}/events?seq=0", server.base);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = agent().get(&url).call().unwrap();
            let mut first = [0u8; 15];
            use std::io::Read;
            let mut body = r.body_mut().as_reader();
            body.read_exact(&mut first).unwrap();
            tx.send(String::from_utf8_lossy(&first).into_owned())
                .unwrap();
            // Read on until the server ends the stream.
            let mut rest = Vec::new();
            let _ = body.read_to_end(&mut rest);
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        assert_eq!(got, "event: changed\n", "{args:?}");
        let term = std::process::Command::new("kill")
            .args(["-TERM", &server.child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            if let Some(status) = server.child.try_wait().unwrap() {
                assert!(status.success(), "{args:?}: {status}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{args:?} did not stop with a page open"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A compaction a later summary covers (issue 45): the page counts only
/// what is in force, says which compaction supersedes it, offers no Undo
/// for it (a link to the one that supersedes it instead), and its
/// confirmation page, asked for by address, says revoking it changes
/// nothing; the summary over it keeps its Undo.
#[test]
fn a_superseded_compaction_is_shown_as_such_without_an_undo() {
    let s = Scratch::new();
    let f = s.path().join("t.jsonl");
    let lines: String = (0..6)
        .flat_map(|k| {
            [
                json!({"type": "turn_start"}),
                json!({"type": "user", "content": format!("question {k}")}),
                json!({"type": "reasoning", "content": "thinking ".repeat(50)}),
                json!({"type": "assistant", "content": format!("answer {k}: {}", "words ".repeat(40))}),
            ]
        })
        .enumerate()
        .map(|(i, mut v)| {
            v["seq"] = json!(i);
            v["ts"] = json!("2026-01-01T00:00:00Z");
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&f, lines).unwrap();
    let id = s.import(&f);
    s.ok(&["c", "compact", &id, "-k", "r:2..3"]);
    s.ok(&["c", "compact", &id, "-k", "s:1..5"]);
    let ui = serve(&s, &["ui"]);
    let a = agent();
    let get = |path: &str| -> String {
        let mut r = a.get(&format!("{}{path}", ui.base)).call().unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        r.body_mut().read_to_string().unwrap()
    };
    let page = get(&format!("/c/{id}"));
    assert!(page.contains(r#"data-count="2">1 in force of 2"#), "{page}");
    // #1: superseded by #2, no Undo, a link to #2.
    let row = |n: usize| -> String {
        let start = page
            .find(&format!(r#"data-number="{n}"><td>"#))
            .unwrap_or_else(|| panic!("no row #{n}: {page}"));
        let end = start + page[start..].find("</tr>").unwrap();
        page[start..end].to_owned()
    };
    assert!(
        page.contains(r#"<tr class="compaction superseded" data-number="1">"#),
        "{page}"
    );
    let first = row(1);
    assert!(
        first.contains("superseded by #2: revoking it changes nothing"),
        "{first}"
    );
    assert!(!first.contains("button undo"), "{first}");
    assert!(first.contains(r#"data-by="2""#), "{first}");
    let second = row(2);
    assert!(second.contains("in force"), "{second}");
    assert!(second.contains("button undo"), "{second}");
    // Its details say the same, with no Undo.
    let details = get(&format!("/c/{id}?c=1"));
    let article = &details[details.find("<article").unwrap()..details.find("</article>").unwrap()];
    assert!(
        article.contains("Revoking it changes nothing in the view until"),
        "{article}"
    );
    assert!(!article.contains("button undo"), "{article}");
    // Its confirmation page says what revoking it does: nothing.
    let confirm = get(&format!("/c/{id}/reset?n=1"));
    assert!(
        confirm.contains("This changes nothing the model sees: #1 is superseded by #2"),
        "{confirm}"
    );
    let confirm = get(&format!("/c/{id}/reset?n=2"));
    assert!(!confirm.contains("changes nothing"), "{confirm}");
    assert!(
        confirm.contains("the model sees its turns again"),
        "{confirm}"
    );
}

/// A SIGTERM sent as soon as `ctxfold ui` or the proxy says it listens (a
/// service manager stopping it at once) is a clean stop, exit 0: the
/// handler is in place before the line is printed.
#[test]
fn a_sigterm_right_after_the_listening_line_is_a_clean_stop() {
    let s = Scratch::new();
    for round in 0..10 {
        for args in [&["ui"][..], &["proxy"][..]] {
            let status = serve(&s, args).terminate();
            assert!(status.success(), "{args:?}, round {round}: {status}");
        }
    }
}
