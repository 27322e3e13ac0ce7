"""Every chat provider served by a scripted server on 127.0.0.1, on its real wire protocol.

:class:`Provider` builds a provider's model, formatter and scripted answers for the ``wire``
server (tests/model/conftest.py); :func:`provider_url` and :func:`weather_agent` give a
provider's URL on it and build a ReAct agent (one weather tool) talking to it.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    DashScopeChatFormatter,
    GeminiChatFormatter,
    OllamaChatFormatter,
    OpenAIChatFormatter,
)
from agentscope_rt.model import (
    AnthropicChatModel,
    ChatModelBase,
    DashScopeChatModel,
    GeminiChatModel,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponseModel,
    RetryConfig,
)
from agentscope_rt.tool import Toolkit, ToolResponse

from . import _wire_servers as wa
from ._wire_servers_responses import Message, response_events

KEY = "sk-wire-test-0123456789abcdef"
NO_RETRY = RetryConfig(max_retries=0)
ONE_RETRY = RetryConfig(max_retries=1, initial_delay=0.0, jitter=0.0)

# Argument texts a model may stream that Python's json module accepts but strict JSON does not.
BAD_ARGUMENTS = {
    "nan": '{"city": NaN}',
    "infinity": '{"city": "Oslo", "days": -Infinity}',
    "surrogate": '{"city": "\\ud800"}',
    "surrogate-key": '{"\\udfff": "Oslo"}',
}
BAD_VALUES = {
    "nan": {"city": float("nan")},
    "infinity": {"city": "Oslo", "days": float("-inf")},
    "surrogate": {"city": "\ud800"},
    "surrogate-key": {"\udfff": "Oslo"},
}


# -- the providers, each with its server, model, formatter and answers ------------------------


@attrs.define
class Provider:
    """How one provider is served: builds the model and its scripted answers."""

    name: str
    stream: bool

    def model(
        self,
        url: str,
        retry: RetryConfig = NO_RETRY,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> ChatModelBase:
        """The provider's model on *url*; *headers* are sent with every request (not by
        DashScope's native endpoint, whose client sends only the key); *timeout* is the SDK
        client's (the SDK providers only)."""
        stream = self.stream
        sdk: dict[str, Any] = {"default_headers": headers} if headers else {}
        if timeout is not None:
            sdk["timeout"] = timeout
        http: dict[str, Any] = {"headers": headers} if headers else {}
        if self.name == "openai":
            return OpenAIChatModel(
                "gpt-test", KEY, stream, client_kwargs={"base_url": url, **sdk}, retry_config=retry
            )
        if self.name == "openai-response":
            return OpenAIResponseModel(
                "o4-test", KEY, stream, client_kwargs={"base_url": url, **sdk}, retry_config=retry
            )
        if self.name == "dashscope":
            return DashScopeChatModel(
                "qwen-test", KEY, stream, base_http_api_url=url, retry_config=retry,
                client_kwargs=sdk,
            )  # fmt: skip
        if self.name == "dashscope-native":
            return DashScopeChatModel(
                "qwen-vl-test",
                KEY,
                stream,
                base_http_api_url=url + "/api/v1",
                retry_config=retry,
            )
        if self.name == "anthropic":
            return AnthropicChatModel(
                "claude-test", KEY, stream=stream, client_kwargs={"base_url": url, **sdk},
                retry_config=retry,
            )  # fmt: skip
        if self.name == "gemini":
            return GeminiChatModel(
                "gemini-test", KEY, stream, client_kwargs={"base_url": url, **http},
                retry_config=retry,
            )  # fmt: skip
        return OllamaChatModel(
            "qwen3:0.6b", stream, host=url, retry_config=retry, client_kwargs=http
        )

    def formatter(self) -> Any:
        return {
            "openai": OpenAIChatFormatter,
            "dashscope": DashScopeChatFormatter,
            "dashscope-native": DashScopeChatFormatter,
            "anthropic": AnthropicChatFormatter,
            "gemini": GeminiChatFormatter,
            "ollama": OllamaChatFormatter,
        }[self.name]()

    @property
    def label(self) -> str:
        """The provider an error of its model names."""
        return self.name.split("-")[0]

    def error(self, message: str) -> dict[str, Any]:
        """The body of the provider's error answer saying *message*."""
        if self.name == "anthropic":
            return {"type": "error", "error": {"type": "api_error", "message": message}}
        if self.name == "gemini":
            return wa.gemini_error(500, message, "INTERNAL")
        if self.name == "ollama":
            return {"error": message}
        return {"error": {"message": message, "type": "server_error"}}

    def text_stream(self, pieces: list[str], **kwargs: Any) -> wa.Reply:
        """A streamed answer of text *pieces* (*kwargs* go to the :class:`Reply`); the
        events up to the first piece are :attr:`first_piece_at`."""
        if self.name == "openai-response":
            return wa.Reply(events=response_events([Message(pieces)]), **kwargs)
        if self.name == "anthropic":
            return wa.Reply(events=wa.anthropic_stream([("text", pieces)]), **kwargs)
        if self.name == "gemini":
            responses = [wa.gemini_response({"text": piece}) for piece in pieces[:-1]]
            responses.append(wa.gemini_response({"text": pieces[-1]}, prompt_tokens=1))
            return wa.Reply(events=[*wa.gemini_events(*responses)], **kwargs)
        if self.name == "ollama":
            chunks = [wa.ollama_chunk(piece) for piece in pieces]
            events = wa.ndjson(*chunks, wa.ollama_chunk("", done=True))
            return wa.Reply(events=[*events], content_type="application/x-ndjson", **kwargs)
        return wa.Reply(events=[*wa.openai_text_stream(pieces)], **kwargs)

    @property
    def first_piece_at(self) -> int:
        """How many events of :meth:`text_stream` come up to and including the first piece:
        OpenAI's role chunk; the Responses API's created, in progress, item and part added;
        Anthropic's message and block starts."""
        return {"openai": 2, "dashscope": 2, "openai-response": 5, "anthropic": 3}.get(self.name, 1)

    def answer(self, text: str | None = None, call: tuple[str, str] | None = None) -> Any:
        """A complete answer: *text*, or a tool *call* ``(name, argument text)``."""
        name = self.name
        args_text = call[1] if call else ""
        args_value = _decoded(args_text) if call else None
        if name in ("openai", "dashscope"):
            if not self.stream:
                calls = [("call_1", call[0], args_text)] if call else None
                return wa.Reply(body=wa.openai_completion(text, calls))
            if call is None:
                return wa.Reply(events=wa.openai_text_stream([text or ""]))
            return wa.Reply(
                events=[
                    wa.openai_tool_delta(0, args_text[:5], id="call_1", name=call[0]),
                    wa.openai_tool_delta(0, args_text[5:]),
                    wa.openai_chunk({}, finish_reason="tool_calls"),
                    wa.openai_chunk(None, usage=(5, 2)),
                    wa.sse("[DONE]"),
                ]
            )
        if name == "dashscope-native":
            message: dict[str, Any] = {"role": "assistant", "content": [{"text": text or ""}]}
            if call:
                tool = {"id": "call_1", "type": "function", "function": {"name": call[0]}}
                message["tool_calls"] = [{**tool, "index": 0}]
                tool["function"]["arguments"] = args_text
            answer = {
                "output": {"choices": [{"finish_reason": "stop", "message": message}]},
                "usage": {"input_tokens": 5, "output_tokens": 2},
                "request_id": "req-1",
            }
            if not self.stream:
                return wa.Reply(body=answer)
            event = "id:1\nevent:result\n:HTTP_STATUS/200\ndata:" + json.dumps(answer) + "\n\n"
            return wa.Reply(events=[event])
        if name == "anthropic":
            if not self.stream:
                block = (
                    {"type": "tool_use", "id": "toolu_1", "name": call[0], "input": args_value}
                    if call
                    else {"type": "text", "text": text}
                )
                return wa.Reply(body=wa.anthropic_message([block]))
            if call is None:
                return wa.Reply(events=wa.anthropic_stream([("text", [text or ""])]))
            spec = ("tool_use", [args_text[:5], args_text[5:]], {"id": "toolu_1", "name": call[0]})
            return wa.Reply(events=wa.anthropic_stream([spec]))
        if name == "gemini":
            part = (
                {"functionCall": {"name": call[0], "args": args_value}} if call else {"text": text}
            )
            body = wa.gemini_response(part, prompt_tokens=5, output_tokens=2)
            if not self.stream:
                return wa.Reply(body=body)
            return wa.Reply(events=wa.gemini_events(body), content_type="text/event-stream")
        tool_calls = [{"function": {"name": call[0], "arguments": args_value}}] if call else None
        chunk = wa.ollama_chunk(text or "", tool_calls=tool_calls, done=True, eval_count=2)
        if not self.stream:
            return wa.Reply(body=chunk)
        return wa.Reply(events=wa.ndjson(chunk), content_type="application/x-ndjson")


