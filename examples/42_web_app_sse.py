"""A web app serving a ReActAgent: the reply streams to the browser as server-sent events.

One file: a Starlette app with two routes, served by hypercorn in the program's own event loop
(hypercorn has a trio ``serve`` and an asyncio ``serve``; uvicorn would be asyncio-only):

* ``GET /`` is a tiny HTML page: type a question, and an ``EventSource`` shows the answer as it
  is generated;
* ``GET /chat?q=...`` answers with ``text/event-stream``: the agent's reply runs inside
  ``stream_printing_messages([agent], agent(msg))`` (AgentScope's way of turning what agents
  print into a stream), and every printed chunk becomes one ``event: chunk`` with the new text;
  ``event: done`` carries the whole answer. The agent's console output stays on: the server's
  terminal shows the same reply streaming.

Each request gets its own ``ReActAgent`` (a fresh memory) sharing one model (the local
SmolLM2-135M through llama.cpp, or OpenAI with ``OPENAI_API_KEY``); the local model answers one
request at a time, in worker threads, so the server keeps serving while it generates.

Needs the ``studio`` extra (Starlette, hypercorn): ``pip install -e ".[studio,local]"``.

Run with ``python examples/42_web_app_sse.py`` (asyncio) or ``python examples/42_web_app_sse.py
trio`` and open the printed URL; Ctrl+C stops it. With ``AGENTSCOPE_RT_EXAMPLES=1`` it starts the
server on 127.0.0.1 on a free port, fetches the page, streams one reply with httpx, prints the
events as they arrive, stops the server (hypercorn's ``shutdown_trigger``) and exits.

What to look for:

* ``serving on http://127.0.0.1:PORT/`` and ``page: ... EventSource ...``;
* ``[client] event: chunk data: {"text": ...}`` lines arriving while the server's
  ``Friday: ...`` line grows in the same terminal;
* ``[client] event: done`` with the whole answer, then ``server stopped``.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import sniffio
from hypercorn.config import Config
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, StreamingResponse
from starlette.routing import Route

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatModelBase
from agentscope_rt.pipeline import stream_printing_messages

# The examples share a helper module next to them; make it importable however we are run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Friday</title></head>
<body>
<h1>Ask Friday</h1>
<form id="ask"><input id="q" size="60" value="What is a rainbow?"> <button>Ask</button></form>
<p id="answer"></p>
<script>
document.getElementById("ask").onsubmit = (event) => {
  event.preventDefault();
  const answer = document.getElementById("answer");
  answer.textContent = "";
  const q = encodeURIComponent(document.getElementById("q").value);
  const source = new EventSource("/chat?q=" + q);
  source.addEventListener("chunk", (e) => { answer.textContent += JSON.parse(e.data).text; });
  source.addEventListener("done", () => source.close());
  source.addEventListener("error", () => source.close());
};
</script>
</body></html>
"""


def sse(event: str, data: dict[str, Any]) -> str:
    """One server-sent event (JSON data keeps newlines inside one ``data:`` line)."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def make_app(model: ChatModelBase, formatter_name: str) -> Starlette:
    """The web app: the page, and the chat route streaming the agent's reply."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    async def chat(request: Request) -> StreamingResponse:
        question = request.query_params.get("q", "").strip() or "Hello!"
        agent = ReActAgent(
            name="Friday",
            sys_prompt="You are Friday, a helpful assistant. Answer in one or two sentences.",
            model=model,
            formatter=getattr(agentscope_rt.formatter, formatter_name)(),
            max_iters=2,
        )
        return StreamingResponse(reply_events(agent, question), media_type="text/event-stream")

    return Starlette(routes=[Route("/", page), Route("/chat", chat)])


async def reply_events(agent: ReActAgent, question: str) -> AsyncIterator[str]:
    """The agent's reply as SSE text: a ``chunk`` per printed piece, then ``done``."""
    shown = ""
    final = ""
    stream = stream_printing_messages([agent], agent(Msg("user", question, "user")))
    async for msg, last in stream:
        text = msg.get_text_content() or ""
        if text.startswith(shown) and len(text) > len(shown):
            yield sse("chunk", {"text": text[len(shown) :]})
        shown = "" if last else text  # chunks are cumulative within one printed message
        if last:
            final = text
    yield sse("done", {"text": final})


def listening_socket() -> socket.socket:
    """A socket bound to a free port on 127.0.0.1 (hypercorn takes it by file descriptor)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def hypercorn_serve() -> Callable[..., Any]:
    """hypercorn's serve function for the event loop we are running in."""
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as trio_serve

        return trio_serve
    from hypercorn.asyncio import serve as asyncio_serve

    return asyncio_serve


async def ask_once(base_url: str) -> None:
    """What the unattended run does instead of a browser: the page, then one streamed reply."""
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        page = (await client.get("/")).text
        print(f"[client] page: {len(page)} bytes, uses EventSource: {'EventSource' in page}")
        params = {"q": "What is a rainbow?"}
        async with client.stream("GET", "/chat", params=params) as response:
            print(f"[client] content-type: {response.headers['content-type']}")
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    print(f"\n[client] event: {event} data: {line.removeprefix('data: ')}")


async def main() -> None:
    model, formatter_name = pick_chat_model(
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 48}
    )
    sock = listening_socket()
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    stopped = anyio.Event()
    serve = hypercorn_serve()
    app = make_app(model, formatter_name)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve(app, config, shutdown_trigger=stopped.wait))
        print(f"serving on {base_url}/ ({sniffio.current_async_library()})")
        if os.environ.get("AGENTSCOPE_RT_EXAMPLES"):
            await ask_once(base_url)
            stopped.set()  # hypercorn finishes open requests and returns
        else:
            print("open it in a browser; Ctrl+C stops the server")
    print("server stopped")


if __name__ == "__main__":
    try:
        anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
    except* KeyboardInterrupt:  # Ctrl+C; inside trio's task groups it comes wrapped in a group
        print("\nserver stopped")
