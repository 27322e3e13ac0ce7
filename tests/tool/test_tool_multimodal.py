"""The multimodal tools against a local server speaking the OpenAI and DashScope protocols.

The OpenAI tools run the real ``openai`` SDK pointed at the server through ``OPENAI_BASE_URL``;
the DashScope tools reach it through ``DASHSCOPE_HTTP_BASE_URL`` and
``DASHSCOPE_WEBSOCKET_BASE_URL``, the variables the ``dashscope`` SDK reads. Each test checks
what went over the wire (paths, headers, JSON and multipart bodies, WebSocket messages) and the
ToolResponse the model would read.
"""

from __future__ import annotations

import base64
import pathlib
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

import agentscope_rt._provider
from agentscope_rt._provider import websocket as _websocket
from agentscope_rt.formatter import allow_local_files
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    TextBlock,
    ToolUseBlock,
    URLSource,
)
from agentscope_rt.model import RetryConfig
from agentscope_rt.tool import (
    Toolkit,
    ToolResponse,
    dashscope_image_to_text,
    dashscope_text_to_audio,
    dashscope_text_to_image,
    openai_audio_to_text,
    openai_create_image_variation,
    openai_edit_image,
    openai_image_to_text,
    openai_text_to_audio,
    openai_text_to_image,
)
from agentscope_rt.tool._multi_modality import _common, _dashscope_tools

from ._media_servers import MediaServer, Reply, WsScript, chat_completion, serve_http, ws_event

OPENAI_KEY = "sk-test-4f1d9c2b7a"
DASHSCOPE_KEY = "ds-test-8e3a1f0c55"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x01" * 16


