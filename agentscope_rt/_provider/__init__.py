"""What every package that talks to a model provider shares: the foundation under them.

The chat models (:mod:`agentscope_rt.model`), the embedding models, the token counters, the
multi-modality tools and the MCP clients reach providers and servers the same way, through
what is here, so none of them imports another's private module:

* the one retry policy (:class:`RetryConfig`, :func:`call_with_retry`,
  :func:`stream_with_retry`, :func:`classify_error`), which raises
  :class:`~agentscope_rt.exception.ModelAPIError` with every secret scrubbed;
* one HTTP or SDK client per event loop, closed while that loop still runs
  (:class:`LoopClients`, :func:`close_orphans`; for httpx :func:`http_loop_clients` and the
  streamed POST :func:`post_streamed`; for the SDKs :func:`loop_copy`,
  :func:`sdk_owns_http_client`, :func:`close_sdk_client`);
* API keys and the secrets that never show in a repr, an error or a log
  (:func:`resolve_api_key`, :class:`Secrets`, :class:`SecretHeaders`,
  :func:`install_library_log_redaction`);
* redis-py's synchronous client for the Redis memory and session (:func:`open_sync_redis`,
  :func:`call_redis`: worker threads, the password kept out of errors);
* the token counter interface (:class:`TokenCounterBase`) and the format of a Responses API
  reasoning item kept in a thinking block (:func:`reasoning_signature`,
  :func:`reasoning_input_item`).

It imports only the foundation (:mod:`agentscope_rt.exception`); ``tests/test_imports.py`` pins
that.
"""

from ._dashscope_events import DASHSCOPE_RETRYABLE_CODES, DashScopeEvents
from ._http_client import close_client, http_loop_clients, post_streamed
from ._http_stream import (
    close_generator_chain,
    response_bytes,
    response_lines,
    suspended_generator_chain,
)
from ._log_redaction import (
    LIBRARY_LOGGERS,
    SecretRedactingFilter,
    install_library_log_redaction,
    library_log_filter,
    redact_text,
)
from ._loop_client import LoopClients, close_orphans
from ._openai_reasoning import reasoning_input_item, reasoning_signature
from ._redis import call_redis, open_sync_redis
from ._retry import (
    CLOSE_TIMEOUT,
    RETRYABLE_STATUS,
    BadResponse,
    FailureInfo,
    RedactedCause,
    RetryConfig,
    StreamErrorEvent,
    call_with_retry,
    classify_error,
    close_shielded,
    excerpt,
    parse_answer,
    parse_retry_after,
    parsed_sdk_answer,
    redacted_cause,
    shape_checked,
    stream_with_retry,
)
from ._sdk_client import close_sdk_client, loop_copy, sdk_owns_http_client
from ._secrets import SecretHeaders, Secrets, header_secrets, resolve_api_key
from ._token_counter import TokenCounterBase

__all__ = [
    "CLOSE_TIMEOUT",
    "DASHSCOPE_RETRYABLE_CODES",
    "LIBRARY_LOGGERS",
    "RETRYABLE_STATUS",
    "BadResponse",
    "DashScopeEvents",
    "FailureInfo",
    "LoopClients",
    "RedactedCause",
    "RetryConfig",
    "SecretHeaders",
    "SecretRedactingFilter",
    "Secrets",
    "StreamErrorEvent",
    "TokenCounterBase",
    "call_redis",
    "call_with_retry",
    "classify_error",
    "close_client",
    "close_generator_chain",
    "close_orphans",
    "close_sdk_client",
    "close_shielded",
    "excerpt",
    "header_secrets",
    "http_loop_clients",
    "install_library_log_redaction",
    "library_log_filter",
    "loop_copy",
    "open_sync_redis",
    "parse_answer",
    "parse_retry_after",
    "parsed_sdk_answer",
    "post_streamed",
    "reasoning_input_item",
    "reasoning_signature",
    "redact_text",
    "redacted_cause",
    "resolve_api_key",
    "response_bytes",
    "response_lines",
    "sdk_owns_http_client",
    "shape_checked",
    "stream_with_retry",
    "suspended_generator_chain",
]
