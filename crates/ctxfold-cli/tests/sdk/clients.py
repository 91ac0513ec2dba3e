"""Real clients through `ctxfold proxy`: the official OpenAI and Anthropic
Python SDKs run multi-turn, tool-using conversations (OpenAI's chat
completions and responses, Anthropic's messages), streamed and not, the
way agents written on them do (the SDK's own message objects appended back
into the history). Usage: clients.py PROXY_BASE_URL. Prints one JSON line
per conversation: the SDK, whether it streamed, the conversation id the
proxy named, and the texts of the final answers."""

import json
import sys

import anthropic
import openai

BASE = sys.argv[1]
KEY = "sk-test-SECRET-0123456789abcdef"
SYSTEM = "You are a careful coding agent."
OPENAI_TOOLS = [{
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}]
RESPONSES_TOOLS = [{
    "type": "function",
    "name": "read_file",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}]
ANTHROPIC_TOOLS = [{
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}]


def file_text(path):
    return ("// %s: fn work() { let x = compute(); x + 1 }\n" % path) * 20


def openai_conversation(stream):
    client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0)
    messages = [{"role": "system", "content": SYSTEM}]
    conversation, texts = None, []
    for task in ["Read the modules steps=3", "Now the tests steps=2"]:
        messages.append({"role": "user", "content": task + (" (streamed)" if stream else "")})
        while True:
            kwargs = dict(model="gpt-4o-mini", messages=messages, tools=OPENAI_TOOLS,
                          temperature=0.25, max_tokens=300)
            if stream:
                raw = client.chat.completions.with_raw_response.create(stream=True, **kwargs)
                conversation = raw.headers["x-ctxfold-conversation"]
                text, calls = "", {}
                for chunk in raw.parse():
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    text += delta.content or ""
                    for c in delta.tool_calls or []:
                        call = calls.setdefault(c.index, {"id": None, "name": "", "arguments": ""})
                        call["id"] = c.id or call["id"]
                        if c.function and c.function.name:
                            call["name"] = c.function.name
                        if c.function and c.function.arguments:
                            call["arguments"] += c.function.arguments
                message = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = [
                        {"id": c["id"], "type": "function",
                         "function": {"name": c["name"], "arguments": c["arguments"]}}
                        for _, c in sorted(calls.items())]
                messages.append(message)
                tool_calls = message.get("tool_calls", [])
                call_list = [(c["id"], json.loads(c["function"]["arguments"])) for c in tool_calls]
            else:
                raw = client.chat.completions.with_raw_response.create(**kwargs)
                conversation = raw.headers["x-ctxfold-conversation"]
                completion = raw.parse()
                message = completion.choices[0].message
                # As agents do: the SDK's own object goes back into the history.
                messages.append(message)
                text = message.content or ""
                call_list = [(c.id, json.loads(c.function.arguments)) for c in message.tool_calls or []]
            if not call_list:
                texts.append(text)
                break
            for call_id, args in call_list:
                messages.append({"role": "tool", "tool_call_id": call_id,
                                 "content": file_text(args["path"])})
    return conversation, texts


def responses_conversation(stream):
    client = openai.OpenAI(base_url=BASE + "/v1", api_key=KEY, max_retries=0)
    items = []
    conversation, texts = None, []
    for task in ["Read the modules steps=3", "Now the tests steps=2"]:
        items.append({"role": "user", "content": task + (" (streamed)" if stream else "")})
        while True:
            kwargs = dict(model="gpt-4o-mini", instructions=SYSTEM, input=items,
                          tools=RESPONSES_TOOLS, temperature=0.25, max_output_tokens=300)
            if stream:
                raw = client.responses.with_raw_response.create(stream=True, **kwargs)
                conversation = raw.headers["x-ctxfold-conversation"]
                final = None
                for event in raw.parse():
                    if event.type == "response.completed":
                        final = event.response
            else:
                raw = client.responses.with_raw_response.create(**kwargs)
                conversation = raw.headers["x-ctxfold-conversation"]
                final = raw.parse()
            # As agents do: the SDK's output items go back into the input.
            items.extend(final.output)
            calls = [o for o in final.output if o.type == "function_call"]
            if not calls:
                texts.append(final.output_text)
                break
            for c in calls:
                items.append({"type": "function_call_output", "call_id": c.call_id,
                              "output": file_text(json.loads(c.arguments)["path"])})
    return conversation, texts


def anthropic_conversation(stream):
    client = anthropic.Anthropic(base_url=BASE, api_key=KEY, max_retries=0)
    messages = []
    conversation, texts = None, []
    for task in ["Read the modules steps=3", "Now the tests steps=2"]:
        messages.append({"role": "user", "content": task + (" (streamed)" if stream else "")})
        while True:
            kwargs = dict(model="claude-sonnet-4-5", max_tokens=300, system=SYSTEM,
                          messages=messages, tools=ANTHROPIC_TOOLS,
                          metadata={"user_id": "agent-7"})
            if stream:
                with client.messages.stream(**kwargs) as s:
                    conversation = s.response.headers["x-ctxfold-conversation"]
                    final = s.get_final_message()
            else:
                raw = client.messages.with_raw_response.create(**kwargs)
                conversation = raw.headers["x-ctxfold-conversation"]
                final = raw.parse()
            # As agents do: the SDK's content blocks go back into the history.
            messages.append({"role": "assistant", "content": final.content})
            uses = [b for b in final.content if b.type == "tool_use"]
            if not uses:
                texts.append("".join(b.text for b in final.content if b.type == "text"))
                break
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": file_text(b.input["path"])}
                for b in uses]})
    return conversation, texts


for sdk, run in [("openai", openai_conversation), ("openai-responses", responses_conversation),
                 ("anthropic", anthropic_conversation)]:
    for stream in [False, True]:
        conversation, texts = run(stream)
        print(json.dumps({"sdk": sdk, "stream": stream, "conversation": conversation, "texts": texts}))
