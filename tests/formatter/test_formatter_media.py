"""Media handling, dropped blocks and errors — including where this project differs from
AgentScope on purpose (documented in docs/formatter.md)."""

from __future__ import annotations

import base64
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    AnthropicMultiAgentFormatter,
    DashScopeChatFormatter,
    DeepSeekChatFormatter,
    FormatterError,
    GeminiChatFormatter,
    OllamaChatFormatter,
    OllamaMultiAgentFormatter,
    OpenAIChatFormatter,
    OpenAIMultiAgentFormatter,
    UnsupportedBlockWarning,
)
from agentscope_rt.formatter._media import call_state, current_call, saved_media_dir
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)

from .._local_http import LocalHTTPServer, QuietHandler

DATA = Path(__file__).parent / "data"
PNG = (DATA / "pixel.png").read_bytes()
PNG_B64 = base64.b64encode(PNG).decode()
WAV = (DATA / "tone.wav").read_bytes()


class _MediaServer(QuietHandler):
    """Serves /pixel.png, /tone.wav, /image (no extension); 404 otherwise."""

    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        files = {
            "/pixel.png": (PNG, "image/png"),
            "/tone.wav": (WAV, "audio/wav"),
            "/image": (PNG, "image/png"),
        }
        if self.path not in files:
            self.send_error(404)
            return
        body, content_type = files[self.path]
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def media_server() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_MediaServer,), {"hits": hits})
    with LocalHTTPServer(handler) as server:
        yield server.url, hits


def _image(url: str) -> ImageBlock:
    return ImageBlock(source=URLSource(url=url))


# -- dropped blocks: one warning per call -----------------------------------------------------


