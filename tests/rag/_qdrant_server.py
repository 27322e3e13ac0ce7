"""A Qdrant server for the tests: the REST endpoints QdrantStore uses, on 127.0.0.1.

No Qdrant server binary ships in a PyPI wheel, so this speaks the subset of Qdrant's REST API
(version probe, collection exists/create/delete, upsert, query, delete by ids or by a payload
``match.any`` filter) that ``qdrant_client.QdrantClient(url=...)`` sends for the store, with
cosine scoring, in memory. It records each request's method and path.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import re
import threading
from typing import Any

from .._local_http import LocalHTTPServer, QuietHandler, send_json


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@dataclasses.dataclass(frozen=True)
class _Status:
    """An error answer: its HTTP status and Qdrant's error text."""

    code: int
    error: str


class QdrantServer(LocalHTTPServer):
    """An in-memory Qdrant REST server in a background thread (use as a context manager)."""

    def __init__(self) -> None:
        self.collections: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _send(self, result: Any, status: int = 200) -> None:
                send_json(self, status, {"result": result, "status": "ok", "time": 0.0})

            def _handle(self, method: str) -> None:
                path = self.path.split("?")[0]
                body = self._body()
                with server._lock:
                    server.requests.append((method, path))
                    if path == "/" and method == "GET":
                        # The client warns unless the server is of its own minor version.
                        version = importlib.metadata.version("qdrant-client")
                        send_json(self, 200, {"title": "qdrant", "version": version})
                        return
                    match = re.fullmatch(r"/collections/([^/]+)(/.*)?", path)
                    if match is None:
                        self._send({"error": f"unknown path {path}"}, 404)
                        return
                    name, rest = match.group(1), match.group(2) or ""
                    if name not in server.collections and not (
                        rest == "/exists" or (method == "PUT" and rest == "")
                    ):
                        # What Qdrant answers for a collection that does not exist.
                        message = f"Not found: Collection `{name}` doesn't exist!"
                        send_json(self, 404, {"status": {"error": message}, "time": 0.0})
                        return
                    result = server._dispatch(method, name, rest, body)
                if result is NotImplemented:
                    self._send({"error": f"unsupported {method} {path}"}, 404)
                elif isinstance(result, _Status):
                    body = {"status": {"error": result.error}, "time": 0.0}
                    send_json(self, result.code, body)
                else:
                    self._send(result)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        super().__init__(Handler)

    def _dispatch(self, method: str, name: str, rest: str, body: Any) -> Any:
        update = {"operation_id": 0, "status": "completed"}
        if method == "GET" and rest == "/exists":
            return {"exists": name in self.collections}
        if method == "PUT" and rest == "":
            if name in self.collections:
                # What Qdrant (1.8 and later) answers: 409, the existing points kept.
                message = f"Wrong input: Collection `{name}` already exists!"
                return _Status(409, message)
            assert body["vectors"]["distance"] == "Cosine"
            self.collections[name] = {"size": body["vectors"]["size"], "points": {}}
            return True
        if method == "DELETE" and rest == "":
            del self.collections[name]
            return True
        points = self.collections[name]["points"]
        if method == "PUT" and rest == "/points":
            for point in body["points"]:
                points[str(point["id"])] = point
            return update
        if method == "POST" and rest == "/points/query":
            query = body["query"]["nearest"] if isinstance(body["query"], dict) else body["query"]
            scored = sorted(
                (
                    {
                        "id": pid,
                        "version": 0,
                        "score": _cosine(query, p["vector"]),
                        "payload": p["payload"],
                        "vector": None,
                    }
                    for pid, p in points.items()
                ),
                key=lambda hit: -hit["score"],
            )
            return {"points": scored[: body["limit"]]}
        if method == "POST" and rest == "/points/delete":
            if "points" in body:
                for pid in body["points"]:
                    points.pop(str(pid), None)
            else:
                (condition,) = body["filter"]["must"]
                doomed = [
                    pid
                    for pid, p in points.items()
                    if p["payload"].get(condition["key"]) in condition["match"]["any"]
                ]
                for pid in doomed:
                    del points[pid]
            return update
        return NotImplemented
