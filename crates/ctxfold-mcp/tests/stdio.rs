//! The MCP server over a pipe, spoken to in JSON-RPC lines as a client
//! writes them: the handshake, the two tools and their schemas, recall in
//! pages, search, every failure a tool result with `isError`, the scope
//! refusing another conversation's handles, and the end when the input
//! closes.

// A test may panic on what it did not expect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use ctxfold_core::handle::Tag;
use ctxfold_core::record::{Body, Record};
use ctxfold_mcp::{RecallServer, serve};
use ctxfold_recall::Recaller;
use ctxfold_store::{Store, Workspace};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// What the tool result held, `é` and all: more than one page of 40.
const OUTPUT: &str = "line one of the output\nzebra-marker-771 sits here\n  indented, ünïcödé\nlast line without a newline";

fn record(body: Body) -> Record {
    Record::new(0, "2026-12-06T10:00:00Z", body)
}

/// A workspace store with two conversations; the first has a tool result
/// holding [`OUTPUT`].
struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    /// The two conversations' ids and tags.
    made: [(String, Tag); 2],
    /// The tool result's `seq`.
    seq: u64,
}

fn store() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (ws, _) = Workspace::init(dir.path()).unwrap();
    let store: Arc<dyn Store> = Arc::new(ws);
    let first = vec![
        record(Body::TurnStart),
        record(Body::User {
            content: "run the thing".into(),
            author: None,
        }),
        record(Body::ToolCall {
            id: "c1".into(),
            name: "Bash".into(),
            arguments: ctxfold_core::JsonText::from_value(&json!({"command": "thing"})),
        }),
        record(Body::ToolResult {
            id: "c1".into(),
            content: OUTPUT.into(),
            is_error: false,
        }),
    ];
    let second = vec![record(Body::User {
        content: "another conversation".into(),
        author: None,
    })];
    let mut made = Vec::new();
    for records in [first, second] {
        let meta =
            ctxfold_store::create_new(store.as_ref(), None, None, Default::default(), records)
                .unwrap();
        let log = store.load(&meta.id).unwrap().into_log();
        made.push((meta.id, Tag::of(&log).unwrap(), log));
    }
    let seq = made[0]
        .2
        .records()
        .iter()
        .find(|r| matches!(r.body, Body::ToolResult { .. }))
        .unwrap()
        .seq;
    let [(a, ta, _), (b, tb, _)]: [_; 2] = made.try_into().ok().unwrap();
    Fixture {
        _dir: dir,
        store,
        made: [(a, ta), (b, tb)],
        seq,
    }
}

/// A client on one end of two pipes, the server on the other.
struct Client {
    to_server: DuplexStream,
    from_server: Lines<BufReader<DuplexStream>>,
    server: tokio::task::JoinHandle<Result<(), ctxfold_mcp::ServeError>>,
    next_id: u64,
}

impl Client {
    async fn start(server: RecallServer) -> Client {
        let (to_server, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, from_server) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(serve(server, server_in, server_out));
        let mut c = Client {
            to_server,
            from_server: BufReader::new(from_server).lines(),
            server,
            next_id: 1,
        };
        c.handshake().await;
        c
    }

