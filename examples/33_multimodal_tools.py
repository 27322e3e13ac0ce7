"""Multimodal tools against a tiny local stand-in for the OpenAI and DashScope image APIs.

The tools speak the real protocols; this script starts a small HTTP server on 127.0.0.1 that
answers like the providers do, and points the tools at it with the environment variables the
SDKs read (``OPENAI_BASE_URL``, ``DASHSCOPE_HTTP_BASE_URL``). Nothing leaves the machine.

1. ``dashscope_text_to_image`` called directly: it submits an asynchronous task, polls it until
   it succeeds and returns the image URL.
2. A ReAct agent whose (scripted) model calls ``openai_text_to_image``; the API key is preset
   at registration, so the model never sees it, and a wrong key comes back as a text the model
   can read — with the key masked.

Run: ``python examples/33_multimodal_tools.py`` (asyncio) or
``python examples/33_multimodal_tools.py trio``.

What to look for: the DashScope task polled until it succeeded and its image URL. Then
``Painter`` prints each tool call and result on the console: with the good key the result holds
an image block; with the wrong key it is the provider's error text with the key masked
(``sk-exa...``), which the model reads like any result. The summary line after each run shows
the schema never asks for ``api_key``.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, dashscope_text_to_image, openai_text_to_image

GOOD_KEY = "sk-example-good"
# The smallest PNG there is (1x1, transparent), as an image service would send it.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


class FakeProviders(BaseHTTPRequestHandler):
    """Answers ``POST /v1/images/generations`` (OpenAI) and DashScope's image-synthesis task."""

    polls = 0

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path == "/v1/images/generations":
            if self.headers["authorization"] != f"Bearer {GOOD_KEY}":
                key = self.headers["authorization"].removeprefix("Bearer ")
                message = f"Incorrect API key provided: {key}."
                self._json(401, {"error": {"message": message, "type": "invalid_request_error"}})
                return
            b64 = base64.b64encode(PIXEL).decode()
            self._json(200, {"created": 1700000000, "data": [{"b64_json": b64}]})
        else:  # /api/v1/services/aigc/text2image/image-synthesis
            self._json(200, {"output": {"task_id": "task-1", "task_status": "PENDING"}})

    def do_GET(self) -> None:  # /api/v1/tasks/task-1
        FakeProviders.polls += 1
        if FakeProviders.polls < 2:
            self._json(200, {"output": {"task_id": "task-1", "task_status": "RUNNING"}})
            return
        results = [{"url": "https://dashscope-result.example/fox.png"}]
        output = {"task_id": "task-1", "task_status": "SUCCEEDED", "results": results}
        self._json(200, {"output": output})


async def call_directly() -> None:
    print("1) dashscope_text_to_image, called directly")
    response = await dashscope_text_to_image("a red fox in the snow", api_key="ds-example")
    print(f"  after {FakeProviders.polls} polls: {response.content}")


async def through_an_agent() -> None:
    print("\n2) a ReAct agent calling openai_text_to_image")
    for key in (GOOD_KEY, "sk-example-wrong"):
        toolkit = Toolkit()
        toolkit.register_tool_function(openai_text_to_image, preset_kwargs={"api_key": key})
        parameters = toolkit.get_json_schemas()[0]["function"]["parameters"]
        model = ScriptedChatModel(
            [
                reply(tool_call("openai_text_to_image", {"prompt": "a red fox", "n": 1})),
                reply("Here is your picture."),
            ]
        )
        agent = ReActAgent(
            name="Painter",
            sys_prompt="You draw pictures.",
            model=model,
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
        )
        await agent(Msg("user", "Draw me a fox.", "user"))
        memory = await agent.memory.get_memory()
        (result,) = memory[2].get_content_blocks("tool_result")
        shown = [b.text if b.type == "text" else f"<{b.type}: {b.source}>" for b in result.output]
        print(f"  key {key!r}: schema asks for {parameters['required']}; tool result {shown}")


async def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProviders)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ["OPENAI_BASE_URL"] = f"{base}/v1"
    os.environ["DASHSCOPE_HTTP_BASE_URL"] = f"{base}/api/v1"
    try:
        await call_directly()
        await through_an_agent()
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
