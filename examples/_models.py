"""Which chat model the examples use: a real API model when a key is configured, else local.

``pick_chat_model()`` returns ``(model, formatter_name)``. With ``OPENAI_API_KEY`` set it is an
``OpenAIChatModel`` (model from ``OPENAI_MODEL``, default ``gpt-4o-mini``); otherwise the
in-process ``LlamaCppChatModel`` running SmolLM2-135M-Instruct, which needs no key and no
network. Both read OpenAI-format messages, so the formatter is ``"OpenAIChatFormatter"`` either
way; build it with ``getattr(agentscope_rt.formatter, formatter_name)()``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from agentscope_rt.model import ChatModelBase

FORMATTER_NAME = "OpenAIChatFormatter"


def pick_chat_model(
    stream: bool = False, generate_kwargs: dict[str, Any] | None = None
) -> tuple[ChatModelBase, str]:
    """The examples' chat model and the name of its formatter class in ``agentscope_rt.formatter``.

    :param stream: whether the model streams cumulative chunks.
    :param generate_kwargs: passed to the model for every call (e.g. ``{"max_tokens": 64}``).
    :raises ImportError: when no API key is set and the ``local`` extra is not installed.
    """
    if os.environ.get("OPENAI_API_KEY"):
        from agentscope_rt import model as models

        openai_model = getattr(models, "OpenAIChatModel", None)
        if openai_model is not None:
            chosen = openai_model(
                os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                stream=stream,
                generate_kwargs=generate_kwargs,
            )
            return chosen, FORMATTER_NAME
    from agentscope_rt.model import LlamaCppChatModel

    _show_model_progress()
    return LlamaCppChatModel(stream=stream, generate_kwargs=generate_kwargs), FORMATTER_NAME


def _show_model_progress() -> None:
    """Print the local model's progress lines (a long prompt being read, a tool call being
    generated) to stderr, so a step of several seconds does not look like a hang."""
    log = logging.getLogger("agentscope_rt.model")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("  [%(message)s]"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
