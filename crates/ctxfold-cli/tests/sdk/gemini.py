"""The official Google Gen AI Python SDK (PyPI `google-genai`) through
`ctxfold proxy`: a function-calling loop of STEPS calls, the way an agent
written on the SDK runs it (the SDK's own `Content` of each answer appended
back into the history, its function responses built with the SDK), once
with `generate_content` and once with `generate_content_stream`.
Usage: gemini.py PROXY_BASE_URL STEPS. Prints one JSON line per loop: whether
it streamed, the conversation ids the proxy named (one per request), the
calls the model made, and the last answer's text."""

import json
import sys

from google import genai
from google.genai import types

BASE, STEPS = sys.argv[1], int(sys.argv[2])
MODEL = "gemini-2.5-flash"
READ_FILE = types.FunctionDeclaration(
    name="read_file",
    description="Read a file",
    parameters=types.Schema(
        type="OBJECT",
        properties={"path": types.Schema(type="STRING")},
        required=["path"],
    ),
)


def file_text(path):
    return ("// %s: fn work() { let x = compute(); x + 1 }\n" % path) * 20


def loop(stream):
    client = genai.Client(
        api_key="AIza-test-SECRET-0123456789",
        http_options=types.HttpOptions(base_url=BASE),
    )
    config = types.GenerateContentConfig(
        system_instruction="You are a careful coding agent.",
        tools=[types.Tool(function_declarations=[READ_FILE])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        temperature=0.25,
        max_output_tokens=300,
    )
    task = "Read the modules steps=%d%s" % (STEPS, " (streamed)" if stream else "")
    contents = [types.Content(role="user", parts=[types.Part.from_text(text=task)])]
    conversations, calls, text = [], [], None
    for _ in range(STEPS + 2):
        if stream:
            parts, headers = [], None
            for chunk in client.models.generate_content_stream(
                model=MODEL, contents=contents, config=config
            ):
                if headers is None and chunk.sdk_http_response is not None:
                    headers = chunk.sdk_http_response.headers
                if chunk.candidates and chunk.candidates[0].content:
                    parts.extend(chunk.candidates[0].content.parts or [])
            answer = types.Content(role="model", parts=parts)
        else:
            response = client.models.generate_content(
                model=MODEL, contents=contents, config=config
            )
            headers = response.sdk_http_response.headers
            answer = response.candidates[0].content
        conversations.append(headers.get("x-ctxfold-conversation"))
        contents.append(answer)
        asked = [p.function_call for p in answer.parts if p.function_call]
        if not asked:
            text = "".join(p.text or "" for p in answer.parts)
            break
        results = []
        for call in asked:
            calls.append(call.args["path"])
            results.append(
                types.Part.from_function_response(
                    name=call.name, response={"output": file_text(call.args["path"])}
                )
            )
        contents.append(types.Content(role="user", parts=results))
    return {"stream": stream, "conversations": conversations, "calls": calls, "text": text}


for stream in (False, True):
    print(json.dumps(loop(stream)), flush=True)
