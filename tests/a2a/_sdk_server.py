"""An agent served by a2a-sdk's own server classes (on uvicorn, asyncio), in its own process:
``python _sdk_server.py PORT [TOKEN]``. Answers protocol 1.0 and, on the same URL, 0.3. With a
TOKEN, the card declares an HTTP bearer scheme named ``bearer`` and JSON-RPC requests without
``Authorization: Bearer TOKEN`` get 401 (a2a-sdk leaves checking to the application).

The agent echoes ``sdk echo: <text>``; for ``slow ...`` it reports ``working`` and waits until
the task is cancelled.
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Role,
    SecurityRequirement,
    SecurityScheme,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        text = context.get_user_input()
        if text.startswith("slow"):
            await updater.start_work(new_text_message("working on it", role=Role.ROLE_AGENT))
            await asyncio.Event().wait()
        await updater.complete(new_text_message(f"sdk echo: {text}", role=Role.ROLE_AGENT))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(new_text_message("cancelled", role=Role.ROLE_AGENT))


def app(url: str, token: str | None = None) -> Starlette:
    card = AgentCard(
        name="SdkAgent",
        description="an agent served by a2a-sdk",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v)
            for v in ("1.0", "0.3")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    if token:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        requirement = SecurityRequirement()
        requirement.schemes["bearer"].SetInParent()
        card.security_requirements.append(requirement)
    handler = DefaultRequestHandler(
        agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True),
    ]
    served = Starlette(routes=routes)
    if token:

        async def check(request, call_next):  # type: ignore[no-untyped-def]
            given = request.headers.get("authorization", "")
            if request.method == "POST" and given != f"Bearer {token}":
                return JSONResponse({"error": "unauthenticated"}, status_code=401)
            return await call_next(request)

        served.add_middleware(BaseHTTPMiddleware, dispatch=check)
    return served


if __name__ == "__main__":
    port = int(sys.argv[1])
    secret = sys.argv[2] if len(sys.argv) > 2 else None
    uvicorn.run(
        app(f"http://127.0.0.1:{port}/", secret), host="127.0.0.1", port=port, log_level="warning"
    )
