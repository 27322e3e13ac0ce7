"""Formatter base classes: messages in, provider payload out, within a token budget.

A formatter turns ``list[Msg]`` into the list of dicts a provider's chat API takes.
:class:`TruncatedFormatterBase` adds a token budget: with a ``token_counter`` and
``max_tokens`` it keeps the system prompt and the newest turns that fit, dropping the oldest
first. Truncation works on *units*: a cut may only fall where every tool call made so far has
its result, so a ``tool_use`` is never sent without its ``tool_result`` (providers reject
that) and vice versa.

AgentScope formats, counts and drops one unit at a time, reformatting everything after each
drop (quadratic in the history length) and raises when the system prompt alone is too long.
Here the full prompt is tried first (one format, one count — the common case); when it does
not fit, the smallest prompt (system + newest unit) is checked, and then a binary search over
the unit boundaries finds the longest suffix that fits, in O(log n) format/count rounds. When
even the smallest prompt is over budget it is returned with a :class:`TruncationWarning`
instead of looping or failing: the caller still gets the most useful prompt there is.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from .. import _intercept
from ..message import (
    AudioBlock,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from ..token import TokenCounterBase
from ._errors import TruncationWarning, UnsupportedBlockWarning
from ._media import (
    CALL_STATE,
    STATELESS_FORMAT_CODES,
    NeedsCallState,
    call_state,
    current_call,
    enter_call,
    exit_call,
    inside_stateless_format,
    save_base64_data,
)

__all__ = ["FormatterBase", "MultiAgentFormatterBase", "TruncatedFormatterBase"]

DEFAULT_CONVERSATION_HISTORY_PROMPT = (
    "# Conversation History\n"
    "The content between <history></history> tags contains your conversation history\n"
)
"""The text AgentScope's multi-agent formatters put before the first ``<history>`` block."""


