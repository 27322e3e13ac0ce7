"""Finding a remote agent in a Nacos registry, offline.

An agent is served over A2A (``A2AServer``) and its card published, in two versions, to a small
local stand-in for a Nacos 3 server (Starlette on hypercorn, answering Nacos's login and A2A
card routes with a user and password). ``NacosAgentCardResolver`` logs in, fetches the latest
card and an older version by name, and ``A2AAgent`` calls the agent the card points to; an
agent that is not registered is a clear ``A2AError``. Everything runs in this one program.

Offline (the served agent's model is a FunctionChatModel double); needs the ``a2a`` extra.
Run with ``python examples/91_a2a_nacos.py`` (add ``trio`` to run on trio).

What to look for: the served agent and the calling A2AAgent each print the answer; then the
resolver's line (no password in it), the two card versions Nacos returned by name, the reply
that came back over A2A from the card the registry pointed to, and the clear error for an
agent nobody registered.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from _serve import serve_local
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agentscope_rt.a2a import (
    A2AAgent,
    A2AServer,
    NacosAgentCardResolver,
    NacosClientConfig,
    WellKnownAgentCardResolver,
    card_to_dict,
)
from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import A2AError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel

USER, PASSWORD, TOKEN = "nacos", "example-password", "example-token"


def nacos_app(registry: dict[tuple[str, str], dict[str, Any]]) -> Starlette:
    """A stand-in for Nacos 3: ``registry`` maps (namespace, agent name) to its cards by
    version, the last one the latest."""

    async def login(request: Request) -> Response:
        form = await request.form()
        if (form.get("username"), form.get("password")) != (USER, PASSWORD):
            return PlainTextResponse("user not found!", status_code=403)
        return JSONResponse({"accessToken": TOKEN, "tokenTtl": 18000, "globalAdmin": False})

    async def agent_card(request: Request) -> Response:
        if request.headers.get("accessToken") != TOKEN:
            return PlainTextResponse("authorization failed!", status_code=403)
        query = request.query_params
        name = query.get("agentName", "")
        versions = registry.get((query.get("namespaceId", "public"), name), {})
        version = query.get("version") or next(reversed(versions), "")
        if version not in versions:
            body = {"code": 20004, "message": "resource not found", "data": f"{name} not found"}
            return JSONResponse(body, status_code=404)
        return JSONResponse({"code": 0, "message": "success", "data": versions[version]})

    return Starlette(
        routes=[
            Route("/nacos/v3/auth/user/login", login, methods=["POST"]),
            Route("/nacos/v3/admin/ai/a2a", agent_card, methods=["GET"]),
        ]
    )


def weather_agent() -> ReActAgent:
    agent = ReActAgent(
        name="Weather",
        sys_prompt="You tell the weather.",
        model=FunctionChatModel(lambda messages, tools: "Sunny, 21 degrees."),
        formatter=OpenAIChatFormatter(),
    )
    return agent


async def main() -> None:
    registry: dict[tuple[str, str], dict[str, Any]] = {}
    async with anyio.create_task_group() as group:
        agent_url = await group.start(A2AServer(weather_agent()).serve)
        nacos = await group.start(serve_local, nacos_app(registry))
        # What the served side does when it registers: publish its card, here in two versions.
        card = card_to_dict(await WellKnownAgentCardResolver(agent_url).get_agent_card())
        registry["public", "weather"] = {
            "1.0.0": {**card, "version": "1.0.0", "registrationType": "URL"},
            "1.1.0": {**card, "version": "1.1.0", "registrationType": "URL"},
        }

        config = NacosClientConfig(nacos, username=USER, password=PASSWORD)
        print("resolver:", NacosAgentCardResolver("weather", config))
        latest = await NacosAgentCardResolver("weather", config).get_agent_card()
        older = await NacosAgentCardResolver("weather", config, "1.0.0").get_agent_card()
        print(f"from Nacos: {latest.name!r} {latest.version} and {older.version}")
        remote = A2AAgent(latest)
        reply = await remote(Msg("user", "What is the weather?", "user"))
        print("reply:", reply.get_text_content())
        try:
            await NacosAgentCardResolver("translator", config).get_agent_card()
        except A2AError as exc:
            print("not registered:", exc)
        group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, backend="trio" if "trio" in sys.argv[1:] else "asyncio")
