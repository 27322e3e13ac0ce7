"""The interceptors through which a durable run sees its agents' steps: agent calls, replies,
observations, reasoning steps, model, embedding and tool calls. Registered while a run is
open (in this process, or joined from another); each looks up the frame of the calling
task and, outside a run, only proceeds."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .. import _intercept
from ..agent import CUT_OFF_TEXT, GenerateReason
from ..embedding import EmbeddingResponse
from ..exception import RunDivergedError
from ..message import Msg, TextBlock
from ..message.serde import structure, unstructure
from ..model import ChatResponse
from ..tool import ToolResponse
from ._fingerprint import fingerprint
from ._frame import _FRAME, _Frame
from ._store import StepRecord

if TYPE_CHECKING:
    from ._run import DurableRun

__all__ = ["activate", "deactivate", "marks_of"]


def _reply_payload(result: Any) -> Any:
    return result.to_dict() if isinstance(result, Msg) else unstructure(result)


class _Calls:
    """An agent's call: numbered per agent, its reply recorded (or checked on replay)."""

    def __repr__(self) -> str:
        return "<durable runs: agent calls>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None or frame.claim(call.obj):
            return await proceed(call.args, call.kwargs)
        run = frame.run
        agent = call.obj
        name = run._agent_name(agent)
        number = run._calls[name] = run._calls.get(name, run._calls_before) + 1
        key = f"{name}#{number}"
        print_ = fingerprint(["call", list(call.args), call.kwargs])
        record = run._replay(key, "call", print_, frame)
        if record is None and frame.interrupted:
            await run._interrupt(frame)
        # After the mark: deliveries recorded before the call have landed then.
        await run._mark(name)
        memory_size = await _memory_size(agent) if number == 1 else None
        if record is not None and number == 1:
            _check_first_memory(run, key, record, memory_size)
        inner = _Frame(run, key, agent, record)
        token = _FRAME.set(inner)
        try:
            result = await proceed(call.args, call.kwargs)
        finally:
            _FRAME.reset(token)
            run._speakers.pop(str(getattr(agent, "reply_id", "")), None)
        interrupted = getattr(agent, "generate_reason", None) == GenerateReason.INTERRUPTED
        reply_print = fingerprint(result)
        status = "interrupted" if interrupted else "done"
        if record is None:
            payload = {
                "reply": _reply_payload(result),
                "reply_fingerprint": reply_print,
                "marks": run._take_marks(inner),
            }
            if memory_size is not None:
                payload["memory_size"] = memory_size
            await run._write(key, "call", status, print_, payload)
        elif record.status != status or record.payload.get("reply_fingerprint") != reply_print:
            raise RunDivergedError(
                f"run {run.run_id!r}: the call {key!r} replayed to another reply than the "
                f"recorded one (recorded {record.status}, now {status}): something outside "
                "the recorded steps decided differently",
                step=key,
                recorded=f"{record.status} {record.payload.get('reply_fingerprint')}",
                now=f"{status} {reply_print}",
            )
        return result


async def _memory_size(agent: Any) -> int | None:
    memory = getattr(agent, "memory", None)
    size = getattr(memory, "size", None)
    if not callable(size):
        return None
    value = size()
    return int(await value if inspect.isawaitable(value) else value)


def _check_first_memory(run: DurableRun, key: str, record: StepRecord, size: int | None) -> None:
    recorded = record.payload.get("memory_size") if isinstance(record.payload, dict) else None
    if recorded is not None and size is not None and recorded != size:
        raise RunDivergedError(
            f"run {run.run_id!r}: the agent of {key!r} holds {size} message(s) in memory "
            f"before its first call, where the run recorded {recorded}. Its memory outlives "
            "the process (a database memory, or state loaded from a session): in a durable "
            "run agents start as the program builds them and the run rebuilds the rest; "
            "keep such a memory apart per run, or start it empty",
            step=key,
            recorded=f"memory of {recorded}",
            now=f"memory of {size}",
        )


class _Replies:
    """The reply inside a replayed call: where a reply that ended interrupted gets its
    interrupt back when it got through all its steps, and where an agent that answers from
    outside (``replay_from_record``) gets its recorded reply."""

    def __repr__(self) -> str:
        return "<durable runs: replies>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        agent = call.obj
        if frame is None or frame.agent is not agent:
            return await proceed(call.args, call.kwargs)
        reply_id = getattr(agent, "reply_id", None)
        if isinstance(reply_id, str):
            # Until the call ends (see _Calls): its broadcast is delivered meanwhile.
            frame.run._speakers[reply_id] = frame.key
        record = frame.record
        run = frame.run
        if record is not None and getattr(type(agent), "replay_from_record", False):
            run._visited.update(frame.pending)
            frame.pending.clear()
            if record.status == "interrupted":
                await run._interrupt(frame)
            reply = record.payload["reply"]
            result = Msg.from_dict(reply) if isinstance(reply, dict) else reply
        else:
            result = await proceed(call.args, call.kwargs)
        # The call's closing mark is the reply's end, before the broadcast: a hub may hand
        # this agent what others said from its own task while it broadcasts, and those
        # deliveries come after the mark (an interrupted reply makes none, live or replayed).
        await run._mark(run._agent_name(agent))
        if record is not None and record.status == "interrupted":
            agent.interrupt()
        return result


