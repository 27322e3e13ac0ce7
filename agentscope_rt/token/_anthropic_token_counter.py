"""Anthropic token counting through the Messages API's ``count_tokens`` endpoint."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..exception import ModelAPIError
from ._token_base import EndpointTokenCounterBase

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicTokenCounter"]


def _anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool schemas in Anthropic's shape (OpenAI function schemas are converted)."""
    converted = []
    for tool in tools:
        function = tool.get("function") if tool.get("type") == "function" else None
        if isinstance(function, dict):
            item: dict[str, Any] = {
                "name": function["name"],
                "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
            }
            if function.get("description"):
                item["description"] = function["description"]
            converted.append(item)
        else:
            converted.append(tool)
    return converted


class AnthropicTokenCounter(EndpointTokenCounterBase):
    """Count tokens exactly with Anthropic's ``messages.count_tokens`` endpoint.

    Takes the output of the Anthropic formatters: a leading ``role: "system"`` message is sent
    as the ``system`` parameter; tool schemas in OpenAI's function format are converted to
    Anthropic's. The caller's list is not modified (AgentScope pops the system message off it).
    Close the counter (``await counter.close()`` or ``async with``) to release its HTTP client.

    :param model_name: the Claude model, e.g. ``"claude-sonnet-4-5"``.
    :param api_key: the API key; defaults to ``ANTHROPIC_API_KEY``. Never shown in reprs.
    :param client_kwargs: passed to :class:`anthropic.AsyncAnthropic` (``base_url``,
        ``max_retries``, ``timeout``...).
    """

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        # Imported here: the SDK takes seconds to import, and most applications never count
        # tokens with it.
        import anthropic

        self.model_name = model_name
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or os.environ.get("ANTHROPIC_API_KEY"), **(client_kwargs or {})
        )

    def __repr__(self) -> str:
        return f"AnthropicTokenCounter(model_name={self.model_name!r})"

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Ask the endpoint for the input tokens of *messages* and *tools*.

        :param kwargs: further ``count_tokens`` parameters (e.g. ``thinking``).
        :raises ModelAPIError: when the endpoint answers with an error or cannot be reached
            (after the SDK's retries), naming the status and the provider's message.
        """
        messages = list(messages)
        request: dict[str, Any] = {"model": self.model_name, **kwargs}
        if messages and messages[0].get("role") == "system":
            system = messages.pop(0).get("content")
            if isinstance(system, list):
                system = [
                    {"type": "text", "text": b["text"]}
                    for b in system
                    if isinstance(b, dict) and b.get("text")
                ]
            if system:
                request["system"] = system
        request["messages"] = messages
        if tools:
            request["tools"] = _anthropic_tools(tools)
        import anthropic  # already loaded by __init__

        try:
            result = await self._client.messages.count_tokens(**request)
        except anthropic.APIStatusError as error:
            raise ModelAPIError(
                "anthropic",
                _error_message(error),
                status_code=error.status_code,
            ) from None
        except anthropic.APIConnectionError as error:
            raise ModelAPIError("anthropic", f"count_tokens failed: {error}") from None
        return int(result.input_tokens)


def _error_message(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        detail = body.get("error")
        if isinstance(detail, dict) and detail.get("message"):
            return str(detail["message"])
    return str(error.message)
