//! OpenAI Responses API request bodies: byte-exact round trips, the item
//! mapping, what export writes for records the proxy changed or added,
//! response `output` read as the same records as the items a client sends
//! back, and errors that name the place.

// A test or bench may panic on what it did not expect, and print: the
// workspace's unwrap, expect and print lints are for the library code.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

use ctxfold_core::{Body, Kind, Log, Object, Record};
use ctxfold_formats::{Transcript, openai, responses};
use serde_json::{Value, json};

/// Import `body`, export it again: the same value and the same bytes. The
/// records also survive ctxfold's log format (the proxy stores them), and
/// export of the records read back is the body again.
fn round_trip(body: &Value) -> Transcript {
    let t = responses::from_json(body).unwrap_or_else(|e| panic!("{e}\n{body:#}"));
    let back = responses::to_json(&t.records, &t.extras);
    assert_eq!(back, *body, "export(import(body)) differs");
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        serde_json::to_string(body).unwrap(),
        "export(import(body)) has other bytes (key order?)"
    );
    let seqs: Vec<u64> = t.records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (0..t.records.len() as u64).collect::<Vec<_>>());
    let relogged: Vec<Record> = t
        .records
        .iter()
        .map(|r| Record::from_json_line(&r.to_json_line()).unwrap().0)
        .collect();
    assert_eq!(relogged, t.records, "records changed by the log format");
    assert_eq!(
        serde_json::to_string(&responses::to_json(&relogged, &t.extras)).unwrap(),
        serde_json::to_string(body).unwrap()
    );
    t
}

fn kinds(records: &[Record]) -> Vec<Kind> {
    records.iter().map(Record::kind).collect()
}

fn bodies(records: &[Record]) -> Vec<&Body> {
    records.iter().map(|r| &r.body).collect()
}

fn error(body: &Value) -> String {
    responses::from_json(body).expect_err("an error")
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// A coding agent's request as Codex-style clients send it: developer
/// and environment messages, reasoning replayed with its encrypted content,
/// a shell call and its output, parallel calls, and the tool list.
fn coding_session() -> Value {
    json!({
        "model": "gpt-5-codex",
        "instructions": "You are a coding agent running in a terminal. Be concise.",
        "input": [
            {"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "<permissions>sandbox: workspace-write</permissions>"}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "The test `parses_empty` fails. Fix it."}
            ]},
            {"type": "reasoning", "id": "rs_68a1", "summary": [
                {"type": "summary_text", "text": "**Running the tests**\n\nFirst see how it fails."}
            ], "content": null, "encrypted_content": "gAAAAABo0Vx3kQ2f7T_cWm9pXz0lR4hY8eJ1n3u5sA=="},
            {"type": "function_call", "name": "shell",
             "arguments": "{\"command\":[\"bash\",\"-lc\",\"cargo test -p parse\"],\"workdir\":\"/repo\"}",
             "call_id": "call_Q1"},
            {"type": "function_call_output", "call_id": "call_Q1",
             "output": "{\"output\":\"test parses_empty ... FAILED\\nthread 'parses_empty' panicked at src/parse.rs:41:9\",\"metadata\":{\"exit_code\":101}}"},
            {"type": "message", "role": "assistant", "id": "msg_68a2", "status": "completed", "content": [
                {"type": "output_text", "text": "`parse(\"\")` indexes the first byte. I'll guard it.", "annotations": [], "logprobs": []}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Go ahead, and check clippy too."}
            ]},
            {"type": "reasoning", "id": "rs_68a3", "summary": [],
             "encrypted_content": "gAAAAABo0Vx4Zx9_QpR2"},
            {"type": "function_call", "id": "fc_68a4", "status": "completed", "name": "apply_patch",
             "arguments": "{\"input\":\"*** Begin Patch\\n*** Update File: src/parse.rs\\n@@\\n-    let b = s.as_bytes()[0];\\n+    let Some(&b) = s.as_bytes().first() else { return None };\\n*** End Patch\"}",
             "call_id": "call_Q2"},
            {"type": "function_call", "id": "fc_68a5", "status": "completed", "name": "shell",
             "arguments": "{\"command\": [\"cargo\", \"clippy\"]}", "call_id": "call_Q3"},
            {"type": "function_call_output", "call_id": "call_Q2", "output": "Success. Updated src/parse.rs"},
            {"type": "function_call_output", "call_id": "call_Q3", "output": "warning: unused variable `n`"},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Fixed; clippy has one warning left.", "annotations": []}
            ]}
        ],
        "tools": [
            {"type": "function", "name": "shell", "description": "Run a command",
             "strict": false, "parameters": {"type": "object", "properties": {
                "command": {"type": "array", "items": {"type": "string"}},
                "workdir": {"type": "string"}}, "required": ["command"]}},
            {"type": "function", "name": "apply_patch", "parameters": {"type": "object",
             "properties": {"input": {"type": "string"}}, "required": ["input"]}}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a1b2-c3d4"
    })
}

