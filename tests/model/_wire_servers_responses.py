"""A local server speaking OpenAI's Responses API (``POST /v1/responses``), JSON and SSE.

It is the scripted :class:`~._wire_servers.WireServer` with one addition: before a request
takes the next scripted reply, its body is checked the way the real API checks it (the path,
the input items and their content parts, the flat function-tool format, ``tool_choice``,
``text.format``, ``reasoning``, the ``stream`` flag, every ``function_call_output`` answering
an earlier ``function_call``). A request that fails the check gets the API's 400
``invalid_request_error`` naming the problem, and its reply stays in the script; the problems
are also collected in ``server.rejected`` (the request itself is recorded as any other).

Builders make the real payloads: :func:`response_json` a complete ``response`` object, and
:func:`response_events` the event stream the API sends for the same output (``response.created``
... ``response.output_item.added``, the typed deltas, ``response.output_item.done`` ...
``response.completed``), with sequence numbers.
"""

from __future__ import annotations

import io
import json
from typing import Any

import attrs

from .._local_http import send_json
from ._wire_servers import Reply, WireServer, recorded, sse

__all__ = [
    "Call",
    "Message",
    "Reasoning",
    "ResponsesServer",
    "check_request",
    "response_events",
    "response_json",
]

_ROLE_PARTS = {
    "user": {"input_text", "input_image", "input_audio", "input_file"},
    "system": {"input_text", "input_image", "input_audio", "input_file"},
    "developer": {"input_text", "input_image", "input_audio", "input_file"},
    "assistant": {"output_text", "refusal"},
}
_KNOWN_FIELDS = {
    "model",
    "input",
    "instructions",
    "stream",
    "stream_options",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "text",
    "reasoning",
    "include",
    "store",
    "temperature",
    "top_p",
    "max_output_tokens",
    "metadata",
    "previous_response_id",
    "truncation",
    "user",
    "service_tier",
}


