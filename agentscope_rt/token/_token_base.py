"""The token counter interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Self

__all__ = ["TokenCounterBase"]


class TokenCounterBase(ABC):
    """Counts the tokens a formatted prompt will cost.

    Counters are async: some ask a provider's endpoint, and CPU-heavy local counting of large
    prompts runs in a worker thread so it does not stall the event loop.
    """

    @abstractmethod
    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Count the tokens of *messages* (provider-shaped dicts, as a formatter returns them)
        and of the tool schemas *tools*.

        :param messages: the formatted messages; not modified.
        :param tools: tool JSON schemas sent with the prompt.
        :returns: the number of input tokens (an estimate where the counter says so).
        """


class EndpointTokenCounterBase(TokenCounterBase, ABC):
    """A counter that asks a provider's endpoint, holding an HTTP client until closed:
    ``await counter.close()``, or use it as ``async with counter: ...``."""

    @abstractmethod
    async def close(self) -> None:
        """Release the HTTP client."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
