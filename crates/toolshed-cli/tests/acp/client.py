"""An ACP client on the official Python SDK (PyPI `agent-client-protocol`), driving `toolshed acp`.

Usage: client.py TOOLSHED WORKDIR OUT.json MODE [ARG]

Modes: turns, load SESSION_ID, badload SESSION_ID, fs, once, image, badcwd, mcp SERVERS_JSON, concurrent.

It records every session/update and permission request it receives (answering "allow once"),
and writes what happened to OUT.json for the Rust test to check.
"""

import asyncio
import json
import os
import sys
import time

from acp import PROTOCOL_VERSION, image_block, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)


def error_text(e):
    """A JSON-RPC error as its message and data (where toolshed says what went wrong)."""
    data = getattr(e, "data", None)
    return f"{e}: {data}" if data is not None else str(e)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Recorder:
    def __init__(self, buffers):
        self.updates = []
        self.permissions = []
        self.reads = []
        self.writes = []
        self.buffers = buffers

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append({"tool_call": dump(tool_call), "options": [dump(o) for o in options]})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="allow_once"))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(dump(update))

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.reads.append(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append({"path": path, "content": content})
        self.buffers[path] = content
        return WriteTextFileResponse()

    def on_connect(self, conn):
        pass


async def main():
    binary, workdir, out, mode = sys.argv[1:5]
    buffers = {}
    if mode == "fs":
        # The editor's unsaved buffer differs from the file on disk.
        buffers[os.path.join(workdir, "notes.txt")] = "unsaved text in the editor\n"
    recorder = Recorder(buffers)
    result = {}
    async with spawn_agent_process(recorder, binary, "acp", env=dict(os.environ), cwd=workdir) as (conn, _process):
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=mode == "fs", write_text_file=mode == "fs")
        )
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        result["init"] = dump(init)
        if mode in ("turns", "fs"):
            new = await conn.new_session(cwd=workdir, mcp_servers=[])
            result["session"] = new.session_id
            result["modes"] = dump(new.modes) if new.modes else None
            first = await conn.prompt(session_id=new.session_id, prompt=[text_block("read, edit and run")])
            result["stop1"] = first.stop_reason
            if mode == "turns":
                # Cancelled mid-turn: the turn ends with `cancelled`; a prompt sent right after
                # the cancel runs once the cancelled turn has wound down.
                slow = asyncio.create_task(
                    conn.prompt(session_id=new.session_id, prompt=[text_block("take your time")])
                )
                await asyncio.sleep(1.5)
                await conn.cancel(session_id=new.session_id)
                third = asyncio.create_task(
                    conn.prompt(session_id=new.session_id, prompt=[text_block("and now this")])
                )
                second = await asyncio.wait_for(slow, 10)
                result["stop2"] = second.stop_reason
                result["stop3"] = (await asyncio.wait_for(third, 10)).stop_reason
        elif mode == "once":
            new = await conn.new_session(cwd=workdir, mcp_servers=[])
            result["stop1"] = (await conn.prompt(session_id=new.session_id, prompt=[text_block("look")])).stop_reason
        elif mode == "image":
            new = await conn.new_session(cwd=workdir, mcp_servers=[])
            result["session"] = new.session_id
            png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
            prompt = [text_block("what is in"), image_block(png, "image/png"), text_block("this screenshot?")]
            result["stop1"] = (await conn.prompt(session_id=new.session_id, prompt=prompt)).stop_reason
            # An image no model takes is refused with a message for the person.
            try:
                svg = image_block("PHN2Zy8+", "image/svg+xml")
                await conn.prompt(session_id=new.session_id, prompt=[text_block("and this"), svg])
                result["svg_error"] = None
            except Exception as e:
                result["svg_error"] = error_text(e)
        elif mode == "badcwd":
            # Each must be refused: the root, a relative path, a directory that does not exist.
            result["errors"] = []
            for cwd in ["/", "relative/dir", os.path.join(workdir, "missing")]:
                try:
                    await conn.new_session(cwd=cwd, mcp_servers=[])
                    result["errors"].append(None)
                except Exception as e:
                    result["errors"].append(error_text(e))
        elif mode == "mcp":
            servers = [
                McpServerStdio(
                    name=s["name"],
                    command=s["command"],
                    args=s["args"],
                    env=[EnvVariable(name=k, value=v) for k, v in s.get("env", {}).items()],
                )
                for s in json.loads(sys.argv[5])
            ]
            new = await conn.new_session(cwd=workdir, mcp_servers=servers)
            result["stop1"] = (await conn.prompt(session_id=new.session_id, prompt=[text_block("use both")])).stop_reason
        elif mode == "concurrent":
            # A session whose MCP server takes seconds to start does not hold up another
            # session's prompt.
            first = await conn.new_session(cwd=workdir, mcp_servers=[])
            started = time.monotonic()
            slow_server = McpServerStdio(name="slow", command="/bin/sh", args=["-c", "sleep 4"], env=[])

            async def slow_session():
                try:
                    await conn.new_session(cwd=workdir, mcp_servers=[slow_server])
                except Exception:
                    pass
                return time.monotonic() - started

            slow = asyncio.create_task(slow_session())
            await asyncio.sleep(0.3)
            answer = await conn.prompt(session_id=first.session_id, prompt=[text_block("quick")])
            result["stop1"] = answer.stop_reason
            result["prompt_done"] = time.monotonic() - started
            result["slow_done"] = await asyncio.wait_for(slow, 60)
        elif mode == "load":
            await conn.load_session(cwd=workdir, session_id=sys.argv[5], mcp_servers=[])
        elif mode == "badload":
            # A session id that is not one must be refused, touching nothing.
            try:
                await conn.load_session(cwd=workdir, session_id=sys.argv[5], mcp_servers=[])
                result["error"] = None
            except Exception as e:  # the SDK raises the JSON-RPC error
                result["error"] = str(e)
        result["updates"] = recorder.updates
        result["permissions"] = recorder.permissions
        result["reads"] = recorder.reads
        result["writes"] = recorder.writes
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


asyncio.run(main())
