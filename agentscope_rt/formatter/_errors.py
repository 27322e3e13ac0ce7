"""The error and warnings formatters raise."""

from __future__ import annotations

from ..exception import AgentScopeRTError

__all__ = [
    "FormatterError",
    "LocalFileNotAllowedError",
    "TruncationWarning",
    "UnsupportedBlockWarning",
]


class FormatterError(AgentScopeRTError, ValueError):
    """Messages could not be turned into a provider payload.

    Raised for media that cannot be sent: a local path that does not exist, a file whose
    media type cannot be determined or that the provider does not accept (e.g. a ``.txt`` file
    in an image block), a web URL that cannot be downloaded where the provider needs the bytes.
    The message names the offending URL or path. A ``ValueError``, as in AgentScope.
    """


class LocalFileNotAllowedError(FormatterError, PermissionError):
    """A media block names a local file outside the folders the application allowed with
    :func:`~agentscope_rt.formatter.allow_local_files` (nothing is allowed by default). The
    message names the path and how to allow its folder. Both a :class:`FormatterError` (a
    ``ValueError``) and a ``PermissionError``."""


class UnsupportedBlockWarning(UserWarning):
    """A formatter dropped content blocks its provider does not accept (e.g. video for
    Anthropic). Issued at most once per ``format()`` call, naming every dropped type."""


class TruncationWarning(UserWarning):
    """Even the smallest prompt a formatter may send (the system prompt plus the newest turn,
    with its tool calls and results kept together) exceeds ``max_tokens``; that prompt was
    returned anyway."""
