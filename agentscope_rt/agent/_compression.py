"""Memory compression for the ReAct agent: configuration, default summary, and where to cut.

When the uncompressed part of an agent's memory grows past a token threshold, the older
messages are summarised by a model into a structured summary; the messages are then marked
``compressed`` (kept, but no longer sent to the model) and the summary is sent in their place.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import aclosing
from typing import Any

import attrs
from pydantic import BaseModel, Field

from .._schema import StructuredModel, is_structured_model
from ..formatter import FormatterBase
from ..memory import MemoryMark
from ..message import Msg
from ..model import ChatModelBase, ChatResponse
from ..token import TokenCounterBase
from ._react_host import ReActHost

logger = logging.getLogger("agentscope_rt.agent")

_COMPRESSED = MemoryMark.COMPRESSED.value

__all__ = ["CompressionConfig", "SummarySchema", "compress_memory_if_needed", "compression_cut"]

DEFAULT_COMPRESSION_PROMPT = (
    "<system-hint>You have been working on the task described above but have not yet "
    "completed it. Now write a continuation summary that will allow you to resume work "
    "efficiently in a future context window where the conversation history will be replaced "
    "with this summary. Your summary should be structured, concise, and actionable."
    "</system-hint>"
)
"""Asks the model for the summary; sent as the last (user) message of the compression call."""

DEFAULT_SUMMARY_TEMPLATE = (
    "<system-info>Here is a summary of your previous work\n"
    "# Task Overview\n"
    "{task_overview}\n\n"
    "# Current State\n"
    "{current_state}\n\n"
    "# Important Discoveries\n"
    "{important_discoveries}\n\n"
    "# Next Steps\n"
    "{next_steps}\n\n"
    "# Context to Preserve\n"
    "{context_to_preserve}"
    "</system-info>"
)
"""Presents the summary to the agent; filled with the fields of the summary schema."""


class SummarySchema(BaseModel):
    """The default structure of a compressed-memory summary."""

    task_overview: str = Field(
        max_length=300,
        description=(
            "The user's core request and success criteria.\n"
            "Any clarifications or constraints they specified"
        ),
    )
    current_state: str = Field(
        max_length=300,
        description=(
            "What has been completed so far.\n"
            "File created, modified, or analyzed (with paths if relevant).\n"
            "Key outputs or artifacts produced."
        ),
    )
    important_discoveries: str = Field(
        max_length=300,
        description=(
            "Technical constraints or requirements uncovered.\n"
            "Decisions made and their rationale.\n"
            "Errors encountered and how they were resolved.\n"
            "What approaches were tried that didn't work (and why)"
        ),
    )
    next_steps: str = Field(
        max_length=200,
        description=(
            "Specific actions needed to complete the task.\n"
            "Any blockers or open questions to resolve.\n"
            "Priority order if multiple steps remain"
        ),
    )
    context_to_preserve: str = Field(
        max_length=300,
        description=(
            "User preferences or style requirements.\n"
            "Domain-specific details that aren't obvious.\n"
            "Any promises made to the user"
        ),
    )


def _check_counter(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, TokenCounterBase):
        raise TypeError(
            f"CompressionConfig.{attribute.name} must be a TokenCounterBase (e.g. "
            f"CharTokenCounter()), not {type(value).__name__}"
        )


def _check_non_negative(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"CompressionConfig.{attribute.name} must be a non-negative integer, not {value!r}"
        )


def _check_model(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, ChatModelBase):
        raise TypeError(
            f"CompressionConfig.compression_model must be a ChatModelBase or None, not "
            f"{type(value).__name__}"
        )


def _check_formatter(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, FormatterBase):
        raise TypeError(
            f"CompressionConfig.compression_formatter must be a FormatterBase or None, not "
            f"{type(value).__name__}"
        )


def _check_schema(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not is_structured_model(value):
        raise TypeError(
            "CompressionConfig.summary_schema must be a pydantic model class, an attrs class "
            f"or a JSON schema dict, not {value!r}"
        )


@attrs.define(kw_only=False)
class CompressionConfig:
    """When and how a :class:`~agentscope_rt.agent.ReActAgent` compresses its memory.

    Before each reasoning step, the uncompressed messages except the newest *keep_recent*
    (moved back as needed so that no tool call is separated from its result) are formatted
    and counted; above *trigger_threshold* tokens they are summarised.

    :param enable: whether compression is on.
    :param agent_token_counter: counts tokens for the agent's model.
    :param trigger_threshold: the token count above which compression runs.
    :param keep_recent: how many of the newest messages always stay uncompressed.
    :param compression_model: the model that writes the summary (default: the agent's).
    :param compression_formatter: its formatter (required with *compression_model*).
    :param summary_schema: the structure the summary is generated in (pydantic model, attrs
        class or JSON schema); its fields fill *summary_template*.
    :param summary_template: a ``str.format`` template over the schema's fields.
    :param compression_prompt: the instruction sent after the messages to compress.
    :raises TypeError: for a counter, schema, model or formatter of the wrong type.
    :raises ValueError: for a negative threshold or *keep_recent*, or a compression model
        without its formatter.
    """

    enable: bool
    agent_token_counter: TokenCounterBase = attrs.field(validator=_check_counter)
    trigger_threshold: int = attrs.field(validator=_check_non_negative)
    keep_recent: int = attrs.field(default=3, validator=_check_non_negative)
    compression_model: ChatModelBase | None = attrs.field(default=None, validator=_check_model)
    compression_formatter: FormatterBase | None = attrs.field(
        default=None, validator=_check_formatter
    )
    summary_schema: StructuredModel = attrs.field(default=SummarySchema, validator=_check_schema)
    summary_template: str = DEFAULT_SUMMARY_TEMPLATE
    compression_prompt: str = DEFAULT_COMPRESSION_PROMPT

    def __attrs_post_init__(self) -> None:
        if self.compression_model is not None and self.compression_formatter is None:
            raise ValueError(
                "CompressionConfig: a compression_model needs its compression_formatter too "
                "(the formatter matching that model's provider)"
            )


def compression_cut(msgs: Sequence[Msg], keep_recent: int) -> int:
    """How many of the oldest *msgs* to compress (0: none).

    The newest messages kept are at least *keep_recent* and start at a point where no tool
    result in the kept part belongs to a call in the compressed part, so a ``tool_use`` and its
    ``tool_result`` are always on the same side. When no such point leaves anything to
    compress, nothing is compressed.
    """
    total = len(msgs)
    # Results seen in the kept part whose calls have not been seen yet: a cut is allowed
    # only where this is empty.
    open_results: set[str] = set()
    for start in range(total - 1, -1, -1):
        if total - (start + 1) >= keep_recent and not open_results:
            return start + 1
        msg = msgs[start]
        if msg.content.__class__ is str:
            continue
        for block in msg.content:
            kind = block.type  # type: ignore[union-attr]
            if kind == "tool_result":
                open_results.add(block.id)  # type: ignore[union-attr]
            elif kind == "tool_use":
                open_results.discard(block.id)  # type: ignore[union-attr]
    return 0


async def compress_memory_if_needed(agent: ReActHost, config: CompressionConfig | None) -> None:
    """Summarise the older uncompressed messages of *agent*'s memory when they exceed the
    token threshold of *config* (its compression configuration)."""
    if config is None or not config.enable:
        return
    uncompressed = await agent.memory.get_memory(exclude_mark=_COMPRESSED)
    cut = compression_cut(uncompressed, config.keep_recent)
    if cut == 0:
        return
    to_compress = uncompressed[:cut]
    sys_msg = agent._system_msg()
    prompt = await agent.formatter.format([sys_msg, *to_compress])
    n_tokens = await config.agent_token_counter.count(prompt)
    if n_tokens <= config.trigger_threshold:
        return
    logger.info(
        "%s: compressing %d messages (%d tokens > threshold %d)",
        agent.name,
        len(to_compress),
        n_tokens,
        config.trigger_threshold,
    )
    formatter = config.compression_formatter or agent.formatter
    model = config.compression_model or agent.model
    compression_prompt = await formatter.format(
        [sys_msg, *to_compress, Msg("user", config.compression_prompt, "user")]
    )
    res = await model(compression_prompt, structured_model=config.summary_schema)
    last: ChatResponse | None = None
    if isinstance(res, ChatResponse):
        last = res
    else:
        async with aclosing(res) as stream:
            async for chunk in stream:
                last = chunk
    if last is None:
        return
    agent._add_usage(last.usage)
    if not last.metadata:
        logger.warning(
            "%s: the compression model returned no structured summary; memory left as is",
            agent.name,
        )
        return
    try:
        summary = config.summary_template.format(**last.metadata)
    except (KeyError, IndexError, ValueError) as exc:
        logger.warning(
            "%s: the summary template does not fit the summary (%s); memory left as is",
            agent.name,
            exc,
        )
        return
    await agent.memory.update_compressed_summary(summary)
    await agent.memory.update_messages_mark(
        new_mark=_COMPRESSED, msg_ids=[m.id for m in to_compress]
    )
