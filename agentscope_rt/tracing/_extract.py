"""The attributes of each span, read from the objects a traced call receives and returns.

Metadata (names, ids, models, token usage, finish reasons) is always recorded; message and
argument content only when content capture is on (:func:`~._setup.enable_tracing`'s
*capture_content*), as the GenAI conventions ask. What does not change between calls of one
class (its span name parts, its provider, its description) is computed once per class.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from .._run_config import config
from ..message import Msg
from ._attributes import OperationName, SpanAttributes

__all__ = [
    "agent_request",
    "agent_response",
    "chat_request",
    "chat_response",
    "embedding_request",
    "embedding_response",
    "format_request",
    "format_response",
    "function_request",
    "function_response",
    "to_json",
    "tool_request",
    "tool_response",
]

_A = SpanAttributes

_PROVIDERS = {
    "dashscope": "dashscope",
    "openai": "openai",
    "openairesponse": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
    "deepseek": "deepseek",
    "llamacpp": "llama.cpp",
    "trinity": "openai",
}

# OpenAI-compatible servers, told apart by their base URL (as AgentScope does).
_BASE_URL_PROVIDERS = (
    ("api.openai.com", "openai"),
    ("dashscope", "dashscope"),
    ("deepseek", "deepseek"),
    ("moonshot", "moonshot"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("openai.azure.com", "azure.ai.openai"),
    ("amazonaws.com", "aws.bedrock"),
)

_REQUEST_PARAMETERS = (
    (_A.GEN_AI_REQUEST_TEMPERATURE, ("temperature",)),
    (_A.GEN_AI_REQUEST_TOP_P, ("top_p", "p")),
    (_A.GEN_AI_REQUEST_TOP_K, ("top_k",)),
    (_A.GEN_AI_REQUEST_MAX_TOKENS, ("max_tokens",)),
    (_A.GEN_AI_REQUEST_PRESENCE_PENALTY, ("presence_penalty",)),
    (_A.GEN_AI_REQUEST_FREQUENCY_PENALTY, ("frequency_penalty",)),
    (_A.GEN_AI_REQUEST_STOP_SEQUENCES, ("stop_sequences", "stop")),
    (_A.GEN_AI_REQUEST_SEED, ("seed",)),
)


def _provider_from_class_name(name: str, *suffixes: str) -> str:
    key = name
    for suffix in suffixes:
        key = key.removesuffix(suffix)
    return _PROVIDERS.get(key.lower(), "unknown")


_class_facts: dict[tuple[type, str], Any] = {}


def _per_class(cls: type, what: str) -> Any:
    """A fact about *cls* computed once: its provider, description or format target."""
    key = (cls, what)
    try:
        return _class_facts[key]
    except KeyError:
        pass
    if what == "reply_name":
        value: Any = f"{cls.__name__}.reply"
    elif what == "chat_provider":
        value = _provider_from_class_name(cls.__name__, "ChatModel", "Model")
    elif what == "embedding_provider":
        value = _provider_from_class_name(
            cls.__name__, "TextEmbedding", "MultiModalEmbedding", "Embedding"
        )
    elif what == "format_target":
        value = _provider_from_class_name(cls.__name__, "ChatFormatter", "MultiAgentFormatter")
    else:  # description
        value = inspect.getdoc(cls) or "No description available"
    _class_facts[key] = value
    return value


def chat_provider(model: Any) -> str:
    """``gen_ai.provider.name`` of a chat model: from its class, and for an OpenAI-compatible
    model from the base URL of its client."""
    provider: str = _per_class(type(model), "chat_provider")
    if provider == "openai":
        client = getattr(model, "client", None)
        base_url = str(getattr(client, "base_url", "") or "")
        for fragment, name in _BASE_URL_PROVIDERS:
            if fragment in base_url:
                return name
    return provider


def to_json(value: Any) -> str:
    """*value* as JSON text; objects JSON does not know are written as their ``repr``."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError):
        return json.dumps(repr(value), ensure_ascii=False)


