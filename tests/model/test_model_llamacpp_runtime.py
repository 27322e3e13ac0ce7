"""LlamaCppChatModel on its prebuilt runtime (xllamacpp): stopping while a long prompt is read,
a component's prompt beyond the context window, and the engine settings."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any

import anyio
import anyio.to_thread
import pytest

# mem0 creates its folder when imported: keep it out of the home directory.
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-tests-"))

import mem0.exceptions

from agentscope_rt.embedding import LocalTextEmbedding
from agentscope_rt.memory import Mem0LongTermMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatResponse, LlamaCppChatModel

from .test_model_llamacpp import GREEDY

pytestmark = pytest.mark.local_model

LONG_PROMPT = [
    {"role": "user", "content": "The quick brown fox jumps over the lazy dog. " * 140},
]


async def _cached_tokens(model: LlamaCppChatModel) -> tuple[int, int]:
    """(prompt tokens the engine already held, prompt tokens) of one more call of LONG_PROMPT,
    asked of the engine directly: what it kept is what it had read."""
    request = {"messages": LONG_PROMPT, "max_tokens": 1, "cache_prompt": True}
    reply: dict[str, Any] = await anyio.to_thread.run_sync(
        model._server.handle_chat_completions, request
    )
    usage = reply["usage"]
    return usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"]


async def _reading(model: LlamaCppChatModel) -> tuple[int, int]:
    """(tokens read, prompt tokens) once the engine has reported reading part of the prompt."""
    for _ in range(60_000):
        progress = model._prompt_progress
        if progress is not None and progress[0] > 0:
            return progress
        await anyio.sleep(0.005)
    raise AssertionError("the engine never reported reading the prompt")


async def test_cancelling_while_the_prompt_is_read_stops_the_reading() -> None:
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 4})
    await model.load()
    seen: list[tuple[int, int]] = []
    with anyio.fail_after(300):
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await model(LONG_PROMPT)

            group.start_soon(call)
            seen.append(await _reading(model))
            group.cancel_scope.cancel()  # what interrupt() does to the reply
    read, total = seen[0]
    assert 0 < read < total  # cancelled in the middle of the prompt
    # The engine dropped the request there: it holds part of the prompt, not all of it.
    cached, prompt_tokens = await _cached_tokens(model)
    assert prompt_tokens == total
    assert cached < total
    # And the model is free for the next call.
    with anyio.fail_after(120):
        response = await model([{"role": "user", "content": "Hi"}], max_tokens=2)
    assert isinstance(response, ChatResponse)


async def test_a_long_step_logs_progress_lines(caplog: pytest.LogCaptureFixture) -> None:
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 2})
    model.progress_interval = 0.0  # every report, so the test needs no slow machine
    with caplog.at_level("INFO", logger="agentscope_rt.model"), anyio.fail_after(300):
        await model(LONG_PROMPT)
    lines = [r.getMessage() for r in caplog.records if "reading the prompt" in r.getMessage()]
    assert lines, caplog.text
    assert lines[0].startswith(f"{model.model_name}: reading the prompt, ")
    assert " of " in lines[0] and lines[0].endswith(" s)")


async def test_closing_the_stream_before_the_first_token_stops_the_reading() -> None:
    model = LlamaCppChatModel(stream=True, generate_kwargs={**GREEDY, "max_tokens": 4})
    await model.load()
    stream = await model(LONG_PROMPT)
    assert not isinstance(stream, ChatResponse)
    with anyio.fail_after(300):
        async with anyio.create_task_group() as group:

            async def consume() -> None:
                async for _ in stream:
                    pass

            group.start_soon(consume)
            await _reading(model)
            group.cancel_scope.cancel()
        await stream.aclose()
    cached, total = await _cached_tokens(model)
    assert cached < total


async def test_a_component_prompt_beyond_what_the_model_reads_names_sizes_and_remedy(
    tmp_path: Any,
) -> None:
    # mem0's fact-extraction prompt is about 8,600 tokens: more than SmolLM2 reads at all.
    config = {
        "history_db_path": str(tmp_path / "history.db"),
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": str(tmp_path / "q"), "embedding_model_dims": 384, "on_disk": True},
        },
    }
    memory = Mem0LongTermMemory(
        user_name="ada",
        model=LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 8}),
        embedding_model=LocalTextEmbedding(),
        mem0_config=config,
    )
    async with memory:
        with pytest.raises(mem0.exceptions.LLMError) as info:
            await memory.record([Msg("user", "I am vegetarian.", "user")])
    message = str(info.value)
    assert "the prompt needs" in message and "context window holds 2048 (n_ctx)" in message
    assert "reads at most 8192 tokens, so n_ctx cannot help" in message
    assert "larger context window" in message


async def test_a_prompt_that_the_model_could_read_with_a_larger_window_says_how_large() -> None:
    model = LlamaCppChatModel(n_ctx=256, generate_kwargs={**GREEDY, "max_tokens": 16})
    with pytest.raises(Exception, match=r"Raise n_ctx to at least \d+") as info:
        await model(LONG_PROMPT)
    assert "this model reads up to 8192" in str(info.value)
    assert model.n_ctx_train == 8192


def test_unknown_engine_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown llama_kwargs \['no_such_setting'\]"):
        LlamaCppChatModel(llama_kwargs={"no_such_setting": 1})


async def test_engine_settings_apply_and_the_local_port_needs_the_key() -> None:
    import urllib.error
    import urllib.request

    model = LlamaCppChatModel(
        generate_kwargs={**GREEDY, "max_tokens": 2}, llama_kwargs={"n_threads": 1, "n_batch": 32}
    )
    response = await model([{"role": "user", "content": "Hi"}])
    assert isinstance(response, ChatResponse)
    assert model._http_key not in repr(model)
    # The engine's local HTTP port refuses other local processes (no key, no service).
    request = urllib.request.Request(model._address + "/v1/models")
    with pytest.raises(urllib.error.HTTPError) as info:
        await anyio.to_thread.run_sync(urllib.request.urlopen, request)
    assert info.value.code == 401
    info.value.close()


async def test_a_conversation_ending_with_assistant_turns_is_answered_not_continued() -> None:
    # Other agents' turns in a hub end the conversation as assistant messages.
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 8})
    messages = [
        {"role": "system", "content": "You are Bob. Answer in one short sentence."},
        {"role": "user", "content": "Which is the better pet, a cat or a dog?"},
        {"role": "assistant", "content": "Alice: a cat, clearly."},
        {"role": "assistant", "content": "Carol: a dog, of course."},
    ]
    counter, _ = model.prompt_budget()
    counted = await counter.count(messages)
    response = await model(messages)
    assert isinstance(response, ChatResponse) and response.get_text()
    assert response.usage is not None and response.usage.input_tokens == counted


async def test_a_file_that_is_no_gguf_model_is_refused_on_load(tmp_path: Any) -> None:
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    model = LlamaCppChatModel(model_path=bad)
    with pytest.raises(ValueError, match=r"could not load .*notes\.gguf"):
        await model.load()


async def test_the_local_port_is_reached_directly_even_with_a_proxy_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("no_proxy", "")
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 2})
    counter, _ = model.prompt_budget()
    assert await counter.count([{"role": "user", "content": "Hi"}]) > 1


# Loads and closes the default model in a loop; a close that never returns holds the GIL (the
# engine's destructor joins its thread), so it runs in a child process the test can time out.
_LOAD_AND_CLOSE = """
import anyio
from agentscope_rt.model import LlamaCppChatModel

