"""How the package shows a URL in its logs, reprs and error messages: without the parts that
carry secrets.

A URL given by the user may hold a password (``https://user:pass@host``) or a token in its
query (``?api_key=...``, a presigned link's signature). Every place that logs a URL or puts
one in an error message passes it through :func:`redact_url` first.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """*url* without its user info, query and fragment (scheme, host, port and path stay).

    Text that is not a URL with a host loses whatever stands before its last ``@`` and from
    its first ``?`` or ``#`` on, so credentials in a malformed URL are not shown either.
    Never raises.

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
    return head.rpartition("@")[2]