#[test]
fn coding_session_round_trips_byte_for_byte_and_maps_items_to_records() {
    let body = coding_session();
    let t = round_trip(&body);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let r = &t.records;
    assert_eq!(
        kinds(r),
        [
            Kind::System,
            Kind::TurnStart,
            Kind::User,
            // A user message right after another one is the same turn.
            Kind::User,
            Kind::Reasoning,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::Assistant,
            Kind::TurnStart,
            Kind::User,
            Kind::Reasoning,
            Kind::ToolCall,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::ToolResult,
            Kind::Assistant,
        ]
    );
    assert_eq!(
        r[0].body,
        Body::System {
            content: "<permissions>sandbox: workspace-write</permissions>".into()
        }
    );
    assert_eq!(r[0].extra.get("role"), Some(&json!("developer")));
    assert_eq!(
        r[5].body,
        Body::ToolCall {
            id: "call_Q1".into(),
            name: "shell".into(),
            arguments:
                json!({"command": ["bash", "-lc", "cargo test -p parse"], "workdir": "/repo"})
                    .into(),
        }
    );
    assert_eq!(
        r[4].body,
        Body::Reasoning {
            content: "**Running the tests**\n\nFirst see how it fails.".into()
        }
    );
    // An empty summary is empty reasoning, kept for its encrypted content.
    assert_eq!(r[10].body, Body::Reasoning { content: "".into() });
    assert_eq!(
        r[10].metadata.as_ref().unwrap()["responses_item"]["encrypted_content"],
        "gAAAAABo0Vx4Zx9_QpR2"
    );
    assert!(matches!(
        &r[6].body,
        Body::ToolResult { id, content, is_error: false }
            if id == "call_Q1" && content.contains("panicked at src/parse.rs:41:9")
    ));
    assert_eq!(
        r[7].body,
        Body::Assistant {
            content: "`parse(\"\")` indexes the first byte. I'll guard it.".into()
        }
    );
    // Spaced arguments text is kept to be written back as it was.
    assert_eq!(
        r[12].metadata.as_ref().unwrap()["responses_arguments_text"],
        "{\"command\": [\"cargo\", \"clippy\"]}"
    );

    let log = Log::from_records(r.clone());
    assert_eq!(log.turn_count(), 2);
    for turn in 0..log.turn_count() as u32 {
        assert!(log.steps(turn).iter().all(|s| s.closed), "turn {turn}");
    }
    let kept = &t.extras["responses"];
    assert_eq!(
        keys(kept),
        [
            "model",
            "instructions",
            "input",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "store",
            "stream",
            "include",
            "prompt_cache_key"
        ]
    );
    assert_eq!(kept["input"], Value::Null);
}

#[test]
fn only_what_the_default_shape_cannot_say_is_kept_in_metadata() {
    let body = json!({"input": [
        {"role": "user", "content": "plain"},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.rs"},
        {"type": "message", "role": "user", "content": "typed"},
        {"type": "function_call_output", "call_id": "c1", "output": "again", "id": "fco_1"},
    ]});
    let t = round_trip(&body);
    // Plain items need nothing: export writes them so by default.
    for r in &t.records[..4] {
        assert_eq!(r.metadata, None, "{r:?}");
    }
    // A user message after a tool result opens the next turn.
    assert_eq!(t.records[4].body, Body::TurnStart);
    let m = t.records[5].metadata.as_ref().unwrap();
    assert_eq!(
        m["responses_item"],
        json!({"type": "message", "role": "user", "content": null})
    );
    // The item keeps its other keys in place; the record's fields are holes.
    let m = t.records[6].metadata.as_ref().unwrap();
    assert_eq!(
        serde_json::to_string(&m["responses_item"]).unwrap(),
        r#"{"type":"function_call_output","call_id":null,"output":null,"id":"fco_1"}"#
    );
    // The second result for `c1` answers no open call: kept, and said.
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].contains("`c1`"), "{:?}", t.warnings);
}

#[test]
fn reasoning_is_replayed_exactly_with_its_encrypted_content() {
    let body = json!({
        "model": "o4-mini",
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "input": [
            {"role": "user", "content": "How many primes are below 100?"},
            {"id": "rs_0a1", "type": "reasoning", "summary": [
                {"type": "summary_text", "text": "**Counting primes**\n\nSieve up to 100."},
                {"type": "summary_text", "text": "**Checking**\n\nThe count is 25."}
            ], "encrypted_content": "gAAAAABoCountingPrimes+/==", "status": null},
            {"id": "msg_0a2", "type": "message", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "annotations": [], "text": "25."}]},
            {"role": "user", "content": "And below 1000?"},
            // gpt-oss through an open-weight server: raw reasoning, no summary.
            {"type": "reasoning", "id": "rs_0a3", "summary": [],
             "content": [{"type": "reasoning_text", "text": "Known value: 168."}]}
        ]
    });
    let t = round_trip(&body);
    let reasoning: Vec<&Body> = t
        .records
        .iter()
        .filter(|r| r.kind() == Kind::Reasoning)
        .map(|r| &r.body)
        .collect();
    assert_eq!(
        reasoning,
        [
            &Body::Reasoning {
                content:
                    "**Counting primes**\n\nSieve up to 100.\n\n**Checking**\n\nThe count is 25."
                        .into()
            },
            &Body::Reasoning {
                content: "Known value: 168.".into()
            }
        ]
    );
    // The item is kept whole, encrypted content and all.
    let first = t
        .records
        .iter()
        .find(|r| r.kind() == Kind::Reasoning)
        .unwrap();
    assert_eq!(
        first.metadata.as_ref().unwrap()["responses_item"],
        body["input"][1]
    );
}

