"""`ctxfold mcp` driven by the official MCP Python SDK (PyPI `mcp`), as an
agent would: started over stdio, its tools listed, `recall` and `search`
called, then its standard input closed.

Usage: mcp_recall.py COMMAND_JSON WORKDIR HANDLE ORIGINAL_FILE QUERY

COMMAND_JSON is the command that starts the server (a JSON list); WORKDIR
holds the workspace; HANDLE is the handle a placeholder showed; the file
holds the bytes the fold removed; QUERY is text only those bytes hold.
Prints one JSON object: what the SDK got.
"""

import json
import os
import re
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def page_text(text):
    """The page's own characters, by the count its last line gives."""
    body, last = text.rsplit("\n", 1)
    m = re.search(r"characters (\d+)–(\d+)", last)
    n = int(m.group(2)) - int(m.group(1)) if m else int(re.search(r"all (\d+)", last).group(1))
    return (body + "\n")[:n], last


async def main():
    command, workdir, handle, original_file, query = sys.argv[1:6]
    command = json.loads(command)
    with open(original_file, encoding="utf-8", newline="") as f:
        original = f.read()
    env = {k: os.environ[k] for k in ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "PATH") if k in os.environ}
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=workdir, env=env)
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["protocol"] = init.protocol_version
            tools = (await session.list_tools()).tools
            out["tools"] = {t.name: {"schema": t.input_schema, "description": t.description} for t in tools}

            first = await session.call_tool("recall", {"handle": handle})
            text = first.content[0].text
            out["first"] = {"is_error": first.is_error, "starts_with_original": text.startswith(original)}

            # Pages of 100 characters, by the offset each page's last line gives.
            pages, joined, offset, lasts = 0, "", 0, []
            while True:
                r = await session.call_tool("recall", {"handle": handle, "offset": offset, "limit": 100})
                assert not r.is_error, r.content[0].text
                page, last = page_text(r.content[0].text)
                lasts.append(last)
                joined += page
                pages += 1
                m = re.search(r"with offset (\d+)\]$", last)
                if not m:
                    break
                offset = int(m.group(1))
                assert offset == len(joined), (offset, len(joined))
            out["pages"] = pages
            out["joined_equals_original"] = joined == original
            out["last_line"] = lasts[-1]

            found = await session.call_tool("search", {"query": query, "within": handle})
            out["search"] = {"is_error": found.is_error, "text": found.content[0].text}

            errors = {}
            for name, args in [
                ("bad_handle", {"handle": "this is not a handle"}),
                ("past_the_end", {"handle": handle, "offset": len(original) + 10}),
            ]:
                r = await session.call_tool("recall", args)
                errors[name] = {"is_error": r.is_error, "text": r.content[0].text}
            out["errors"] = errors
    print(json.dumps(out))


anyio.run(main)
