"""Local files named by media blocks are read only from folders the application allows.

A path or ``file://`` URL in an image/audio/video block can come from a model, a tool or a
user; formatters and the multimodal embedding used to read any such file and send its bytes
to the provider (an SSH key through Ollama, a ``.env`` through Gemini...). Now nothing is
read unless ``allow_local_files`` allowed its folder, symlinks and ``..`` resolved first; the
media the package writes itself for tool results go to a private per-process folder that is
always readable.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.embedding import DashScopeMultiModalEmbedding
from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    DashScopeChatFormatter,
    FormatterError,
    GeminiChatFormatter,
    LocalFileNotAllowedError,
    OllamaChatFormatter,
    OllamaMultiAgentFormatter,
    OpenAIChatFormatter,
    OpenAIResponseChatFormatter,
    allow_local_files,
    allowed_local_folders,
    disallow_local_files,
)
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    Msg,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
)

from .._local_files import no_local_folder_allowed

DATA = Path(__file__).parents[1] / "formatter" / "data"
PNG = (DATA / "pixel.png").read_bytes()
PNG_B64 = base64.b64encode(PNG).decode()
WAV = (DATA / "tone.wav").read_bytes()

IMAGE_FORMATTERS = [
    OpenAIChatFormatter,
    OpenAIResponseChatFormatter,
    AnthropicChatFormatter,
    GeminiChatFormatter,
    DashScopeChatFormatter,
    OllamaChatFormatter,
    OllamaMultiAgentFormatter,
]


@pytest.fixture(autouse=True)
def no_folder_allowed() -> Iterator[None]:
    """Each test starts with the default (nothing allowed) and leaves it as it was."""
    with no_local_folder_allowed():
        yield


def _image(url: str) -> Msg:
    return Msg("user", [TextBlock(text="look"), ImageBlock(source=URLSource(url=url))], "user")


def _real(path: Path) -> str:
    return os.path.realpath(path)


def _payload_text(formatted: list[dict[str, Any]]) -> str:
    return repr(formatted)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A private key file with an image extension, outside any allowed folder."""
    folder = tmp_path / "home" / ".ssh"
    folder.mkdir(parents=True)
    path = folder / "id_rsa.png"
    # A real PNG, so only the folder check can stop it.
    path.write_bytes(PNG)
    return path


# -- refused by default ------------------------------------------------------------------


@pytest.mark.parametrize("formatter_class", IMAGE_FORMATTERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("prefix", ["", "file://"])
async def test_local_image_outside_allowed_folders_is_refused(
    formatter_class: Any, prefix: str, secret: Path
) -> None:
    with pytest.raises(LocalFileNotAllowedError) as caught:
        await formatter_class().format([_image(prefix + str(secret))])
    message = str(caught.value)
    assert str(secret) in message
    assert "allow_local_files" in message
    assert isinstance(caught.value, FormatterError)
    assert isinstance(caught.value, PermissionError)


async def test_ollama_does_not_send_a_key_file_of_any_name(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    with pytest.raises(LocalFileNotAllowedError, match="id_ed25519"):
        await OllamaChatFormatter().format([_image(str(key))])


async def test_gemini_does_not_send_an_env_file_as_audio(tmp_path: Path) -> None:
    env = tmp_path / "app" / ".env.wav"
    env.parent.mkdir()
    env.write_text("API_KEY=sk-secret\n")
    msg = Msg("user", [AudioBlock(source=URLSource(url=str(env)))], "user")
    with pytest.raises(LocalFileNotAllowedError):
        await GeminiChatFormatter().format([msg])


async def test_refusal_does_not_tell_whether_the_file_exists(tmp_path: Path) -> None:
    missing = tmp_path / "missing.png"
    with pytest.raises(LocalFileNotAllowedError):
        await OpenAIChatFormatter().format([_image(str(missing))])


async def test_relative_path_in_a_tool_result_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: Path
) -> None:
    monkeypatch.chdir(secret.parent)
    image = ImageBlock(source=URLSource(url=secret.name))
    msgs = [
        Msg("bot", [ToolUseBlock(id="t", name="shot", input={})], "assistant"),
        Msg("system", [ToolResultBlock(id="t", name="shot", output=[image])], "system"),
    ]
    with pytest.raises(LocalFileNotAllowedError, match=r"id_rsa\.png"):
        await OpenAIChatFormatter(promote_tool_result_images=True).format(msgs)


# -- allowed folders ---------------------------------------------------------------------


@pytest.mark.parametrize("formatter_class", IMAGE_FORMATTERS, ids=lambda c: c.__name__)
async def test_an_allowed_folder_is_read(formatter_class: Any, tmp_path: Path) -> None:
    folder = tmp_path / "media"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "cat.png").write_bytes(PNG)
    with allow_local_files(folder):
        formatted = await formatter_class().format([_image(str(folder / "sub" / "cat.png"))])
    assert PNG_B64 in _payload_text(formatted)


async def test_symlink_out_of_an_allowed_folder_is_refused(tmp_path: Path, secret: Path) -> None:
    folder = tmp_path / "media"
    folder.mkdir()
    (folder / "cat.png").symlink_to(secret)
    allow_local_files(folder)
    with pytest.raises(LocalFileNotAllowedError, match="resolves to"):
        await OpenAIChatFormatter().format([_image(str(folder / "cat.png"))])


