"""What the counters that ask a provider's endpoint share.

:class:`TokenCounterBase`, the interface itself, is the foundation's
(:mod:`agentscope_rt._provider`): a chat model hands one out for its prompt budget.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self

from .._provider import TokenCounterBase

__all__ = ["EndpointTokenCounterBase", "TokenCounterBase"]


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