async def main():
    model = LlamaCppChatModel()
    for _ in range(30):
        await model.load()
        await model.aclose()
    print("closed 30 times")

anyio.run(main)
"""


async def test_a_close_right_after_a_load_frees_the_engine_every_time() -> None:
    # The engine's task loop starts after its port opens; an engine freed before then lost its
    # stop signal and its destructor waited forever (once in a dozen tries here).
    with anyio.fail_after(300):
        done = await anyio.run_process(
            [sys.executable, "-c", _LOAD_AND_CLOSE], check=False, stderr=subprocess.STDOUT
        )
    assert done.returncode == 0, done.stdout.decode(errors="replace")[-2000:]
    assert done.stdout.decode().strip().endswith("closed 30 times")


async def test_aclose_frees_the_engine_and_a_later_call_reloads() -> None:
    import urllib.error
    import urllib.request

    async with LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 2}) as model:
        await model.load()
        port = model._address
    # The engine is gone (its port closed) when aclose returns, not when the GC gets to it.
    assert model._server is None
    with pytest.raises(urllib.error.URLError) as info:
        await anyio.to_thread.run_sync(urllib.request.urlopen, port + "/health")
    assert not isinstance(info.value, urllib.error.HTTPError)
    await model.aclose()  # a second close does nothing
    response = await model([{"role": "user", "content": "Hi"}])
    assert isinstance(response, ChatResponse)
    await model.aclose()