#[test]
fn string_input_round_trips_as_a_string() {
    let body =
        json!({"model": "gpt-4.1", "input": "Tell me a three sentence story.", "stream": false});
    let t = round_trip(&body);
    assert_eq!(
        bodies(&t.records),
        [
            &Body::TurnStart,
            &Body::User {
                content: "Tell me a three sentence story.".into(),
                author: None
            }
        ]
    );
    let body = json!({"input": "hi"});
    let t = round_trip(&body);
    assert!(t.extras.is_empty(), "nothing but `input` to keep");
    round_trip(&json!({"input": ""}));

    // Once the history grows, `input` is an array.
    let mut records = t.records.clone();
    records.push(Record::new(
        2,
        "",
        Body::Assistant {
            content: "Hello!".into(),
        },
    ));
    assert_eq!(
        responses::to_json(&records, &t.extras),
        json!({"input": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello!"}
        ]})
    );
}

#[test]
fn instructions_tools_and_unknown_keys_keep_their_place() {
    let body = json!({
        "model": "gpt-4.1",
        "instructions": "Answer in French.",
        "previous_response_id": "resp_67ccd3a9da748190",
        "tools": [
            {"type": "web_search_preview", "search_context_size": "low"},
            {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp",
             "require_approval": "never"},
            {"type": "function", "name": "get_weather", "parameters": {"type": "object",
             "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false},
             "strict": true}
        ],
        "input": [{"role": "user", "content": "What is the weather in Lyon?"}],
        "text": {"format": {"type": "json_schema", "name": "weather", "strict": true,
                 "schema": {"type": "object", "properties": {"temp": {"type": "number"}}}}},
        "temperature": 0.2,
        "max_output_tokens": 1024,
        "metadata": {"session": "abc"},
        "store": true,
        "truncation": "auto",
        "service_tier": "auto",
        "x_vendor_extension": {"nested": [1, 2.5, null, true, "x"]}
    });
    let t = round_trip(&body);
    let kept = &t.extras["responses"];
    assert_eq!(keys(kept), keys(&body));
    assert_eq!(kept["input"], Value::Null);
    assert_eq!(kept["x_vendor_extension"], body["x_vendor_extension"]);

    // A body without `input` (a stored prompt) gets none back, nor does an
    // empty one gain anything.
    round_trip(&json!({"model": "gpt-4.1", "prompt": {"id": "pmpt_123", "version": "2"}}));
    round_trip(&json!({}));
    round_trip(&json!({"input": []}));
    round_trip(&json!({"input": [], "model": "x"}));
}

#[test]
fn unknown_item_types_are_kept_whole_in_place() {
    let others = json!([
        {"type": "item_reference", "id": "msg_abc"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed",
         "action": {"type": "search", "query": "rust 2024 edition"}},
        {"type": "file_search_call", "id": "fs_1", "queries": ["refund policy"], "status": "completed", "results": null},
        {"type": "computer_call", "id": "cu_1", "call_id": "call_cu", "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
         "pending_safety_checks": [], "status": "completed"},
        {"type": "computer_call_output", "call_id": "call_cu", "output": {"type": "computer_screenshot",
         "image_url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_ls", "status": "completed",
         "action": {"type": "exec", "command": ["ls", "-la"], "env": {}}},
        {"type": "local_shell_call_output", "id": "lsh_1", "output": "total 0"},
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "deepwiki", "tools": []},
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "deepwiki", "name": "ask", "arguments": "{}"},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask", "arguments": "{\"q\":1}", "output": "42", "error": null},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="},
        {"type": "code_interpreter_call", "id": "ci_1", "code": "print(1)", "container_id": "cntr_1", "outputs": null, "status": "completed"},
        {"type": "something_new_in_2026", "payload": {"z": 1, "a": 2}}
    ]);
    let mut input = vec![json!({"role": "user", "content": "Do things."})];
    input.extend(others.as_array().unwrap().iter().cloned());
    input.push(json!({"role": "assistant", "content": "Done."}));
    let body = json!({"model": "gpt-5", "input": input});
    let t = round_trip(&body);
    let kept: Vec<&Record> = t
        .records
        .iter()
        .filter(|r| matches!(&r.body, Body::Other { kind, .. } if kind == "responses_item"))
        .collect();
    assert_eq!(kept.len(), others.as_array().unwrap().len());
    for (r, original) in kept.iter().zip(others.as_array().unwrap()) {
        let Body::Other { fields, .. } = &r.body else {
            unreachable!()
        };
        assert_eq!(keys(&Value::Object((**fields).clone())), ["item"]);
        assert_eq!(
            serde_json::to_string(&fields["item"]).unwrap(),
            serde_json::to_string(original).unwrap()
        );
    }
    // Kept items are not model-visible records: the assistant's text and
    // the user's message are the only things compared or compacted.
    assert_eq!(
        kinds(&t.records)
            .into_iter()
            .filter(|k| *k != Kind::Other)
            .collect::<Vec<_>>(),
        [Kind::TurnStart, Kind::User, Kind::Assistant]
    );
}

