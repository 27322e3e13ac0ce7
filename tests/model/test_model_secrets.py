"""No provider shows a key: not in ``repr`` or ``vars`` of the model, not in an error or any
part of its printed traceback (causes and contexts included), not in the logs.

The servers here echo every request header (``Authorization``, ``x-api-key``,
``x-goog-api-key`` and the extra headers) in their error bodies, as careless servers and
proxies do, so a key that is not scrubbed would show.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

from agentscope_rt.exception import ModelAPIError

from ._providers import KEY, PROVIDERS, Provider, hello_messages, provider_url
from ._wire_servers import Reply

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

HEADER_SECRET = "hdr-secret-9876543210fedcba"
HEADERS = {"Authorization": f"Bearer {HEADER_SECRET}", "X-Trace": "visible"}
SECRETS = (KEY, HEADER_SECRET)


def _headers(name: str) -> dict[str, str] | None:
    if name == "dashscope-native":
        return None  # its client sends the key alone
    if name in ("openai", "dashscope", "anthropic"):
        # The SDK's own header carries the key; the extra credential gets a name of its own.
        return {"X-Proxy-Authorization": f"Bearer {HEADER_SECRET}", "X-Trace": "visible"}
    return HEADERS


def _everything_shown(err: BaseException) -> str:
    """The printed traceback, plus str and repr of every exception in the chain."""
    shown = ["".join(traceback.format_exception(err))]
    seen: set[int] = set()
    pending: list[BaseException | None] = [err]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        shown += [str(current), repr(current), repr(getattr(current, "args", ()))]
        pending += [current.__cause__, current.__context__]
    return "\n".join(shown)


@pytest.mark.parametrize(("status", "echo"), [(401, "json"), (500, "json"), (400, "text")])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_no_key_in_errors_tracebacks_or_logs(
    wire: Any, name: str, stream: bool, status: int, echo: str, caplog: pytest.LogCaptureFixture
) -> None:
    provider = Provider(name, stream)
    answer = Reply(status=status, echo=echo)
    server = wire.add(answer)
    caplog.set_level(logging.DEBUG)
    model = provider.model(provider_url(provider, wire), headers=_headers(name))
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            result = await model(hello_messages(provider))
            if stream:
                [chunk async for chunk in result]  # type: ignore[union-attr]
    err = info.value
    # The server did receive the secrets (so its echo held them), and the error kept its
    # meaning: status and the echoed text, scrubbed.
    (request,) = server.requests
    sent = " ".join(request.headers.values())
    assert (KEY in sent) is (name != "ollama")  # Ollama takes no key, only headers
    assert (HEADER_SECRET in sent) is (name != "dashscope-native")
    assert err.status_code == status
    assert "***" in err.message
    shown = _everything_shown(err)
    for secret in SECRETS:
        # Not even a part of one, as a message shortened across a key would leave.
        assert secret[:12] not in shown
        assert secret[:12] not in caplog.text
    assert err.__cause__ is not None  # the provider's error, scrubbed, is still told


@pytest.mark.parametrize("name", PROVIDERS)
def test_no_key_in_repr_or_vars(name: str) -> None:
    model = Provider(name, False).model("http://127.0.0.1:9", headers=_headers(name))
    shown = f"{model!r} {vars(model)!r} {vars(model)!s}"
    for secret in SECRETS:
        assert secret not in shown
    if name in ("gemini", "ollama"):
        # The headers are kept (and sent), only shown masked.
        assert "visible" in shown and "***" in shown