class _Observations:
    """What an observer does while observing is keyed under the call it observes."""

    def __repr__(self) -> str:
        return "<durable runs: observations>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None or frame.claim(call.obj):
            return await proceed(call.args, call.kwargs)
        run = frame.run
        name = run._agent_name(call.obj)
        key = run._delivery_key(name, call.args[0] if call.args else call.kwargs.get("msg"))
        token = _FRAME.set(_Frame(run, key, call.obj))
        try:
            return await run._deliver(name, key, lambda: proceed(call.args, call.kwargs))
        finally:
            _FRAME.reset(token)


def _model_step(
    frame: _Frame, kind: str, call: _intercept.Call
) -> tuple[DurableRun, str, str, StepRecord | None]:
    """The run, key, fingerprint and record (if any) of a model or embedding call."""
    run = frame.run
    key = frame.child(kind)
    print_ = fingerprint([kind, list(call.args), call.kwargs])
    return run, key, print_, run._replay(key, kind, print_, frame)


def _chat_payload(response: ChatResponse, stream: bool, marks: list[Any]) -> dict[str, Any]:
    return {"stream": stream, "response": unstructure(response), "marks": marks}


def marks_of(payload: Any) -> list[list[Any]]:
    marks = payload.get("marks") if isinstance(payload, dict) else None
    return marks if isinstance(marks, list) else []


async def _begin_model_call(frame: _Frame) -> None:
    """The mark a model call begins with: the one its reasoning step made where the agent
    read its memory, else one made now (an agent calling its model from ``reply``)."""
    if frame.reading:
        frame.reading = False
        return
    await frame.run._marks_here(frame)


class _Reasonings:
    """A ReAct agent's reasoning step reads its memory before its model call: the reading
    point of that call is taken here."""

    def __repr__(self) -> str:
        return "<durable runs: reasoning steps>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None or frame.agent is not call.obj:
            return await proceed(call.args, call.kwargs)
        await frame.run._mark(frame.run._agent_name(call.obj))
        frame.reading = True
        try:
            return await proceed(call.args, call.kwargs)
        finally:
            frame.reading = False


class _Chats:
    """A model call: its answer recorded, and returned from the record on replay."""

    def __repr__(self) -> str:
        return "<durable runs: model calls>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None:
            return await proceed(call.args, call.kwargs)
        await _begin_model_call(frame)
        run, key, print_, record = _model_step(frame, "chat", call)
        if record is not None and record.status == "done":
            response: ChatResponse = structure(
                record.payload["response"], ChatResponse, what="chat record"
            )
            await run._marks_here(frame)  # its end
            await run._marks_here(frame)  # after its record was written
            return _one_chunk(response) if record.payload["stream"] else response
        if frame.interrupted:
            if record is not None and record.status == "partial":
                partial: ChatResponse = structure(
                    record.payload["response"], ChatResponse, what="chat record"
                )
                return _chunk_then_interrupt(run, frame, partial)
            await run._interrupt(frame)
        result = await proceed(call.args, call.kwargs)
        if isinstance(result, ChatResponse):
            await run._marks_here(frame)
            payload = _chat_payload(result, False, run._take_marks(frame))
            await run._write(key, "chat", "done", print_, payload)
            await run._marks_here(frame)
            return result

        async def write(chunk: ChatResponse, complete: bool) -> None:
            # A stream cut off part-way ends with no mark, as its replay does.
            if complete:
                await run._marks_here(frame)
            status = "done" if complete else "partial"
            payload = _chat_payload(chunk, True, run._take_marks(frame))
            await run._write(key, "chat", status, print_, payload)
            if complete:
                await run._marks_here(frame)

        return _recorded_chunks(result, write=write, keep_cut_off=True)


async def _one_chunk(response: ChatResponse) -> AsyncGenerator[ChatResponse, None]:
    yield response


async def _chunk_then_interrupt(
    run: DurableRun, frame: _Frame, partial: ChatResponse
) -> AsyncGenerator[ChatResponse, None]:
    yield partial
    await run._interrupt(frame)


