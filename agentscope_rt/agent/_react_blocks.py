"""The blocks and messages a ReAct step builds: tool calls read from a reasoning answer, tool
results, what an interrupt leaves behind, and the content copied out of model and tool
responses. Pure functions over messages and blocks; the loop that uses them is
:mod:`._react_agent`."""

from __future__ import annotations

from typing import Any

from .._json import tool_input_problem
from ..exception import MessageFormatError
from ..message import AudioBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from ..tool import INTERRUPTED_TEXT, ToolResponse


def _blocks_of(content: Any) -> list[Any]:
    """*content* with AgentScope's dict blocks built into blocks, as ``Msg`` builds them.

    :raises MessageFormatError: naming the position of a dict that is no valid block.
    """
    built: list[Any] = Msg("assistant", content, "assistant").content  # type: ignore[assignment]
    return built


def _fill_from(msg: Msg, response: Any) -> None:
    """Make *msg* hold what a model response (whole, or a stream's cumulative chunk) says."""
    msg.invocation_id = response.id
    msg.content = _model_blocks(response.content)


def _keepable(blocks: list[Any]) -> list[Any]:
    """*blocks* with each tool call whose arguments break the tool-input rule (nested deeper
    than :data:`~agentscope_rt._json.MAX_TOOL_INPUT_DEPTH` levels, or not JSON data) replaced
    by the same call without arguments and a ``raw_input`` saying why.

    The toolkit answers such a call with an argument error the model reads, and the message
    can always be copied and saved. Providers already parse to this rule; a model that builds
    its blocks itself (a function or scripted model, a user's subclass) is checked only here.
    """
    for index, block in enumerate(blocks):
        if block.__class__ is ToolUseBlock and block.input:
            problem = tool_input_problem(block.input)
            if problem is not None:
                # A new block: the response's own may be shared with its caller.
                blocks[index] = ToolUseBlock(
                    block.id,
                    block.name,
                    {},
                    raw_input=f"<tool arguments not kept: {problem}>",
                    thought_signature=block.thought_signature,
                )
    return blocks


def _tool_calls(msg: Msg) -> list[ToolUseBlock]:
    """The tool-use blocks of *msg* (cheaper than ``get_content_blocks`` on the hot path).

    A model may give two calls of one response the same id; each call needs its own result,
    so a repeated id is made unique here, in place (``x`` becomes ``x_2``), before anything
    is run or recorded against it.
    """
    content = msg.content
    calls: list[ToolUseBlock] = []
    if content.__class__ is not str:
        for block in content:  # a loop: a comprehension is one more frame per call
            if block.__class__ is ToolUseBlock:
                calls.append(block)
        if len(calls) > 1:
            _unique_ids(calls)
    return calls


def _unique_ids(calls: list[ToolUseBlock]) -> None:
    seen = {call.id for call in calls}
    if len(seen) == len(calls):
        return
    used: set[str] = set()
    for call in calls:
        if call.id in used:
            n = 2
            while f"{call.id}_{n}" in seen:
                n += 1
            call.id = f"{call.id}_{n}"
            seen.add(call.id)
        used.add(call.id)


def _has_text(msg: Msg) -> bool:
    content = msg.content
    if content.__class__ is str:
        return True
    for block in content:  # noqa: SIM110 (a generator in any() costs more than the scan)
        if block.__class__ is TextBlock:
            return True
    return False


def _success_metadata(response: ToolResponse) -> dict[str, Any] | None:
    """*response*'s metadata when it reports success (for the finish function, it then holds
    the ``structured_output``), else ``None``."""
    metadata = response.metadata
    return metadata if metadata and metadata.get("success", False) else None


def _result_msg(tool_call: ToolUseBlock, output: Any) -> Msg:
    return Msg(
        "system", [ToolResultBlock(id=tool_call.id, name=tool_call.name, output=output)], "system"
    )


def _speech(msg: Msg) -> list[AudioBlock] | None:
    """The audio blocks of *msg* (what an audio model said), or ``None``: the speech that goes
    with a printed chunk, as AgentScope passes it."""
    content = msg.content
    speech: list[AudioBlock] | None = None
    if content.__class__ is not str:
        for block in content:
            if block.__class__ is AudioBlock:
                if speech is None:
                    speech = []
                speech.append(block)
    return speech


def _interrupted_result(tool_call: ToolUseBlock) -> Msg:
    """The result recorded for a tool call an interrupt kept from returning anything."""
    return _result_msg(tool_call, _interrupted_output(None))


def _interrupted_output(last: ToolResponse | None) -> list[Any]:
    """The output recorded for a tool call cut short: what it produced so far, then the
    interrupt notice."""
    if last is not None and last.is_interrupted:
        return _tool_blocks(last.content)
    return [*(_tool_blocks(last.content) if last else ()), TextBlock(text=INTERRUPTED_TEXT)]


def _model_blocks(content: list[Any]) -> list[Any]:
    """A copy of a model response's *content* for its message, with AgentScope's dict blocks
    (a model written for it may return ``{"type": "text", "text": ...}``) built into blocks,
    and tool calls whose arguments break the tool-input rule made harmless (:func:`_keepable`):
    one class test per block, and a scalar check per tool call, otherwise. Every reasoning
    step's content, streamed or whole, is made here.

    :raises MessageFormatError: naming the position of a dict that is no valid block.
    """
    for item in content:
        cls = item.__class__
        if cls is dict:
            return _keepable(_blocks_of(content))
        if cls is ToolUseBlock and item.input and tool_input_problem(item.input) is not None:
            return _keepable(list(content))
    return list(content)


def _tool_blocks(content: list[Any]) -> list[Any]:
    """A copy of a tool response's *content* for its result block, with AgentScope's dict
    blocks (a tool written for it may answer ``{"type": "text", "text": ...}``) built into
    blocks: one class test per block otherwise.

    A dict that is no valid block becomes an error text for the model, as a tool's other
    failures do, rather than a block every later prompt would fail on.
    """
    for item in content:
        if item.__class__ is dict:
            break
    else:
        return list(content)
    try:
        return ToolResultBlock(id="", name="", output=list(content)).output  # type: ignore[return-value]
    except MessageFormatError as exc:
        return [TextBlock(text=f"Error: the tool returned an invalid content block: {exc}")]


_SYSTEM_MSGS: dict[str, Msg] = {}
_SYSTEM_MSGS_MAX = 1024


def _system_msg_of(prompt: str) -> Msg:
    """The system message of *prompt*, one for every agent with that prompt (formatters only
    read it; a simulation's agents share a handful of prompts), for the first prompts seen."""
    msg = _SYSTEM_MSGS.get(prompt)
    if msg is None:
        msg = Msg("system", prompt, "system")
        if len(_SYSTEM_MSGS) < _SYSTEM_MSGS_MAX:
            _SYSTEM_MSGS[prompt] = msg
    return msg


def _structured_hint(finish_name: str) -> str:
    return (
        "<system-hint>Structured output is required, go on to finish your task or call "
        f"'{finish_name}' to generate the required structured output.</system-hint>"
    )
