"""The providers' context management emulated by `ctxfold proxy` (issue 45),
called by the official SDKs as their users call it, each SDK's objects sent
back exactly as it returned them. Usage: emulation.py PROXY_BASE_URL
SCENARIO. Prints one JSON line per request the scenario sent: its name,
the conversation the proxy named, the HTTP status, and the compaction
blocks or items of its answer (or the error's body).

Scenarios:
- `responses-compact`: two turns whose tool runs a failing `cargo test`,
  `client.responses.compact`, then its output and a new question, as Codex
  sends them.
- `anthropic-summarize`: the same with Anthropic's on-demand
  `compaction: {"type": "summarize"}`, then `[assistant: [block], user]`.
- `trigger-first`: Codex's `compaction_trigger` on a conversation's first
  request: a short message (nothing to compact), then a long one, the item
  answered and a new question.
- `retries`: each compacting request sent twice (the compact endpoint,
  `summarize`, `compaction_trigger`, `compact_20260112`), then going on
  after the retried one's compaction."""

import json
import sys

import anthropic
import openai

BASE = sys.argv[1]
SCENARIO = sys.argv[2]
KEY = "sk-test-SECRET-0123456789abcdef"
# What the tool answers: a failing test run, one distinct failure per turn
# (the scripted upstream reads its progress from the path, `src/m0.rs`).
FAILURES = ["parser::tests::rejects_unknown_key", "parser::tests::reads_nested_sections"]


def cargo_test(path, failing):
    return ("// %s\n$ cargo test\nrunning 3 tests\ntest parser::tests::reads_sections ... ok\n"
            "test %s ... FAILED\n\nfailures:\n\n---- %s stdout ----\n"
            "thread '%s' panicked at src/parser.rs:42:9:\nassertion `left == right` failed\n"
            "  left: None\n right: Some(Key(\"colour\"))\n\n"
            "test result: FAILED. 2 passed; 1 failed; 0 ignored\n"
            "error: test failed, to rerun pass `--lib`\n" % (path, failing, failing, failing))


TASKS = ["fix the parser bug steps=1", "now run it again steps=1"]
QUESTION = "what failed earlier?"
RESPONSES_TOOLS = [{"type": "function", "name": "read_file", "description": "Run a command",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
ANTHROPIC_TOOLS = [{"name": "read_file", "description": "Run a command",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def said(name, raw, compactions, error=None):
    line = {"name": name, "status": raw.status_code if raw is not None else None,
            "conversation": raw.headers.get("x-ctxfold-conversation") if raw is not None else None,
            "history": raw.headers.get("x-ctxfold-history") if raw is not None else None,
            "compactions": compactions}
    if error is not None:
        line["error"] = error
    print(json.dumps(line), flush=True)


def openai_client():
    return openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0)


def anthropic_client():
    return anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0)


def responses_turns(client, tag, turns=2):
    """Turns of a tool loop, the SDK's output items sent back as returned."""
    items = []
    for n, task in enumerate(TASKS[:turns]):
        items.append({"type": "message", "role": "user", "content": "%s (%s)" % (task, tag) if n == 0 else task})
        while True:
            raw = client.responses.with_raw_response.create(
                model="gpt-5.4", input=items, tools=RESPONSES_TOOLS, store=False,
                max_output_tokens=120)
            resp = raw.parse()
            said("turn %d" % (n + 1), raw.http_response, [])
            out = [i.model_dump(exclude_none=True) for i in resp.output]
            items += out
            calls = [i for i in out if i["type"] == "function_call"]
            if not calls:
                break
            for c in calls:
                path = json.loads(c["arguments"])["path"]
                items.append({"type": "function_call_output", "call_id": c["call_id"],
                              "output": cargo_test(path, FAILURES[n])})
    return items


def anthropic_turns(client, tag, turns=2, **extra):
    messages = []
    for n, task in enumerate(TASKS[:turns]):
        messages.append({"role": "user", "content": "%s (%s)" % (task, tag) if n == 0 else task})
        while True:
            raw = client.beta.messages.with_raw_response.create(
                model="claude-sonnet-4-5", max_tokens=120, messages=messages,
                tools=ANTHROPIC_TOOLS, betas=["compact-2026-09-04"], **extra)
            msg = raw.parse()
            blocks = [b.model_dump(exclude_none=True) for b in msg.content]
            said("turn %d" % (n + 1), raw.http_response,
                 [b for b in blocks if b["type"] == "compaction"])
            messages.append({"role": "assistant", "content": blocks})
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                break
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b["id"],
                 "content": cargo_test(b["input"]["path"], FAILURES[n])} for b in uses]})
    return messages


def compact(client, name, items):
    raw = client.responses.with_raw_response.compact(model="gpt-5.4", input=items)
    out = [i.model_dump(exclude_none=True) for i in raw.parse().output]
    said(name, raw.http_response, [i for i in out if i["type"] == "compaction"])
    return out


