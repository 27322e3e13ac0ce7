"""A long-term memory on the mem0 library (the ``mem0`` extra).

mem0 asks an LLM to extract facts from what it is given, embeds them and keeps them in a
vector store (Qdrant by default), with a SQLite history beside it. This adapter runs mem0 on
this package's chat and embedding models, registered in mem0 as the ``"agentscope_rt"`` LLM
and embedder providers.

**Both event loops.** mem0's ``AsyncMemory`` is written on asyncio (``asyncio.to_thread``,
``asyncio.gather``), so it cannot run under trio. The adapter drives mem0's synchronous
``Memory`` from a worker thread (``anyio.to_thread``) instead; when mem0 calls the LLM or the
embedder, the wrapper runs our async model back on the caller's event loop
(``anyio.from_thread.run`` with the loop's token), so the models keep their per-loop HTTP
clients and the whole thing works on asyncio and trio alike. Calls on one memory are
serialised (mem0's embedded stores are not thread-safe).

**Privacy and network.** Unless ``MEM0_TELEMETRY`` is already set, the adapter sets it to
``False`` before mem0 is first imported: mem0 otherwise sends usage events to PostHog and
fetches a notice configuration from GitHub. mem0 still creates its folder (``~/.mem0`` or
``MEM0_DIR``) when imported, and keeps its history database there unless
``mem0_config.history_db_path`` says otherwise.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from .._cleanup import cleanup_scope
from .._extras import check_extra
from .._locks import FairLock
from ..message import Msg, TextBlock, ToolUseBlock
from ..tool import ToolResponse
from ._long_term_memory import LongTermMemoryBase, query_texts

if TYPE_CHECKING:
    from ..embedding import EmbeddingModelBase
    from ..model import ChatModelBase, ChatResponse

__all__ = ["Mem0LongTermMemory"]

T = TypeVar("T")

PROVIDER = "agentscope_rt"
"""The name of this package's LLM and embedder providers in mem0's factories."""


class _LoopBridge:
    """Carries one of our async models into mem0's synchronous world.

    mem0 calls its LLM and embedder from the worker thread the adapter started, or from
    threads of its own; :meth:`run` sends the coroutine back to the event loop that is waiting
    on that worker. From the worker thread itself it runs as part of the waiting task, so
    cancelling the adapter's call cancels the model call too (with an explicit token, trio
    would run it as a system task that no cancellation reaches); from mem0's own threads it
    goes through the loop's token.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.token: anyio.lowlevel.EventLoopToken | None = None
        self.worker: int | None = None

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        if threading.get_ident() == self.worker:
            return anyio.from_thread.run(function, *args)
        if self.token is None:
            raise RuntimeError(
                "the agentscope_rt mem0 provider was called outside a Mem0LongTermMemory "
                "call; use it through Mem0LongTermMemory"
            )
        return anyio.from_thread.run(function, *args, token=self.token)


def _require_mem0() -> None:
    check_extra(("mem0",), extra="mem0", user="Mem0LongTermMemory (the mem0 library)")
    _telemetry_off()


# Whether MEM0_TELEMETRY was set by this module (then it is ours to keep off).
_TELEMETRY_SET_HERE = False


def _telemetry_off() -> None:
    """Turn mem0's telemetry off unless the user set ``MEM0_TELEMETRY`` themselves."""
    global _TELEMETRY_SET_HERE
    if "MEM0_TELEMETRY" in os.environ and not _TELEMETRY_SET_HERE:
        return
    # Read by mem0 when its telemetry module is first imported ...
    os.environ["MEM0_TELEMETRY"] = "False"
    _TELEMETRY_SET_HERE = True
    # ... and copied into these modules' globals if mem0 was imported before.
    for name in ("mem0.memory.telemetry", "mem0.memory.main"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "MEM0_TELEMETRY"):
            module.__dict__["MEM0_TELEMETRY"] = False