#[test]
fn content_arrays_with_images_and_files_round_trip() {
    let body = json!({
        "model": "gpt-4.1",
        "input": [
            {"role": "system", "content": [{"type": "input_text", "text": "You describe images."}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is in this image?"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQSkZJRg==", "detail": "high"},
                {"type": "input_file", "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL"},
                {"type": "input_file", "filename": "notes.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
                {"type": "input_text", "text": "Compare it with the notes."}
            ]},
            {"type": "function_call", "call_id": "call_shot", "name": "screenshot", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_shot", "output": [
                {"type": "input_text", "text": "Screenshot taken."},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
            ]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "refusal", "refusal": "I can't identify people."},
                {"type": "output_text", "text": "A cat on a desk.", "annotations": [
                    {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://example.com", "title": "Cats"}
                ]}
            ]}
        ]
    });
    let t = round_trip(&body);
    let r = &t.records;
    assert_eq!(
        r[0].body,
        Body::System {
            content: "You describe images.".into()
        }
    );
    assert_eq!(
        r[2].body,
        Body::User {
            content: "What is in this image?\nCompare it with the notes.".into(),
            author: None
        }
    );
    assert_eq!(
        r[4].body,
        Body::ToolResult {
            id: "call_shot".into(),
            content: "Screenshot taken.".into(),
            is_error: false
        }
    );
    // A refusal part is not answer text.
    assert_eq!(
        r[5].body,
        Body::Assistant {
            content: "A cat on a desk.".into()
        }
    );
}

#[test]
fn odd_key_orders_and_argument_spellings_come_back_as_they_were() {
    // Parsed from text so the key orders are exactly these.
    let body: Value = serde_json::from_str(
        r#"{
          "input": [
            {"content": "content first", "role": "user"},
            {"role": "user", "content": "type last", "type": "message", "timestamp": "2025-03-01T10:00:00Z"},
            {"arguments": "{\"path\": \"a.rs\",\"n\":1.50}", "call_id": "c1", "type": "function_call", "name": "read"},
            {"output": "ok", "type": "function_call_output", "call_id": "c1", "status": "completed"},
            {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{\"path\": \"b.rs\""},
            {"type": "function_call_output", "call_id": "c2", "output": "error: invalid arguments"},
            {"type": "function_call", "call_id": "c3", "name": "noop", "arguments": ""},
            {"type": "function_call_output", "call_id": "c3", "output": ""},
            {"type": "function_call", "call_id": "c4", "name": "obj", "arguments": {"k": [1, 2]}},
            {"type": "function_call_output", "call_id": "c4", "output": "done", "created_at": 1741476542}
          ],
          "model": "gpt-4.1-mini"
        }"#,
    )
    .unwrap();
    let t = round_trip(&body);
    let r = &t.records;
    assert_eq!(r[2].ts, "2025-03-01T10:00:00Z", "an item's own time");
    assert_eq!(r[10].ts, "2025-03-08T23:29:02Z", "Unix seconds as RFC 3339");
    let call = |id: &str| {
        r.iter()
            .find(|x| matches!(&x.body, Body::ToolCall { id: i, .. } if i == id))
            .unwrap()
    };
    assert!(
        matches!(&call("c1").body, Body::ToolCall { arguments, .. } if *arguments == json!({"path": "a.rs", "n": 1.5}))
    );
    let raw = call("c2");
    assert!(
        matches!(&raw.body, Body::ToolCall { arguments, .. } if *arguments == json!("{\"path\": \"b.rs\""))
    );
    assert_eq!(
        raw.metadata.as_ref().unwrap()["responses_raw_arguments"],
        true
    );
    assert_eq!(
        call("c4").metadata.as_ref().unwrap()["responses_arguments_object"],
        true
    );
}

