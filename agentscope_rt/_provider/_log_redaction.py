"""Keeping credentials out of the log records of the libraries the package drives.

The HTTP libraries (``httpx``, ``httpx2`` and their ``httpcore``/``httpcore2`` transports) log
every request URL at INFO, and the ``mcp`` SDK logs the endpoint URLs and whole JSON-RPC
messages at DEBUG. A URL may carry credentials (``https://user:pass@host`` or
``?token=...``), and an application that turns logging up to see what its agent does would
write them to its log files. Those records are created inside the libraries, so the only
place to clean them is a :class:`logging.Filter` on the libraries' own loggers:
:func:`install_library_log_redaction` puts one :class:`SecretRedactingFilter` on each of them.

Why a filter on the loggers, not on handlers: a filter on a logger runs once, before the
record reaches any handler (the application's, pytest's, a log shipper's), and the record it
cleans is the one every handler then sees. Filters of ancestor loggers are not consulted for
records propagated from children, so the filter is put on every library logger by name,
existing or not yet created (``logging.getLogger`` returns the object the library will use),
plus any other logger already registered under the libraries' names.

What is redacted, in the formatted message, the formatted exception and the stack text:

* texts an owner registered as secrets (:meth:`SecretRedactingFilter.remember`: the header
  values, auth credentials and URL parts an MCP client was given), as long as the owner lives;
* by pattern, whatever the owner: the user info of any URL (``scheme://***@host``), every
  query value of any URL (``?session_id=***&token=***``: which parameters are secrets is
  unknowable, and the values are never needed to read the log), values of ``key=value``
  pairs whose key names a secret (token, key, secret, password, auth, sig, ...), and
  the values of credential headers (``Authorization``, ``Proxy-Authorization``, ``Cookie``,
  ``X-Api-Key``, ...) in the shapes the libraries print them.

A record is changed only when something was redacted (its arguments are then merged into the
message, and an exception is kept as its redacted traceback text), so records without secrets
reach structured handlers untouched. The cost is paid only for records that pass the logger's
level: with the libraries' loggers at their default WARNING, the INFO and DEBUG records are
never created and the filter never runs.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections.abc import Iterable

__all__ = [
    "LIBRARY_LOGGERS",
    "SecretRedactingFilter",
    "install_library_log_redaction",
    "library_log_filter",
    "redact_text",
]

REDACTED = "***"

LIBRARY_LOGGERS = (
    "httpx",
    "httpx2",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "httpcore2.socks",
    "mcp.client.auth.oauth2",
    "mcp.client.caching",
    "mcp.client.client",
    "mcp.client.sse",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.shared.dispatcher",
    "mcp.shared.direct_dispatcher",
    "mcp.shared.jsonrpc_dispatcher",
    # mcp.client.session logs under this bare name.
    "client",
)
"""The loggers the HTTP libraries and the ``mcp`` SDK client log under."""

# Any other logger under these names (a module added in a later release) is covered too.
_LIBRARY_PREFIXES = ("httpx", "httpx2", "httpcore", "httpcore2", "mcp")

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@]*@")
_QUERY_VALUE = re.compile(r"([?&;][^=&#;]*=)[^&#;]*")
# key=value outside URLs (form bodies, "token=..." in a message) where the key names a secret.
_SECRET_PAIR = re.compile(
    r"(?i)\b([\w.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|apikey|auth|sig|signature"
    r"|credential|session[_-]?id)[\w.-]*=)[^&\s'\"<>#,;]+"
)
# "access_token": "...", 'client_secret': '...' (JSON bodies and dict reprs).
_SECRET_FIELD = re.compile(
    r"(?i)(['\"][\w-]*(?:token|secret|passw(?:or)?d|api[_-]?key|apikey|credential)[\w-]*['\"]"
    r"\s*:\s*b?['\"])[^'\"]*"
)
# Authorization: Bearer x / 'authorization': 'Bearer x' / (b'authorization', b'Bearer x').
_CREDENTIAL_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie|set-cookie)"
    r"(['\"]?\s*[:,]\s*(?-i:b)?['\"]?\s*)((?:bearer|basic|digest|token)\s+)?[^'\"\r\n]+"
)


def _redact_url(match: re.Match[str]) -> str:
    url = _USERINFO.sub(rf"\g<1>{REDACTED}@", match.group(0))
    head, mark, rest = url.partition("?")
    if not mark:
        return url
    return head + _QUERY_VALUE.sub(rf"\g<1>{REDACTED}", mark + rest)


def redact_text(text: str, known: Iterable[tuple[str, str]] = ()) -> str:
    """*text* with credentials replaced by ``***``: URL user info, URL query values,
    secret-named ``key=value`` pairs and fields, credential header values (see the module
    docstring), then the *known* ``(secret, replacement)`` pairs, longest first.

    :param text: any text.
    :param known: secrets known to be in use and what replaces each.
    """
    # Patterns first: they keep a URL readable (host, path, parameter names), where a known
    # pair would replace its whole query string.
    text = _URL.sub(_redact_url, text)
    text = _SECRET_FIELD.sub(rf"\g<1>{REDACTED}", text)
    text = _CREDENTIAL_HEADER.sub(rf"\g<1>\g<2>\g<3>{REDACTED}", text)
    text = _SECRET_PAIR.sub(rf"\g<1>{REDACTED}", text)
    for secret, replacement in sorted(known, key=lambda pair: len(pair[0]), reverse=True):
        if secret:
            text = text.replace(secret, replacement)
    return text


class SecretRedactingFilter(logging.Filter):
    """A logging filter that removes credentials from every record it sees (never drops one).

    Owners (such as MCP clients) register the secret texts they hold with :meth:`remember`;
    they are forgotten when the owner is garbage-collected. Safe to use from several threads.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._known: weakref.WeakKeyDictionary[object, tuple[tuple[str, str], ...]] = (
            weakref.WeakKeyDictionary()
        )
        self._formatter = logging.Formatter()

    def remember(self, owner: object, pairs: Iterable[tuple[str, str]]) -> None:
        """Redact the ``(secret, replacement)`` *pairs* while *owner* lives (replacing what
        was registered for *owner* before).

        :raises TypeError: if *owner* cannot be weakly referenced.
        """
        frozen = tuple(pairs)
        with self._lock:
            self._known[owner] = frozen

    def known_pairs(self) -> list[tuple[str, str]]:
        """Every ``(secret, replacement)`` pair registered by a live owner."""
        with self._lock:
            return [pair for pairs in self._known.values() for pair in pairs]

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact *record* in place; always keep it."""
        known = self.known_pairs()
        malformed = False
        try:
            message = record.getMessage()
        except Exception:
            # Logging would print the arguments while reporting the error: they are kept,
            # redacted, as text instead.
            message, malformed = f"{record.msg!s} {record.args!r}", True
        clean = redact_text(message, known)
        if clean != message or malformed:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            clean_exc = redact_text(record.exc_text, known)
            if clean_exc != record.exc_text:
                # Formatters print exc_text as it is; the exception object (whose message
                # holds the secret) must not reach a handler that formats it again.
                record.exc_text, record.exc_info = clean_exc, None
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info, known)
        return True


_FILTER = SecretRedactingFilter()
_install_lock = threading.Lock()


def library_log_filter() -> SecretRedactingFilter:
    """The one filter :func:`install_library_log_redaction` installs (to register secrets)."""
    return _FILTER


def install_library_log_redaction() -> SecretRedactingFilter:
    """Put the redacting filter on every logger of :data:`LIBRARY_LOGGERS` and on any other
    registered logger under the ``httpx``, ``httpx2``, ``httpcore``, ``httpcore2`` and
    ``mcp`` names; idempotent, and cheap enough to call from every client constructor (which
    also covers library modules imported since the last call).

    :returns: the filter, for :meth:`SecretRedactingFilter.remember`.
    """
    with _install_lock:
        names = set(LIBRARY_LOGGERS)
        for name, candidate in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(candidate, logging.Logger) and any(
                name == prefix or name.startswith(prefix + ".") for prefix in _LIBRARY_PREFIXES
            ):
                names.add(name)
        for name in names:
            target = logging.getLogger(name)
            if _FILTER not in target.filters:
                target.addFilter(_FILTER)
    return _FILTER