@pytest.mark.parametrize(
    ("formatter", "dropped"),
    [
        (DeepSeekChatFormatter(), {"image", "audio", "video"}),
        (AnthropicChatFormatter(), {"audio", "video"}),
        (OllamaChatFormatter(), {"audio", "video"}),
        (OpenAIChatFormatter(), {"video"}),
        (AnthropicMultiAgentFormatter(), {"audio", "video"}),
        (OpenAIMultiAgentFormatter(), {"video"}),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, set) else "",
)
async def test_unsupported_blocks_dropped_with_one_warning(
    formatter: Any, dropped: set[str]
) -> None:
    media = [
        ImageBlock(source=Base64Source(media_type="image/png", data=PNG_B64)),
        AudioBlock(source=URLSource(url=str(DATA / "tone.wav"))),
        VideoBlock(source=URLSource(url=str(DATA / "clip.mp4"))),
    ]
    msgs = [
        Msg("user", [TextBlock(text="look"), *media], "user"),
        Msg("user", [TextBlock(text="again"), *media], "user"),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = await formatter.format(msgs)
    relevant = [w for w in caught if issubclass(w.category, UnsupportedBlockWarning)]
    assert len(relevant) == 1
    message = str(relevant[0].message)
    for typ in dropped:
        assert f"2 {typ}" in message
    assert type(formatter).__name__ in message
    assert out  # the text still goes through


async def test_thinking_is_dropped_silently_where_not_accepted() -> None:
    msgs = [Msg("bot", [ThinkingBlock(thinking="hmm"), TextBlock(text="hi")], "assistant")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = await OpenAIChatFormatter().format(msgs)
    assert out == [
        {"role": "assistant", "name": "bot", "content": [{"type": "text", "text": "hi"}]}
    ]


async def test_no_warning_when_nothing_is_dropped() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await AnthropicChatFormatter().format(
            [Msg("user", [TextBlock(text="x"), _image(str(DATA / "pixel.png"))], "user")]
        )


async def test_dropped_blocks_of_truncated_turns_do_not_warn() -> None:
    from agentscope_rt.token import CharTokenCounter

    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))
    msgs = [Msg("user", [TextBlock(text="old " * 200), video], "user"), Msg("user", "new", "user")]
    formatter = DeepSeekChatFormatter(token_counter=CharTokenCounter(), max_tokens=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = await formatter.format(msgs)
    assert out == [{"role": "user", "content": "new"}]


# -- local files ---------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "file://"])
async def test_local_image_is_read_and_base64_encoded(prefix: str) -> None:
    msgs = [Msg("user", [_image(prefix + str(DATA / "pixel.png"))], "user")]
    openai = await OpenAIChatFormatter().format(msgs)
    assert openai[0]["content"][0]["image_url"]["url"] == f"data:image/png;base64,{PNG_B64}"
    anthropic = await AnthropicChatFormatter().format(msgs)
    assert anthropic[0]["content"][0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": PNG_B64,
    }
    ollama = await OllamaChatFormatter().format(msgs)
    assert ollama[0]["images"] == [PNG_B64]


async def test_a_file_url_is_percent_decoded(tmp_path: Path) -> None:
    # Path.as_uri() encodes spaces and non-ASCII characters; file://localhost/... is the same
    # file. A plain path keeps its '%' characters.
    folder = tmp_path / "my images é"
    folder.mkdir()
    (folder / "pixel 1.png").write_bytes(PNG)
    (folder / "100%.png").write_bytes(PNG)
    uri = (folder / "pixel 1.png").as_uri()
    assert "%20" in uri
    urls = [uri, uri.replace("file://", "file://localhost", 1), str(folder / "100%.png")]
    for url in urls:
        out = await OpenAIChatFormatter().format([Msg("user", [_image(url)], "user")])
        assert out[0]["content"][0]["image_url"]["url"] == f"data:image/png;base64,{PNG_B64}"


async def test_image_without_extension_is_recognised_by_content(tmp_path: Path) -> None:
    path = tmp_path / "snapshot"
    path.write_bytes(PNG)
    out = await OpenAIChatFormatter().format([Msg("user", [_image(str(path))], "user")])
    assert out[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize(
    "formatter",
    [
        OpenAIChatFormatter(),
        AnthropicChatFormatter(),
        DashScopeChatFormatter(),
        GeminiChatFormatter(),
        OllamaChatFormatter(),
    ],
    ids=lambda f: type(f).__name__,
)
async def test_missing_local_file_is_a_clear_error(formatter: Any) -> None:
    # AgentScope's DashScope formatter sends a missing path on as if it were a URL; here every
    # formatter names the file instead.
    msgs = [Msg("user", [_image("/no/such/dir/cat.png")], "user")]
    with pytest.raises(FormatterError, match=re.escape("/no/such/dir/cat.png")):
        await formatter.format(msgs)


async def test_non_image_file_in_image_block_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not an image")
    with pytest.raises(FormatterError, match="not an image"):
        await OpenAIChatFormatter().format([Msg("user", [_image(str(path))], "user")])
    with pytest.raises(FormatterError, match="not an image"):
        await AnthropicChatFormatter().format([Msg("user", [_image(str(path))], "user")])


async def test_gemini_maps_jpg_through_mimetypes(tmp_path: Path) -> None:
    # AgentScope's Gemini formatter rejects ".jpg" (its table lists only "jpeg").
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"\xff\xd8\xff\xe0fakejpeg")
    out = await GeminiChatFormatter().format([Msg("user", [_image(str(path))], "user")])
    assert out[0]["parts"][0]["inline_data"]["mime_type"] == "image/jpeg"


async def test_openai_audio_accepts_audio_mpeg() -> None:
    block = AudioBlock(source=Base64Source(media_type="audio/mpeg", data="AAAA"))
    out = await OpenAIChatFormatter().format([Msg("user", [block], "user")])
    assert out[0]["content"][0] == {
        "type": "input_audio",
        "input_audio": {"data": "AAAA", "format": "mp3"},
    }
    with pytest.raises(FormatterError, match="audio/ogg"):
        bad = AudioBlock(source=Base64Source(media_type="audio/ogg", data="AAAA"))
        await OpenAIChatFormatter().format([Msg("user", [bad], "user")])


async def test_each_file_is_read_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentscope_rt.formatter import _media

    reads: list[str] = []
    original = _media.read_local_bytes

    async def counting(path: str) -> bytes:
        reads.append(path)
        return await original(path)

    monkeypatch.setattr(_media, "read_local_bytes", counting)
    image = _image(str(DATA / "pixel.png"))
    msgs = [Msg("user", [image, image], "user"), Msg("user", [image], "user")]
    await OpenAIChatFormatter().format(msgs)
    assert reads == [str(DATA / "pixel.png")]


async def test_base64_tool_result_media_saved_once_by_content_hash() -> None:
    image = ImageBlock(source=Base64Source(media_type="image/png", data=PNG_B64))
    msgs = [
        Msg("bot", [ToolUseBlock(id="t", name="shot", input={})], "assistant"),
        Msg("system", [ToolResultBlock(id="t", name="shot", output=[image])], "system"),
    ]
    first = await OpenAIChatFormatter().format(msgs)
    second = await OpenAIChatFormatter().format(msgs)
    assert first == second
    text = first[1]["content"]
    path = text.removeprefix("The returned image can be found at: ")
    assert path.startswith(saved_media_dir())
    assert await anyio.Path(path).read_bytes() == PNG


async def test_invalid_base64_in_tool_result_is_a_clear_error() -> None:
    image = ImageBlock(source=Base64Source(media_type="image/png", data="%%%not base64%%%"))
    msgs = [Msg("system", [ToolResultBlock(id="t", name="shot", output=[image])], "system")]
    with pytest.raises(FormatterError, match="not valid base64"):
        await OpenAIChatFormatter().format(msgs)


# -- web URLs ------------------------------------------------------------------------------


async def test_web_urls_pass_through_where_accepted() -> None:
    url = "https://example.com/cat.png"
    msgs = [Msg("user", [_image(url)], "user")]
    assert (await OpenAIChatFormatter().format(msgs))[0]["content"][0]["image_url"]["url"] == url
    assert (await AnthropicChatFormatter().format(msgs))[0]["content"][0]["source"] == {
        "type": "url",
        "url": url,
    }
    assert (await DashScopeChatFormatter().format(msgs))[0]["content"] == [{"image": url}]


async def test_gemini_and_ollama_download_web_media(media_server: tuple[str, list[str]]) -> None:
    base, hits = media_server
    msgs = [Msg("user", [_image(base + "/pixel.png"), _image(base + "/image")], "user")]
    gemini = await GeminiChatFormatter().format(msgs)
    assert gemini[0]["parts"] == [
        {"inline_data": {"data": PNG_B64, "mime_type": "image/png"}},
        # No extension: the server's Content-Type decides.
        {"inline_data": {"data": PNG_B64, "mime_type": "image/png"}},
    ]
    ollama = await OllamaMultiAgentFormatter().format(msgs)
    assert ollama[0]["images"] == [PNG_B64, PNG_B64]
    assert hits.count("/pixel.png") == 2  # once per format call


async def test_openai_downloads_web_audio(media_server: tuple[str, list[str]]) -> None:
    base, _ = media_server
    block = AudioBlock(source=URLSource(url=base + "/tone.wav"))
    out = await OpenAIChatFormatter().format([Msg("user", [block], "user")])
    assert out[0]["content"][0]["input_audio"] == {
        "data": base64.b64encode(WAV).decode(),
        "format": "wav",
    }


async def test_failed_download_is_a_clear_error(media_server: tuple[str, list[str]]) -> None:
    base, hits = media_server
    with pytest.raises(FormatterError, match="could not download"):
        await GeminiChatFormatter().format([Msg("user", [_image(base + "/missing.png")], "user")])
    assert hits.count("/missing.png") == 3


async def test_a_failed_download_names_the_url_without_its_credentials(
    media_server: tuple[str, list[str]],
) -> None:
    base, _ = media_server
    url = base.replace("http://", "http://alice:pa55word@") + "/missing.png?X-Sig=s3cretsig"
    with pytest.raises(FormatterError, match="could not download") as info:
        await GeminiChatFormatter().format([Msg("user", [_image(url)], "user")])
    assert "/missing.png" in str(info.value)
    assert "s3cretsig" not in str(info.value) and "pa55word" not in str(info.value)


# -- concurrency and input validation -------------------------------------------------------


async def test_one_formatter_serves_concurrent_calls() -> None:
    formatter = DeepSeekChatFormatter()
    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))
    results: dict[int, Any] = {}

    async def run(i: int) -> None:
        content: list[Any] = [TextBlock(text=f"call {i}")]
        for _ in range(i):
            content.append(video)
            # Let the other calls run in between, so their per-call state would mix if shared.
            await anyio.lowlevel.checkpoint()
        results[i] = await formatter.format([Msg("user", content, "user")])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with anyio.create_task_group() as tg:
            for i in range(1, 6):
                tg.start_soon(run, i)
    for i, out in results.items():
        assert out == [{"role": "user", "content": f"call {i}"}]
    messages = sorted(str(w.message) for w in caught if w.category is UnsupportedBlockWarning)
    assert messages == sorted(
        f"DeepSeekChatFormatter dropped block(s) the provider does not accept: {i} video"
        for i in range(1, 6)
    )


