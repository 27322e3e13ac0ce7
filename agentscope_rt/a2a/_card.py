"""Agent cards: reading them in any form AgentScope programs hold them, and finding them.

a2a-sdk 1.x's ``AgentCard`` is a protobuf message (protocol 1.0); AgentScope 1.x (a2a-sdk 0.3)
builds cards as pydantic models of protocol 0.3 and saves them as that JSON. :func:`to_agent_card`
takes any of them and returns the 1.x message; a 0.3 card keeps its protocol version, so a client
built from it speaks 0.3 to its server.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import anyio
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import to_core_agent_card
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from google.protobuf.json_format import ParseError

from .._provider import redact_text
from .._urls import redact_url, url_redactions
from ..exception import A2AError
from ._http import new_http_client

__all__ = [
    "AgentCardResolverBase",
    "FileAgentCardResolver",
    "WellKnownAgentCardResolver",
    "build_agent_card",
    "card_to_dict",
    "to_agent_card",
]

# A card resolved over HTTP waits as long as AgentScope's resolver does.
_HTTP_TIMEOUT_S = 600.0


def to_agent_card(card: Any) -> AgentCard:
    """The a2a-sdk 1.x ``AgentCard`` for *card*: a 1.x card (returned as is), a protocol 0.3
    card (a2a-sdk 0.3's pydantic model, as AgentScope builds them, or a2a-sdk 1.x's
    ``a2a.compat.v0_3.types.AgentCard``) or the card's JSON as a dict, in either protocol.

    :raises TypeError: for anything else.
    :raises A2AError: for a dict that is not a valid agent card (the message says why).
    """
    if isinstance(card, AgentCard):
        return card
    if isinstance(card, types_v03.AgentCard):
        return to_core_agent_card(card)
    if isinstance(card, dict):
        return _card_from_json(card, "the agent card")
    dump = getattr(card, "model_dump", None)
    if callable(dump) and type(card).__name__ == "AgentCard":
        # a2a-sdk 0.3's own pydantic class (another install of the package): its JSON.
        return _card_from_json(dump(mode="json", by_alias=True, exclude_none=True), "the card")
    raise TypeError(
        "agent_card must be an a2a-sdk AgentCard (1.x, or a protocol 0.3 card) or its JSON as "
        f"a dict, not {type(card).__name__}"
    )


def _card_from_json(data: dict[str, Any], where: str) -> AgentCard:
    # parse_agent_card rewrites its argument in place (legacy fields into 1.0 ones).
    try:
        card = parse_agent_card(json.loads(json.dumps(data)))
    except (ParseError, TypeError, ValueError) as exc:
        raise A2AError(f"{where} is not a valid A2A agent card: {exc}") from None
    if not card.name:
        raise A2AError(f"{where} is not a valid A2A agent card: it has no name")
    if not card.supported_interfaces:
        raise A2AError(
            f"{where} is not a valid A2A agent card: it gives no URL to reach the agent "
            "(neither 'supportedInterfaces' nor 'url')"
        )
    return card


def card_to_dict(card: AgentCard) -> dict[str, Any]:
    """The JSON a server publishes for *card*: protocol 1.0's fields together with protocol
    0.3's (``url``, ``protocolVersion``, ...), so clients of either version can read it."""
    return agent_card_to_dict(card)


