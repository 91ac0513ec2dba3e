//! The cost of conversations with ctxfold and without (issue 46), through
//! the real binary: `ctxfold proxy` in front of a canned upstream on
//! 127.0.0.1, then `stats` (one conversation and `--all`), `/metrics` and
//! the pages, which must give the same figures. With the upstream's usage
//! the side with ctxfold is what the upstream billed; without it, the
//! estimate, whose prompt-cache model is checked on the recorded requests.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod common;

use common::Scratch;
use common::proxy::{Options, Proxy};
use ctxfold_testkit::client::agent;
use ctxfold_testkit::upstream::Upstream;
use ctxfold_testkit::upstream::canned::Reply;
use serde_json::{Value, json};

fn proxy(s: &Scratch, up: &Upstream, extra: &str) -> Proxy {
    let config = format!(
        "[proxy]\nopenai = \"{b}\"\nanthropic = \"{b}\"\n{extra}\n",
        b = up.base
    );
    Proxy::start_with(s, &config, Options::default())
}

/// Send `body` to `path`; the conversation the proxy recorded it in.
fn send(p: &Proxy, path: &str, body: &Value) -> String {
    let mut resp = agent()
        .post(&p.url(path))
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let id = resp.headers()["x-ctxfold-conversation"]
        .to_str()
        .unwrap()
        .to_owned();
    resp.body_mut().read_to_vec().unwrap();
    id
}

fn get(p: &Proxy, path: &str) -> String {
    agent()
        .get(&p.url(path))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

/// `stats ID --format json` once `n` requests are counted (an answer is
/// recorded after its last byte went to the client).
fn stats_when(s: &Scratch, id: &str, n: u64) -> Value {
    for _ in 0..100 {
        let v = s.json(&["stats", id]);
        if requests(&v["cost"]) >= n {
            return v;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{n} requests never counted: {}", s.json(&["stats", id]));
}

fn requests(cost: &Value) -> u64 {
    let models = cost["sum"]["models"].as_array().unwrap();
    models.iter().map(|m| m["requests"].as_u64().unwrap()).sum()
}

/// A counter of `/metrics`, by its labels.
fn counter(metrics: &str, name: &str, labels: &str) -> Option<u64> {
    let prefix = format!("{name}{{{labels}}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().parse().unwrap())
}

/// The figures kept on the answers the proxy recorded, in order.
fn kept(s: &Scratch, id: &str) -> Vec<Value> {
    let recs = s.json(&["c", "print", id]);
    recs.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["metadata"].get("ctxfold_request").cloned())
        .collect()
}

fn anthropic_answer(text: &str, usage: Value) -> Reply {
    Reply::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5-20250929",
               "content": [{"type": "text", "text": text}],
               "stop_reason": "end_turn", "stop_sequence": null, "usage": usage}),
    )
}

/// What a request of `usage` costs at `price` (dollars per million
/// tokens: input, cache write, cache read, output), in micro-dollars.
fn billed(usage: &Value, price: [f64; 4]) -> u64 {
    let n = |k: &str| usage[k].as_u64().unwrap_or(0) as f64;
    (n("input_tokens") * price[0]
        + n("cache_creation_input_tokens") * price[1]
        + n("cache_read_input_tokens") * price[2]
        + n("output_tokens") * price[3])
        .round() as u64
}