class FormatterBase(_intercept.Routed, ABC):
    """Base class of formatters.

    Subclasses implement :meth:`format`. Formatting is async because media may have to be
    read from disk or the network (always without blocking the event loop).
    """

    @abstractmethod
    async def format(
        self, msgs: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """Turn *msgs* into the provider's message list.

        :param msgs: the messages, oldest first; a leading ``system`` message is the system
            prompt.
        :param tools: the tool JSON schemas that will be sent along (used only to count
            tokens against the budget).
        :raises TypeError: when *msgs* is not a list of :class:`Msg`.
        :raises FormatterError: for media that cannot be loaded or sent.
        """

    @staticmethod
    def assert_list_of_msgs(msgs: Any) -> None:
        """Check that *msgs* is a list (or tuple) of :class:`Msg`.

        :raises TypeError: naming the first offending item.
        """
        if not isinstance(msgs, list | tuple):
            raise TypeError(
                f"formatters take a list of Msg objects, not {type(msgs).__name__}; wrap a "
                "single message in a list"
            )
        for msg in msgs:
            if msg.__class__ is not Msg and not isinstance(msg, Msg):
                index = next(i for i, m in enumerate(msgs) if not isinstance(m, Msg))
                raise TypeError(
                    f"msgs[{index}] is a {type(msg).__name__}, not a Msg; build messages with "
                    "Msg(name, content, role) or Msg.from_dict(...)"
                )

    @staticmethod
    async def convert_tool_result_to_string(
        output: str | Sequence[TextBlock | ImageBlock | AudioBlock | VideoBlock] | None,
    ) -> tuple[str, list[tuple[str, TextBlock | ImageBlock | AudioBlock | VideoBlock]]]:
        """Render a tool result's output as text, for tool APIs that take only text.

        Text blocks are kept; a media block becomes "The returned <type> can be found at:
        <url or path>" — base64 media is written to a file first (named by content hash, see
        :func:`~agentscope_rt.formatter._media.save_base64_data`). One piece of text is
        returned as is, several as a "- " bullet list, as in AgentScope.

        :returns: ``(text, [(url_or_path, media_block), ...])``.
        :raises FormatterError: for base64 media that is not valid base64.
        """
        if output is None:
            return "", []
        if isinstance(output, str):
            return output, []
        texts: list[str] = []
        media: list[tuple[str, TextBlock | ImageBlock | AudioBlock | VideoBlock]] = []
        for block in output:
            typ = block["type"]
            if typ == "text":
                texts.append(block["text"])
                continue
            source = block["source"]
            if source["type"] == "url":
                location = source["url"]
            else:
                location = await save_base64_data(source["media_type"], source["data"])
            texts.append(f"The returned {typ} can be found at: {location}")
            media.append((location, block))
        if len(texts) == 1:
            return texts[0], media
        return "\n".join("- " + text for text in texts), media

    async def tool_result_text(
        self,
        block: ToolResultBlock,
        msgs: list[Msg],
        index: int,
        promote: Collection[str] = (),
        noun: str = "image",
    ) -> str:
        """A tool result's output as text (see :meth:`convert_tool_result_to_string`), for
        tool APIs that take only text.

        When the output holds media of a kind in *promote*, a user message showing them
        (AgentScope's ``promote_tool_result_*`` options) is inserted into *msgs* right after
        ``msgs[index]``, so the caller's loop formats it next.

        :raises FormatterError: for base64 media that is not valid base64.
        """
        if type(self).convert_tool_result_to_string is _CONVERT_TOOL_RESULT:
            # Text only (the usual case): nothing to save or promote, and no await needed.
            text = _plain_tool_result_text(block.output)
            if text is not None:
                return text
        text, media = await self.convert_tool_result_to_string(block.output)
        if promote:
            promoted = _promoted_media_msg(block.name, media, promote, noun)
            if promoted is not None:
                msgs.insert(index + 1, promoted)
        return text


_CONVERT_TOOL_RESULT = FormatterBase.convert_tool_result_to_string


_STARTS_WITHOUT_STATE: set[Callable[..., Any]] = set()


_Format = TypeVar("_Format", bound=Callable[..., Awaitable[list[dict[str, Any]]]])


def state_only_through_current_call(format_method: _Format) -> _Format:
    """Mark a ``_format`` of this package that reaches the per-call state (media read, blocks
    dropped) only through :func:`~._media.current_call`. ``format()`` runs such a ``_format``
    without opening a call, which plain messages (text, thinking, tool calls, tool results of
    text) never need; the first ``current_call()`` raises, and ``format()`` starts again with a
    call. Not for subclasses: an overriding ``_format`` is not marked, and gets a call as usual.
    """
    _STARTS_WITHOUT_STATE.add(format_method)
    return format_method


def _dropped_so_far() -> dict[str, int]:
    call = call_state()
    return dict(call.dropped) if call is not None and call.dropped else {}


def _reset_dropped(dropped: dict[str, int]) -> None:
    call = call_state()
    if call is not None and call.dropped != dropped:
        call.dropped.clear()
        call.dropped.update(dropped)


def _plain_tool_result_text(output: Any) -> str | None:
    """What :meth:`FormatterBase.convert_tool_result_to_string` makes of an output without
    media, or ``None`` when the output holds anything but text blocks."""
    if output is None:
        return ""
    if output.__class__ is str:
        return output
    texts: list[str] = []
    for block in output:
        if block.__class__ is not TextBlock:
            return None
        texts.append(block.text)
    if len(texts) == 1:
        return texts[0]
    return "\n".join("- " + text for text in texts)


def _promoted_media_msg(
    tool_name: str, media: list[tuple[str, Any]], kinds: Collection[str], noun: str
) -> Msg | None:
    blocks: list[Any] = []
    for url, block in media:
        if block.type in kinds:
            blocks.append(TextBlock(text=f"\n- The {block.type} from '{url}': "))
            blocks.append(type(block)(source=URLSource(url=url)))
    if not blocks:
        return None
    return Msg(
        "user",
        [
            TextBlock(
                text=f"<system-info>The following are the {noun} contents from the tool "
                f"result of '{tool_name}':"
            ),
            *blocks,
            TextBlock(text="</system-info>"),
        ],
        "user",
    )


GroupType = Literal["tool_sequence", "agent_message"]


def group_messages(msgs: Sequence[Msg]) -> list[tuple[GroupType, list[Msg]]]:
    """Split *msgs* into runs of plain agent messages and runs of tool call/result messages
    (AgentScope's grouping for multi-agent formatters)."""
    groups: list[tuple[GroupType, list[Msg]]] = []
    for msg in msgs:
        typ: GroupType = (
            "tool_sequence"
            if msg.has_content_blocks(("tool_use", "tool_result"))
            else "agent_message"
        )
        if groups and groups[-1][0] == typ:
            groups[-1][1].append(msg)
        else:
            groups.append((typ, [msg]))
    return groups


def split_units(msgs: Sequence[Msg]) -> list[list[Msg]]:
    """Split *msgs* into truncation units, oldest first.

    A unit ends after a message at which every tool call seen so far has its result, so
    dropping whole units from the front never separates a ``tool_use`` from its
    ``tool_result``. A result whose call is not in *msgs* does not open anything; calls that
    never get a result keep the rest of the list together as the last unit.
    """
    units: list[list[Msg]] = []
    current: list[Msg] = []
    open_ids: set[str] = set()
    for msg in msgs:
        current.append(msg)
        if not isinstance(msg.content, str):
            for block in msg.content:
                if isinstance(block, ToolUseBlock):
                    open_ids.add(block.id)
                elif isinstance(block, ToolResultBlock):
                    open_ids.discard(block.id)
        if not open_ids:
            units.append(current)
            current = []
    if current:
        units.append(current)
    return units


class TruncatedFormatterBase(FormatterBase, ABC):
    """A formatter that keeps the formatted prompt within ``max_tokens``.

    Guarantees, when both *token_counter* and *max_tokens* are given:

    - the system prompt (a leading ``system`` message) is always kept;
    - what is kept is the newest messages, in their original order (a suffix);
    - a ``tool_use`` and its ``tool_result`` are kept or dropped together;
    - the result fits the budget whenever the system prompt plus the newest unit fits it;
      otherwise exactly that minimum is returned, with a :class:`TruncationWarning`.

    Blocks the provider does not accept are dropped with one :class:`UnsupportedBlockWarning`
    per call (thinking blocks, the model's own reasoning, are dropped silently where the
    provider takes no reasoning back).

    :param token_counter: counts the tokens of the formatted messages (and tools).
    :param max_tokens: the budget; ``None`` means no truncation.
    :raises ValueError: when *max_tokens* is not a positive integer.
    """

    def __init__(
        self,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0
        ):
            raise ValueError(f"max_tokens must be a positive integer or None, not {max_tokens!r}")
        if token_counter is not None and not isinstance(token_counter, TokenCounterBase):
            raise TypeError(
                "token_counter must be a TokenCounterBase (e.g. OpenAITokenCounter, "
                f"CharTokenCounter), not {type(token_counter).__name__}"
            )
        self.token_counter = token_counter
        self.max_tokens = max_tokens

    async def format(
        self, msgs: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        """Format *msgs*, truncating the oldest turns to fit ``max_tokens``.

        :param msgs: the messages, oldest first; a leading ``system`` message is the system
            prompt. The list and the messages are not modified.
        :param tools: the tool schemas sent along; their tokens count against the budget.
        :raises TypeError: when *msgs* is not a list of :class:`Msg`.
        :raises FormatterError: for media that cannot be loaded or sent.
        """
        if msgs.__class__ is list:
            for msg in msgs:  # the common case, checked inline: one class test per message
                if msg.__class__ is not Msg:
                    self.assert_list_of_msgs(msgs)
                    break
        else:
            self.assert_list_of_msgs(msgs)
        no_budget = self.token_counter is None or self.max_tokens is None
        if no_budget and type(self)._format in _STARTS_WITHOUT_STATE and CALL_STATE.get() is None:
            # Most prompts need no per-call state, and opening a call costs more than
            # formatting a short one: try without. The first current_call() (media to read,
            # a block to drop) raises before anything is read, and the prompt is formatted
            # again inside a call.
            try:
                return await self._format(list(msgs))
            except NeedsCallState:
                if inside_stateless_format():
                    raise  # a call-less format() awaits this one: it starts over, with a call
        return await self._format_in_call(
            msgs, tools, None if no_budget else self.token_counter, self.max_tokens
        )

    async def format_within(
        self,
        msgs: list[Msg],
        tools: list[dict[str, Any]] | None,
        token_counter: TokenCounterBase,
        max_tokens: int,
    ) -> list[dict[str, Any]]:
        """Format *msgs* within a budget the caller gives, for a formatter without one of its
        own: as :meth:`format` would with *token_counter* and *max_tokens* set, but without
        changing the formatter (which other agents may share). ``ReActAgent`` passes the budget
        of a model that knows its context window this way. A formatter that has a budget of
        its own keeps it.

        :raises TypeError: when *msgs* is not a list of :class:`Msg`.
        :raises ValueError: when *max_tokens* is not a positive integer.
        :raises FormatterError: for media that cannot be loaded or sent.
        """
        if self.token_counter is not None and self.max_tokens is not None:
            return await self.format(msgs, tools)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive integer, not {max_tokens!r}")
        self.assert_list_of_msgs(msgs)
        return await self._format_in_call(msgs, tools, token_counter, max_tokens)

    async def _format_in_call(
        self,
        msgs: list[Msg],
        tools: list[dict[str, Any]] | None,
        token_counter: TokenCounterBase | None,
        max_tokens: int | None,
    ) -> list[dict[str, Any]]:
        """Format inside a per-call state, truncating to *max_tokens* when a counter is given,
        and warn once about the blocks dropped."""
        token = enter_call()
        try:
            if token_counter is None or max_tokens is None:
                # No budget: one format, nothing to count (what _format_within_budget does).
                formatted = await self._format(list(msgs))
            else:
                # No copy here: _format_once hands _format a fresh list, truncation slices.
                # Inside another call, what that call dropped so far stays recorded.
                formatted = await self._format_within_budget(
                    msgs if msgs.__class__ is list else list(msgs),
                    tools,
                    _dropped_so_far(),
                    token_counter,
                    max_tokens,
                )
            call = call_state() if token is not None else None
            if call is not None and call.dropped:
                kinds = ", ".join(f"{n} {typ}" for typ, n in sorted(call.dropped.items()))
                warnings.warn(
                    f"{type(self).__name__} dropped block(s) the provider does not accept: {kinds}",
                    UnsupportedBlockWarning,
                    stacklevel=3,
                )
            return formatted
        finally:
            exit_call(token)

    async def _format_once(
        self, msgs: list[Msg], dropped_before: dict[str, int]
    ) -> list[dict[str, Any]]:
        # Only the blocks dropped from the prompt finally returned are reported: each attempt
        # starts from what was recorded before the first.
        _reset_dropped(dropped_before)
        return await self._format(list(msgs))

    async def _format_within_budget(
        self,
        msgs: list[Msg],
        tools: list[dict[str, Any]] | None,
        dropped_before: dict[str, int],
        counter: TokenCounterBase | None = None,
        budget: int | None = None,
    ) -> list[dict[str, Any]]:
        """Format *msgs* within *budget* tokens as *counter* counts them (by default the
        formatter's own ``max_tokens`` and ``token_counter``)."""
        formatted = await self._format_once(msgs, dropped_before)
        counter = counter or self.token_counter
        budget = budget or self.max_tokens
        if counter is None or budget is None:
            return formatted

        async def count(prompt: list[dict[str, Any]]) -> int:
            return await counter.count(prompt, tools=tools)

        if await count(formatted) <= budget:
            return formatted

        head = msgs[:1] if msgs and msgs[0].role == "system" else []
        units = split_units(msgs[len(head) :])

        def kept(start: int) -> list[Msg]:
            return head + [m for unit in units[start:] for m in unit]

        last = len(units) - 1
        if last <= 0:
            # Nothing can be dropped: the prompt is already the minimum.
            self._warn_minimum_too_large(await count(formatted), budget)
            return formatted
        minimum = await self._format_once(kept(last), dropped_before)
        n_minimum = await count(minimum)
        if n_minimum > budget:
            self._warn_minimum_too_large(n_minimum, budget)
            return minimum

        # Invariant: keeping units[lo:] is over budget, keeping units[hi:] fits.
        lo, hi, best, formatted_last = 0, last, minimum, last
        while hi - lo > 1:
            mid = (lo + hi) // 2
            candidate = await self._format_once(kept(mid), dropped_before)
            formatted_last = mid
            if await count(candidate) <= budget:
                hi, best = mid, candidate
            else:
                lo = mid
        if formatted_last != hi:
            # The dropped-block record must describe the prompt returned.
            best = await self._format_once(kept(hi), dropped_before)
        return best

    def _warn_minimum_too_large(self, n_tokens: int, budget: int) -> None:
        warnings.warn(
            f"{type(self).__name__}: the system prompt plus the newest turn need {n_tokens} "
            f"tokens, more than max_tokens={budget}; returning them anyway",
            TruncationWarning,
            stacklevel=5,
        )

    async def _count(
        self, formatted: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """Count the tokens of *formatted* (and *tools*) with the token counter.

        :raises RuntimeError: when no token counter is configured.
        """
        if self.token_counter is None:
            raise RuntimeError("no token_counter configured")
        return await self.token_counter.count(formatted, tools=tools)

    @abstractmethod
    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        """Format *msgs* with no budget (the provider-specific part).

        :param msgs: a fresh list the method may extend (e.g. with promoted tool-result
            images); the messages themselves must not be modified.
        """


# current_call() looks for this frame to tell a call-less format() from no format() at all.
STATELESS_FORMAT_CODES.add(TruncatedFormatterBase.format.__code__)


class ImagePromotingChatFormatterBase(TruncatedFormatterBase, ABC):
    """A chat formatter that can show images from tool results in a following user message
    (the provider's tool results carry text only).

    :param promote_tool_result_images: show images from tool results in a following user
        message.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    :raises ValueError: when *max_tokens* is not a positive integer.
    """

    def __init__(
        self,
        promote_tool_result_images: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(token_counter=token_counter, max_tokens=max_tokens)
        self.promote_tool_result_images = promote_tool_result_images

    def _promoted_kinds(self) -> tuple[str, ...]:
        """The media kinds :meth:`tool_result_text` promotes: images, when asked for."""
        return ("image",) if self.promote_tool_result_images else ()


class MultiAgentFormatterBase(TruncatedFormatterBase, ABC):
    """A formatter for conversations with several named speakers (AgentScope's layout).

    The system prompt comes first; every run of plain messages becomes one user message whose
    text is ``name: text`` lines inside ``<history>...</history>`` (the first run is preceded by
    *conversation_history_prompt*); every run of tool call/result messages is formatted by the
    provider's chat formatter (built from the subclass's ``chat_formatter_class``), so tool
    calls keep the provider's native shape.

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    chat_formatter_class: ClassVar[type[TruncatedFormatterBase]]
    """The provider's chat formatter, which formats runs of tool calls and results."""

    _chat: TruncatedFormatterBase

    def __init__(
        self,
        conversation_history_prompt: str = DEFAULT_CONVERSATION_HISTORY_PROMPT,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(token_counter=token_counter, max_tokens=max_tokens)
        self.conversation_history_prompt = conversation_history_prompt
        self._chat = self._new_chat_formatter()

    def _new_chat_formatter(self) -> TruncatedFormatterBase:
        return self.chat_formatter_class()

    async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        formatted: list[dict[str, Any]] = []
        start = 0
        if msgs and msgs[0].role == "system":
            formatted.append(await self._format_system_message(msgs[0]))
            start = 1
        is_first = True
        for typ, group in group_messages(msgs[start:]):
            if typ == "tool_sequence":
                formatted.extend(await self._chat._format(group))
            else:
                prompt = self.conversation_history_prompt if is_first else ""
                formatted.extend(await self._format_agent_message(group, prompt))
                is_first = False
        return formatted

    async def _format_system_message(self, msg: Msg) -> dict[str, Any]:
        """The system prompt as a provider message (default: OpenAI-style text blocks)."""
        return {
            "role": "system",
            "content": [{"type": "text", "text": b.text} for b in msg.get_content_blocks("text")],
        }

    @abstractmethod
    async def _format_agent_message(self, msgs: list[Msg], prompt: str) -> list[dict[str, Any]]:
        """Format a run of plain messages from several speakers as one history message.

        :param prompt: the text before ``<history>`` (the history prompt for the first run,
            else empty).
        """


class MediaPromotingMultiAgentFormatterBase(MultiAgentFormatterBase, ABC):
    """A multi-agent formatter whose chat formatter can promote tool-result images.

    :param conversation_history_prompt: text before the first ``<history>`` block.
    :param promote_tool_result_images: see the provider's chat formatter.
    :param token_counter: counts tokens for truncation.
    :param max_tokens: the token budget; ``None`` means no truncation.
    """

    def __init__(
        self,
        conversation_history_prompt: str = DEFAULT_CONVERSATION_HISTORY_PROMPT,
        promote_tool_result_images: bool = False,
        token_counter: TokenCounterBase | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.promote_tool_result_images = promote_tool_result_images
        super().__init__(conversation_history_prompt, token_counter, max_tokens)

    def _new_chat_formatter(self) -> TruncatedFormatterBase:
        return self.chat_formatter_class(  # type: ignore[call-arg]
            promote_tool_result_images=self.promote_tool_result_images
        )


async def history_items(
    msgs: Sequence[Msg],
    media: Mapping[str, Callable[[Msg, Any], Awaitable[dict[str, Any] | None]]],
) -> list[str | dict[str, Any]]:
    """The content of a run of plain multi-agent messages, in order: each stretch of text
    blocks as one string of ``name: text`` lines, each media block as *media* formats it.

    *media* maps the block types the provider accepts to a formatter of ``(msg, block)``
    (``None`` leaves the block out silently). Thinking is left out silently; any other
    type is recorded as dropped (one :class:`UnsupportedBlockWarning` per ``format()``).
    """
    items: list[str | dict[str, Any]] = []
    lines: list[str] = []
    for msg in msgs:
        for block in msg.get_content_blocks():
            typ = block.type
            if typ == "text":
                lines.append(f"{msg.name}: {block.text}")  # type: ignore[union-attr]
            elif typ in media:
                if lines:
                    items.append("\n".join(lines))
                    lines = []
                formatted = await media[typ](msg, block)
                if formatted is not None:
                    items.append(formatted)
            elif typ != "thinking":
                current_call().drop(typ)
    if lines:
        items.append("\n".join(lines))
    return items


def wrap_history(
    blocks: list[dict[str, Any]],
    prompt: str,
    *,
    open_tag: str = "<history>\n",
    text_block: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Put *prompt* + ``<history>`` before and ``</history>`` after a multi-agent block list.

    The opening goes into the first block when it is text (else a new text block is
    inserted), the closing into the last text block (else appended), as AgentScope does.
    *text_block* is the extra keys of a new text block (e.g. ``{"type": "text"}``).
    """
    if not blocks:
        return blocks
    extra = text_block or {}
    if blocks[0].get("text"):
        blocks[0]["text"] = prompt + open_tag + blocks[0]["text"]
    else:
        blocks.insert(0, {**extra, "text": prompt + open_tag})
    if blocks[-1].get("text"):
        blocks[-1]["text"] += "\n</history>"
    else:
        blocks.append({**extra, "text": "</history>"})
    return blocks


def wrap_history_items(
    items: list[str | dict[str, Any]],
    prompt: str,
    *,
    open_tag: str = "<history>\n",
    text_block: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The items :func:`history_items` returns as one block list wrapped by
    :func:`wrap_history`: each text item becomes a block ``{"text": item, **text_block}``,
    each media item stays as it is."""
    extra = text_block or {}
    blocks = [{"text": item, **extra} if isinstance(item, str) else item for item in items]
    return wrap_history(blocks, prompt, open_tag=open_tag, text_block=text_block)


# Every call of these goes through its route (see agentscope_rt._intercept).
_intercept.declare(FormatterBase, "format", "format")
_intercept.declare(FormatterBase, "format_within", "format")
