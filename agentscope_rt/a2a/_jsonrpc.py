"""A2A's JSON-RPC requests and responses, in protocol 1.0 and 0.3, read into 1.0's types.

Both versions are answered at one URL: their method names differ (``SendMessage`` /
``message/send``), so the method says which version a request speaks, and the answer is
written in that version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pydantic
from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import (
    to_compat_stream_response,
    to_compat_task,
    to_core_message,
    to_core_send_message_configuration,
)
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
)
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage

__all__ = ["Rpc", "RpcError", "parse_rpc", "render_event", "render_result", "shorten"]

Kind = Literal["send", "stream", "get", "cancel", "resubscribe", "card"]

# How deep the params of a request may nest (a message's metadata, a data part): deeper JSON
# makes the converters recurse past Python's stack.
MAX_DEPTH = 64
# Longer values are cut short where an error message names them.
_SHOWN_CHARS = 100
# Request ids longer than this are refused rather than echoed in every answer.
_MAX_ID_CHARS = 256

_V10: dict[str, tuple[Kind, type[ProtoMessage]]] = {
    "SendMessage": ("send", SendMessageRequest),
    "SendStreamingMessage": ("stream", SendMessageRequest),
    "GetTask": ("get", GetTaskRequest),
    "CancelTask": ("cancel", CancelTaskRequest),
    "SubscribeToTask": ("resubscribe", SubscribeToTaskRequest),
    "GetExtendedAgentCard": ("card", GetExtendedAgentCardRequest),
}
_V03: dict[str, Kind] = {
    "message/send": "send",
    "message/stream": "stream",
    "tasks/get": "get",
    "tasks/cancel": "cancel",
    "tasks/resubscribe": "resubscribe",
    "agent/getAuthenticatedExtendedCard": "card",
}


@dataclass
class Rpc:
    """A request: what it asks (*kind*), its id, its protocol version, its params as 1.0's
    request message."""

    kind: Kind
    id: Any
    version: Literal["1.0", "0.3"]
    request: Any


def shorten(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """*value* as text for an error message: cut to *limit* characters (saying how long it
    was), so that a client's megabytes are never echoed back or logged."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


class RpcError(Exception):
    """A JSON-RPC error answer (A2A's error codes)."""

    def __init__(self, request_id: Any, code: int, message: str) -> None:
        message = shorten(message, 4 * _SHOWN_CHARS)
        super().__init__(message)
        self.request_id = request_id
        self.code = code
        self.message = message

    def response(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}

    @classmethod
    def invalid_params(cls, message: str, request_id: Any = None) -> RpcError:
        return cls(request_id, -32602, f"Invalid params: {message}")

    @classmethod
    def task_not_found(cls, task_id: str) -> RpcError:
        return cls(None, -32001, f"Task not found: {shorten(repr(task_id))}")

    @classmethod
    def not_cancelable(cls, task_id: str, state: str) -> RpcError:
        return cls(None, -32002, f"Task cannot be canceled: task {task_id} is {state}")

    @classmethod
    def unsupported(cls, request_id: Any, message: str) -> RpcError:
        return cls(request_id, -32004, f"This operation is not supported: {message}")

    @classmethod
    def internal(cls, message: str) -> RpcError:
        return cls(None, -32603, f"Internal error: {message}")

    @classmethod
    def invalid_request(cls, message: str, request_id: Any = None) -> RpcError:
        return cls(request_id, -32600, f"Invalid Request: {message}")