#[test]
fn usage_reported_is_the_cost_with_ctxfold_the_same_in_stats_metrics_and_pages() {
    let usages = [
        json!({"input_tokens": 100, "cache_creation_input_tokens": 900,
               "cache_read_input_tokens": 0, "output_tokens": 20}),
        json!({"input_tokens": 50, "cache_creation_input_tokens": 200,
               "cache_read_input_tokens": 900, "output_tokens": 30}),
    ];
    let up = Upstream::canned(vec![
        anthropic_answer("first answer", usages[0].clone()),
        anthropic_answer("second answer", usages[1].clone()),
    ]);
    let s = Scratch::new();
    let p = proxy(&s, &up, "");
    let model = "claude-sonnet-4-5-20250929";
    let mut messages = vec![json!({"role": "user", "content": "Say something about prices."})];
    let req = |m: &[Value]| json!({"model": model, "max_tokens": 100, "messages": m});
    let id = send(&p, "/v1/messages", &req(&messages));
    stats_when(&s, &id, 1);
    messages.push(json!({"role": "assistant", "content": "first answer"}));
    messages.push(json!({"role": "user", "content": "And about caches?"}));
    assert_eq!(send(&p, "/v1/messages", &req(&messages)), id);
    let stats = stats_when(&s, &id, 2);
    let cost = &stats["cost"];

    // The side with ctxfold is what the upstream counted, at Sonnet 4's
    // published prices.
    let sonnet = [3.0, 3.75, 0.3, 15.0];
    let want: u64 = usages.iter().map(|u| billed(u, sonnet)).sum();
    assert_eq!(cost["with_micros"], want, "{cost:#}");
    let m = &cost["sum"]["models"][0];
    assert_eq!(m["family"], "claude-sonnet-4");
    assert_eq!(m["from_usage"], 2);
    assert!(cost["without_micros"].as_u64().unwrap() > 0);
    let text = s.ok(&["stats", &id]);
    assert!(
        text.contains("2 requests, from the upstream's usage"),
        "{text}"
    );
    assert!(text.contains("prices of 20"), "{text}");

    // The same figures in /metrics and on both pages.
    let metrics = get(&p, "/metrics");
    let c = |side: &str| {
        counter(
            &metrics,
            "ctxfold_proxy_cost_microdollars_total",
            &format!("model=\"claude-sonnet-4\",side=\"{side}\""),
        )
    };
    assert_eq!(c("with"), cost["with_micros"].as_u64(), "{metrics}");
    assert_eq!(c("without"), cost["without_micros"].as_u64(), "{metrics}");
    assert_eq!(
        counter(
            &metrics,
            "ctxfold_proxy_cost_requests_total",
            "source=\"usage\""
        ),
        Some(2)
    );
    let attrs = format!(
        "data-with-micros=\"{}\" data-without-micros=\"{}\"",
        cost["with_micros"], cost["without_micros"]
    );
    let page = get(&p, &format!("/ui/c/{id}"));
    assert!(page.contains(&attrs), "{attrs} not in {page}");
    let list = get(&p, "/ui/");
    assert!(list.contains(&attrs), "{attrs} not in {list}");

    // `--all` counts the same.
    let all = s.json(&["stats", "--all"]);
    assert_eq!(all["total"]["with_micros"], cost["with_micros"]);
    assert_eq!(all["total"]["without_micros"], cost["without_micros"]);
}

fn chat_answer(text: &str) -> Reply {
    Reply::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5",
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text}}]}),
    )
}

