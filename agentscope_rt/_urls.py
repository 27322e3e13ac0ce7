"""How the package shows a URL in its logs, reprs and error messages: without the parts that
carry secrets.

A URL given by the user may hold a password (``https://user:pass@host``) or a token in its
query (``?api_key=...``, a presigned link's signature). Every place that logs a URL or puts
one in an error message passes it through :func:`redact_url` first.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "redact_url", "url_redactions"]

REDACTED = "***"
"""What stands in a log record for a secret taken out of it."""

MIN_SECRET_LENGTH = 6
"""Shorter values (flags such as ``1`` or ``true``) are not treated as secrets: replacing them
would garble messages without protecting anything."""


def redact_url(url: str) -> str:
    """*url* without its user info, query and fragment (scheme, host, port and path stay).

    Text that is not a URL with a host (a local path, a malformed URL) loses everything from
    its first ``?`` or ``#`` on, and a leading ``user:password@`` (an ``@`` with a ``:`` and no
    ``/`` before it), so credentials in a malformed URL are not shown either while a path that
    holds an ``@`` stays whole. Never raises.

    :param url: the URL (or anything meant as one).
    """
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        # e.g. an unbalanced IPv6 bracket: nothing of it can be trusted to be safe to show.
        return "<a malformed URL>"
    if parts.netloc:
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    head = text.split("?", 1)[0].split("#", 1)[0]
    userinfo, at, rest = head.rpartition("@")
    if at and ":" in userinfo and "/" not in userinfo:
        return rest
    return head


def url_redactions(url: str) -> list[tuple[str, str]]:
    """``(text, replacement)`` pairs that hide the credentials and query of *url* wherever a
    library logs it (whole, or its password, query or query values alone), for a log filter.

    :param url: the URL a client of the package was given.
    """
    parts = urlsplit(url)
    pairs = [(url, redact_url(url))]
    if parts.password:
        pairs.append((parts.password, REDACTED))
    if parts.query:
        pairs.append((parts.query, REDACTED))
        pairs.extend((value, REDACTED) for _, value in parse_qsl(parts.query))
    # A URL is replaced whole; a short part ("2" in "page=2") would garble every number.
    return [(text, new) for text, new in pairs if text == url or len(text) >= MIN_SECRET_LENGTH]