def _decoded(args_text: str) -> Any:
    """What a provider whose body carries decoded arguments sends for *args_text*."""
    for key, text in BAD_ARGUMENTS.items():
        if text == args_text:
            return BAD_VALUES[key]
    return json.loads(args_text)


PROVIDERS = ["openai", "dashscope", "dashscope-native", "anthropic", "gemini", "ollama"]


def provider_url(provider: Provider, wire: wa.WireServer) -> str:
    """The base URL of *provider*'s API on the scripted server."""
    if provider.name in ("openai", "openai-response", "dashscope"):
        return wire.url + "/v1"
    return wire.url


def weather_agent(
    provider: Provider, wire: wa.WireServer, retry: RetryConfig = NO_RETRY
) -> ReActAgent:
    toolkit = Toolkit()

    def get_weather(city: str) -> ToolResponse:
        """Get the weather of a city.

        Args:
            city: the city.
        """
        return ToolResponse(content=f"Sunny in {city}")

    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are terse.",
        model=provider.model(provider_url(provider, wire), retry),
        formatter=provider.formatter(),
        toolkit=toolkit,
        max_iters=3,
    )
    agent.set_console_output_enabled(False)
    return agent


def strict_dump(state: Any) -> str:
    """*state* as strict JSON, encodable as UTF-8 (what a session writes)."""
    text = json.dumps(state, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    return text


def hello_messages(provider: Provider) -> list[dict[str, Any]]:
    """A user's greeting in the format *provider*'s model takes."""
    if provider.name == "gemini":
        return [{"role": "user", "parts": [{"text": "Hi"}]}]
    if provider.name == "openai-response":
        return [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    return [{"role": "user", "content": "Hi"}]