#[test]
fn repeated_call_ids_are_unique_in_the_records_and_original_in_the_body() {
    let body = json!({"input": [
        {"role": "user", "content": "read both"},
        {"type": "function_call", "call_id": "call_0", "name": "read", "arguments": "{\"p\":\"a\"}"},
        {"type": "function_call", "call_id": "call_0", "name": "read", "arguments": "{\"p\":\"b\"}"},
        {"type": "function_call_output", "call_id": "call_0", "output": "A"},
        {"type": "function_call_output", "call_id": "call_0", "output": "B"}
    ]});
    let t = round_trip(&body);
    let ids: Vec<&str> = t
        .records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall { id, .. } | Body::ToolResult { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["call_0", "call_0_2", "call_0", "call_0_2"]);
    assert_eq!(
        t.records[3].metadata.as_ref().unwrap()["responses_original_id"],
        "call_0"
    );
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    let log = Log::from_records(t.records.clone());
    assert!(log.steps(0).iter().all(|s| s.closed));
}

/// The records of `response`'s output, and of the next request's `input`
/// holding `history`, then `echoed` (the output items as the client sends
/// them back), then a tool result and a new user message: the echoed
/// records compare equal, body for body.
fn assert_output_matches_echo(response: &Value, history: &[Value], echoed: &[Value]) {
    let answer = responses::output_records(response).unwrap();
    let mut input = history.to_vec();
    input.extend(echoed.iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": "call_W1", "output": "18°C, light rain"}),
    );
    input.push(json!({"role": "user", "content": "Thanks. And tomorrow?"}));
    let next = json!({"model": "gpt-5", "input": input, "store": false});
    let t = round_trip(&next);
    let before = responses::from_json(&json!({"input": history})).unwrap();
    let start = before.records.len();
    assert_eq!(
        bodies(&t.records[start..start + answer.len()]),
        bodies(&answer),
        "the answer as recorded and as sent back"
    );
    assert!(answer.iter().all(|r| r.ts.is_empty()));
}

#[test]
fn output_records_equal_the_same_items_sent_back_as_input() {
    let history = vec![
        json!({"role": "developer", "content": "Use the tools."}),
        json!({"role": "user", "content": "What's the weather in Lyon?"}),
    ];
    let output = json!([
        {"id": "rs_1", "type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**Weather lookup**\n\nCall get_weather."}
        ], "encrypted_content": "gAAAAABoWeather=="},
        {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [
            {"type": "output_text", "annotations": [], "logprobs": [], "text": "Let me check."}
        ]},
        {"id": "fc_1", "type": "function_call", "status": "completed",
         "arguments": "{\"city\":\"Lyon\"}", "call_id": "call_W1", "name": "get_weather"},
        {"id": "ws_1", "type": "web_search_call", "status": "completed",
         "action": {"type": "search", "query": "Lyon weather"}}
    ]);
    let response = json!({
        "id": "resp_1", "object": "response", "created_at": 1741476542, "status": "completed",
        "error": null, "incomplete_details": null, "instructions": null, "model": "gpt-5-2025-08-07",
        "output": output, "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": {"effort": "medium", "summary": "auto"}, "store": false,
        "usage": {"input_tokens": 81, "output_tokens": 120, "total_tokens": 201}
    });
    let answer = responses::output_records(&response).unwrap();
    assert_eq!(
        kinds(&answer),
        [
            Kind::Reasoning,
            Kind::Assistant,
            Kind::ToolCall,
            Kind::Other
        ]
    );
    assert_eq!(
        answer[2].body,
        Body::ToolCall {
            id: "call_W1".into(),
            name: "get_weather".into(),
            arguments: json!({"city": "Lyon"}).into()
        }
    );

    // Sent back exactly as received.
    assert_output_matches_echo(&response, &history, output.as_array().unwrap());
    // Sent back as an SDK reshapes it: no ids or statuses, the message as
    // plain text, keys in another order. Same bodies all the same.
    let reshaped = [
        json!({"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "**Weather lookup**\n\nCall get_weather."}
        ], "encrypted_content": "gAAAAABoWeather=="}),
        json!({"role": "assistant", "content": "Let me check."}),
        json!({"type": "function_call", "call_id": "call_W1", "name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}),
        json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
               "action": {"type": "search", "query": "Lyon weather"}}),
    ];
    assert_output_matches_echo(&response, &history, &reshaped);

    // The same response inside a streamed `response.completed` event.
    let event = json!({"type": "response.completed", "sequence_number": 42, "response": response});
    assert_eq!(
        responses::output_records(&event["response"]).unwrap(),
        answer
    );
}

#[test]
fn output_records_errors_name_the_place() {
    assert_eq!(
        responses::output_records(&json!({"id": "resp_1"})).unwrap_err(),
        "expected a response object with an `output` array, found an object without `output`"
    );
    assert_eq!(
        responses::output_records(&json!("x")).unwrap_err(),
        "expected a response object with an `output` array, found a string"
    );
    assert_eq!(
        responses::output_records(&json!({"output": {}})).unwrap_err(),
        "`output`: expected an array of output items, found an object"
    );
    assert_eq!(
        responses::output_records(&json!({"output": [
            {"type": "message", "role": "assistant", "content": []},
            {"type": "function_call", "name": "f", "arguments": "{}"}
        ]}))
        .unwrap_err(),
        "output[1]: a `function_call` item needs a `call_id` string"
    );
}