class RequestProblem(Exception):
    """What the API would reject a request for, and the parameter it names."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def _need(condition: bool, message: str, param: str) -> None:
    if not condition:
        raise RequestProblem(message, param)


def _check_part(part: Any, role: str, where: str) -> None:
    _need(isinstance(part, dict), f"Invalid type for '{where}': expected an object.", where)
    kind = part.get("type")
    allowed = _ROLE_PARTS[role]
    _need(
        kind in allowed,
        f"Invalid value: '{kind}'. Supported values are: {sorted(allowed)}.",
        f"{where}.type",
    )
    if kind in ("input_text", "output_text"):
        _need(isinstance(part.get("text"), str), "Missing required parameter.", f"{where}.text")
    elif kind == "input_image":
        url = part.get("image_url")
        _need(
            isinstance(url, str) or isinstance(part.get("file_id"), str),
            "Invalid 'image_url': expected a URL string.",
            f"{where}.image_url",
        )
    elif kind == "input_audio":
        audio = part.get("input_audio")
        _need(
            isinstance(audio, dict)
            and isinstance(audio.get("data"), str)
            and audio.get("format") in ("mp3", "wav"),
            "Invalid 'input_audio': expected {data, format: mp3|wav}.",
            f"{where}.input_audio",
        )


def _check_input(items: Any, body: dict[str, Any]) -> None:
    if isinstance(items, str):
        return
    _need(isinstance(items, list), "Invalid type for 'input': expected a list.", "input")
    calls: set[str] = set()
    for index, item in enumerate(items):
        where = f"input[{index}]"
        _need(isinstance(item, dict), f"Invalid type for '{where}'.", where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            _need(role in _ROLE_PARTS, f"Invalid value: '{role}'.", f"{where}.role")
            content = item.get("content")
            if isinstance(content, str):
                continue
            _need(isinstance(content, list), "Invalid 'content'.", f"{where}.content")
            for n, part in enumerate(content):
                _check_part(part, role, f"{where}.content[{n}]")
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                _need(
                    isinstance(item.get(key), str), "Missing required parameter.", f"{where}.{key}"
                )
            json.loads(item["arguments"] or "{}")
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            _need(isinstance(item.get("call_id"), str), "Missing required parameter.", where)
            _need(
                item["call_id"] in calls,
                f"No tool call found for function call output with call_id {item['call_id']}.",
                f"{where}.call_id",
            )
            _need(isinstance(item.get("output"), str | list), "Invalid 'output'.", where)
        elif kind == "reasoning":
            _need(isinstance(item.get("id"), str), "Missing required parameter.", f"{where}.id")
            _need(isinstance(item.get("summary"), list), "Missing required parameter.", where)
            if body.get("store") is False:
                _need(
                    isinstance(item.get("encrypted_content"), str),
                    f"Item with id '{item['id']}' not found. Items are not persisted when "
                    "`store` is set to false.",
                    where,
                )
        else:
            raise RequestProblem(f"Invalid value: '{kind}'.", f"{where}.type")


def _check_tools(tools: Any) -> list[str]:
    _need(isinstance(tools, list), "Invalid type for 'tools'.", "tools")
    names = []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        _need(isinstance(tool, dict) and tool.get("type") == "function", "Invalid tool.", where)
        _need("function" not in tool, f"Unknown parameter: '{where}.function'.", where)
        _need(isinstance(tool.get("name"), str), "Missing required parameter.", f"{where}.name")
        _need(isinstance(tool.get("parameters"), dict), "Invalid 'parameters'.", where)
        names.append(tool["name"])
    return names


def _check_tool_choice(choice: Any, names: list[str]) -> None:
    if isinstance(choice, str):
        _need(choice in ("auto", "none", "required"), "Invalid 'tool_choice'.", "tool_choice")
        return
    _need(isinstance(choice, dict), "Invalid 'tool_choice'.", "tool_choice")
    if choice.get("type") == "function":
        _need(choice.get("name") in names, "Tool choice names no tool.", "tool_choice.name")
    elif choice.get("type") == "allowed_tools":
        _need(choice.get("mode") in ("auto", "required"), "Invalid mode.", "tool_choice.mode")
        for tool in choice.get("tools") or []:
            _need(tool.get("name") in names, "Allowed tool not offered.", "tool_choice.tools")
    else:
        raise RequestProblem("Invalid 'tool_choice'.", "tool_choice")


def check_request(path: str, body: Any) -> None:
    """Check one request as the API does.

    :raises RequestProblem: naming what the API would reject.
    """
    _need(path == "/v1/responses", f"Invalid URL (POST {path})", "path")
    _need(isinstance(body, dict), "The body must be a JSON object.", "body")
    for key in body:
        _need(key in _KNOWN_FIELDS, f"Unknown parameter: '{key}'.", key)
    _need(isinstance(body.get("model"), str), "Missing required parameter: 'model'.", "model")
    _check_input(body.get("input"), body)
    if "stream" in body:
        _need(isinstance(body["stream"], bool), "Invalid type for 'stream'.", "stream")
    names = _check_tools(body["tools"]) if "tools" in body else []
    if "tool_choice" in body:
        _check_tool_choice(body["tool_choice"], names)
    reasoning = body.get("reasoning")
    if reasoning is not None:
        _need(isinstance(reasoning, dict), "Invalid 'reasoning'.", "reasoning")
        _need(
            reasoning.get("effort") in (None, "minimal", "low", "medium", "high"),
            "Invalid 'reasoning.effort'.",
            "reasoning.effort",
        )
        _need(
            reasoning.get("summary") in (None, "auto", "concise", "detailed"),
            "Invalid 'reasoning.summary'.",
            "reasoning.summary",
        )
    fmt = (body.get("text") or {}).get("format")
    if fmt is not None:
        _need(fmt.get("type") in ("text", "json_schema", "json_object"), "Invalid format.", "text")
        if fmt["type"] == "json_schema":
            _need(isinstance(fmt.get("name"), str), "Missing 'text.format.name'.", "text.format")
            _need(isinstance(fmt.get("schema"), dict), "Missing schema.", "text.format.schema")
            if fmt.get("strict"):
                schema = fmt["schema"]
                _need(
                    schema.get("additionalProperties") is False
                    and set(schema.get("required") or ()) == set(schema.get("properties") or {}),
                    "Invalid schema for response_format: 'additionalProperties' is required to "
                    "be supplied and to be false, and every property must be required.",
                    "text.format.schema",
                )


class ResponsesServer(WireServer):
    """The scripted server with the Responses API's request checks in front of the script."""

    def __init__(self) -> None:
        super().__init__()
        self.rejected: list[str] = []
        scripted = self._httpd.RequestHandlerClass
        server = self

        class CheckingHandler(scripted):  # type: ignore[valid-type, misc]
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    check_request(self.path, json.loads(raw) if raw else None)
                except (RequestProblem, ValueError) as exc:
                    message = getattr(exc, "message", str(exc))
                    with server._lock:
                        server.rejected.append(message)
                        server.requests.append(recorded(self, raw))
                    error = {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": getattr(exc, "param", None),
                        "code": None,
                    }
                    send_json(self, 400, {"error": error})
                    return
                # The scripted handler reads the body again: hand it the bytes already read,
                # then give the connection back (keep-alive reads the next request from it).
                connection = self.rfile
                self.rfile = io.BufferedReader(io.BytesIO(raw))  # type: ignore[assignment]
                try:
                    super().do_POST()
                finally:
                    self.rfile = connection

        self._httpd.RequestHandlerClass = CheckingHandler


# -- payloads ---------------------------------------------------------------------------------


@attrs.define
class Reasoning:
    """A reasoning item: summary parts (each a list of streamed pieces)."""

    summary: list[list[str]] = attrs.field(factory=list)
    id: str = "rs_1"
    encrypted_content: str | None = None
    content: list[list[str]] | None = None