@pytest.fixture
def server(media_server: MediaServer, monkeypatch: pytest.MonkeyPatch) -> MediaServer:
    serve_http(media_server, monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DASHSCOPE_WEBSOCKET_BASE_URL", media_server.ws_url)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    # Fast retries and polls; the schedule itself is the SDK's and is not what is tested.
    monkeypatch.setattr(
        _common, "_retry_config", RetryConfig(max_retries=2, initial_delay=0.01, max_delay=0.02)
    )
    monkeypatch.setattr(_dashscope_tools, "POLL_INITIAL_WAIT", 0.01)
    monkeypatch.setattr(_dashscope_tools, "POLL_MAX_WAIT", 0.02)
    return media_server


@pytest.fixture(autouse=True)
def _allow_temp_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # The tools read local files only from folders the application allows.
    with allow_local_files(tmp_path_factory.getbasetemp()):
        yield


@pytest.fixture
def png_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    return path


def _text(response: ToolResponse) -> str:
    assert all(isinstance(block, TextBlock) for block in response.content), response.content
    return response.get_text()


def _images(n: int = 1, b64: bool = False) -> dict[str, Any]:
    key = "b64_json" if b64 else "url"
    items = [
        {key: base64.b64encode(b"img%d" % i).decode() if b64 else f"https://img.test/{i}.png"}
        for i in range(n)
    ]
    return {"created": 1700000000, "data": items}


def _openai_error(status: int, message: str) -> Reply:
    return Reply(
        status=status,
        json={"error": {"message": message, "type": "invalid_request_error", "code": None}},
    )


# -- OpenAI -----------------------------------------------------------------------------------


async def test_openai_text_to_image_urls(server: MediaServer) -> None:
    server.add(Reply(json=_images(2)))
    response = await openai_text_to_image("a cat", OPENAI_KEY, n=2)
    assert response.content == [
        ImageBlock(source=URLSource(url="https://img.test/0.png")),
        ImageBlock(source=URLSource(url="https://img.test/1.png")),
    ]
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/images/generations")
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    # dall-e-2 takes neither style nor quality.
    assert sent.json == {
        "model": "dall-e-2",
        "prompt": "a cat",
        "n": 2,
        "size": "256x256",
        "response_format": "url",
    }


@pytest.mark.parametrize(
    ("model", "expected_extra"),
    [
        ("dall-e-3", {"style": "natural", "quality": "hd", "response_format": "b64_json"}),
        ("gpt-image-1", {"quality": "hd"}),
    ],
)
async def test_openai_text_to_image_model_options(
    server: MediaServer, model: Any, expected_extra: dict[str, str]
) -> None:
    server.add(Reply(json=_images(1, b64=True)))
    response = await openai_text_to_image(
        "a cat",
        OPENAI_KEY,
        model=model,
        size="1024x1024",
        quality="hd",
        style="natural",
        response_format="b64_json",
    )
    assert response.content == [
        ImageBlock(
            source=Base64Source(media_type="image/png", data=base64.b64encode(b"img0").decode())
        )
    ]
    assert server.requests[0].json == {
        "model": model,
        "prompt": "a cat",
        "n": 1,
        "size": "1024x1024",
        **expected_extra,
    }


async def test_openai_edit_image_uploads_image_and_mask(
    server: MediaServer, png_file: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    mask = tmp_path / "mask.png"
    mask.write_bytes(PNG + b"mask")
    server.add(Reply(json=_images(1, b64=True)))
    response = await openai_edit_image(
        str(png_file),
        "add a hat",
        OPENAI_KEY,
        mask_url=f"file://{mask}",
        response_format="b64_json",
    )
    assert isinstance(response.content[0], ImageBlock)
    assert response.content[0].source == Base64Source(
        media_type="image/png", data=base64.b64encode(b"img0").decode()
    )
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("POST", "/v1/images/edits")
    assert sent.headers["content-type"].startswith("multipart/form-data")
    assert sent.form == {
        "prompt": "add a hat",
        "model": "dall-e-2",
        "n": "1",
        "size": "256x256",
        "response_format": "b64_json",
    }
    assert sent.files == {
        "image": ("cat.png", "image/png", PNG),
        "mask": ("mask.png", "image/png", PNG + b"mask"),
    }


async def test_openai_edit_image_downloads_a_web_image(server: MediaServer) -> None:
    server.files["photo"] = (PNG, "image/png")
    server.add(Reply(json=_images(1)))
    response = await openai_edit_image(
        f"{server.url}/files/photo", "add a hat", OPENAI_KEY, model="gpt-image-1"
    )
    assert response.content == [ImageBlock(source=URLSource(url="https://img.test/0.png"))]
    download, edit = server.requests
    assert (download.method, download.path) == ("GET", "/files/photo")
    assert "authorization" not in download.headers
    assert edit.files["image"] == ("photo", "image/png", PNG)
    # gpt-image-1 always answers in base64 and takes no response_format.
    assert "response_format" not in edit.form
    assert edit.form["model"] == "gpt-image-1"


# The SDK marks the variations endpoint (DALL-E 2 only) as deprecated.
@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")
async def test_openai_create_image_variation(server: MediaServer, png_file: pathlib.Path) -> None:
    server.add(Reply(json=_images(2, b64=True)))
    response = await openai_create_image_variation(
        str(png_file), OPENAI_KEY, n=2, size="512x512", response_format="b64_json"
    )
    assert [b.source for b in response.content if isinstance(b, ImageBlock)] == [
        Base64Source(media_type="image/png", data=base64.b64encode(b"img%d" % i).decode())
        for i in range(2)
    ]
    (sent,) = server.requests
    assert sent.path == "/v1/images/variations"
    assert sent.form == {
        "model": "dall-e-2",
        "n": "2",
        "size": "512x512",
        "response_format": "b64_json",
    }
    assert sent.files == {"image": ("cat.png", "image/png", PNG)}


async def test_openai_image_to_text(server: MediaServer, png_file: pathlib.Path) -> None:
    server.add(chat_completion("Two cats."))
    response = await openai_image_to_text(
        [str(png_file), "https://img.test/web.jpg"], OPENAI_KEY, prompt="What is this?"
    )
    assert response.content == [TextBlock(text="Two cats.")]
    (sent,) = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.json == {
        "model": "gpt-4o",
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "data:image/png;base64," + base64.b64encode(PNG).decode()
                        },
                    },
                    {"type": "image_url", "image_url": {"url": "https://img.test/web.jpg"}},
                    {"type": "text", "text": "What is this?"},
                ],
            }
        ],
    }


async def test_openai_image_to_text_rejects_a_bad_path_before_any_request(
    server: MediaServer, tmp_path: pathlib.Path
) -> None:
    missing = tmp_path / "nope.png"
    response = await openai_image_to_text(str(missing), OPENAI_KEY)
    assert _text(response) == (
        f'Failed to generate text: Invalid image URL: "{missing}". '
        "It should be a local file or a web URL."
    )
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    response = await openai_image_to_text(str(notes), OPENAI_KEY)
    assert "is not an image OpenAI accepts" in _text(response)
    assert server.requests == []