async def _recorded_chunks(
    stream: AsyncGenerator[Any, None],
    *,
    write: Callable[[Any, bool], Awaitable[None]],
    keep_cut_off: bool,
) -> AsyncGenerator[Any, None]:
    """*stream* (cumulative chunks: a model's answer, a tool's result), its final chunk
    recorded with ``write(chunk, True)`` before it is handed on (the last one, when none
    says it is final). With *keep_cut_off*, a stream closed part-way (an interrupt) records
    what arrived with ``write(chunk, False)``."""
    last: Any = None
    recorded = False
    try:
        async with aclosing(stream) as chunks:
            async for chunk in chunks:
                last = chunk
                if chunk.is_last and not recorded:
                    await write(chunk, True)
                    recorded = True
                yield chunk
        if not recorded and last is not None:
            await write(last, True)
            recorded = True
    finally:
        if keep_cut_off and not recorded and last is not None:
            await write(last, False)


class _Embeddings:
    """An embedding call: its vectors recorded, and returned from the record on replay."""

    def __repr__(self) -> str:
        return "<durable runs: embedding calls>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None:
            return await proceed(call.args, call.kwargs)
        run, key, print_, record = _model_step(frame, "embed", call)
        if record is not None:
            return structure(record.payload, EmbeddingResponse, what="embedding record")
        if frame.interrupted:
            await run._interrupt(frame)
        result = await proceed(call.args, call.kwargs)
        await run._write(key, "embed", "done", print_, unstructure(result))
        return result


class _Tools:
    """A tool call: recorded as started before it runs and with its result when it ends;
    on replay the result is returned, and a call that started but never ended gets a result
    saying it was cut off (it may have taken effect, so it is not run again)."""

    def __repr__(self) -> str:
        return "<durable runs: tool calls>"

    def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        frame = _FRAME.get()
        if frame is None:
            return proceed(call.args, call.kwargs)
        tool_call = call.args[0] if call.args else call.kwargs.get("tool_call")
        call_id = getattr(tool_call, "id", None)
        if not isinstance(call_id, str):
            return proceed(call.args, call.kwargs)
        args, kwargs = call.args, call.kwargs
        return _tool_stream(frame, call_id, tool_call, lambda: proceed(args, kwargs))


def _tool_status(response: ToolResponse) -> str:
    # An interrupted result is kept as partial: the call was cut off, and whether by its
    # agent's interrupt (then replayed so) or by the end of the program (then it may have
    # taken effect) is known only later.
    return "partial" if response.is_interrupted else "done"


async def _tool_stream(
    frame: _Frame, call_id: str, tool_call: Any, start: Callable[[], Any]
) -> AsyncGenerator[ToolResponse, None]:
    run = frame.run
    await run._marks_here(frame)
    key = frame.tool(call_id)
    print_ = fingerprint(["tool", tool_call.name, tool_call.input])
    record = run._replay(key, "tool", print_, frame)

    async def write(response: ToolResponse, complete: bool = True) -> None:
        await run._marks_here(frame)
        payload = {**unstructure(response), "marks": run._take_marks(frame)}
        await run._write(key, "tool", _tool_status(response), print_, payload)
        await run._marks_here(frame)

    if record is not None and (
        record.status == "done" or (frame.interrupted and record.status == "partial")
    ):
        await run._marks_here(frame)  # its end
        await run._marks_here(frame)  # after its record was written
        yield structure(record.payload, ToolResponse, what="tool record")
        return
    if frame.interrupted:
        await run._interrupt(frame)
    if record is not None:  # started (or cut off), never ended: it may have taken effect
        response = ToolResponse(content=[TextBlock(text=CUT_OFF_TEXT)])
        await write(response)
        yield response
        return
    await run._write(key, "tool", "started", print_, None)
    stream = start()
    if inspect.iscoroutine(stream):  # an override written as AgentScope's
        stream = await stream
    # No partial record when the stream is dropped part-way: the call stays started, so it
    # is cut off on resume (it may have taken effect).
    chunks = _recorded_chunks(stream, write=write, keep_cut_off=False)
    async with aclosing(chunks):
        async for chunk in chunks:
            yield chunk


_INTERCEPTORS: tuple[tuple[str, Any], ...] = (
    ("call", _Calls()),
    ("reply", _Replies()),
    ("observe", _Observations()),
    ("reasoning", _Reasonings()),
    ("chat", _Chats()),
    ("embed", _Embeddings()),
    ("tool", _Tools()),
)
_open_runs = 0


def activate() -> None:
    global _open_runs
    if _open_runs == 0:
        for kind, interceptor in _INTERCEPTORS:
            _intercept.register(kind, interceptor)
    _open_runs += 1


def deactivate() -> None:
    global _open_runs
    _open_runs -= 1
    if _open_runs == 0:
        for kind, interceptor in _INTERCEPTORS:
            _intercept.unregister(kind, interceptor)