async def test_a_format_inside_another_joins_it_and_no_state_outlives_a_call() -> None:
    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))

    class Wrapping(OpenAIChatFormatter):
        """Formats a preamble with another formatter first (a user formatter may do that)."""

        async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
            preamble = await OpenAIChatFormatter().format([Msg("user", [video], "user")])
            return preamble + await super()._format(msgs)

    # Outside any call the state is a throwaway: it does not attach to the caller's context.
    current_call().drop("video")
    assert call_state() is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await Wrapping().format([Msg("user", [TextBlock(text="x"), video], "user")])
        assert call_state() is None  # gone with the call that created it
        await OpenAIChatFormatter().format([Msg("user", "plain", "user")])
    messages = [str(w.message) for w in caught if w.category is UnsupportedBlockWarning]
    # One warning, from the outer call, counting the inner call's block too.
    assert messages == ["Wrapping dropped block(s) the provider does not accept: 2 video"]


def _drop_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if w.category is UnsupportedBlockWarning]


@pytest.mark.parametrize("inner_prompt", ["plain", "dropping", "truncated"])
async def test_a_format_inside_another_keeps_what_the_outer_one_dropped_before(
    inner_prompt: str,
) -> None:
    from agentscope_rt.token import CharTokenCounter

    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))
    inner = OpenAIChatFormatter()
    tail = [Msg("user", [TextBlock(text="tail")], "user")]
    if inner_prompt == "dropping":
        tail = [Msg("user", [TextBlock(text="tail"), video], "user")]
    elif inner_prompt == "truncated":
        # The oldest turn, with its video, does not fit: only what is kept may be reported.
        inner = OpenAIChatFormatter(token_counter=CharTokenCounter(), max_tokens=60)
        tail = [
            Msg("user", [TextBlock(text="old " * 100), video], "user"),
            Msg("user", "tail", "user"),
        ]

    class After(OpenAIChatFormatter):
        """Formats its own messages first, then a tail with another formatter."""

        async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
            body = await super()._format(msgs)
            return body + await inner.format(tail)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = await After().format([Msg("user", [TextBlock(text="x"), video], "user")])
    assert out[-1]["content"][-1]["text"] == "tail"
    videos = 2 if inner_prompt == "dropping" else 1
    assert _drop_warnings(caught) == [
        f"After dropped block(s) the provider does not accept: {videos} video"
    ]