def _json_default(value: Any) -> Any:
    if isinstance(value, Msg):
        return value.to_dict()
    if isinstance(value, Mapping):
        return dict(value)
    return repr(value)


# -- messages as GenAI "parts" (content capture only) ------------------------------------------


def _media_part(block: Any, modality: str) -> dict[str, Any] | None:
    source = block.get("source")
    if source is None:
        return None
    if source.get("type") == "url":
        return {"type": "uri", "uri": source.get("url", ""), "modality": modality}
    if source.get("type") == "base64":
        return {
            "type": "blob",
            "content": source.get("data", ""),
            "media_type": source.get("media_type") or "application/octet-stream",
            "modality": modality,
        }
    return None


def _part(block: Any) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text", "")}
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking", "")}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": block.get("id", ""),
            "name": block.get("name", ""),
            "arguments": block.get("input") or {},
        }
    if kind == "tool_result":
        output = block.get("output", "")
        return {
            "type": "tool_call_response",
            "id": block.get("id", ""),
            "response": output if isinstance(output, str) else to_json(list(output)),
        }
    if kind in ("image", "audio", "video"):
        return _media_part(block, kind)
    return None


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _messages(msgs: Any) -> list[dict[str, Any]]:
    if msgs is None:
        return []
    items = [msgs] if isinstance(msgs, Msg) else list(msgs)
    out = []
    for msg in items:
        if not isinstance(msg, Msg):
            continue
        parts = [p for p in map(_part, _blocks(msg.content)) if p is not None]
        out.append({"role": msg.role, "parts": parts, "name": msg.name, "finish_reason": "stop"})
    return out


# -- per operation ----------------------------------------------------------------------------


def agent_request(agent: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool) -> Any:
    """The attributes an ``invoke_agent`` span starts with."""
    cls = type(agent)
    model = getattr(agent, "model", None)
    attributes = {
        _A.GEN_AI_OPERATION_NAME: OperationName.INVOKE_AGENT,
        _A.GEN_AI_PROVIDER_NAME: chat_provider(model) if model is not None else "agentscope",
        # An agent whose __init__ skipped super().__init__() has no id: the call itself says so
        # (AgentError) once the span is open.
        _A.GEN_AI_AGENT_ID: getattr(agent, "id", ""),
        _A.GEN_AI_AGENT_NAME: getattr(agent, "name", cls.__name__),
        _A.GEN_AI_AGENT_DESCRIPTION: _per_class(cls, "description"),
        _A.GEN_AI_CONVERSATION_ID: config.run_id,
        _A.AGENTSCOPE_FUNCTION_NAME: _per_class(cls, "reply_name"),
    }
    model_name = getattr(model, "model_name", None)
    if isinstance(model_name, str):
        attributes[_A.GEN_AI_REQUEST_MODEL] = model_name
    if content:
        msg = args[0] if args else kwargs.get("msg")
        attributes[_A.GEN_AI_INPUT_MESSAGES] = to_json(_messages(msg))
        attributes[_A.AGENTSCOPE_FUNCTION_INPUT] = to_json({"args": args, "kwargs": kwargs})
    return attributes


def agent_response(reply: Any, content: bool) -> dict[str, Any] | None:
    """The attributes an ``invoke_agent`` span ends with (``None``: nothing to add)."""
    if not content:
        return None
    return {
        _A.GEN_AI_OUTPUT_MESSAGES: to_json(_messages(reply)),
        _A.AGENTSCOPE_FUNCTION_OUTPUT: to_json(reply),
    }