async def test_openai_text_to_audio(server: MediaServer) -> None:
    server.add(Reply(content=b"ID3-mp3-bytes", content_type="audio/mpeg"))
    response = await openai_text_to_audio(
        "Hello there", OPENAI_KEY, model="tts-1-hd", voice="nova", speed=1.5, res_format="wav"
    )
    assert response.content == [
        AudioBlock(
            source=Base64Source(
                media_type="audio/wav", data=base64.b64encode(b"ID3-mp3-bytes").decode()
            )
        )
    ]
    (sent,) = server.requests
    assert sent.path == "/v1/audio/speech"
    assert sent.json == {
        "input": "Hello there",
        "model": "tts-1-hd",
        "voice": "nova",
        "response_format": "wav",
        "speed": 1.5,
    }


async def test_openai_audio_to_text(server: MediaServer, tmp_path: pathlib.Path) -> None:
    audio = tmp_path / "speech.wav"
    audio.write_bytes(WAV)
    server.add(Reply(json={"text": "hello world"}))
    response = await openai_audio_to_text(str(audio), OPENAI_KEY, language="fr", temperature=0.0)
    assert response.content == [TextBlock(text="hello world")]
    (sent,) = server.requests
    assert sent.path == "/v1/audio/transcriptions"
    assert sent.form == {"model": "whisper-1", "language": "fr", "temperature": "0.0"}
    assert sent.files == {"file": ("speech.wav", "audio/x-wav", WAV)}


async def test_openai_audio_to_text_from_a_web_url(server: MediaServer) -> None:
    server.files["clip.mp3"] = (b"ID3clip", "audio/mpeg")
    server.add(Reply(json={"text": "clip text"}))
    response = await openai_audio_to_text(f"{server.url}/files/clip.mp3", OPENAI_KEY)
    assert _text(response) == "clip text"
    assert server.requests[1].files == {"file": ("clip.mp3", "audio/mpeg", b"ID3clip")}
    assert server.requests[1].form["language"] == "en"


async def test_openai_missing_file_and_failed_download(
    server: MediaServer, tmp_path: pathlib.Path
) -> None:
    missing = tmp_path / "gone.wav"
    response = await openai_audio_to_text(str(missing), OPENAI_KEY)
    assert _text(response) == f"Error: Failed to transcribe audio: File not found: {missing}"
    response = await openai_create_image_variation(f"{server.url}/files/absent.png", OPENAI_KEY)
    text = _text(response)
    assert text.startswith("Failed to generate image: ")
    assert "404" in text
    # Only the download was attempted.
    assert [r.path for r in server.requests] == ["/files/absent.png"]