async def test_a_call_less_format_inside_another_that_needs_the_state_warns_once() -> None:
    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))

    class Preambled(OpenAIChatFormatter):
        """Its tool results get a preamble formatted by another formatter (which drops a
        video) before its own video is met."""

        async def convert_tool_result_to_string(self, output: Any) -> tuple[str, list[Any]]:
            await OpenAIChatFormatter().format([Msg("user", [TextBlock(text="p"), video], "user")])
            return await super().convert_tool_result_to_string(output)

    msgs = [
        Msg("system", [ToolResultBlock(id="c1", name="f", output="done")], "system"),
        Msg("user", [TextBlock(text="x"), video], "user"),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await Preambled().format(msgs)
    assert call_state() is None
    assert _drop_warnings(caught) == [
        "Preambled dropped block(s) the provider does not accept: 2 video"
    ]


async def test_only_prompts_that_need_the_call_state_open_a_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import agentscope_rt.formatter._formatter_base as base

    opened: list[object] = []
    real_enter = base.enter_call

    def counting_enter() -> Any:
        opened.append(None)
        return real_enter()

    monkeypatch.setattr(base, "enter_call", counting_enter)

    async def opens_a_call(formatter: Any, msgs: list[Msg]) -> bool:
        before = len(opened)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnsupportedBlockWarning)
            await formatter.format(msgs)
        assert call_state() is None
        return len(opened) > before

    call = ToolUseBlock(id="c1", name="f", input={"a": 1})
    plain = [
        Msg("system", "be brief", "system"),
        Msg("user", [TextBlock(text="hi"), ThinkingBlock(thinking="hm")], "user"),
        Msg("assistant", [call], "assistant"),
        Msg("system", [ToolResultBlock(id="c1", name="f", output=[TextBlock(text="1")])], "system"),
        Msg("system", [ToolResultBlock(id="c1", name="f", output="2")], "system"),
    ]
    for formatter in (OpenAIChatFormatter(), AnthropicChatFormatter(), DeepSeekChatFormatter()):
        assert not await opens_a_call(formatter, plain)

    # Media that need nothing read or saved need no call either.
    inline_image = ImageBlock(source=Base64Source(media_type="image/png", data=PNG_B64))
    assert not await opens_a_call(OpenAIChatFormatter(), [Msg("user", [inline_image], "user")])

    # Whatever reads, saves or drops does, however late in the prompt it comes.
    path = tmp_path / "dot.png"
    path.write_bytes(PNG)
    file_image = ImageBlock(source=URLSource(url=str(path)))
    saved = ToolResultBlock(id="c1", name="f", output=[inline_image])
    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))
    for late in ([file_image], [saved], [video]):
        role = "system" if late == [saved] else "user"
        assert await opens_a_call(OpenAIChatFormatter(), [*plain, Msg("user", late, role)])
    # A multi-agent formatter and a subclass with its own _format always open one.
    assert await opens_a_call(OpenAIMultiAgentFormatter(), plain[:2])

    class Own(OpenAIChatFormatter):
        async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
            return await super()._format(msgs)

    assert await opens_a_call(Own(), plain)


