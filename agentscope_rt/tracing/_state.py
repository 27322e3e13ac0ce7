"""Whether tracing is on, read by every traced route as a plain module attribute.

Nothing here imports OpenTelemetry: the decorators test :data:`enabled` and call into
OpenTelemetry only when it is true.
"""

from __future__ import annotations

from typing import Any

__all__ = ["capture_content", "enabled", "tracer"]

enabled: bool = False
"""Whether spans are made (set by :func:`~._setup.enable_tracing` and
:func:`~._setup.disable_tracing` only)."""

capture_content: bool = False
"""Whether message and argument content is recorded on spans (and in exception events)."""

tracer: Any = None
"""The OpenTelemetry tracer spans are made with, while tracing is on."""
