"""API keys and the secrets derived from them: found once, never shown.

A provider's key comes from an argument or an environment variable (:func:`resolve_api_key`);
the strings to scrub from error messages travel as :class:`Secrets`, and request headers as
:class:`SecretHeaders`, both of which show ``***`` in any repr, so ``vars(model)`` or a
traceback's locals show no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = ["SecretHeaders", "Secrets", "header_secrets", "resolve_api_key"]


def resolve_api_key(
    api_key: str | None, env_var: str, model_class: str, *, required: bool = True
) -> str | None:
    """The key given, else the environment variable's value.

    :raises ValueError: if *required* and neither is set (the message says how to fix it and
        never contains a key).
    """
    if api_key:
        return api_key
    value = os.environ.get(env_var) or None
    if value is None and required:
        raise ValueError(
            f"{model_class} needs an API key: pass api_key=... or set the {env_var} "
            "environment variable"
        )
    return value


class Secrets(tuple[str, ...]):
    """Secrets to scrub from error messages; shows as ``Secrets(***)`` in any repr."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Secrets(***)"

    __str__ = __repr__


_SENSITIVE_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie", "password", "credential")


def _is_sensitive_header(name: Any) -> bool:
    lowered = str(name).lower()
    return any(word in lowered for word in _SENSITIVE_HEADER_WORDS)


def header_secrets(headers: Any) -> tuple[str, ...]:
    """The secrets among the values of *headers* (a mapping, or ``None``): those of headers
    named like credentials (``Authorization``, ``x-api-key``, ``Cookie``, ...), each also
    without its scheme (``Bearer <token>`` gives the token too), to scrub from errors."""
    if not isinstance(headers, Mapping):
        return ()
    found: list[str] = []
    for name, value in headers.items():
        if not _is_sensitive_header(name) or not isinstance(value, str) or not value:
            continue
        found.append(value)
        scheme, _, token = value.partition(" ")
        if token.strip() and scheme.isalpha():
            found.append(token.strip())
    return tuple(found)


class SecretHeaders(dict[str, Any]):
    """Request headers kept by a model; the values of credential headers (see
    :func:`header_secrets`) show as ``***`` in any repr, so ``vars(model)`` shows no key."""

    def __repr__(self) -> str:
        shown = {k: "***" if _is_sensitive_header(k) else v for k, v in self.items()}
        return f"SecretHeaders({shown!r})"

    __str__ = __repr__
