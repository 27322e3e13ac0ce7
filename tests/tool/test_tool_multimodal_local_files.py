"""The multimodal tools read a local file the model names only from allowed folders.

``openai_image_to_text(image_urls="/home/me/.ssh/id_rsa.png")`` and its siblings read the
path the model chose and upload the bytes to the provider; a prompt injection could name any
file. They now apply the formatters' rule (``allow_local_files``): another path gets a text
saying it is not allowed, and nothing is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.formatter import allow_local_files
from agentscope_rt.message import TextBlock
from agentscope_rt.tool import (
    ToolResponse,
    dashscope_image_to_text,
    openai_audio_to_text,
    openai_create_image_variation,
    openai_edit_image,
    openai_image_to_text,
)

from .._local_files import no_local_folder_allowed
from ._media_servers import MediaServer, chat_completion, serve_http

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@pytest.fixture(autouse=True)
def no_folder_allowed() -> Iterator[None]:
    with no_local_folder_allowed():
        yield


@pytest.fixture
def server(media_server: MediaServer, monkeypatch: pytest.MonkeyPatch) -> MediaServer:
    return serve_http(media_server, monkeypatch)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / ".ssh" / "id_rsa.png"
    path.parent.mkdir()
    path.write_bytes(PNG)
    return path


def _text(response: ToolResponse) -> str:
    (block,) = response.content
    assert isinstance(block, TextBlock)
    return block.text


TOOLS: list[tuple[str, Callable[[str], Awaitable[ToolResponse]]]] = [
    ("openai_image_to_text", lambda url: openai_image_to_text(url, "sk-test")),
    ("openai_edit_image", lambda url: openai_edit_image(url, "a hat", "sk-test")),
    ("openai_create_image_variation", lambda url: openai_create_image_variation(url, "sk-test")),
    ("openai_audio_to_text", lambda url: openai_audio_to_text(url, "sk-test")),
    ("dashscope_image_to_text", lambda url: dashscope_image_to_text(url, "ds-test")),
]


@pytest.mark.parametrize(("name", "tool"), TOOLS, ids=[name for name, _ in TOOLS])
@pytest.mark.parametrize("prefix", ["", "file://"])
async def test_a_file_outside_allowed_folders_is_not_read(
    server: MediaServer, secret: Path, name: str, tool: Any, prefix: str
) -> None:
    text = _text(await tool(prefix + str(secret)))
    assert "is not allowed" in text
    assert str(secret) in text
    assert "allow_local_files" in text
    assert server.requests == []


async def test_a_missing_file_outside_allowed_folders_is_refused_the_same_way(
    server: MediaServer, tmp_path: Path
) -> None:
    # DashScope's tool passes a missing path on as a URL; outside the allowed folders it is
    # refused before anything tells whether it exists.
    text = _text(await dashscope_image_to_text(str(tmp_path / "nothing.png"), "ds-test"))
    assert "is not allowed" in text
    assert server.requests == []


async def test_a_file_in_an_allowed_folder_is_sent(server: MediaServer, tmp_path: Path) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(PNG)
    server.add(chat_completion("a cat"))
    with allow_local_files(tmp_path):
        response = await openai_image_to_text(str(image), "sk-test")
    assert _text(response) == "a cat"
    assert len(server.requests) == 1