def chat_request(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], content: bool) -> Any:
    """The attributes a ``chat`` span starts with."""
    attributes: dict[str, Any] = {
        _A.GEN_AI_OPERATION_NAME: OperationName.CHAT,
        _A.GEN_AI_PROVIDER_NAME: chat_provider(model),
        _A.GEN_AI_REQUEST_MODEL: model.model_name,
        _A.GEN_AI_CONVERSATION_ID: config.run_id,
        _A.AGENTSCOPE_FUNCTION_NAME: f"{type(model).__name__}.__call__",
    }
    if len(kwargs) > 2:  # beyond tools and tool_choice: generation parameters, maybe
        for key, names in _REQUEST_PARAMETERS:
            for name in names:
                value = kwargs.get(name)
                if value is not None and isinstance(value, int | float | str | list | tuple):
                    attributes[key] = list(value) if isinstance(value, tuple) else value
                    break
    if content:
        messages = args[0] if args else kwargs.get("messages")
        attributes[_A.GEN_AI_INPUT_MESSAGES] = to_json(messages)
        tools = kwargs.get("tools") if len(args) < 2 else args[1]
        if tools:
            attributes[_A.GEN_AI_TOOL_DEFINITIONS] = to_json(_flat_tools(tools))
    return attributes


def _flat_tools(tools: Any) -> list[dict[str, Any]]:
    flat = []
    for tool in tools:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping):
            flat.append(
                {
                    "type": tool.get("type", "function"),
                    "name": function.get("name"),
                    "description": function.get("description"),
                    "parameters": function.get("parameters"),
                }
            )
    return flat