    async fn handshake(&mut self) {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "0"}}),
            )
            .await;
        assert_eq!(init["result"]["serverInfo"]["name"], "ctxfold", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    async fn send(&mut self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.to_server.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self.from_server.next_line().await.unwrap().unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// A tool call's result: its text and whether it is an error.
    async fn call(&mut self, tool: &str, args: Value) -> (String, bool) {
        let v = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        assert!(v.get("error").is_none(), "a protocol error: {v}");
        let r = &v["result"];
        let text = r["content"][0]["text"].as_str().unwrap().to_owned();
        (text, r["isError"] == json!(true))
    }

    /// Close the input; the server ends without an error.
    async fn close(self) {
        drop(self.to_server);
        self.server.await.unwrap().unwrap();
    }
}

/// Characters `n` of the recalled page `text`: the page's own text, by
/// the count its last line gives (`characters A–B` or `all N`).
fn page_text(text: &str) -> String {
    let (body, last) = text.rsplit_once('\n').unwrap();
    let n = if let Some(k) = last.find("characters ") {
        let range = &last[k + "characters ".len()..];
        let (a, rest) = range.split_once('–').unwrap();
        let b: String = rest.chars().take_while(char::is_ascii_digit).collect();
        b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap()
    } else {
        let k = last.find("all ").unwrap();
        let n: String = last[k + 4..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        n.parse().unwrap()
    };
    let whole = format!("{body}\n");
    whole.chars().take(n).collect()
}

#[tokio::test]
async fn both_tools_recall_in_pages_search_and_fail_as_tool_results() {
    let Fixture {
        _dir,
        store,
        made: [(_, tag), (_, other)],
        seq,
    } = store();
    let mut c = Client::start(RecallServer::new(Recaller::new(store, None))).await;

    let listed = c.request("tools/list", json!({})).await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["recall", "search"]);
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["handle"]));
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["limit"]["type"],
        "integer"
    );
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["query"]));
    assert_eq!(
        tools[1]["inputSchema"]["properties"]["within"]["type"],
        "string"
    );

    // The whole output in one page, then in pages of 40 characters.
    let handle = format!("{tag}:{seq}");
    let (text, err) = c.call("recall", json!({"handle": handle})).await;
    assert!(!err, "{text}");
    assert!(text.starts_with(OUTPUT), "{text}");
    assert_eq!(page_text(&text), OUTPUT);
    let mut joined = String::new();
    let mut offset = 0;
    loop {
        let (text, err) = c
            .call(
                "recall",
                json!({"handle": handle, "offset": offset, "limit": 40}),
            )
            .await;
        assert!(!err, "{text}");
        let page = page_text(&text);
        offset += page.chars().count();
        joined.push_str(&page);
        if text.ends_with("the end]") {
            break;
        }
        assert!(text.contains(&format!("with offset {offset}]")), "{text}");
    }
    assert_eq!(joined, OUTPUT);
    // A count written as a string is read too.
    let (text, err) = c
        .call(
            "recall",
            json!({"handle": handle, "offset": "5", "limit": "3"}),
        )
        .await;
    assert!(!err && text.starts_with("one"), "{text}");

    // Search finds the folded text, with its handle.
    let (text, err) = c
        .call("search", json!({"query": "ZEBRA-marker", "within": handle}))
        .await;
    assert!(!err, "{text}");
    assert!(text.starts_with(&format!("{handle} ")), "{text}");
    // Without `within`, an unscoped server asks for it.
    let (text, err) = c.call("search", json!({"query": "zebra"})).await;
    assert!(err && text.contains("give `within`"), "{text}");

    // Failures are tool results the model can read.
    for (tool, args, says) in [
        (
            "recall",
            json!({"handle": "not a handle"}),
            "is not a recall handle",
        ),
        (
            "recall",
            json!({"handle": format!("{tag}:999")}),
            "has no record 999",
        ),
        (
            "recall",
            json!({"handle": handle, "offset": 10_000}),
            "past the end",
        ),
        (
            "recall",
            json!({"handle": handle, "offset": -1}),
            "whole number",
        ),
        ("recall", json!({}), "recall needs `handle`"),
        ("recall", json!({"handle": "zzzzz:1"}), "no conversation in"),
        (
            "search",
            json!({"query": "  ", "within": handle}),
            "needs `query`",
        ),
        ("nope", json!({}), "no tool `nope`"),
    ] {
        let (text, err) = c.call(tool, args.clone()).await;
        assert!(err, "{tool} {args}: {text}");
        assert!(text.contains(says), "{tool} {args}: {text}");
    }
    // The other conversation's handles work on an unscoped server.
    let (text, err) = c
        .call("recall", json!({"handle": format!("{other}:0")}))
        .await;
    assert!(!err && text.starts_with("another conversation"), "{text}");
    c.close().await;
}

#[tokio::test]
async fn a_scoped_server_searches_its_conversation_and_refuses_others() {
    let Fixture {
        _dir,
        store,
        made: [(id, tag), (_, other)],
        seq,
    } = store();
    let mut c = Client::start(RecallServer::new(Recaller::new(store, Some(id)))).await;
    let (text, err) = c.call("search", json!({"query": "zebra"})).await;
    assert!(!err, "{text}");
    assert!(text.starts_with(&format!("{tag}:{seq} ")), "{text}");
    let (text, err) = c
        .call("recall", json!({"handle": format!("{other}:0")}))
        .await;
    assert!(
        err && text.contains("belongs to another conversation"),
        "{text}"
    );
    c.close().await;
}

#[tokio::test]
async fn input_closed_before_the_handshake_ends_the_server_quietly() {
    let Fixture { _dir, store, .. } = store();
    let (to_server, server_in) = tokio::io::duplex(64);
    let (server_out, _from_server) = tokio::io::duplex(64);
    drop(to_server);
    serve(
        RecallServer::new(Recaller::new(store, None)),
        server_in,
        server_out,
    )
    .await
    .unwrap();
}