#[test]
fn without_usage_the_estimate_reads_the_shared_prefix_and_a_compaction_breaks_it() {
    let up = Upstream::canned(vec![chat_answer("noted")]);
    let s = Scratch::new();
    let p = proxy(&s, &up, "");
    let big = "log line with nothing wrong in it\n".repeat(1500);
    let mut messages = vec![json!({"role": "user", "content": format!("Read this:\n{big}")})];
    let req = |m: &[Value]| json!({"model": "gpt-5", "messages": m});
    let id = send(&p, "/v1/chat/completions", &req(&messages));
    stats_when(&s, &id, 1);
    for (n, next) in ["Go on.", "Once more."].iter().enumerate() {
        if n == 1 {
            // Fold the first turn: the next request's view differs from
            // its start.
            s.ok(&[
                "c",
                "compact",
                &id,
                "--from",
                "1",
                "--to",
                "1",
                "--summary-text",
                "The user shared a long log; nothing was wrong in it.",
            ]);
        }
        messages.push(json!({"role": "assistant", "content": "noted"}));
        messages.push(json!({"role": "user", "content": next}));
        assert_eq!(send(&p, "/v1/chat/completions", &req(&messages)), id);
        stats_when(&s, &id, n as u64 + 2);
    }
    let r = kept(&s, &id);
    assert_eq!(r.len(), 3, "{r:#?}");
    let t = |i: usize, side: &str, k: &str| r[i][side][k].as_u64().unwrap();
    let input = |i: usize, side: &str| {
        t(i, side, "input") + t(i, side, "cache_write") + t(i, side, "cache_read")
    };
    for q in &r {
        assert_eq!(q["source"], "estimate");
    }
    // The first request is all written; without ctxfold every later one
    // reads all of the one before (the client's history only grows).
    assert_eq!(t(0, "without", "cache_read"), 0);
    assert_eq!(t(1, "without", "cache_read"), input(0, "without"));
    assert_eq!(t(2, "without", "cache_read"), input(1, "without"));
    // Before the compaction both sides are the same; after it, ctxfold
    // sends less and reads less of it from the cache: its prefix broke at
    // the folded turn.
    assert_eq!(r[1]["with"], r[1]["without"]);
    assert!(input(2, "with") < input(2, "without") / 4, "{r:#?}");
    assert!(t(2, "with", "cache_read") < t(1, "with", "cache_read"));
    assert!(t(2, "with", "cache_write") > 0);

    let stats = s.json(&["stats", &id]);
    let cost = &stats["cost"];
    assert_eq!(cost["sum"]["models"][0]["from_usage"], 0);
    let text = s.ok(&["stats", &id]);
    assert!(
        text.contains("3 requests, estimated (the upstream reported no usage)"),
        "{text}"
    );
    let metrics = get(&p, "/metrics");
    for side in ["with", "without"] {
        assert_eq!(
            counter(
                &metrics,
                "ctxfold_proxy_cost_microdollars_total",
                &format!("model=\"gpt-5\",side=\"{side}\"")
            ),
            cost[format!("{side}_micros")].as_u64(),
            "{metrics}"
        );
    }
    let page = get(&p, &format!("/ui/c/{id}"));
    let attrs = format!(
        "data-with-micros=\"{}\" data-without-micros=\"{}\"",
        cost["with_micros"], cost["without_micros"]
    );
    assert!(page.contains(&attrs), "{attrs} not in {page}");
}

#[test]
fn a_model_without_a_price_is_named_and_config_prices_it() {
    let up = Upstream::canned(vec![chat_answer("hello")]);
    let s = Scratch::new();
    let p = proxy(&s, &up, "");
    let body = json!({"model": "local-llama-8b",
                      "messages": [{"role": "user", "content": "Hi."}]});
    let id = send(&p, "/v1/chat/completions", &body);
    stats_when(&s, &id, 1);
    let text = s.ok(&["stats", &id]);
    assert!(
        text.contains("no price for local-llama-8b: set [prices.\"local-llama-8b\"]"),
        "{text}"
    );
    assert!(!text.contains("with ctxfold,"), "no cost invented: {text}");
    let metrics = get(&p, "/metrics");
    assert_eq!(
        counter(
            &metrics,
            "ctxfold_proxy_cost_requests_total",
            "source=\"unpriced\""
        ),
        Some(1)
    );
    drop(p);

    // Priced by config: input and output, the cache at the input price.
    let config = s.path().join("prices.toml");
    std::fs::write(&config, "[prices.local-llama]\ninput = 2\noutput = 4\n").unwrap();
    let c = config.to_str().unwrap();
    let v = s.json(&["-c", c, "stats", &id]);
    let r = &kept(&s, &id)[0];
    let tokens = |side: &str| {
        let t = |k: &str| r[side][k].as_u64().unwrap();
        (t("input") + t("cache_write") + t("cache_read")) * 2 + t("output") * 4
    };
    assert_eq!(v["cost"]["with_micros"], tokens("with"));
    assert_eq!(v["cost"]["configured"], json!(["local-llama"]));
    let text = s.ok(&["-c", c, "stats", &id]);
    assert!(text.contains("config's for local-llama"), "{text}");

    // A price missing its output is refused, naming the key.
    std::fs::write(&config, "[prices.local-llama]\ninput = 2\n").unwrap();
    let out = s.run(&["-c", c, "stats", &id]);
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(err.contains("prices.local-llama.output"), "{err}");
}