async def test_a_download_that_never_ends_is_stopped_after_the_download_timeout(
    server: MediaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every read is quick (a byte each 0.2 s), so only a bound on the whole download ends it.
    monkeypatch.setattr(_common, "DOWNLOAD_TIMEOUT", 1.0)
    with anyio.fail_after(30):
        response = await openai_audio_to_text(f"{server.url}/trickle/clip.mp3", OPENAI_KEY)
    assert _text(response) == (
        "Error: Failed to transcribe audio: the download from 127.0.0.1 took more than 1 s"
    )
    assert [r.path for r in server.requests] == ["/trickle/clip.mp3"]


async def test_openai_error_reaches_the_model_without_the_key(server: MediaServer) -> None:
    server.add(_openai_error(401, f"Incorrect API key provided: {OPENAI_KEY}."))
    response = await openai_text_to_image("a cat", OPENAI_KEY)
    assert _text(response) == (
        "Failed to generate image: openai request failed (HTTP 401): "
        "Incorrect API key provided: ***."
    )
    assert len(server.requests) == 1  # a 401 is not retried

    server.add(_openai_error(400, f"bad voice for key {OPENAI_KEY}"))
    response = await openai_text_to_audio("hi", OPENAI_KEY)
    assert _text(response) == (
        "Error: Failed to generate audio. openai request failed (HTTP 400): bad voice for key ***"
    )


async def test_openai_server_errors_are_retried(server: MediaServer) -> None:
    server.add(_openai_error(503, "overloaded"), _openai_error(500, "oops"))
    server.add(Reply(json={"text": "third time lucky"}))
    server.files["a.wav"] = (WAV, "audio/wav")
    response = await openai_audio_to_text(f"{server.url}/files/a.wav", OPENAI_KEY)
    assert _text(response) == "third time lucky"
    assert [r.path for r in server.requests] == ["/files/a.wav"] + ["/v1/audio/transcriptions"] * 3
    # Each attempt uploads the whole file again.
    assert all(r.files["file"][2] == WAV for r in server.requests[1:])

    server.reset()
    server.default = _openai_error(500, "still down")
    response = await openai_text_to_image("a cat", OPENAI_KEY)
    assert _text(response) == (
        "Failed to generate image: openai request failed after 3 attempts (HTTP 500): still down"
    )


async def test_openai_without_any_key(server: MediaServer) -> None:
    response = await openai_text_to_image("a cat", "")
    assert "OPENAI_API_KEY" in _text(response)
    assert server.requests == []


# -- DashScope image synthesis ----------------------------------------------------------------


def _task(status: str, **output: Any) -> Reply:
    return Reply(
        json={
            "request_id": "req-1",
            "output": {"task_id": "task-42", "task_status": status, **output},
        }
    )


async def test_dashscope_text_to_image_polls_the_task(server: MediaServer) -> None:
    server.add(
        _task("PENDING"),
        _task("PENDING"),
        _task("RUNNING"),
        _task(
            "SUCCEEDED",
            results=[
                {"url": "https://oss.test/a.png?Expires=1"},
                {"url": "https://oss.test/b.png"},
            ],
        ),
    )
    response = await dashscope_text_to_image(
        "a red fox", DASHSCOPE_KEY, n=2, size="720*1280", model="wan2.2-t2i-flash"
    )
    assert response.content == [
        ImageBlock(source=URLSource(url="https://oss.test/a.png?Expires=1")),
        ImageBlock(source=URLSource(url="https://oss.test/b.png")),
    ]
    submit, *polls = server.requests
    assert (submit.method, submit.path) == (
        "POST",
        "/api/v1/services/aigc/text2image/image-synthesis",
    )
    assert submit.headers["x-dashscope-async"] == "enable"
    assert submit.headers["authorization"] == f"Bearer {DASHSCOPE_KEY}"
    assert submit.json == {
        "model": "wan2.2-t2i-flash",
        "input": {"prompt": "a red fox"},
        "parameters": {"n": 2, "size": "720*1280"},
    }
    assert [(p.method, p.path) for p in polls] == [("GET", "/api/v1/tasks/task-42")] * 3
    assert all(p.headers["authorization"] == f"Bearer {DASHSCOPE_KEY}" for p in polls)


async def test_dashscope_text_to_image_as_base64(server: MediaServer) -> None:
    server.files["fox.png"] = (PNG, "image/png")
    server.files["fox"] = (b"\xff\xd8\xffjpeg", "application/octet-stream")
    server.add(
        _task("PENDING"),
        _task(
            "SUCCEEDED",
            results=[
                {"url": f"{server.url}/files/fox.png?Expires=9&Signature=x"},
                {"url": f"{server.url}/files/fox"},
            ],
        ),
    )
    response = await dashscope_text_to_image("a fox", DASHSCOPE_KEY, use_base64=True)
    assert [b.source for b in response.content if isinstance(b, ImageBlock)] == [
        Base64Source(media_type="image/png", data=base64.b64encode(PNG).decode()),
        # No extension and no useful Content-Type: the first bytes tell.
        Base64Source(media_type="image/jpeg", data=base64.b64encode(b"\xff\xd8\xffjpeg").decode()),
    ]
    assert [r.path for r in server.requests][-2:] == ["/files/fox.png", "/files/fox"]
    assert server.requests[-2].query == "Expires=9&Signature=x"


async def test_dashscope_text_to_image_failures(server: MediaServer) -> None:
    server.add(
        _task("PENDING"),
        _task(
            "FAILED",
            code="DataInspectionFailed",
            message="Input data may contain inappropriate content.",
        ),
    )
    response = await dashscope_text_to_image("a fox", DASHSCOPE_KEY)
    assert _text(response) == (
        "Failed to generate images: DataInspectionFailed: "
        "Input data may contain inappropriate content."
    )

    server.reset()
    server.add(
        Reply(
            status=401,
            json={
                "request_id": "r",
                "code": "InvalidApiKey",
                "message": f"Invalid API-key provided: {DASHSCOPE_KEY}",
            },
        )
    )
    response = await dashscope_text_to_image("a fox", DASHSCOPE_KEY)
    assert _text(response) == (
        "Failed to generate images: dashscope request failed (HTTP 401): "
        "InvalidApiKey: Invalid API-key provided: ***"
    )
    assert len(server.requests) == 1

    server.reset()
    server.add(
        _task("PENDING"),
        _task("SUCCEEDED", results=[{"code": "InternalError", "message": "render failed"}]),
    )
    response = await dashscope_text_to_image("a fox", DASHSCOPE_KEY)
    assert _text(response) == "Error: Failed to generate images: InternalError: render failed"


async def test_dashscope_text_to_image_partial_success(server: MediaServer) -> None:
    server.add(
        _task("PENDING"),
        _task(
            "SUCCEEDED",
            results=[
                {"url": "https://oss.test/ok.png"},
                {"code": "DataInspectionFailed", "message": "blocked"},
            ],
        ),
    )
    response = await dashscope_text_to_image("two foxes", DASHSCOPE_KEY, n=2)
    assert response.content == [
        ImageBlock(source=URLSource(url="https://oss.test/ok.png")),
        TextBlock(text="1 of 2 images failed: DataInspectionFailed: blocked"),
    ]


async def test_dashscope_polling_survives_a_503(server: MediaServer) -> None:
    server.add(
        _task("PENDING"),
        Reply(status=503, json={"code": "ServiceUnavailable", "message": "busy"}),
        _task("SUCCEEDED", results=[{"url": "https://oss.test/a.png"}]),
    )
    response = await dashscope_text_to_image("a fox", DASHSCOPE_KEY)
    assert response.content == [ImageBlock(source=URLSource(url="https://oss.test/a.png"))]
    assert len(server.requests) == 3


async def test_dashscope_polling_is_cancellable(server: MediaServer) -> None:
    server.add(_task("PENDING"))
    server.default = _task("RUNNING")
    finished: list[ToolResponse] = []

    async def run() -> None:
        finished.append(await dashscope_text_to_image("a fox", DASHSCOPE_KEY))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        assert await anyio.to_thread.run_sync(server.wait_for_requests, 3)
        tg.cancel_scope.cancel()
    # The cancellation went through the tool instead of becoming an error text.
    assert finished == []


async def test_dashscope_without_a_key(server: MediaServer) -> None:
    response = await dashscope_text_to_image("a fox", "")
    assert "DASHSCOPE_API_KEY" in _text(response)
    assert server.requests == []


# -- DashScope vision --------------------------------------------------------------------------


def _vl_answer(content: Any) -> Reply:
    return Reply(
        json={
            "request_id": "req-vl",
            "output": {
                "choices": [
                    {"finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ]
            },
            "usage": {"input_tokens": 10, "output_tokens": 3},
        }
    )


async def test_dashscope_image_to_text(server: MediaServer, png_file: pathlib.Path) -> None:
    server.add(_vl_answer([{"text": "A small "}, {"text": "black square."}]))
    response = await dashscope_image_to_text(
        [str(png_file), "https://img.test/b.jpg"], DASHSCOPE_KEY, prompt="Describe both"
    )
    assert response.content == [TextBlock(text="A small black square.")]
    (sent,) = server.requests
    assert (sent.method, sent.path) == (
        "POST",
        "/api/v1/services/aigc/multimodal-generation/generation",
    )
    assert sent.headers["authorization"] == f"Bearer {DASHSCOPE_KEY}"
    assert "x-dashscope-async" not in sent.headers
    assert sent.json == {
        "model": "qwen-vl-plus",
        "input": {
            "messages": [
                {"role": "system", "content": [{"text": "You are a helpful assistant."}]},
                {
                    "role": "user",
                    "content": [
                        {"image": "data:image/png;base64," + base64.b64encode(PNG).decode()},
                        {"image": "https://img.test/b.jpg"},
                        {"text": "Describe both"},
                    ],
                },
            ]
        },
        "parameters": {},
    }


async def test_dashscope_image_to_text_errors(server: MediaServer, tmp_path: pathlib.Path) -> None:
    response = await dashscope_image_to_text(str(tmp_path), DASHSCOPE_KEY)
    assert _text(response) == f'Error: The input image url "{tmp_path}" is not a file.'
    assert server.requests == []

    server.add(
        Reply(
            status=400,
            json={
                "code": "InvalidParameter",
                "message": "The image url is invalid.",
                "request_id": "r",
            },
        )
    )
    missing = str(tmp_path / "not" / "a" / "real" / "image.png")
    response = await dashscope_image_to_text(missing, DASHSCOPE_KEY)
    assert _text(response) == (
        "Failed to generate text: dashscope request failed (HTTP 400): "
        "InvalidParameter: The image url is invalid."
    )
    # A path that does not exist (in an allowed folder) is left for DashScope to judge, as in
    # AgentScope.
    assert server.requests[0].json["input"]["messages"][1]["content"][0] == {"image": missing}

    server.add(_vl_answer([]))
    response = await dashscope_image_to_text("https://img.test/a.png", DASHSCOPE_KEY)
    assert _text(response) == "Error: Failed to generate text"


# -- DashScope speech synthesis ----------------------------------------------------------------


async def test_dashscope_text_to_audio(server: MediaServer) -> None:
    sentence = {"sentence": {"begin_time": 0, "end_time": 800, "words": []}}
    server.ws_script.append(
        WsScript(
            messages=[
                ws_event("task-started"),
                WAV[:10],
                ws_event("result-generated", {"output": sentence}),
                WAV[10:],
                ws_event("task-finished", {"output": None, "usage": {"characters": 5}}),
            ]
        )
    )
    response = await dashscope_text_to_audio(
        "你好世界", DASHSCOPE_KEY, model="sambert-zhiying-v1", sample_rate=16000
    )
    assert response.content == [
        AudioBlock(source=Base64Source(media_type="audio/wav", data=base64.b64encode(WAV).decode()))
    ]
    (sent,) = server.requests
    assert (sent.method, sent.path) == ("WS", "/api-ws/v1/inference")
    assert sent.headers["authorization"] == f"Bearer {DASHSCOPE_KEY}"
    (run_task,) = sent.ws_messages
    header = run_task["header"]
    assert header["action"] == "run-task"
    assert header["streaming"] == "out"
    assert len(header["task_id"]) == 32
    assert run_task["payload"] == {
        "model": "sambert-zhiying-v1",
        "task_group": "audio",
        "task": "tts",
        "function": "SpeechSynthesizer",
        "input": {"text": "你好世界"},
        "parameters": {"text_type": "PlainText", "format": "wav", "sample_rate": 16000},
    }


async def test_dashscope_text_to_audio_failures(server: MediaServer) -> None:
    server.ws_script.append(
        WsScript(
            messages=[
                ws_event("task-started"),
                ws_event(
                    "task-failed",
                    error_code="InvalidParameter",
                    error_message="sample_rate must be one of 8000, 16000, 48000",
                ),
            ]
        )
    )
    response = await dashscope_text_to_audio("hi", DASHSCOPE_KEY, sample_rate=12345)
    assert _text(response) == (
        "Failed to generate audio: InvalidParameter: sample_rate must be one of 8000, 16000, 48000"
    )

    server.ws_script.append(
        WsScript(
            reject=401,
            reject_body={"code": "InvalidApiKey", "message": f"Invalid key {DASHSCOPE_KEY}"},
        )
    )
    response = await dashscope_text_to_audio("hi", DASHSCOPE_KEY)
    assert _text(response) == (
        "Failed to generate audio: dashscope request failed (HTTP 401): InvalidApiKey: "
        "Invalid key ***"
    )

    # The server hangs up in the middle of the audio.
    server.ws_script.append(WsScript(messages=[ws_event("task-started"), WAV[:8]], close_code=1011))
    response = await dashscope_text_to_audio("hi", DASHSCOPE_KEY)
    assert _text(response) == "Failed to generate audio: WebSocket connection closed (code 1011)"

    # Finished without sending any audio.
    server.ws_script.append(
        WsScript(messages=[ws_event("task-started"), ws_event("task-finished")])
    )
    response = await dashscope_text_to_audio("hi", DASHSCOPE_KEY)
    assert _text(response) == "Error: Failed to generate audio"


async def test_dashscope_text_to_audio_closes_the_connection_when_cancelled(
    server: MediaServer,
) -> None:
    # The server starts the task and then sends nothing more.
    server.ws_script.append(WsScript(messages=[ws_event("task-started")], hold_open=True))
    finished: list[ToolResponse] = []

    async def run() -> None:
        finished.append(await dashscope_text_to_audio("hi", DASHSCOPE_KEY))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        assert await anyio.to_thread.run_sync(server.wait_for_ws_message)
        tg.cancel_scope.cancel()
    assert finished == []
    # The client said goodbye on its way out instead of leaving the socket open.
    assert await anyio.to_thread.run_sync(server.ws_closed_by_client.wait, 10.0)


async def test_dashscope_text_to_audio_without_wsproto(
    server: MediaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if the 'dashscope' extra were not installed.
    monkeypatch.setitem(sys.modules, "wsproto", None)
    monkeypatch.delitem(sys.modules, _websocket.__name__)
    monkeypatch.delattr(agentscope_rt._provider, "websocket")
    response = await dashscope_text_to_audio("hi", DASHSCOPE_KEY)
    assert _text(response) == (
        "Failed to generate audio: dashscope_text_to_audio needs the 'dashscope' extra (wsproto "
        'is not installed): install it with pip install -e ".[dashscope]" in a clone of the '
        "agentscope-rt repository"
    )
    assert server.requests == []


# -- Toolkit -----------------------------------------------------------------------------------

ALL_TOOLS = [
    dashscope_text_to_image,
    dashscope_text_to_audio,
    dashscope_image_to_text,
    openai_text_to_image,
    openai_text_to_audio,
    openai_edit_image,
    openai_create_image_variation,
    openai_image_to_text,
    openai_audio_to_text,
]

# name -> (required parameters, all parameters the model sees) with api_key preset.
GOLDEN = {
    "dashscope_text_to_image": (["prompt"], ["prompt", "n", "size", "model", "use_base64"]),
    "dashscope_text_to_audio": (["text"], ["text", "model", "sample_rate"]),
    "dashscope_image_to_text": (["image_urls"], ["image_urls", "prompt", "model"]),
    "openai_text_to_image": (
        ["prompt"],
        ["prompt", "n", "model", "size", "quality", "style", "response_format"],
    ),
    "openai_text_to_audio": (["text"], ["text", "model", "voice", "speed", "res_format"]),
    "openai_edit_image": (
        ["image_url", "prompt"],
        ["image_url", "prompt", "model", "mask_url", "n", "size", "response_format"],
    ),
    "openai_create_image_variation": (
        ["image_url"],
        ["image_url", "n", "model", "size", "response_format"],
    ),
    "openai_image_to_text": (["image_urls"], ["image_urls", "prompt", "model"]),
    "openai_audio_to_text": (["audio_file_url"], ["audio_file_url", "language", "temperature"]),
}


def test_schemas_with_the_key_preset() -> None:
    toolkit = Toolkit()
    for tool in ALL_TOOLS:
        toolkit.register_tool_function(tool, preset_kwargs={"api_key": "secret-key"})
    schemas = {s["function"]["name"]: s["function"] for s in toolkit.get_json_schemas()}
    assert {
        name: (f["parameters"].get("required", []), list(f["parameters"]["properties"]))
        for name, f in schemas.items()
    } == GOLDEN
    for name, function in schemas.items():
        assert function["description"], name
        for param, prop in function["parameters"]["properties"].items():
            assert prop.get("description"), (name, param)
    assert "secret-key" not in repr(schemas)
    text_to_image = schemas["openai_text_to_image"]["parameters"]["properties"]
    assert text_to_image["model"] == {
        "default": "dall-e-2",
        "description": "The model to use for image generation.",
        "enum": ["dall-e-2", "dall-e-3", "gpt-image-1"],
        "type": "string",
    }
    assert schemas["dashscope_image_to_text"]["parameters"]["properties"]["image_urls"][
        "anyOf"
    ] == [{"type": "string"}, {"items": {"type": "string"}, "type": "array"}]


def test_schemas_without_a_preset_key_ask_for_it() -> None:
    toolkit = Toolkit()
    for tool in ALL_TOOLS:
        toolkit.register_tool_function(tool)
    for schema in toolkit.get_json_schemas():
        function = schema["function"]
        required, properties = GOLDEN[function["name"]]
        assert function["parameters"]["required"] == [*required, "api_key"]
        assert sorted(function["parameters"]["properties"]) == sorted([*properties, "api_key"])


async def test_called_through_a_toolkit(server: MediaServer) -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(openai_text_to_image, preset_kwargs={"api_key": OPENAI_KEY})
    server.add(Reply(json=_images(1)))
    call = ToolUseBlock(id="call-1", name="openai_text_to_image", input={"prompt": "a cat", "n": 1})
    chunks = [chunk async for chunk in toolkit.call_tool_function(call)]
    assert chunks[-1].content == [ImageBlock(source=URLSource(url="https://img.test/0.png"))]
    assert server.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"
