"""httpx clients per event loop, and the streamed POST every HTTP provider sends.

The HTTP chat models (Ollama, Gemini), the HTTP embedding models and the HTTP speech models
make their clients and open their streamed responses the same way, here.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from ._loop_client import LoopClients
from ._retry import close_shielded

__all__ = ["close_client", "http_loop_clients", "post_streamed"]


def _check_client_kwargs(owner: str, client_kwargs: Mapping[str, Any]) -> None:
    """Check now that ``httpx.AsyncClient`` takes *client_kwargs*: the client is made on the
    first call, far from the mistake.

    :param owner: the class named in the error.
    :raises TypeError: naming the bad argument and what was given.
    """
    try:
        inspect.signature(httpx.AsyncClient).bind(**client_kwargs)
    except TypeError as exc:
        raise TypeError(
            f"{owner}: {exc}; extra arguments go to httpx.AsyncClient "
            f"({', '.join(sorted(client_kwargs))} given)"
        ) from None


def http_loop_clients(
    owner: str,
    base_url: str,
    headers: Mapping[str, str],
    client_kwargs: Mapping[str, Any] | None,
    timeout: httpx.Timeout,
) -> LoopClients[httpx.AsyncClient]:
    """One ``httpx.AsyncClient`` per event loop for *base_url*, sending *headers* with every
    request (after any ``headers`` in *client_kwargs*, which they override).

    :param owner: the class named in errors.
    :param client_kwargs: more arguments for ``httpx.AsyncClient``; *timeout* unless they
        give one.
    :raises TypeError: for *client_kwargs* that ``httpx.AsyncClient`` does not take.
    """
    kwargs = {"timeout": timeout, **(client_kwargs or {})}
    _check_client_kwargs(owner, kwargs)
    all_headers = {**dict(kwargs.pop("headers", None) or {}), **headers}
    return LoopClients(
        lambda: httpx.AsyncClient(base_url=base_url, headers=all_headers, **kwargs),
        close_client,
    )


@contextlib.asynccontextmanager
async def post_streamed(
    client: httpx.AsyncClient,
    path: str,
    body: Any,
    *,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[httpx.Response]:
    """The streamed response to a POST of *body* (as JSON) to *path*, closed (shielded) on
    exit, however the reader ends.

    :raises httpx.HTTPStatusError: for an error status, with the body already read (so the
        retry layer can quote the provider's message).
    """
    request = client.build_request("POST", path, params=params, json=body, headers=headers)
    response = await client.send(request, stream=True)
    try:
        if response.is_error:
            await response.aread()
            response.raise_for_status()
        yield response
    finally:
        await close_shielded(response)


async def close_client(client: httpx.AsyncClient) -> None:
    """Close *client* (what :class:`LoopClients` calls when its event loop ends)."""
    await client.aclose()