@attrs.define
class Message:
    """An assistant message item whose text arrives in *pieces*."""

    pieces: list[str]
    id: str = "msg_1"


@attrs.define
class Call:
    """A function call item whose arguments arrive in *pieces*."""

    call_id: str
    name: str
    pieces: list[str]
    id: str = "fc_1"


Item = Reasoning | Message | Call


def _item_json(item: Item, done: bool = True) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if isinstance(item, Reasoning):
        data: dict[str, Any] = {
            "id": item.id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(p)} for p in item.summary if done],
            "encrypted_content": item.encrypted_content if done else None,
        }
        if item.content is not None:
            data["content"] = [
                {"type": "reasoning_text", "text": "".join(p)} for p in item.content if done
            ]
        return data
    if isinstance(item, Message):
        return {
            "id": item.id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [
                {
                    "type": "output_text",
                    "text": "".join(item.pieces),
                    "annotations": [],
                    "logprobs": [],
                }
            ]
            if done
            else [],
        }
    return {
        "id": item.id,
        "type": "function_call",
        "status": status,
        "call_id": item.call_id,
        "name": item.name,
        "arguments": "".join(item.pieces) if done else "",
    }


def response_json(
    items: list[Item],
    usage: tuple[int, int] = (10, 5),
    id: str = "resp_1",
    status: str = "completed",
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A complete ``response`` object with *items* as its output."""
    return {
        "id": id,
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "error": error,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "o4-test",
        "output": [_item_json(item) for item in items],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": sum(usage),
        }
        if status != "failed"
        else None,
        "user": None,
        "metadata": {},
    }


class _Events:
    def __init__(self) -> None:
        self.events: list[str] = []

    def add(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(self.events), **fields}
        self.events.append(sse(data, event=kind))


def response_events(
    items: list[Item],
    usage: tuple[int, int] = (10, 5),
    id: str = "resp_s1",
    failure: dict[str, Any] | None = None,
) -> list[str]:
    """The SSE events the API streams for a response with *items* as its output.

    With *failure* (``{"code": ..., "message": ...}``) the stream ends with
    ``response.failed`` instead of ``response.completed``.
    """
    out = _Events()
    start = {**response_json([], usage, id, status="in_progress"), "usage": None}
    out.add("response.created", response=start)
    out.add("response.in_progress", response=start)
    for index, item in enumerate(items):
        out.add("response.output_item.added", output_index=index, item=_item_json(item, False))
        if isinstance(item, Reasoning):
            for n, pieces in enumerate(item.summary):
                part = {"type": "summary_text", "text": ""}
                ids = {"item_id": item.id, "output_index": index, "summary_index": n}
                out.add("response.reasoning_summary_part.added", part=part, **ids)
                for piece in pieces:
                    out.add("response.reasoning_summary_text.delta", delta=piece, **ids)
                text = "".join(pieces)
                out.add("response.reasoning_summary_text.done", text=text, **ids)
                out.add(
                    "response.reasoning_summary_part.done",
                    part={"type": "summary_text", "text": text},
                    **ids,
                )
            for n, pieces in enumerate(item.content or []):
                ids = {"item_id": item.id, "output_index": index, "content_index": n}
                for piece in pieces:
                    out.add("response.reasoning_text.delta", delta=piece, **ids)
                out.add("response.reasoning_text.done", text="".join(pieces), **ids)
        elif isinstance(item, Message):
            ids = {"item_id": item.id, "output_index": index, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out.add("response.content_part.added", part=empty, **ids)
            for piece in item.pieces:
                out.add("response.output_text.delta", delta=piece, logprobs=[], **ids)
            text = "".join(item.pieces)
            out.add("response.output_text.done", text=text, logprobs=[], **ids)
            out.add("response.content_part.done", part={**empty, "text": text}, **ids)
        else:
            ids = {"item_id": item.id, "output_index": index}
            for piece in item.pieces:
                out.add("response.function_call_arguments.delta", delta=piece, **ids)
            out.add(
                "response.function_call_arguments.done",
                arguments="".join(item.pieces),
                name=item.name,
                **ids,
            )
        out.add("response.output_item.done", output_index=index, item=_item_json(item))
    if failure is not None:
        out.add(
            "response.failed",
            response=response_json(items, usage, id, status="failed", error=failure),
        )
    else:
        out.add("response.completed", response=response_json(items, usage, id))
    return out.events


def reply_json(items: list[Item], **kwargs: Any) -> Reply:
    """A scripted 200 reply with a complete response."""
    return Reply(body=response_json(items, **kwargs))


def reply_events(items: list[Item], **kwargs: Any) -> Reply:
    """A scripted 200 reply streaming a response."""
    return Reply(events=response_events(items, **kwargs))