#[test]
fn bad_input_is_refused_naming_the_place() {
    let cases = [
        (
            json!([{"role": "user", "content": "hi"}]),
            "expected a request object with `input`, found an array",
        ),
        (
            json!({"input": 5}),
            "`input`: expected a string or an array of input items, found a number",
        ),
        (
            json!({"input": null}),
            "`input`: expected a string or an array of input items, found null",
        ),
        (
            json!({"input": ["hi"]}),
            "input[0]: expected an item object, found a string",
        ),
        (
            json!({"input": [{"role": "user", "content": "a"}, {"content": "b"}]}),
            "input[1]: expected an item with a `type` (or a message with a `role`), found an object with neither",
        ),
        (
            json!({"input": [
                {"role": "user", "content": "a"},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "x"},
                {"type": 3}
            ]}),
            "input[3].type: expected a string naming the item type, found a number",
        ),
        (
            json!({"input": [{"role": "user", "content": "a"}, {"type": ["message"]}]}),
            "input[1].type: expected a string naming the item type, found an array",
        ),
        (
            json!({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}),
            "input[0]: a `function_call` item needs a `call_id` string",
        ),
        (
            json!({"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}),
            "input[0]: a `function_call` item needs a `name` string",
        ),
        (
            json!({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}),
            "input[0]: a `function_call` item needs `arguments` (a JSON string)",
        ),
        (
            json!({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": 1}]}),
            "input[0].arguments: expected a JSON string, found a number",
        ),
        (
            json!({"input": [{"type": "function_call_output", "output": "x"}]}),
            "input[0]: a `function_call_output` item needs a `call_id` string",
        ),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "c"}]}),
            "input[0]: a `function_call_output` item needs an `output` (a string or an array of content parts)",
        ),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "c", "output": {"a": 1}}]}),
            "input[0].output: expected a string or an array of content parts, found an object",
        ),
        (
            json!({"input": [{"type": "message", "content": "x"}]}),
            "input[0]: a message needs a `role`; expected system, developer, user or assistant",
        ),
        (
            json!({"input": [{"role": 1, "content": "x"}]}),
            "input[0].role: expected a string (expected system, developer, user or assistant), found a number",
        ),
        (
            json!({"input": [{"role": "user"}]}),
            "input[0]: a message needs `content` (a string or an array of content parts)",
        ),
        (
            json!({"input": [{"role": "user", "content": null}]}),
            "input[0].content: expected a string or an array of content parts, found null",
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"text": "b"}]}]}),
            "input[0].content[1]: expected a content part (an object with a `type` string), found an object without a `type` string",
        ),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "c", "output": ["x"]}]}),
            "input[0].output[0]: expected a content part (an object with a `type` string), found a string",
        ),
    ];
    for (body, expected) in cases {
        assert_eq!(error(&body), expected, "{body}");
    }
}

#[test]
fn changed_records_are_written_into_their_own_items() {
    let body = json!({"model": "gpt-5", "input": [
        {"role": "user", "content": "Run the tests."},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Run them."}],
         "encrypted_content": "gAAAAABoRun=="},
        {"id": "fc_1", "type": "function_call", "status": "completed", "name": "shell",
         "arguments": "{\"cmd\": \"cargo test\", \"timeout\": 600}", "call_id": "call_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": "running 412 tests\n...", "id": "fco_1", "status": "completed"},
        {"type": "function_call", "call_id": "call_2", "name": "screenshot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "shot"}, {"type": "input_image", "image_url": "data:image/png;base64,AA=="}
        ]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "All green.", "annotations": []}]}
    ]});
    let t = round_trip(&body);
    let mut records = t.records.clone();
    // What the proxy's view does: strip the call's arguments and results,
    // and rewrite reasoning and the answer.
    for r in &mut records {
        match &mut r.body {
            Body::ToolCall { arguments, .. } if arguments.value().get("cmd").is_some() => {
                *arguments = json!({"cmd": "cargo test"}).into();
            }
            Body::ToolResult { content, .. } => *content = "[stripped: 2 lines]".into(),
            Body::Reasoning { content } => *content = "edited".into(),
            Body::Assistant { content } => *content = "All green, 412 tests.".into(),
            _ => {}
        }
    }
    let out = responses::to_json(&records, &t.extras);
    let input = out["input"].as_array().unwrap();
    // Reasoning whose text changed cannot be replayed: left out.
    assert_eq!(input.len(), 6);
    assert!(input.iter().all(|i| i["type"] != "reasoning"));
    // Other keys stay, in place; the changed fields are filled in.
    assert_eq!(
        serde_json::to_string(&input[1]).unwrap(),
        r#"{"id":"fc_1","type":"function_call","status":"completed","name":"shell","arguments":"{\"cmd\":\"cargo test\"}","call_id":"call_1"}"#
    );
    assert_eq!(
        serde_json::to_string(&input[2]).unwrap(),
        r#"{"type":"function_call_output","call_id":"call_1","output":"[stripped: 2 lines]","id":"fco_1","status":"completed"}"#
    );
    // An array output whose text changed becomes the text.
    assert_eq!(input[4]["output"], "[stripped: 2 lines]");
    assert_eq!(
        input[5],
        json!({"type": "message", "role": "assistant", "content": "All green, 412 tests."})
    );
    assert_eq!(keys(&out), ["model", "input"]);
}

