"""Who may use an A2A server: the credentials :class:`A2AServer` accepts, as its card declares
them (A2A's ``securitySchemes`` and ``security``), and the credentials :class:`A2AAgent` sends.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping

from a2a.client import ClientCallContext
from a2a.client.auth import CredentialService
from a2a.types import (
    AgentCard,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
)

__all__ = ["A2AAuth", "AgentCredentials", "is_loopback"]

logger = logging.getLogger("agentscope_rt.a2a")

CredentialCheck = Callable[[Mapping[str, str]], Awaitable[bool]]
"""A check of the request's headers (lower-case names): true lets the request in."""

BEARER_SCHEME = "bearer"
API_KEY_SCHEME = "apiKey"


class A2AAuth:
    """The credentials an :class:`~agentscope_rt.a2a.A2AServer` accepts; a request needs one.

    Each kind given is one A2A security scheme on the published card, any of which suffices
    (``security`` lists them as alternatives): ``bearer`` (``Authorization: Bearer <token>``),
    ``apiKey`` (the key in the *api_key_header* header), and the schemes of *check*.
    Credentials are compared in constant time (``hmac.compare_digest``) and never appear in a
    repr, a log line or an error message.

    :param bearer_tokens: the bearer tokens accepted.
    :param api_keys: the API keys accepted in the *api_key_header* header.
    :param api_key_header: the header that carries an API key.
    :param check: for anything else (OAuth2 introspection, mutual TLS behind a proxy, ...): an
        async callable given the request's headers (lower-case names) that returns whether they
        are valid; it is asked when neither a bearer token nor an API key matched.
    :param check_schemes: the security schemes *check* implements, published on the card
        (name -> a2a-sdk ``SecurityScheme``) so that clients know what to send.
    :raises ValueError: when nothing is accepted at all, or a token or key is empty.
    """

    def __init__(
        self,
        *,
        bearer_tokens: Iterable[str] = (),
        api_keys: Iterable[str] = (),
        api_key_header: str = "X-API-Key",
        check: CredentialCheck | None = None,
        check_schemes: Mapping[str, SecurityScheme] | None = None,
    ) -> None:
        self._tokens = _secrets(bearer_tokens, "bearer_tokens")
        self._keys = _secrets(api_keys, "api_keys")
        if not (self._tokens or self._keys or check):
            raise ValueError("A2AAuth accepts nothing: give bearer_tokens, api_keys or a check")
        self._header = api_key_header.lower()
        self._header_name = api_key_header
        self._check = check
        self._check_schemes = dict(check_schemes or {})

    def __repr__(self) -> str:
        return (
            f"A2AAuth(bearer_tokens={len(self._tokens)}, api_keys={len(self._keys)}, "
            f"api_key_header={self._header_name!r}, check={self._check is not None})"
        )

    def schemes(self) -> dict[str, SecurityScheme]:
        """The security schemes the card declares, by name."""
        schemes = {}
        if self._tokens:
            schemes[BEARER_SCHEME] = SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")
            )
        if self._keys:
            schemes[API_KEY_SCHEME] = SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(
                    location="header", name=self._header_name
                )
            )
        schemes.update(self._check_schemes)
        return schemes

    def declare(self, card: AgentCard) -> AgentCard:
        """A copy of *card* that declares these schemes, each one enough on its own."""
        out = AgentCard()
        out.CopyFrom(card)
        for name, scheme in self.schemes().items():
            out.security_schemes[name].CopyFrom(scheme)
            if not any(name in req.schemes for req in out.security_requirements):
                requirement = SecurityRequirement()
                requirement.schemes[name].SetInParent()
                out.security_requirements.append(requirement)
        return out

    def challenge(self) -> str:
        """The ``WWW-Authenticate`` value of a refusal."""
        if self._tokens or not self._keys:
            return 'Bearer realm="a2a"'
        return f'ApiKey realm="a2a", header="{self._header_name}"'

    async def allows(self, headers: Mapping[str, str]) -> bool:
        """Whether *headers* carry an accepted credential."""
        authorization = headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and _matches(token.strip(), self._tokens):
            return True
        if _matches(headers.get(self._header, ""), self._keys):
            return True
        return self._check is not None and bool(await self._check(headers))


def _secrets(values: Iterable[str], what: str) -> tuple[bytes, ...]:
    if isinstance(values, str):
        raise ValueError(f"{what} must be a list of strings, not one string")
    secrets = tuple(value.encode("utf-8") for value in values)
    if any(not secret for secret in secrets):
        raise ValueError(f"{what} holds an empty string, which would accept anyone")
    return secrets


def _matches(given: str, accepted: tuple[bytes, ...]) -> bool:
    """Whether *given* is one of *accepted*, each compared in constant time (every one is
    compared, so the time says nothing about which one matched)."""
    if not given or not accepted:
        return False
    data = given.encode("utf-8", errors="surrogateescape")
    found = False
    for secret in accepted:
        found |= hmac.compare_digest(data, secret)
    return found


def is_loopback(host: str) -> bool:
    """Whether *host* names only this machine (127.0.0.0/8, ::1, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class AgentCredentials(CredentialService):
    """The credentials an :class:`~agentscope_rt.a2a.A2AAgent` sends, by the name of the
    card's security scheme they answer (a2a-sdk's ``AuthInterceptor`` puts each where its
    scheme says: ``Authorization: Bearer`` or the API key's header). The values never appear
    in a repr."""

    def __init__(self, credentials: Mapping[str, str]) -> None:
        for name, value in credentials.items():
            if not isinstance(name, str) or not isinstance(value, str) or not value:
                raise TypeError(
                    "credentials must map a security scheme's name to a non-empty string"
                )
        self._credentials = dict(credentials)

    def __repr__(self) -> str:
        return f"AgentCredentials(schemes={sorted(self._credentials)!r})"

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        return self._credentials.get(security_scheme_name)