def chat_response(model: Any, response: Any, content: bool) -> dict[str, Any]:
    """The attributes a ``chat`` span ends with: the response's id, model, finish reasons and
    token usage (from the last chunk of a stream)."""
    blocks = getattr(response, "content", None) or ()
    finish = "stop"
    for block in blocks:
        # Blocks carry their type as a class attribute; a custom model may answer with dicts.
        if (block.get("type") if block.__class__ is dict else block.type) == "tool_use":
            finish = "tool_call"
            break
    attributes: dict[str, Any] = {
        _A.GEN_AI_RESPONSE_ID: getattr(response, "id", "") or "",
        _A.GEN_AI_RESPONSE_MODEL: model.model_name,
        _A.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
    }
    usage = getattr(response, "usage", None)
    if usage is not None:
        attributes[_A.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
        attributes[_A.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
    if content:
        parts = [p for p in map(_part, blocks) if p is not None]
        attributes[_A.GEN_AI_OUTPUT_MESSAGES] = to_json(
            [{"role": "assistant", "parts": parts, "finish_reason": finish}]
        )
    return attributes


def format_request(formatter: Any, args: tuple[Any, ...], kwargs: Any, content: bool) -> Any:
    """The attributes a ``format`` span starts with."""
    target = _per_class(type(formatter), "format_target")
    attributes = {
        _A.GEN_AI_OPERATION_NAME: OperationName.FORMATTER,
        _A.GEN_AI_PROVIDER_NAME: target,
        _A.AGENTSCOPE_FORMAT_TARGET: target,
        _A.GEN_AI_CONVERSATION_ID: config.run_id,
        _A.AGENTSCOPE_FUNCTION_NAME: f"{type(formatter).__name__}.format",
    }
    if content:
        attributes[_A.AGENTSCOPE_FUNCTION_INPUT] = to_json({"args": args, "kwargs": kwargs})
    return attributes


def format_response(result: Any, content: bool) -> dict[str, Any]:
    """The attributes a ``format`` span ends with."""
    attributes: dict[str, Any] = {}
    if isinstance(result, list):
        attributes[_A.AGENTSCOPE_FORMAT_COUNT] = len(result)
    if content:
        attributes[_A.AGENTSCOPE_FUNCTION_OUTPUT] = to_json(result)
    return attributes


def tool_request(toolkit: Any, tool_call: Any, provider: str, content: bool) -> dict[str, Any]:
    """The attributes an ``execute_tool`` span starts with."""
    name = tool_call.get("name")
    attributes: dict[str, Any] = {
        _A.GEN_AI_OPERATION_NAME: OperationName.EXECUTE_TOOL,
        _A.GEN_AI_PROVIDER_NAME: provider,
        _A.GEN_AI_TOOL_NAME: name if isinstance(name, str) else repr(name),
        _A.GEN_AI_TOOL_CALL_ID: str(tool_call.get("id") or ""),
        _A.GEN_AI_TOOL_TYPE: "function",
        _A.GEN_AI_CONVERSATION_ID: config.run_id,
        _A.AGENTSCOPE_FUNCTION_NAME: f"{type(toolkit).__name__}.call_tool_function",
    }
    tools = getattr(toolkit, "tools", None)
    tool = tools.get(name) if isinstance(tools, Mapping) and isinstance(name, str) else None
    if tool is not None:
        description = tool.json_schema.get("function", {}).get("description")
        if isinstance(description, str):
            attributes[_A.GEN_AI_TOOL_DESCRIPTION] = description
    if content:
        attributes[_A.GEN_AI_TOOL_CALL_ARGUMENTS] = to_json(tool_call.get("input") or {})
    return attributes


def tool_response(chunk: Any, content: bool) -> dict[str, Any] | None:
    """The attributes an ``execute_tool`` span ends with, from the call's last chunk."""
    attributes: dict[str, Any] = {}
    if getattr(chunk, "is_interrupted", False):
        attributes[_A.AGENTSCOPE_INTERRUPTED] = True
    if content and chunk is not None:
        blocks = getattr(chunk, "content", None) or []
        attributes[_A.GEN_AI_TOOL_CALL_RESULT] = to_json([dict(block) for block in blocks])
    return attributes or None


def embedding_request(model: Any, args: tuple[Any, ...], kwargs: Any, content: bool) -> Any:
    """The attributes an ``embeddings`` span starts with."""
    dimensions = kwargs.get("dimensions", getattr(model, "dimensions", None))
    attributes = {
        _A.GEN_AI_OPERATION_NAME: OperationName.EMBEDDINGS,
        _A.GEN_AI_PROVIDER_NAME: _per_class(type(model), "embedding_provider"),
        _A.GEN_AI_REQUEST_MODEL: model.model_name,
        _A.GEN_AI_CONVERSATION_ID: config.run_id,
        _A.AGENTSCOPE_FUNCTION_NAME: f"{type(model).__name__}.__call__",
    }
    if isinstance(dimensions, int):
        attributes[_A.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = dimensions
    if content:
        attributes[_A.AGENTSCOPE_FUNCTION_INPUT] = to_json({"args": args, "kwargs": kwargs})
    return attributes


def embedding_response(response: Any, content: bool) -> dict[str, Any] | None:
    """The attributes an ``embeddings`` span ends with: the tokens the provider counted."""
    usage = getattr(response, "usage", None)
    tokens = getattr(usage, "tokens", None)
    if isinstance(tokens, int):
        return {_A.GEN_AI_USAGE_INPUT_TOKENS: tokens}
    return None


def function_request(name: str, args: tuple[Any, ...], kwargs: Any, content: bool) -> Any:
    """The attributes an ``invoke_generic_function`` span starts with."""
    attributes = {
        _A.GEN_AI_OPERATION_NAME: OperationName.INVOKE_GENERIC_FUNCTION,
        _A.GEN_AI_PROVIDER_NAME: "agentscope",
        _A.AGENTSCOPE_FUNCTION_NAME: name,
    }
    if content:
        attributes[_A.AGENTSCOPE_FUNCTION_INPUT] = to_json({"args": args, "kwargs": kwargs})
    return attributes


def function_response(result: Any, content: bool) -> dict[str, Any] | None:
    """The attributes an ``invoke_generic_function`` span ends with."""
    if not content:
        return None
    return {_A.AGENTSCOPE_FUNCTION_OUTPUT: to_json(result)}
