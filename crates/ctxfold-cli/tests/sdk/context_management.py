"""The providers' own context management through `ctxfold proxy`, called
by the official SDKs as their users call it (issue 29): Anthropic's beta
`context_management` edits (`clear_thinking_20251015`, `compact_20260112`)
streamed and not, OpenAI Responses' `context_management` compaction
streamed and not, its on-demand `compaction`, and
`client.responses.compact`. Each conversation runs
three user turns, sending back what the SDK returned (compaction blocks
and items included). Usage: context_management.py PROXY_BASE_URL
[TRIGGER [plain-responses-stream]] (the input tokens the compaction edits' triggers name; the
providers' own minimum is 50,000, an emulating proxy takes any). Prints
one JSON line per conversation: the API, whether it streamed, the
conversation id the proxy named at each turn, the answers' texts, and the
compaction blocks or items the SDK got."""

import json
import sys

import anthropic
import httpx2
import openai

BASE = sys.argv[1]
# The request bodies the SDKs sent, as sent: the test compares them with
# what reached the upstream, byte for byte.
SENT = []
HTTP = httpx2.Client(event_hooks={"request": [lambda r: SENT.append(r.read().decode())]})
TRIGGER = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
# `plain-responses-stream`: the upstream's Responses stream lacks the
# events' `output_index` and `content_index` (llama.cpp's), which the
# OpenAI SDK's stream reader needs, with or without a proxy: that
# conversation is not streamed.
RESPONSES_STREAM = "plain-responses-stream" not in sys.argv[3:]
KEY = "sk-test-SECRET-0123456789abcdef"
# Each with the detail a real task has, so that there is something to fold.
DETAIL = (" It holds the parser of the config files; look at how the sections are"
          " read, which keys are checked, what happens to an unknown key, and which"
          " errors name the file and the line. Then say what you would change first.")
TASKS = ["Read a.rs." + DETAIL, "Now b.rs." + DETAIL, "And c.rs." + DETAIL]


def tasks(tag):
    # Each conversation opens with its own words: the proxy keys a
    # conversation by its first message, and one that starts like another
    # is that one's retried request.
    return ["%s (%s)" % (TASKS[0], tag)] + TASKS[1:]
EDITS = {"edits": [
    {"type": "clear_thinking_20251015", "keep": "all"},
    {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": TRIGGER},
     "keep": {"type": "tool_uses", "value": 2}, "exclude_tools": ["web_search"],
     "clear_tool_inputs": False},
    {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": TRIGGER},
     "instructions": "Keep the file names."},
]}
RESPONSES_CM = [{"type": "compaction", "compact_threshold": TRIGGER}]


def anthropic_conversation(stream):
    client = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, http_client=HTTP)
    messages, ids, texts, compactions = [], [], [], []
    for task in tasks("anthropic, stream=%s" % stream):
        messages.append({"role": "user", "content": task})
        kwargs = dict(model="claude-sonnet-4-5", max_tokens=120, messages=messages,
                      betas=["compact-2026-01-12", "context-management-2025-06-27"],
                      context_management=EDITS)
        if stream:
            with client.beta.messages.stream(**kwargs) as s:
                ids.append(s.response.headers["x-ctxfold-conversation"])
                msg = s.get_final_message()
        else:
            raw = client.beta.messages.with_raw_response.create(**kwargs)
            ids.append(raw.headers["x-ctxfold-conversation"])
            msg = raw.parse()
        blocks = [b.model_dump(exclude_none=True) for b in msg.content]
        compactions += [b for b in blocks if b["type"] == "compaction"]
        texts.append("".join(b.get("text", "") for b in blocks))
        messages.append({"role": "assistant", "content": blocks})
    return {"api": "anthropic", "stream": stream, "ids": ids, "texts": texts,
            "compactions": compactions, "messages": messages}


def responses_conversation(stream, tag=""):
    client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, http_client=HTTP)
    items, ids, texts, compactions = [], [], [], []
    for task in tasks("responses, stream=%s%s" % (stream, tag)):
        items.append({"type": "message", "role": "user", "content": task})
        kwargs = dict(model="gpt-5.4", input=items, store=False, context_management=RESPONSES_CM,
                      max_output_tokens=120)
        if stream:
            with client.responses.stream(**kwargs) as s:
                ids.append(s._response.headers["x-ctxfold-conversation"])
                resp = s.get_final_response()
        else:
            raw = client.responses.with_raw_response.create(**kwargs)
            ids.append(raw.headers["x-ctxfold-conversation"])
            resp = raw.parse()
        out = [i.model_dump(exclude_none=True) for i in resp.output]
        compactions += [i for i in out if i["type"] == "compaction"]
        texts.append(resp.output_text)
        items += out
    return {"api": "responses", "stream": stream, "ids": ids, "texts": texts,
            "compactions": compactions}


def compact_endpoint():
    client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0, http_client=HTTP)
    items = [{"type": "message", "role": "user", "content": tasks("compact")[0]}]
    first = client.responses.with_raw_response.create(model="gpt-5.4", input=items, store=False,
                                                      max_output_tokens=120)
    resp = first.parse()
    items += [i.model_dump(exclude_none=True) for i in resp.output]
    items.append({"type": "message", "role": "user", "content": "Now b.rs"})
    raw = client.responses.with_raw_response.compact(model="gpt-5.4", input=items)
    compacted = raw.parse()
    out = [i.model_dump(exclude_none=True) for i in compacted.output]
    # As Codex does: the compacted output is the history from now on.
    items = out + [{"type": "message", "role": "user", "content": "And c.rs"}]
    last = client.responses.with_raw_response.create(model="gpt-5.4", input=items, store=False,
                                                     max_output_tokens=120)
    return {"api": "compact", "stream": False,
            "ids": [first.headers["x-ctxfold-conversation"], raw.headers.get("x-ctxfold-conversation"),
                    last.headers["x-ctxfold-conversation"]],
            "texts": [resp.output_text, compacted.object, last.parse().output_text],
            "compactions": [i for i in out if i["type"] == "compaction"]}


def anthropic_on_demand():
    client = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0, http_client=HTTP)
    betas = ["compact-2026-09-04"]
    messages = [{"role": "user", "content": tasks("on demand")[0]}]
    first = client.beta.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=120, messages=messages, betas=betas)
    msg = first.parse()
    messages += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]},
                 {"role": "user", "content": TASKS[1]}]
    raw = client.beta.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=120, messages=messages, betas=betas,
        compaction={"type": "summarize"})
    compacted = raw.parse()
    blocks = [b.model_dump(exclude_none=True) for b in compacted.content]
    # The block first, in place of what it summarizes, then the next turn.
    messages = [{"role": "assistant", "content": blocks}, {"role": "user", "content": TASKS[2]}]
    last = client.beta.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=120, messages=messages, betas=betas)
    return {"api": "on_demand", "stream": False,
            "ids": [first.headers["x-ctxfold-conversation"], raw.headers["x-ctxfold-conversation"],
                    last.headers["x-ctxfold-conversation"]],
            "texts": [msg.content[0].text, compacted.stop_reason, last.parse().content[0].text],
            "compactions": [b for b in blocks if b["type"] == "compaction"]}


for run in [anthropic_conversation(False), anthropic_conversation(True),
            responses_conversation(False), responses_conversation(RESPONSES_STREAM, ", second"),
            compact_endpoint(),
            anthropic_on_demand()]:
    print(json.dumps(run))
print(json.dumps({"sent": SENT}))
