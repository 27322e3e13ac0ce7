"""DashScope's native server-sent events, read line by line (chat models and speech models
stream the same way)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._retry import RETRYABLE_STATUS, BadResponse, StreamErrorEvent, excerpt

__all__ = ["DASHSCOPE_RETRYABLE_CODES", "DashScopeEvents"]

DASHSCOPE_RETRYABLE_CODES = ("Throttling", "InternalError", "ServiceUnavailable", "RequestTimeOut")
"""DashScope error codes another attempt may get past."""


class DashScopeEvents:
    """Parses a native DashScope SSE stream line by line: :meth:`feed` returns each complete
    event's JSON, :meth:`end` the one left when the stream ends without a blank line.

    The stream's ``data:{...}`` lines carry the events; an ``event:error`` event (or one that
    carries an error ``code`` and no answer, as *has_answer* judges) raises
    :class:`StreamErrorEvent`, with the HTTP status its ``:HTTP_STATUS/...`` line names.
    """

    __slots__ = ("data", "has_answer", "is_error", "status")

    def __init__(self, has_answer: Callable[[dict[str, Any]], bool]) -> None:
        self.has_answer = has_answer
        self.data: list[str] = []
        self.is_error = False
        self.status: int | None = None

    def feed(self, line: str) -> dict[str, Any] | None:
        if line.startswith("data:"):
            self.data.append(line[5:].strip())
        elif line.startswith("event:"):
            self.is_error = line[6:].strip() == "error"
        elif line.startswith(":HTTP_STATUS/"):
            status = line.split("/", 1)[1].strip()
            self.status = int(status) if status.isdigit() else None
        elif not line.strip() and self.data:
            return self.end()
        return None

    def end(self) -> dict[str, Any] | None:
        """The event read so far (``None`` when there is none).

        :raises StreamErrorEvent: for an error event.
        :raises BadResponse: for data that is not a JSON object.
        """
        if not self.data:
            return None
        text = "\n".join(self.data)
        is_error, status = self.is_error, self.status
        self.data, self.is_error, self.status = [], False, None
        try:
            event = json.loads(text)
        except ValueError:
            raise BadResponse(f"malformed event in the stream: {excerpt(text)}") from None
        if not isinstance(event, dict):
            raise BadResponse(f"unexpected event in the stream: {excerpt(text)}")
        if is_error or (event.get("code") and not self.has_answer(event)):
            code = str(event.get("code") or "")
            message = f"{code}: {event.get('message')}" if code else str(event.get("message"))
            if status is not None and status != 200:
                retryable = status in RETRYABLE_STATUS or status >= 500
            else:
                status, retryable = None, code.startswith(DASHSCOPE_RETRYABLE_CODES)
            raise StreamErrorEvent(message, status, retryable)
        return event