def _bridge_of(config: Any, needs: str) -> _LoopBridge:
    """The model a mem0 LLM or embedder config of our provider carries.

    :raises ValueError: ``the '<provider>' mem0 <needs>`` when it carries none.
    """
    bridge = config.model
    if not isinstance(bridge, _LoopBridge):
        raise ValueError(f"the {PROVIDER!r} mem0 {needs}")
    return bridge


async def _chat(model: ChatModelBase, messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
    response = await model(messages, tools=tools)
    if isinstance(response, AsyncGenerator):
        last = None
        async for chunk in response:
            last = chunk
        if last is None:
            raise RuntimeError(f"{model.model_name!r} streamed no response")
        return last
    return response


def _provider_classes() -> tuple[type, type, type, type]:
    """mem0's config classes accepting our provider name, and the LLM and embedder classes
    (built on first use: they subclass mem0's, which are imported only then)."""
    from mem0.embeddings.base import EmbeddingBase
    from mem0.embeddings.configs import EmbedderConfig
    from mem0.llms.base import LLMBase
    from mem0.llms.configs import LlmConfig
    from pydantic import field_validator

    def accepting_registered(config: type, factory_name: str, what: str) -> type:
        # mem0 lists its providers in the validator; ours is registered in the factory.
        class WithOurs(config):
            @field_validator("config")
            @classmethod
            def validate_config(cls, v: Any, values: Any) -> Any:
                from mem0.utils import factory

                provider = values.data.get("provider")
                if provider in getattr(factory, factory_name).provider_to_class:
                    return v
                raise ValueError(f"Unsupported {what} provider: {provider}")

        return WithOurs

    LlmConfigWithOurs = accepting_registered(LlmConfig, "LlmFactory", "LLM")
    EmbedderConfigWithOurs = accepting_registered(EmbedderConfig, "EmbedderFactory", "embedding")

    class Mem0LLM(LLMBase):
        """mem0's LLM interface on a :class:`~agentscope_rt.model.ChatModelBase`."""

        def __init__(self, config: Any = None) -> None:
            super().__init__(config)
            self.bridge = _bridge_of(
                self.config, "LLM needs a chat model: use Mem0LongTermMemory(model=...)"
            )

        def generate_response(
            self,
            messages: list[dict[str, Any]],
            response_format: Any = None,
            tools: list[dict[str, Any]] | None = None,
            tool_choice: str = "auto",
            **kwargs: Any,
        ) -> str | dict[str, Any]:
            # mem0's prompts ask for JSON themselves; response_format is OpenAI-only.
            chat = [
                {"role": m["role"], "content": m["content"]}
                for m in messages
                if m.get("role") in ("system", "user", "assistant")
            ]
            if not chat:
                raise ValueError("mem0 sent no system, user or assistant message")
            response = self.bridge.run(_chat, self.bridge.model, chat, tools)
            texts = [b.text for b in response.content if isinstance(b, TextBlock)]
            text = "\n".join(texts)
            if tools is None:
                return text
            calls = [
                {"name": b.name, "arguments": b.input}
                for b in response.content
                if isinstance(b, ToolUseBlock)
            ]
            return {"content": text, "tool_calls": calls}

    class Mem0Embedder(EmbeddingBase):
        """mem0's embedder interface on an :class:`~agentscope_rt.embedding.EmbeddingModelBase`."""

        def __init__(self, config: Any = None) -> None:
            super().__init__(config)
            self.bridge = _bridge_of(
                self.config,
                "embedder needs an embedding model: use Mem0LongTermMemory(embedding_model=...)",
            )

        def embed_batch(self, texts: list[str], memory_action: Any = "add") -> list[list[float]]:
            async def call() -> list[list[float]]:
                response = await self.bridge.model(list(texts))
                return [list(v) for v in response.embeddings]

            return self.bridge.run(call) if texts else []

        def embed(self, text: str | list[str], memory_action: Any = None) -> list[float]:
            texts = [text] if isinstance(text, str) else list(text)
            return self.embed_batch(texts, memory_action)[0]

    return LlmConfigWithOurs, EmbedderConfigWithOurs, Mem0LLM, Mem0Embedder


_PROVIDERS: tuple[type, type, type, type] | None = None


def _register_providers() -> tuple[type, type]:
    """Register our providers with mem0's factories (once) and return the config classes."""
    global _PROVIDERS
    if _PROVIDERS is None:
        from mem0.configs.llms.base import BaseLlmConfig
        from mem0.utils.factory import EmbedderFactory, LlmFactory

        classes = _provider_classes()
        # mem0 loads providers by dotted path: point it at the classes built above.
        globals()["_Mem0LLM"], globals()["_Mem0Embedder"] = classes[2], classes[3]
        LlmFactory.provider_to_class[PROVIDER] = (f"{__name__}._Mem0LLM", BaseLlmConfig)
        EmbedderFactory.provider_to_class[PROVIDER] = f"{__name__}._Mem0Embedder"
        _PROVIDERS = classes
    return _PROVIDERS[0], _PROVIDERS[1]


def _text_of(msg: Msg) -> str:
    text = msg.get_text_content()
    return text if text is not None else ""


class Mem0LongTermMemory(LongTermMemoryBase):
    """A long-term memory kept by mem0, with AgentScope's arguments.

    At least one of *agent_name*, *user_name*, *run_name* is required: they scope what is
    recorded and what is retrieved (mem0's ``agent_id``, ``user_id``, ``run_id``).

    :param agent_name: the agent's name (mem0's ``agent_id``).
    :param user_name: the user's name (mem0's ``user_id``).
    :param run_name: the run's or session's name (mem0's ``run_id``).
    :param model: the chat model mem0 extracts facts with. Required without *mem0_config*;
        with it, replaces its LLM.
    :param embedding_model: the embedding model. Required without *mem0_config*; with it,
        replaces its embedder.
    :param vector_store_config: a mem0 ``VectorStoreConfig`` (or its dict). Default, as in
        AgentScope: mem0's embedded Qdrant in mem0's default folder (``/tmp/qdrant``) with
        ``on_disk=True`` (Qdrant keeps the vectors on disk rather than in RAM), sized to
        *embedding_model*. Pass a folder of your own for anything but a trial.
    :param mem0_config: a mem0 ``MemoryConfig`` (or its dict) to start from.
    :param default_memory_type: mem0's memory type for :meth:`record` (``None``: facts;
        ``"procedural_memory"``: a procedural summary, needs *agent_name*).
    :param suppress_mem0_logging: silence mem0's loggers.
    :param kwargs: ``on_disk`` for the default vector store (as AgentScope).
    :raises ValueError: if no name is given, or *model* / *embedding_model* is missing
        without *mem0_config*.
    :raises TypeError: for models of the wrong type.
    :raises ImportError: if mem0 (``mem0ai``) is not installed.
    """

    def __init__(
        self,
        agent_name: str | None = None,
        user_name: str | None = None,
        run_name: str | None = None,
        model: ChatModelBase | None = None,
        embedding_model: EmbeddingModelBase | None = None,
        vector_store_config: Any = None,
        mem0_config: Any = None,
        default_memory_type: str | None = None,
        suppress_mem0_logging: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        from ..embedding import EmbeddingModelBase
        from ..model import ChatModelBase

        if agent_name is None and user_name is None and run_name is None:
            raise ValueError("at least one of agent_name, user_name, and run_name is required")
        if model is not None and not isinstance(model, ChatModelBase):
            raise TypeError(f"model must be a ChatModelBase, not {type(model).__name__}")
        if embedding_model is not None and not isinstance(embedding_model, EmbeddingModelBase):
            kind = type(embedding_model).__name__
            raise TypeError(f"embedding_model must be an EmbeddingModelBase, not {kind}")
        if mem0_config is None and (model is None or embedding_model is None):
            raise ValueError(
                "model and embedding_model are required if mem0_config is not provided"
            )
        unknown = set(kwargs) - {"on_disk"}
        if unknown:
            raise TypeError(
                f"Mem0LongTermMemory got unexpected arguments {sorted(unknown)}; the only extra "
                "argument is on_disk (for the default vector store)"
            )
        _require_mem0()
        if suppress_mem0_logging:
            for name in ("mem0", "mem0.memory", "mem0.memory.main"):
                logging.getLogger(name).setLevel(logging.CRITICAL)

        import mem0
        from mem0.configs.base import MemoryConfig
        from mem0.vector_stores.configs import VectorStoreConfig

        llm_config_cls, embedder_config_cls = _register_providers()
        self._bridges: list[_LoopBridge] = []
        if isinstance(mem0_config, dict):
            mem0_config = MemoryConfig(**mem0_config)
        elif mem0_config is not None:
            # A copy: the models are set on it below, and the caller's object may serve other
            # memories (one config for every user) that must keep their own models.
            mem0_config = mem0_config.model_copy()
        if isinstance(vector_store_config, dict):
            vector_store_config = VectorStoreConfig(**vector_store_config)
        if mem0_config is None:
            mem0_config = MemoryConfig()
            if vector_store_config is None:
                assert embedding_model is not None
                vector_store_config = VectorStoreConfig(
                    config={
                        "on_disk": kwargs.get("on_disk", True),
                        "embedding_model_dims": embedding_model.dimensions,
                    }
                )
        if model is not None:
            bridge = _LoopBridge(model)
            self._bridges.append(bridge)
            mem0_config.llm = llm_config_cls(provider=PROVIDER, config={"model": bridge})
        if embedding_model is not None:
            bridge = _LoopBridge(embedding_model)
            self._bridges.append(bridge)
            mem0_config.embedder = embedder_config_cls(
                provider=PROVIDER,
                config={"model": bridge, "embedding_dims": embedding_model.dimensions},
            )
        if vector_store_config is not None:
            mem0_config.vector_store = vector_store_config

        self.agent_id = agent_name
        self.user_id = user_name
        self.run_id = run_name
        self.default_memory_type = default_memory_type
        # Nothing is registered as state, as in AgentScope: the names say whose memories
        # these are and come from the constructor; an agent saved by AgentScope holds
        # "long_term_memory": {} and loads as it is.
        self._lock = FairLock()
        # Built in a worker thread on first use: it opens the vector store and the history
        # database, which blocks.
        self._config = mem0_config
        self._memory_class = mem0.Memory
        self.long_term_working_memory: Any = None

    def __repr__(self) -> str:
        return (
            f"Mem0LongTermMemory(agent_name={self.agent_id!r}, user_name={self.user_id!r}, "
            f"run_name={self.run_id!r})"
        )

    # -- running mem0 ------------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``function(memory, *args, **kwargs)`` in a worker thread, with the models
        reachable on this event loop."""
        async with self._lock:
            token = anyio.lowlevel.current_token()
            for bridge in self._bridges:
                bridge.token = token
            try:

                def call() -> T:
                    for bridge in self._bridges:
                        bridge.worker = threading.get_ident()
                    if self.long_term_working_memory is None:
                        self.long_term_working_memory = self._memory_class(self._config)
                    return function(self.long_term_working_memory, *args, **kwargs)

                return await anyio.to_thread.run_sync(call)
            finally:
                for bridge in self._bridges:
                    bridge.token = bridge.worker = None

    def _ids(self) -> dict[str, str]:
        ids = {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}
        return {key: value for key, value in ids.items() if value is not None}

    async def _mem0_record(
        self,
        messages: str | list[dict[str, Any]],
        memory_type: str | None = None,
        infer: bool = True,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """``Memory.add`` with this memory's names."""
        memory_type = memory_type if memory_type is not None else self.default_memory_type

        def add(memory: Any) -> dict[str, Any]:
            result: dict[str, Any] = memory.add(
                messages, **self._ids(), memory_type=memory_type, infer=infer, **kwargs
            )
            return result

        return await self._run(add)

    async def _mem0_search(self, queries: list[str], limit: int) -> list[str]:
        """The memories (and graph relations) found for each query, *limit* per query."""
        filters = self._ids()

        def search(memory: Any) -> list[str]:
            found: list[str] = []
            for query in queries:
                result = memory.search(query, top_k=limit, filters=filters)
                if not result:
                    continue
                found.extend(item["memory"] for item in result.get("results", []))
                found.extend(
                    f"{r['source']} -- {r['relationship']} -- {r['destination']}"
                    for r in result.get("relations", [])
                )
            return found

        return await self._run(search)

    async def close(self) -> None:
        """Close mem0's vector store and history database (a later call reopens them)."""

        def close(memory: Any) -> None:
            memory.close()
            self.long_term_working_memory = None

        if self.long_term_working_memory is not None:
            with cleanup_scope():
                await self._run(close)

    async def __aenter__(self) -> Mem0LongTermMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- the long-term memory interface ------------------------------------------------------

    async def record(
        self,
        msgs: list[Msg | None] | Msg | None,
        memory_type: str | None = None,
        infer: bool = True,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Give mem0 the text of *msgs* (``None`` items and messages without text skipped) as
        one assistant message, for it to extract and store facts.

        :param memory_type: overrides ``default_memory_type``.
        :param infer: let mem0's LLM extract facts (``False``: store the text as it is).
        :param kwargs: more arguments for mem0's ``Memory.add`` (``metadata``, ``prompt``).
        :returns: mem0's answer (``{"results": [{"id", "memory", "event"}, ...]}``).
        :raises TypeError: for an item that is not a ``Msg`` or ``None``.
        """
        if msgs is None:
            msgs = []
        if isinstance(msgs, Msg):
            msgs = [msgs]
        for index, msg in enumerate(msgs):
            if msg is not None and not isinstance(msg, Msg):
                raise TypeError(f"msgs[{index}] must be a Msg or None, not {type(msg).__name__}")
        texts = [t for t in (_text_of(m) for m in msgs if m is not None) if t]
        if not texts:
            return {"results": []}
        messages = [{"role": "assistant", "content": "\n".join(texts), "name": "assistant"}]
        return await self._mem0_record(messages, memory_type=memory_type, infer=infer, **kwargs)

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        """The memories mem0 finds for the text of *msg* (each message of a list searched on
        its own, *limit* each), one per line; ``""`` when none.

        :raises TypeError: for something that is not a ``Msg`` or a list of them.
        """
        queries = query_texts(msg)
        if not queries:
            return ""
        return "\n".join(await self._mem0_search(queries, limit))

    async def record_to_memory(
        self,
        thinking: str,
        content: list[str],
        **kwargs: Any,
    ) -> ToolResponse:
        # The tool description is the base class's docstring (inspect.getdoc inherits it).
        # As AgentScope: as the user's words first; if mem0 extracts nothing, as the
        # assistant's; if still nothing, stored as given, without extraction.
        try:
            items = [content] if isinstance(content, str) else [str(c) for c in content]
            text = "\n".join([thinking, *items] if thinking else items)
            as_user = [{"role": "user", "content": text, "name": "user"}]
            results = await self._mem0_record(as_user, **kwargs)
            as_assistant = [{"role": "assistant", "content": text, "name": "assistant"}]
            if not results.get("results"):
                results = await self._mem0_record(as_assistant, **kwargs)
            if not results.get("results"):
                results = await self._mem0_record(as_assistant, infer=False, **kwargs)
        except Exception as exc:  # the model gets the error as the tool's answer
            return ToolResponse(content=[TextBlock(text=f"Error recording memory: {exc}")])
        return ToolResponse(
            content=[TextBlock(text=f"Successfully recorded content to memory {results}")]
        )

    async def retrieve_from_memory(
        self,
        keywords: list[str],
        limit: int = 5,
        **kwargs: Any,
    ) -> ToolResponse:
        # The tool description is the base class's docstring (inspect.getdoc inherits it).
        try:
            queries = [keywords] if isinstance(keywords, str) else [str(k) for k in keywords]
            found = await self._mem0_search(queries, limit)
        except Exception as exc:  # the model gets the error as the tool's answer
            return ToolResponse(content=[TextBlock(text=f"Error retrieving memory: {exc}")])
        return ToolResponse(content=[TextBlock(text="\n".join(found))])
