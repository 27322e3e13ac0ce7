"""A local GGUF chat model run in-process with llama.cpp, through ``xllamacpp``.

Why it is built this way:

* **A prebuilt runtime.** ``xllamacpp`` ships llama.cpp compiled in its wheels (Linux x86_64 and
  aarch64, macOS, Windows), so installing the ``local`` extra compiles nothing. It embeds
  llama.cpp's server engine: the model runs in the engine's own thread, requests are handed to
  it in-process (OpenAI-format JSON), and the chat template is the GGUF file's own (Jinja).
* **The event loop never blocks.** Loading the model and every request run in worker threads
  (``anyio.to_thread``); each streamed chunk is handed back to the event loop as it arrives.
* **Stoppable, prompt reading included.** Requests ask for prompt-progress reports, which the
  engine sends after each batch of ``n_batch`` prompt tokens. When the caller is cancelled
  (``interrupt()``) or closes the stream, the next report or token is answered with "stop" and
  the engine drops the request: reading a long prompt stops after the batch being read, not at
  its end, and no generation keeps running behind the caller's back.
* **One call at a time.** Every call holds an :class:`anyio.Lock` from prompt reading to the
  last token; concurrent callers queue.
* **Well-formed tool calls from a small model.** Tool calls and structured output use
  llama.cpp's JSON-schema-constrained sampling (a grammar compiled from a JSON schema). With
  ``tool_choice="required"`` or a tool name the output is constrained to the tool-call shape
  ``{"name": ..., "arguments": {...}}``; with ``"auto"`` it is constrained to "one of the tools,
  or the pseudo-tool ``final_answer`` carrying the answer text".
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any, Self

import anyio
import anyio.from_thread
import anyio.to_thread

from .._extras import check_extra
from .._locks import FairLock
from .._provider import TokenCounterBase
from .._schema import StructuredModel, structured_model_schema, validate_structured_output
from ..exception import ModelError, ModelResponseError
from ..message import TextBlock, ToolUseBlock
from ._common import loads_strict
from ._local_model_file import check_model_file, default_model_path
from ._model_base import ChatModelBase, ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._ollama_model import new_call_id

__all__ = ["LlamaCppChatModel"]

logger = logging.getLogger(__name__)

# Generation defaults; anything in generate_kwargs or the call's kwargs overrides them.
_DEFAULT_MAX_TOKENS = 512
# Prompt tokens read per batch: the engine reports progress, and can be stopped, between
# batches, so this bounds how long a cancelled call keeps reading (SmolLM2-135M: ~0.9 s on a
# quiet core, ~2 s on a busy 2-core machine).
_DEFAULT_N_BATCH = 128
# The pseudo-tool through which a constrained "auto" call answers in plain text.
_FINAL_ANSWER = "final_answer"
_NAME_RE = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_CALL_START = '{"name":'  # how a call (of the format the prompts describe) begins
# The engine's OpenMP threads spin while waiting for work, which starves everything else on a
# busy small machine (generation ran at ~1 token/s instead of ~45 on 2 shared cores); passive
# waiting costs nothing measurable. Read once, when the runtime is first imported.
_OMP_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
# The engine's own port is on 127.0.0.1: never through an HTTP proxy from the environment.
_LOCAL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# llama_kwargs that are not CommonParams fields of the same name.
_THREAD_KEYS = ("n_threads", "n_threads_batch")


def _require_runtime() -> None:
    check_extra(("xllamacpp",), extra="local", user="LlamaCppChatModel (llama.cpp, prebuilt)")


def _import_runtime() -> Any:
    for key, value in _OMP_ENV.items():
        os.environ.setdefault(key, value)
    import xllamacpp

    return xllamacpp


def _text_of(content: Any) -> str:
    """Flatten OpenAI-style message content to text (this model reads text only)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    dropped: set[str] = set()
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            parts.append(part)
        else:
            dropped.add(str(part.get("type")) if isinstance(part, dict) else type(part).__name__)
    if dropped:
        logger.warning("LlamaCppChatModel reads text only; dropped %s parts", sorted(dropped))
    return "\n".join(parts)