def build_agent_card(
    name: str,
    url: str,
    *,
    description: str = "",
    version: str = "1.0.0",
    streaming: bool = True,
    skills: list[AgentSkill] | None = None,
    input_modes: tuple[str, ...] = ("text/plain",),
    output_modes: tuple[str, ...] = ("text/plain",),
) -> AgentCard:
    """A card for an agent served at *url* over JSON-RPC, in protocol 1.0 and 0.3 (both are
    answered at the same URL by :class:`~agentscope_rt.a2a.A2AServer`).

    :raises ValueError: for a *url* that is not an absolute http(s) URL.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"url must be an absolute http(s) URL, not {redact_url(url)!r}")
    return AgentCard(
        name=name,
        description=description or f"{name}, an agentscope-rt agent",
        version=version,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=v)
            for v in ("1.0", "0.3")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=list(input_modes),
        default_output_modes=list(output_modes),
        skills=skills
        or [AgentSkill(id="chat", name="chat", description=description or name, tags=["chat"])],
    )


class AgentCardResolverBase:
    """Base class of agent card resolvers: :meth:`get_agent_card` fetches a card from
    somewhere (AgentScope's ``AgentCardResolverBase``)."""

    @abstractmethod
    async def get_agent_card(self, *args: Any, **kwargs: Any) -> AgentCard:
        """The resolved agent card (a2a-sdk 1.x ``AgentCard``)."""


class FileAgentCardResolver(AgentCardResolverBase):
    """Reads an agent card from a JSON file: protocol 0.3's JSON as AgentScope saves it
    (``name``, ``url``, ``version``, ``capabilities``, ``default_input_modes`` ...) or protocol
    1.0's.

    :param file_path: the JSON file.
    """

    def __init__(self, file_path: str) -> None:
        self._file_path = file_path

    async def get_agent_card(self) -> AgentCard:
        """The card in the file (read in a worker thread).

        :raises FileNotFoundError: when the file does not exist.
        :raises ValueError: when the path is not a file.
        :raises A2AError: when the file is not JSON or not an agent card.
        """
        path = Path(self._file_path)
        if not await anyio.to_thread.run_sync(path.exists):
            raise FileNotFoundError(f"Agent card file not found: {self._file_path}")
        if not await anyio.to_thread.run_sync(path.is_file):
            raise ValueError(f"Path is not a file: {self._file_path}")
        text = await anyio.to_thread.run_sync(path.read_text, "utf-8")
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise A2AError(f"agent card file {self._file_path} is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise A2AError(f"agent card file {self._file_path} does not hold a JSON object")
        return _card_from_json(_snake_to_camel_card(data), f"agent card file {self._file_path}")


def _snake_to_camel_card(data: dict[str, Any]) -> dict[str, Any]:
    """AgentScope's documented file layout uses pydantic's field names (``default_input_modes``),
    which a2a-sdk 0.3 accepts besides the camelCase wire names; protobuf wants the latter."""
    renamed = {}
    for key, value in data.items():
        head, *rest = key.split("_")
        renamed[head + "".join(part.title() for part in rest)] = value
    return renamed


class WellKnownAgentCardResolver(AgentCardResolverBase):
    """Fetches the agent card a server publishes (by default at
    ``/.well-known/agent-card.json``).

    :param base_url: the server's URL; a path in it is where the card is looked for, relative to
        the server's root, when *agent_card_path* is not given.
    :param agent_card_path: the card's path relative to the base URL.
    """

    def __init__(self, base_url: str, agent_card_path: str | None = None) -> None:
        self._base_url = base_url
        self._agent_card_path = agent_card_path

    async def get_agent_card(self) -> AgentCard:
        """The card the server publishes.

        :raises ValueError: for a base URL that is not absolute.
        :raises A2AError: when the card cannot be fetched or read (it is also a RuntimeError,
            as AgentScope raises).
        """
        parsed = urlparse(self._base_url)
        if not parsed.scheme or not parsed.netloc:
            raise ValueError(f"Invalid URL format: {redact_url(self._base_url)}")
        base_url = f"{parsed.scheme}://{parsed.netloc}"
        path = (
            self._agent_card_path
            if self._agent_card_path is not None
            else AGENT_CARD_WELL_KNOWN_PATH
        )
        try:
            async with await new_http_client(_HTTP_TIMEOUT_S) as http:
                resolver = A2ACardResolver(
                    httpx_client=http, base_url=base_url, agent_card_path=path
                )
                # A bare "/" is the server's root, not a card path.
                relative = parsed.path if parsed.path.strip("/") else None
                return await resolver.get_agent_card(relative_card_path=relative)
        except Exception as exc:
            shown = redact_url(self._base_url)
            reason = redact_text(str(exc), url_redactions(self._base_url))
            # The cause's text holds the URL as given: not chained when that has credentials.
            cause = exc if shown == self._base_url else None
            raise A2AError(f"Failed to resolve AgentCard from URL {shown}: {reason}") from cause