def ask_responses(client, name, items):
    raw = client.responses.with_raw_response.create(
        model="gpt-5.4", input=items, tools=RESPONSES_TOOLS, store=False, max_output_tokens=120)
    out = [i.model_dump(exclude_none=True) for i in raw.parse().output]
    said(name, raw.http_response, [i for i in out if i["type"] == "compaction"])
    return out


def summarize(client, name, messages):
    raw = client.beta.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=120, messages=messages, tools=ANTHROPIC_TOOLS,
        betas=["compact-2026-09-04"], compaction={"type": "summarize"})
    blocks = [b.model_dump(exclude_none=True) for b in raw.parse().content]
    said(name, raw.http_response, [b for b in blocks if b["type"] == "compaction"])
    return blocks


def ask_anthropic(client, name, messages, **extra):
    raw = client.beta.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=120, messages=messages, tools=ANTHROPIC_TOOLS,
        betas=["compact-2026-09-04"], **extra)
    blocks = [b.model_dump(exclude_none=True) for b in raw.parse().content]
    said(name, raw.http_response, [b for b in blocks if b["type"] == "compaction"])
    return blocks


def refused(name, call):
    """A request the proxy may refuse: its error said, not raised."""
    try:
        return call()
    except (openai.APIStatusError, anthropic.APIStatusError) as e:
        said(name, e.response, [], error=e.response.json())
        return None


def responses_compact():
    client = openai_client()
    items = responses_turns(client, "compact")
    out = compact(client, "compact", items)
    # As Codex does: the compacted output is the history from now on.
    ask_responses(client, "after", out + [{"type": "message", "role": "user", "content": QUESTION}])


def anthropic_summarize():
    client = anthropic_client()
    messages = anthropic_turns(client, "summarize")
    blocks = summarize(client, "summarize", messages)
    # The block first, in place of what it summarizes, then the next turn.
    ask_anthropic(client, "after", [{"role": "assistant", "content": blocks},
                                    {"role": "user", "content": QUESTION}])


TRIGGER = {"type": "compaction_trigger"}


def trigger_first():
    client = openai_client()
    # A short first message: there is nothing a summary would shorten.
    short = {"type": "message", "role": "user",
             "content": "fix the parser bug: `cargo test` fails in parser::tests::rejects_unknown_key"}
    refused("short", lambda: ask_responses(client, "short", [short, TRIGGER]))
    # A long one (a pasted test run): its summary keeps what it said.
    runs = "".join(cargo_test("src/m%d.rs" % n, FAILURES[0]) for n in range(12))
    long = {"type": "message", "role": "user",
            "content": "fix the parser bug, `cargo test` says:\n" + runs}
    out = refused("long", lambda: ask_responses(client, "long", [long, TRIGGER]))
    if out is not None:
        # As Codex goes on: the history, the item, the next message.
        ask_responses(client, "after", [long] + out
                      + [{"type": "message", "role": "user", "content": QUESTION}])


def retries():
    client = openai_client()
    # The compact endpoint, twice.
    items = responses_turns(client, "compact retried")
    compact(client, "compact", items)
    out = compact(client, "compact again", items)
    ask_responses(client, "after compact", out + [{"type": "message", "role": "user", "content": QUESTION}])
    # Codex's trigger, twice.
    items = responses_turns(client, "trigger retried")
    ask_responses(client, "trigger", items + [TRIGGER])
    out = ask_responses(client, "trigger again", items + [TRIGGER])
    ask_responses(client, "after trigger", items + out
                  + [{"type": "message", "role": "user", "content": QUESTION}])
    # Anthropic's on-demand compaction, twice.
    a = anthropic_client()
    messages = anthropic_turns(a, "summarize retried")
    summarize(a, "summarize", messages)
    blocks = summarize(a, "summarize again", messages)
    ask_anthropic(a, "after summarize", [{"role": "assistant", "content": blocks},
                                         {"role": "user", "content": QUESTION}])
    # `compact_20260112` past its trigger, twice.
    edit = {"edits": [{"type": "compact_20260112",
                       "trigger": {"type": "input_tokens", "value": 50}}]}
    messages = anthropic_turns(a, "edit retried", turns=1)
    # Answered in text (no tool call, whose id the upstream makes anew), so
    # the retry gets the same answer.
    messages.append({"role": "user", "content": "now say what failed steps=0"})
    ask_anthropic(a, "edit", messages, context_management=edit)
    blocks = ask_anthropic(a, "edit again", messages, context_management=edit)
    messages.append({"role": "assistant", "content": blocks})
    messages.append({"role": "user", "content": QUESTION})
    ask_anthropic(a, "after edit", messages, context_management=edit)


{"responses-compact": responses_compact, "anthropic-summarize": anthropic_summarize,
 "trigger-first": trigger_first, "retries": retries}[SCENARIO]()
