"""The token counter interface: what a formatted prompt costs, in a provider's tokens.

It stands below the packages that use it: formatters and agents take a counter, a chat model
that knows its context window hands one out (``ChatModelBase.prompt_budget``), and the
counters of :mod:`agentscope_rt.token` implement it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

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