#[test]
fn records_from_elsewhere_get_the_plain_item_shapes() {
    // A compaction's summary pair, as the proxy renders it, around a kept
    // tail; turn starts and overlays are not items.
    let t = responses::from_json(&json!({"instructions": "Be brief.", "input": [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "new question"}
    ]}))
    .unwrap();
    let mut records = vec![
        Record::new(
            0,
            "",
            Body::User {
                content: "[summary of turn 1]".into(),
                author: Some("ctxfold".into()),
            },
        ),
        Record::new(
            0,
            "",
            Body::Assistant {
                content: "We discussed the old question.".into(),
            },
        ),
        Record::new(
            0,
            "",
            Body::Structured {
                data: json!({"ok": true}).into(),
            },
        ),
        Record::new(0, "", Body::TurnStart),
    ];
    records.extend(t.records[3..].iter().cloned());
    assert_eq!(
        responses::to_json(&records, &t.extras),
        json!({"instructions": "Be brief.", "input": [
            {"role": "user", "content": "[summary of turn 1]"},
            {"role": "assistant", "content": "We discussed the old question."},
            {"role": "assistant", "content": "{\"ok\":true}"},
            {"role": "user", "content": "new question"}
        ]})
    );

    // An OpenAI chat transcript: developer prompt, calls, results. Its
    // reasoning has no Responses item to replay, so it is left out.
    let chat = openai::from_json(&json!({"messages": [
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "reasoning_content": "ls it", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "ls", "arguments": "{\"dir\":\".\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "a.rs"},
        {"role": "assistant", "content": "One file."}
    ]}))
    .unwrap();
    assert_eq!(
        responses::to_json(&chat.records, &Object::new()),
        json!({"input": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": "list files"},
            {"type": "function_call", "call_id": "call_a", "name": "ls", "arguments": "{\"dir\":\".\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "a.rs"},
            {"role": "assistant", "content": "One file."}
        ]})
    );
}