async def test_dot_dot_out_of_an_allowed_folder_is_refused(tmp_path: Path, secret: Path) -> None:
    folder = tmp_path / "media"
    folder.mkdir()
    allow_local_files(folder)
    escape = str(folder) + "/../home/.ssh/" + secret.name
    with pytest.raises(LocalFileNotAllowedError):
        await GeminiChatFormatter().format([_image(escape)])
    # A sibling whose name starts with the allowed folder's is not inside it.
    sibling = tmp_path / "media-private"
    sibling.mkdir()
    (sibling / "x.png").write_bytes(PNG)
    with pytest.raises(LocalFileNotAllowedError):
        await GeminiChatFormatter().format([_image(str(sibling / "x.png"))])


async def test_a_symlinked_allowed_folder_is_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "cat.png").write_bytes(PNG)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    grant = allow_local_files(link)
    assert grant.folders == (_real(real),)
    formatted = await AnthropicChatFormatter().format([_image(str(link / "cat.png"))])
    assert PNG_B64 in _payload_text(formatted)


async def test_grant_as_context_manager_ends_with_the_block(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(PNG)
    with allow_local_files(tmp_path):
        assert allowed_local_folders() == (_real(tmp_path),)
        await OpenAIChatFormatter().format([_image(str(tmp_path / "cat.png"))])
    assert allowed_local_folders() == ()
    with pytest.raises(LocalFileNotAllowedError):
        await OpenAIChatFormatter().format([_image(str(tmp_path / "cat.png"))])


def test_an_already_allowed_folder_outlives_a_nested_grant(tmp_path: Path) -> None:
    allow_local_files(tmp_path)
    with allow_local_files(tmp_path) as grant:
        assert grant.folders == ()
    assert allowed_local_folders() == (os.path.realpath(tmp_path),)
    disallow_local_files(tmp_path)
    assert allowed_local_folders() == ()


@pytest.mark.parametrize("bad", ["", 3, b"/tmp"])
def test_bad_folder_is_a_clear_error(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="folder"):
        allow_local_files(bad)
    assert allowed_local_folders() == ()


# -- the package's own media folder ------------------------------------------------------


def _tool_result_msgs(block: Any) -> list[Msg]:
    return [
        Msg("bot", [ToolUseBlock(id="t", name="draw", input={})], "assistant"),
        Msg("system", [ToolResultBlock(id="t", name="draw", output=[block])], "system"),
    ]


async def test_tool_result_media_go_to_a_private_folder_read_back_without_allowing() -> None:
    image = ImageBlock(source=Base64Source(media_type="image/png", data=PNG_B64))
    formatted = await OpenAIChatFormatter(promote_tool_result_images=True).format(
        _tool_result_msgs(image)
    )
    path = formatted[1]["content"].removeprefix("The returned image can be found at: ")
    folder = os.path.dirname(path)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(folder).st_uid == os.getuid()
    # Not a fixed, guessable name shared by every process and user.
    assert os.path.basename(folder) != "agentscope_rt_media"
    # The promoted copy was read back from there: nothing had to be allowed.
    assert PNG_B64 in _payload_text(formatted[2:])
    assert allowed_local_folders() == ()


async def test_audio_of_a_tool_result_is_written_owner_only() -> None:
    audio = AudioBlock(
        source=Base64Source(media_type="audio/wav", data=base64.b64encode(WAV).decode())
    )
    formatted = await DashScopeChatFormatter(promote_tool_result_audios=True).format(
        _tool_result_msgs(audio)
    )
    text = formatted[1]["content"]
    path = text.split("can be found at: ", 1)[1].strip()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


_CHILD = """
import base64, os, sys
import anyio
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Base64Source, ImageBlock, Msg, ToolResultBlock

png = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
block = ImageBlock(source=Base64Source(media_type="image/png", data=png))
msgs = [Msg("system", [ToolResultBlock(id="t", name="draw", output=[block])], "system")]
out = anyio.run(OpenAIChatFormatter().format, msgs)
path = out[0]["content"].removeprefix("The returned image can be found at: ")
print(os.path.dirname(path))
"""


def test_each_process_gets_its_own_folder_removed_at_exit() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    folders = [
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(DATA / "pixel.png")],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.strip()
        for _ in range(2)
    ]
    assert folders[0] != folders[1]
    for folder in folders:
        assert folder
        assert not os.path.exists(folder)


# -- the multimodal embedding ------------------------------------------------------------


async def test_multimodal_embedding_refuses_a_file_outside_allowed_folders(secret: Path) -> None:
    # A closed port: the refusal must come before anything is sent.
    embedding = DashScopeMultiModalEmbedding(
        api_key="sk-test",
        model_name="multimodal-embedding-v1",
        base_http_api_url="http://127.0.0.1:9",
    )
    with pytest.raises(LocalFileNotAllowedError, match=r"inputs\[1\].*id_rsa\.png"):
        await embedding(["a cat", ImageBlock(source=URLSource(url=str(secret)))])