def parse_rpc(body: Any) -> Rpc:
    """The request *body* (parsed JSON) asks for.

    :raises RpcError: for a body that is not a JSON-RPC 2.0 request (-32700 when it was not
        JSON; -32600 for another shape, or an id that is not a short string, a number or
        null), an unknown method (-32601) or params that do not fit the method (-32602,
        params nested deeper than :data:`MAX_DEPTH` among them).
    """
    if body is None:
        raise RpcError(None, -32700, "Parse error: the request body is not JSON")
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise RpcError.invalid_request("not a JSON-RPC 2.0 request object")
    request_id = _request_id(body.get("id"))
    method = body.get("method")
    if not isinstance(method, str):
        raise RpcError.invalid_request("'method' must be a string", request_id)
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise RpcError.invalid_params("'params' must be an object", request_id)
    if _deeper_than(params, MAX_DEPTH):
        raise RpcError.invalid_params(
            f"the params nest deeper than {MAX_DEPTH} levels; send flatter metadata or data",
            request_id,
        )
    if method in _V10:
        kind, request_type = _V10[method]
        try:
            request = ParseDict(params, request_type(), ignore_unknown_fields=True)
        except (ParseError, ValueError, TypeError) as exc:
            raise RpcError.invalid_params(str(exc), request_id) from None
        return Rpc(kind, request_id, "1.0", request)
    if method in _V03:
        kind = _V03[method]
        return Rpc(kind, request_id, "0.3", _v03_request(kind, params, request_id))
    raise RpcError(request_id, -32601, f"Method not found: {shorten(repr(method))}")


def _request_id(value: Any) -> Any:
    """The request's id, as JSON-RPC allows it (a string, a number or null).

    :raises RpcError: (-32600) for anything else, or a string too long to echo back.
    """
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    if isinstance(value, str) and len(value) <= _MAX_ID_CHARS:
        return value
    raise RpcError.invalid_request(
        f"'id' must be a string of at most {_MAX_ID_CHARS} characters, a number or null"
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON *value* nests deeper than *limit* (walked without recursion)."""
    level: list[Any] = [value]
    for _ in range(limit):
        level = [
            item
            for container in level
            if isinstance(container, dict | list)
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, dict | list)
        ]
        if not level:
            return False
    return True


def _v03_request(kind: Kind, params: dict[str, Any], request_id: Any) -> Any:
    try:
        if kind in ("send", "stream"):
            send = types_v03.MessageSendParams.model_validate(params)
            request = SendMessageRequest(message=to_core_message(send.message))
            if send.configuration is not None:
                request.configuration.CopyFrom(
                    to_core_send_message_configuration(send.configuration)
                )
            return request
        if kind == "get":
            query = types_v03.TaskQueryParams.model_validate(params)
            get = GetTaskRequest(id=query.id)
            if query.history_length is not None:
                get.history_length = query.history_length
            return get
        if kind == "card":
            return GetExtendedAgentCardRequest()
        ids = types_v03.TaskIdParams.model_validate(params)
    except (ValueError, TypeError) as exc:
        # a2a-sdk's converters raise plain ValueErrors too (a file part's invalid base64).
        if not isinstance(exc, pydantic.ValidationError):
            raise RpcError.invalid_params(str(exc), request_id) from None
        errors = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors()
        )
        raise RpcError.invalid_params(errors, request_id) from None
    if kind == "cancel":
        return CancelTaskRequest(id=ids.id)
    return SubscribeToTaskRequest(id=ids.id)


def render_result(rpc: Rpc, task: Task) -> dict[str, Any]:
    """The JSON-RPC answer carrying *task*, in the request's protocol version."""
    result: Any
    if rpc.version == "0.3":
        result = _v03_json(to_compat_task(task))
    elif rpc.kind == "send":
        result = MessageToDict(SendMessageResponse(task=task))
    else:
        result = MessageToDict(task)
    return {"jsonrpc": "2.0", "id": rpc.id, "result": result}


def render_event(rpc: Rpc, event: StreamResponse) -> dict[str, Any]:
    """One streamed JSON-RPC answer carrying *event*, in the request's protocol version."""
    if rpc.version == "1.0":
        return {"jsonrpc": "2.0", "id": rpc.id, "result": MessageToDict(event)}
    compat = to_compat_stream_response(event, rpc.id)
    result = compat.result
    if isinstance(result, types_v03.TaskStatusUpdateEvent) and result.status.state in (
        types_v03.TaskState.input_required,
        types_v03.TaskState.auth_required,
    ):
        # 0.3 ends a stream at the last event marked final; the task waits for the client.
        result.final = True
    return {"jsonrpc": "2.0", "id": rpc.id, "result": _v03_json(result)}


def _v03_json(model: pydantic.BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