/// A small deterministic generator (xorshift64*): random bodies without a
/// dependency.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
    fn text(&mut self) -> String {
        self.pick(&[
            "",
            "hello",
            "line one\nline two",
            "quotes \" and \\ backslash",
            "ünïcödé ✓ 日本語",
            "   spaced   ",
            "{\"looks\":\"like json\"}",
        ])
        .to_owned()
    }
    fn value(&mut self) -> Value {
        match self.below(7) {
            0 => Value::Null,
            1 => json!(self.chance(50)),
            2 => json!(self.below(1000)),
            3 => json!(2.5),
            4 => json!(self.text()),
            5 => json!([1, "two", null]),
            _ => json!({"z": 1, "a": {"b": [true]}}),
        }
    }
    /// `o` with a few unmapped keys added and its keys shuffled.
    fn mess_up(&mut self, mut o: Object) -> Value {
        for k in ["id", "status", "phase", "x_future"] {
            if self.chance(30) {
                let v = self.value();
                o.insert(k.into(), v);
            }
        }
        let mut entries: Vec<(String, Value)> = o.into_iter().collect();
        for i in (1..entries.len()).rev() {
            let j = self.below(i + 1);
            entries.swap(i, j);
        }
        Value::Object(entries.into_iter().collect())
    }
    fn part(&mut self) -> Value {
        let mut o = Object::new();
        match self.below(6) {
            0 | 1 => {
                o.insert("type".into(), "input_text".into());
                o.insert("text".into(), self.text().into());
            }
            2 => {
                o.insert("type".into(), "output_text".into());
                o.insert("text".into(), self.text().into());
                o.insert("annotations".into(), json!([]));
            }
            3 => {
                o.insert("type".into(), "input_image".into());
                o.insert("image_url".into(), "data:image/png;base64,AA==".into());
            }
            4 => {
                o.insert("type".into(), "refusal".into());
                o.insert("refusal".into(), self.text().into());
            }
            _ => {
                o.insert("type".into(), "input_file".into());
                o.insert("file_id".into(), "file-1".into());
            }
        }
        self.mess_up(o)
    }
    fn content(&mut self) -> Value {
        if self.chance(50) {
            json!(self.text())
        } else {
            let n = self.below(4);
            Value::Array((0..n).map(|_| self.part()).collect())
        }
    }
    fn call_id(&mut self) -> String {
        self.pick(&["call_1", "call_2", "call_1_2", "c"]).to_owned()
    }
    fn item(&mut self) -> Value {
        let mut o = Object::new();
        match self.below(6) {
            0 | 1 => {
                if self.chance(50) {
                    o.insert("type".into(), "message".into());
                }
                let role = self.pick(&["system", "developer", "user", "assistant"]);
                o.insert("role".into(), role.into());
                o.insert("content".into(), self.content());
            }
            2 => {
                o.insert("type".into(), "function_call".into());
                o.insert("call_id".into(), self.call_id().into());
                o.insert("name".into(), self.pick(&["read", "shell"]).into());
                let args = if self.chance(10) {
                    json!({"k": [1, 2]})
                } else {
                    json!(self.pick(&[
                        "{}",
                        "",
                        "{\"path\":\"a.rs\"}",
                        "{\"path\": \"a.rs\"}",
                        "{\"n\":1.50}",
                        "{\"broken\":",
                        "[1,2]",
                        "\"s\"",
                        "null",
                    ]))
                };
                o.insert("arguments".into(), args);
            }
            3 => {
                o.insert("type".into(), "function_call_output".into());
                o.insert("call_id".into(), self.call_id().into());
                let output = if self.chance(70) {
                    json!(self.text())
                } else {
                    let n = self.below(3);
                    Value::Array((0..n).map(|_| self.part()).collect())
                };
                o.insert("output".into(), output);
            }
            4 => {
                o.insert("type".into(), "reasoning".into());
                o.insert("id".into(), "rs_1".into());
                let n = self.below(3);
                let summary: Vec<Value> = (0..n)
                    .map(|_| json!({"type": "summary_text", "text": self.text()}))
                    .collect();
                o.insert("summary".into(), Value::Array(summary));
                if self.chance(50) {
                    o.insert("encrypted_content".into(), "gAAAAB==".into());
                }
                if self.chance(30) {
                    o.insert(
                        "content".into(),
                        json!([{"type": "reasoning_text", "text": self.text()}]),
                    );
                }
            }
            _ => {
                let ty = self.pick(&["item_reference", "web_search_call", "mcp_call", "new_kind"]);
                o.insert("type".into(), ty.into());
                o.insert("payload".into(), self.value());
            }
        }
        self.mess_up(o)
    }
    fn body(&mut self) -> Value {
        let mut entries: Vec<(String, Value)> = Vec::new();
        for k in [
            "model",
            "instructions",
            "tools",
            "store",
            "reasoning",
            "x_unknown",
        ] {
            if self.chance(40) {
                entries.push((k.into(), self.value()));
            }
        }
        if !self.chance(5) {
            let input = if self.chance(10) {
                json!(self.text())
            } else {
                let n = self.below(12);
                Value::Array((0..n).map(|_| self.item()).collect())
            };
            let at = self.below(entries.len() + 1);
            entries.insert(at, ("input".into(), input));
        }
        Value::Object(entries.into_iter().collect())
    }
}

#[test]
fn random_bodies_round_trip_byte_for_byte() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for case in 0..3000 {
        let body = g.body();
        let t = responses::from_json(&body).unwrap_or_else(|e| panic!("case {case}: {e}\n{body}"));
        let back = responses::to_json(&t.records, &t.extras);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&body).unwrap(),
            "case {case}"
        );
        assert_eq!(back, body, "case {case}");
        // And again through the log format.
        let relogged: Vec<Record> = t
            .records
            .iter()
            .map(|r| Record::from_json_line(&r.to_json_line()).unwrap().0)
            .collect();
        assert_eq!(relogged, t.records, "case {case}");
    }
}

/// Codex's default model calls one free-text tool (`exec`, JavaScript):
/// `custom_tool_call` and `custom_tool_call_output` items are a tool call
/// and its result like any other (so they can be folded), written back
/// as they came.
#[test]
fn custom_tool_calls_are_tool_calls_and_round_trip() {
    let body = json!({"model": "m", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "build it"}]},
        {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_9",
         "name": "exec", "input": "const r = await tools.exec_command({cmd: \"make\"}); text(r.output);"},
        {"type": "custom_tool_call_output", "call_id": "call_9", "output": "ok\n".repeat(50)}
    ]});
    let t = round_trip(&body);
    let calls: Vec<_> = t
        .records
        .iter()
        .filter_map(|r| match &r.body {
            Body::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.clone(), name.clone(), arguments.value())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "call_9");
    assert_eq!(calls[0].1, "exec");
    assert!(calls[0].2.as_str().unwrap().contains("exec_command"));
    assert!(t.records.iter().any(
        |r| matches!(&r.body, Body::ToolResult { id, content, .. } if id == "call_9" && content.starts_with("ok"))
    ));
}

#[test]
fn a_message_of_a_role_the_format_does_not_know_is_kept_whole() {
    let body = json!({"model": "m", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "message", "role": "tool", "content": "x"}
    ]});
    let t = responses::from_json(&body).unwrap();
    assert!(matches!(&t.records.last().unwrap().body,
        ctxfold_core::Body::Other { kind, .. } if kind == "responses_item"));
    assert_eq!(responses::to_json(&t.records, &t.extras), body);
}