def _tool_call_text(call: dict[str, Any]) -> str:
    function = call.get("function", {})
    arguments = function.get("arguments", "{}")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    except json.JSONDecodeError:
        parsed = arguments
    return json.dumps({"name": function.get("name"), "arguments": parsed}, ensure_ascii=False)


def _tool_call_sentence(call: dict[str, Any]) -> str:
    """An earlier call as a sentence, for prompts that ask for plain text: shown in the call
    format, small models answer by imitating it instead of answering."""
    function = call.get("function", {})
    return f"I called the tool {function.get('name')} with {function.get('arguments', '{}')}."


def _to_chat_messages(
    messages: list[dict[str, Any]], call_text: Callable[[dict[str, Any]], str] = _tool_call_text
) -> list[dict[str, str]]:
    """Turn OpenAI-format messages into the ``role``/``content`` strings a chat template reads;
    earlier tool calls are written by *call_text*.

    :raises ValueError: for a message without a role.
    """
    result: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if not isinstance(role, str):
            raise ValueError(
                f"messages[{index}] has no 'role'; pass messages formatted by a chat "
                "formatter (e.g. OpenAIChatFormatter)"
            )
        text = _text_of(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            calls = "\n".join(call_text(c) for c in message["tool_calls"])
            text = f"{text}\n{calls}" if text else calls
        elif role == "tool":
            name = message.get("name") or message.get("tool_call_id", "tool")
            text = f"Result of {name}: {text}"
        result.append({"role": role, "content": text})
    return result


def _tool_call_schema(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": name}, "arguments": parameters},
        "required": ["name", "arguments"],
    }


class LlamaCppChatModel(ChatModelBase):
    """A GGUF chat model run in-process with llama.cpp; no network, no API key.

    Without ``model_path`` it runs SmolLM2-135M-Instruct, the GGUF file that
    ``agentscope-rt-fetch-model`` keeps (:func:`~agentscope_rt.model.fetch_local_model`), checked
    against its published SHA-256 when it loads. The model is loaded once, lazily, in a worker
    thread, on the first call. Calls accept OpenAI-format messages (what
    ``OpenAIChatFormatter`` produces); image and audio parts are dropped with a warning.

    Guarantees: the event loop is never blocked; calls on one instance are serialised; a
    cancelled call or a closed stream stops generation after the current token, and prompt
    reading after the current batch of ``n_batch`` tokens. A call that runs longer than
    :attr:`progress_interval` seconds without output a caller can show (reading a long prompt,
    generating a constrained tool call) logs a progress line at INFO on this module's logger,
    at most one per interval (e.g. ``SmolLM2-135M-Instruct.Q4_1: reading the prompt, 384 of
    1,500 tokens (1.2 s)``).

    :param model_path: path of a ``.gguf`` file; ``None`` for the bundled SmolLM2-135M.
    :param model_name: the name reported in responses; defaults to the file's stem.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param n_ctx: context window in tokens.
    :param generate_kwargs: sampling arguments for every call (``max_tokens``,
        ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``seed``, ``stop``,
        ``repeat_penalty``, ...), overridden by the call's own keyword arguments.
    :param llama_kwargs: engine settings: ``n_threads`` (generation and prompt reading),
        ``n_threads_batch`` (prompt reading), ``n_batch`` (prompt tokens per batch, 128 by
        default; also the granularity at which prompt reading can be stopped), or any other
        field of ``xllamacpp.CommonParams`` (e.g. ``n_gpu_layers``);
        ``{"use_extra_bufts": True}`` turns llama.cpp's weight-repacking buffers back on (off
        by default: they crashed on some AMX CPUs).
    :raises ImportError: if xllamacpp is not installed; the message says which command
        installs it.
    :raises FileNotFoundError: if ``model_path`` does not exist, or, without it, the default
        model was never fetched (the message gives the command).
    :raises ValueError: for an ``llama_kwargs`` key the engine does not have.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_name: str | None = None,
        stream: bool = False,
        n_ctx: int = 2048,
        generate_kwargs: dict[str, Any] | None = None,
        llama_kwargs: dict[str, Any] | None = None,
    ) -> None:
        _require_runtime()
        path = Path(model_path) if model_path is not None else default_model_path()
        # The bundled model is checked against its published digest, in the loading thread.
        self._check_file = model_path is None
        if not path.is_file():
            raise FileNotFoundError(f"model_path {str(path)!r} is not a file")
        super().__init__(model_name or path.stem, stream)
        self.model_path = path
        self.n_ctx = n_ctx
        self.generate_kwargs = dict(generate_kwargs or {})
        self.llama_kwargs = dict(llama_kwargs or {})
        _check_llama_kwargs(self.llama_kwargs)
        self._server: Any = None
        self._address = ""
        # Guards the engine's local HTTP port (used here for tokenising only) against other
        # local processes; never shown.
        self._http_key = secrets.token_urlsafe(24)
        self._lock = FairLock()
        # (tokens read, prompt tokens) of the prompt being read, for observers.
        self._prompt_progress: tuple[int, int] | None = None
        #: The context length the model was trained for (from the GGUF file), once loaded.
        self.n_ctx_train: int | None = None

    progress_interval: float = 1.0
    """Seconds after which a call logs a progress line, and between two of them."""

    def __repr__(self) -> str:
        return f"LlamaCppChatModel(model_name={self.model_name!r}, n_ctx={self.n_ctx})"

    # -- loading -------------------------------------------------------------------------------

    def _load_sync(self) -> None:
        if self._check_file:
            check_model_file(self.model_path)
        runtime = _import_runtime()
        params = runtime.CommonParams()
        params.model.path = str(self.model_path)
        params.n_ctx = self.n_ctx
        params.n_parallel = 1  # one call at a time: the whole window is this call's
        params.n_batch = params.n_ubatch = _DEFAULT_N_BATCH
        params.no_extra_bufts = True
        params.warmup = False
        # A conversation may end with assistant messages (other agents' turns in a hub): they
        # are turns to answer, not an answer to continue (the engine's default "prefill").
        params.prefill_assistant = False
        params.verbosity = -1
        params.api_keys = [self._http_key]
        threads = max(1, (os.cpu_count() or 2) // 2)
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
        _apply_llama_kwargs(params, self.llama_kwargs)
        try:
            self._server = runtime.Server(params)
        except RuntimeError as exc:
            raise ValueError(
                f"llama.cpp could not load {str(self.model_path)!r} (is it a GGUF model "
                f"file?): {exc}"
            ) from None
        self._address = self._server.listening_address
        # The engine's task loop starts in a thread of its own once the port is open, and an
        # engine freed before that loop runs loses its stop signal: its destructor then waits
        # for the loop forever (a close right after a load hung so). /slots is answered by
        # that loop: once it answers, the loop runs.
        self._local_route("/slots", None)
        meta = self._local_route("/v1/models", None)["data"][0].get("meta") or {}
        self.n_ctx_train = int(meta["n_ctx_train"]) if meta.get("n_ctx_train") else None

    async def load(self) -> None:
        """Load the model now (in a worker thread) instead of on the first call.

        :raises ValueError: if llama.cpp cannot load the file.
        :raises ModelError: if the default model's file is not the published one (SHA-256).
        """
        async with self._lock:
            if self._server is None:
                await anyio.to_thread.run_sync(self._load_sync)

    async def aclose(self) -> None:
        """Free the engine (weights, threads, local port) in a worker thread, after the call
        in progress; a later call loads the model again. Safe to call twice.

        Without it the engine is freed when the model is garbage-collected, which holds the
        thread that drops the last reference (often the event loop's) for 0.05-0.2 s.
        """
        async with self._lock:
            if self._server is None:
                return
            # The worker thread drops the last reference: the engine's destructor stops it and
            # joins its threads there, not in the event loop.
            held = [self._server]
            self._server = None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(held.clear)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the context window ---------------------------------------------------------------------

    @property
    def context_window(self) -> int:
        """The context window in tokens (``n_ctx``)."""
        return self.n_ctx

    def prompt_budget(self) -> tuple[TokenCounterBase, int]:
        """A counter of the tokens a prompt costs this model (the chat template rendered and
        tokenised, tool instructions included) and the prompt tokens that fit: ``n_ctx``
        minus the answer's ``max_tokens`` (``generate_kwargs``, else 512)."""
        answer = int(self.generate_kwargs.get("max_tokens") or _DEFAULT_MAX_TOKENS)
        return _PromptTokenCounter(self), max(1, self.n_ctx - answer)

    def _count_prompt(self, messages: list[dict[str, Any]], tools: Any) -> int:
        """The tokens of the prompt a call with *messages* and *tools* renders (model loaded).

        The engine renders and tokenises through its local HTTP routes (the in-process API
        has no tokeniser), guarded by a key of this instance.
        """
        plan = self._plan(messages, tools, None, None, {})
        rendered = self._local_route("/apply-template", {"messages": plan.messages})["prompt"]
        tokens = self._local_route(
            "/tokenize", {"content": rendered, "add_special": True, "parse_special": True}
        )["tokens"]
        return len(tokens)

    def _local_route(self, route: str, body: dict[str, Any] | None) -> Any:
        """POST *body* to (or, for ``None``, GET) one of the engine's local HTTP routes.

        :raises ModelError: if the route fails (the key is never part of the message).
        """
        request = urllib.request.Request(
            self._address + route,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self._http_key}",
            },
        )
        try:
            with _LOCAL_OPENER.open(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            with exc:
                detail = exc.read().decode("utf-8", "replace")[:500]
            raise ModelError(
                f"{self.model_name}: the engine's {route} failed: {exc.code} {detail}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ModelError(f"{self.model_name}: the engine's {route} failed: {exc}") from None

    # -- calling -------------------------------------------------------------------------------

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Generate a reply to OpenAI-format *messages*.

        :param tools: OpenAI function schemas; a tool call comes back as a
            :class:`ToolUseBlock` with a generated id. One call per response.
        :param tool_choice: ``"auto"`` (default when tools are given), ``"none"``,
            ``"required"`` or a tool name.
        :param structured_model: the output is constrained to its JSON schema and the
            validated object is returned in ``metadata`` (tools are then ignored).
        :raises ValueError: for malformed messages or an invalid ``tool_choice``.
        :raises ModelError: if the prompt does not fit the context window (the message says
            both sizes and what to do instead).
        :raises ModelResponseError: if structured output, or the answer under ``"auto"``
            (or a call not yet naming its tool), was cut off by ``max_tokens``. A call of a
            tool cut off that way is returned as a call whose arguments did not parse
            (``raw_input`` set), which a toolkit answers as an argument error.
        """
        validate_tool_choice(tool_choice, tools)
        plan = self._plan(messages, tools, tool_choice, structured_model, generate_kwargs)
        if self.stream:
            return self._stream(plan)
        last: ChatResponse | None = None
        stream = self._stream(plan)
        try:
            async for last in stream:  # noqa: B007 - only the final chunk is returned
                pass
        finally:
            await stream.aclose()
        assert last is not None
        last.stream = False
        return last

    def _plan(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        call_kwargs: dict[str, Any],
    ) -> _Plan:
        chat = _to_chat_messages(messages)
        kwargs = {"max_tokens": _DEFAULT_MAX_TOKENS, **self.generate_kwargs, **call_kwargs}
        if structured_model is not None:
            if tools:
                logger.warning(
                    "structured_model is given: tools and tool_choice are ignored for this call"
                )
            schema = structured_model_schema(structured_model)
            instruction = (
                "Answer with one JSON object that matches this JSON schema:\n"
                + json.dumps(schema, ensure_ascii=False)
            )
            plan = _Plan(_with_system(chat, instruction), kwargs, "structured", schema, {})
            plan.structured_model = structured_model
            return plan
        offered = {t["function"]["name"]: t["function"] for t in tools or [] if "function" in t}
        if not offered or tool_choice == "none":
            saw_calls = any(m.get("role") == "assistant" and m.get("tool_calls") for m in messages)
            if saw_calls:
                chat = _to_chat_messages(messages, _tool_call_sentence)
            plan = _Plan(chat, kwargs, "text", None, {})
            plan.saw_calls = saw_calls
            return plan
        if tool_choice in (None, "auto"):
            mode = "auto"
            names = list(offered)
        elif tool_choice == "required":
            mode, names = "tool", list(offered)
        else:
            mode, names = "tool", [str(tool_choice)]
        final = _FINAL_ANSWER
        while final in offered:
            final += "_"
        shapes = [
            _tool_call_schema(n, offered[n].get("parameters") or {"type": "object"}) for n in names
        ]
        lines = ["You can call these tools:"]
        for n in names:
            description = offered[n].get("description", "")
            parameters = json.dumps(offered[n].get("parameters", {}), ensure_ascii=False)
            lines.append(f"- {n}: {description} Arguments (JSON schema): {parameters}")
        lines.append('To call a tool, answer with JSON: {"name": <tool name>, "arguments": {...}}.')
        if mode == "auto":
            shapes.append(
                _tool_call_schema(
                    final,
                    {
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "required": ["text"],
                    },
                )
            )
            lines.append(
                f'To answer without a tool, use {{"name": "{final}", '
                '"arguments": {"text": <your answer>}}.'
            )
        schema = shapes[0] if len(shapes) == 1 else {"anyOf": shapes}
        plan = _Plan(_with_system(chat, "\n".join(lines)), kwargs, mode, schema, offered, final)
        plan.names = names
        return plan

    def _request(self, plan: _Plan) -> dict[str, Any]:
        """The engine request of *plan*: OpenAI chat fields plus llama.cpp's own."""
        request: dict[str, Any] = {
            **plan.kwargs,
            "messages": plan.messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_progress": True,  # progress reports: the points where reading can stop
            "cache_prompt": True,
        }
        stop = request.pop("stop", None)
        if stop:
            request["stop"] = [stop] if isinstance(stop, str) else list(stop)
        if plan.schema is not None:
            request["json_schema"] = plan.schema
        return request

    async def _stream(self, plan: _Plan) -> AsyncGenerator[ChatResponse, None]:
        started = time.monotonic()
        response_id = uuid.uuid4().hex
        async with self._lock:
            if self._server is None:
                await anyio.to_thread.run_sync(self._load_sync)
            self._prompt_progress = None
            run = _Run(self._server, self._request(plan))
            report = _ProgressLog(self.model_name, started, self.progress_interval)
            text = ""
            finish_reason: str | None = None
            usage: dict[str, Any] = {}
            stopped_early = False
            failure: ModelError | None = None
            async with anyio.create_task_group() as group:
                group.start_soon(run.run)
                try:
                    async for chunk in run.receive:
                        failure = _error_of(self, chunk, int(plan.kwargs["max_tokens"]))
                        if failure is not None:
                            break  # raised below: out of the task group, not in a group
                        progress = chunk.get("prompt_progress")
                        if isinstance(progress, dict):
                            self._prompt_progress = read = (
                                int(progress.get("processed", 0)),
                                int(progress.get("total", 0)),
                            )
                            report("reading the prompt, {:,} of {:,} tokens", *read)
                        usage = chunk.get("usage") or usage
                        choices = chunk.get("choices") or [{}]
                        finish_reason = choices[0].get("finish_reason") or finish_reason
                        piece = (choices[0].get("delta") or {}).get("content") or ""
                        if not piece:
                            continue
                        text += piece
                        # Constrained tool calls are only meaningful once complete, and text
                        # that imitates one is held back until it no longer looks like one.
                        if plan.mode == "structured" or (
                            plan.mode == "text"
                            and not (plan.saw_calls and _looks_like_a_call(text))
                        ):
                            try:
                                yield ChatResponse(
                                    content=[TextBlock(text)],
                                    id=response_id,
                                    stream=True,
                                    is_last=False,
                                )
                            except GeneratorExit:
                                stopped_early = True
                                break
                        else:
                            report("generating, {:,} characters so far", len(text))
                finally:
                    # Cancelled, closed or failed: the engine is told to stop at its next
                    # report (token or prompt batch); the task group waits for that.
                    run.stop()
        if stopped_early:
            return
        if failure is not None:
            raise failure
        usage_ = ChatUsage(
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            time.monotonic() - started,
        )
        content, metadata = self._parse(plan, text, finish_reason)
        yield ChatResponse(
            content=content,
            id=response_id,
            stream=True,
            is_last=True,
            usage=usage_,
            metadata=metadata,
        )

    def _imitated_call(
        self, plan: _Plan, text: str, finish_reason: str | None
    ) -> list[ResponseBlock]:
        """A plain-text answer written in the call format of the conversation's earlier
        calls (small models imitate them): the answer it carries, else an error, so that no
        JSON meant as a call becomes the answer.

        :raises ModelResponseError: unless *text* is a whole call of the answer pseudo-tool.
        """
        try:
            data = loads_strict(text)
        except ValueError:
            data = None
        arguments = data.get("arguments") if isinstance(data, dict) else None
        if (
            isinstance(data, dict)
            and data.get("name") == _FINAL_ANSWER
            and isinstance(arguments, dict)
            and isinstance(arguments.get("text"), str)
        ):
            return [TextBlock(arguments["text"])]
        raise ModelResponseError(
            f"{self.model_name} wrote a tool call where a plain-text answer was asked for "
            f"(finish_reason={finish_reason!r}), imitating the calls earlier in the "
            "conversation; offer it the tools, or raise max_tokens "
            f"(now {plan.kwargs.get('max_tokens')}) if it was cut off"
        )

    def _parse(
        self, plan: _Plan, text: str, finish_reason: str | None
    ) -> tuple[list[ResponseBlock], dict[str, Any] | None]:
        if plan.mode == "text":
            if plan.saw_calls and _looks_like_a_call(text):
                return self._imitated_call(plan, text, finish_reason), None
            return ([TextBlock(text)] if text else []), None
        try:
            data = loads_strict(text)
        except ValueError:
            data = None
        if plan.mode == "structured":
            if not isinstance(data, dict):
                raise ModelResponseError(
                    f"{self.model_name} produced incomplete structured output "
                    f"(finish_reason={finish_reason!r}); raise max_tokens "
                    f"(now {plan.kwargs.get('max_tokens')}). Output: {text[:200]!r}"
                )
            try:
                metadata = validate_structured_output(plan.structured_model, data)
            except ValueError as exc:
                raise ModelResponseError(
                    f"{self.model_name} produced structured output that does not match the "
                    f"schema: {exc}"
                ) from exc
            return [TextBlock(text)], metadata
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            name, arguments = data["name"], data.get("arguments")
            if name == plan.final_answer and isinstance(arguments, dict):
                return [TextBlock(str(arguments.get("text", "")))], None
            if isinstance(arguments, dict):
                return [ToolUseBlock(new_call_id(), name, arguments)], None
        # Cut off (max_tokens) before the JSON closed. The constrained output is never text
        # for the user. A call of one of the offered tools becomes a call whose arguments did
        # not parse (raw_input set, no text): the agent's toolkit answers it as an argument
        # error and the model can retry. An answer (the pseudo-tool, which no toolkit knows)
        # or a call not yet naming its tool cannot be retried that way: it raises.
        name = _called_tool(plan, text)
        if name is None or not text:  # an empty raw_input would not stop the call
            raise ModelResponseError(
                f"{self.model_name}: the answer was cut off by max_tokens before it was "
                f"complete (finish_reason={finish_reason!r}); raise max_tokens (now "
                f"{plan.kwargs.get('max_tokens')}) or ask for a shorter answer"
            )
        logger.warning(
            "%s: the call of %r was cut off by max_tokens (finish_reason=%r); raise max_tokens "
            "(now %s)",
            self.model_name,
            name,
            finish_reason,
            plan.kwargs.get("max_tokens"),
        )
        return [ToolUseBlock(new_call_id(), name, {}, raw_input=text)], None


def _looks_like_a_call(text: str) -> bool:
    """Whether *text* is, or begins like, JSON in the ``{"name": ...}`` call format."""
    start = "".join(text[:24].split())
    return start.startswith(_CALL_START) or (len(start) > 0 and _CALL_START.startswith(start))


def _called_tool(plan: _Plan, text: str) -> str | None:
    """The offered tool an unfinished constrained call is calling, or ``None`` when it is the
    answer (the pseudo-tool) or does not name a tool yet.

    With one tool required the grammar allows no other name, so that tool is the one called
    even before its name is written.
    """
    match = _NAME_RE.search(text)
    if match is not None:
        return match.group(1) if match.group(1) in plan.names else None
    if plan.mode == "tool" and len(plan.names) == 1:
        return plan.names[0]
    return None


class _PromptTokenCounter(TokenCounterBase):
    """Counts formatted messages exactly as :class:`LlamaCppChatModel` will render them; loads
    the model first if needed, and counts in a worker thread."""

    def __init__(self, model: LlamaCppChatModel) -> None:
        self._model = model

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """The prompt tokens of a call with *messages* and *tools*.

        :raises ValueError: if llama.cpp cannot load the model file.
        """
        model = self._model
        if model._server is None:
            await model.load()
        return await anyio.to_thread.run_sync(model._count_prompt, messages, tools)


class _ProgressLog:
    """Logs what a long call is doing: at INFO, once it has run ``interval`` seconds, then at
    most once per interval (a progress line for steps that show nothing for a while)."""

    __slots__ = ("interval", "name", "next_at", "started")

    def __init__(self, name: str, started: float, interval: float) -> None:
        self.name = name
        self.started = started
        self.interval = interval
        self.next_at = started + interval

    def __call__(self, what: str, *args: Any) -> None:
        now = time.monotonic()
        if now >= self.next_at:
            self.next_at = now + self.interval
            logger.info("%s: %s (%.1f s)", self.name, what.format(*args), now - self.started)


class _Run:
    """One engine request, run in a worker thread, its chunks handed to the event loop.

    The engine calls :meth:`_on_chunk` in that thread for every chunk (prompt-progress
    reports included); answering ``True`` makes it drop the request.
    """

    def __init__(self, server: Any, request: dict[str, Any]) -> None:
        self._server = server
        self._request = request
        self._stop = threading.Event()
        self._send, self.receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)

    async def run(self) -> None:
        """Run the request to its end or until :meth:`stop` (not abandoned on cancel: the
        engine stops at its next report, so the wait is bounded by one batch or token)."""
        with self._send:
            await anyio.to_thread.run_sync(
                self._server.handle_chat_completions, self._request, self._on_chunk
            )

    def stop(self) -> None:
        """Make the engine drop the request at its next report."""
        self._stop.set()
        self.receive.close()

    def _on_chunk(self, chunk: dict[str, Any]) -> bool:
        if self._stop.is_set():
            return True
        try:
            anyio.from_thread.run_sync(self._send.send_nowait, chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return True
        return False


def _error_of(model: LlamaCppChatModel, chunk: dict[str, Any], answer: int) -> ModelError | None:
    """The engine's error report in *chunk* as the package's error, saying what to do (a
    prompt beyond the context window names both sizes and the remedies); ``None`` for a
    chunk that is no error. *answer* is the call's ``max_tokens``."""
    error = chunk.get("error")
    if error is None and "code" in chunk and "message" in chunk and "choices" not in chunk:
        error = chunk
    if error is None:
        return None
    if not isinstance(error, dict):
        return ModelError(f"{model.model_name}: llama.cpp failed: {error}")
    if error.get("type") == "exceed_context_size_error":
        return _overflow_error(model, int(error.get("n_prompt_tokens") or 0), answer)
    return ModelError(f"{model.model_name}: llama.cpp refused the request: {error.get('message')}")


def _overflow_error(model: LlamaCppChatModel, prompt: int, answer: int) -> ModelError:
    """The error for a prompt of *prompt* tokens beyond the context window: both sizes, and
    the remedy that fits (a larger ``n_ctx`` where the model reads that far, else another
    model or a shorter prompt)."""
    needed = prompt + answer
    limit = model.n_ctx_train
    if limit is not None and needed > limit:
        remedy = (
            f"This model reads at most {limit} tokens, so n_ctx cannot help: use a model "
            "with a larger context window (LlamaCppChatModel(model_path=...), or an API "
            "model) for this component, or shorten its prompt"
        )
    else:
        reads = f" (this model reads up to {limit})" if limit is not None else ""
        remedy = (
            f"Raise n_ctx to at least {needed} (LlamaCppChatModel(n_ctx=...){reads}; "
            "memory and time grow with it), lower max_tokens, shorten the prompt, or, for "
            "an agent's conversation, give the formatter a token budget (e.g. "
            "OpenAIChatFormatter(token_counter=..., max_tokens=...))"
        )
    return ModelError(
        f"{model.model_name}: the prompt needs {prompt} tokens (plus max_tokens={answer} for "
        f"the answer), but the context window holds {model.n_ctx} (n_ctx). {remedy}"
    )


def _check_llama_kwargs(kwargs: dict[str, Any]) -> None:
    """:raises ValueError: for a key that is neither a thread setting, ``use_extra_bufts``,
    nor a field of ``xllamacpp.CommonParams``."""
    runtime = _import_runtime()
    fields = {name for name in dir(runtime.CommonParams) if not name.startswith("_")}
    unknown = sorted(set(kwargs) - fields - {*_THREAD_KEYS, "use_extra_bufts", "verbose"})
    if unknown:
        raise ValueError(
            f"LlamaCppChatModel: unknown llama_kwargs {unknown}; use n_threads, "
            "n_threads_batch, n_batch, use_extra_bufts or a field of xllamacpp.CommonParams"
        )


def _apply_llama_kwargs(params: Any, kwargs: dict[str, Any]) -> None:
    for key, value in kwargs.items():
        if key == "n_threads":
            params.cpuparams.n_threads = params.cpuparams_batch.n_threads = int(value)
        elif key == "n_threads_batch":
            params.cpuparams_batch.n_threads = int(value)
        elif key == "use_extra_bufts":
            params.no_extra_bufts = not value
        elif key == "verbose":
            params.verbosity = 1 if value else -1
        else:
            setattr(params, key, value)
    if "n_batch" in kwargs and "n_ubatch" not in kwargs:
        params.n_ubatch = params.n_batch


def _with_system(chat: list[dict[str, str]], instruction: str) -> list[dict[str, str]]:
    if chat and chat[0]["role"] == "system":
        first = {"role": "system", "content": f"{chat[0]['content']}\n\n{instruction}"}
        return [first, *chat[1:]]
    return [{"role": "system", "content": instruction}, *chat]


class _Plan:
    """What one call generates: the chat messages, sampling kwargs and output constraint."""

    __slots__ = (
        "final_answer",
        "kwargs",
        "messages",
        "mode",
        "names",
        "saw_calls",
        "schema",
        "structured_model",
        "tools",
    )

    def __init__(
        self,
        messages: list[dict[str, str]],
        kwargs: dict[str, Any],
        mode: str,
        schema: dict[str, Any] | None,
        tools: dict[str, dict[str, Any]],
        final_answer: str = _FINAL_ANSWER,
    ) -> None:
        self.messages = messages
        self.kwargs = kwargs
        self.mode = mode  # "text" | "structured" | "tool" | "auto"
        self.schema = schema
        self.tools = tools
        self.final_answer = final_answer
        # The tools the constrained output may call (the offered ones, or the one named).
        self.names: list[str] = []
        # Whether the conversation shows earlier tool calls (text mode only).
        self.saw_calls = False
        self.structured_model: StructuredModel = {}