async def test_a_prompt_that_needs_the_state_late_is_formatted_as_if_in_a_call_from_the_start(
    tmp_path: Path,
) -> None:
    import agentscope_rt.formatter._formatter_base as base

    path = tmp_path / "dot.png"
    path.write_bytes(PNG)
    file_image = ImageBlock(source=URLSource(url=str(path)))
    video = VideoBlock(source=URLSource(url="https://example.com/v.mp4"))
    msgs = [
        Msg("system", "be brief", "system"),
        Msg("user", "look", "user"),
        Msg("user", [TextBlock(text="a"), file_image, video, file_image], "user"),
        Msg("assistant", "ok", "assistant"),
    ]
    original = list(msgs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tried_first = await OpenAIChatFormatter().format(msgs)
    token = base.enter_call()  # a call opened from the start, as an outer format() would
    try:
        in_a_call = await OpenAIChatFormatter()._format(list(msgs))
    finally:
        base.exit_call(token)
    assert tried_first == in_a_call
    assert msgs == original
    messages = [str(w.message) for w in caught if w.category is UnsupportedBlockWarning]
    assert messages == [
        "OpenAIChatFormatter dropped block(s) the provider does not accept: 1 video"
    ]


async def test_a_subclass_helper_that_needs_the_state_is_given_a_call() -> None:
    class Noting(OpenAIChatFormatter):
        """Reports every tool result it converts as a dropped "note" (its own rule)."""

        async def convert_tool_result_to_string(self, output: Any) -> tuple[str, list[Any]]:
            current_call().drop("note")
            return await super().convert_tool_result_to_string(output)

    msgs = [
        Msg("user", "hi", "user"),
        Msg("system", [ToolResultBlock(id="c1", name="f", output="done")], "system"),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = await Noting().format(msgs)
    assert out[-1]["content"] == "done"
    messages = [str(w.message) for w in caught if w.category is UnsupportedBlockWarning]
    assert messages == ["Noting dropped block(s) the provider does not accept: 1 note"]


async def test_a_subclass_format_may_drop_any_block_and_is_reported() -> None:
    class NoThinking(OpenAIChatFormatter):
        """Reports the thinking it leaves out (the base class drops it silently)."""

        async def _format(self, msgs: list[Msg]) -> list[dict[str, Any]]:
            for msg in msgs:
                for block in msg.get_content_blocks("thinking"):
                    current_call().drop(block.type)
            return await super()._format(msgs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await NoThinking().format([Msg("user", [ThinkingBlock(thinking="hm")], "user")])
    messages = [str(w.message) for w in caught if w.category is UnsupportedBlockWarning]
    assert messages == ["NoThinking dropped block(s) the provider does not accept: 1 thinking"]


@pytest.mark.parametrize("bad", ["hello", [{"role": "user", "content": "x"}], None])
async def test_non_msg_input_is_rejected(bad: Any) -> None:
    with pytest.raises(TypeError, match="Msg"):
        await OpenAIChatFormatter().format(bad)
