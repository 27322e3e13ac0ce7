"""Connect/close rules of the stateful clients, and the content mapping."""

from __future__ import annotations

import base64

import anyio
import mcp.types
import pytest

from agentscope_rt.exception import MCPError
from agentscope_rt.mcp import convert_mcp_content
from agentscope_rt.message import AudioBlock, ImageBlock, TextBlock, VideoBlock

from .helpers import process_alive, stdio_client


async def test_connect_in_a_task_group_and_close_from_another_task() -> None:
    client = stdio_client()
    async with anyio.create_task_group() as tg:
        await client.connect(task_group=tg)
        pid = int((await client.call_tool("pid")).content[0].text)  # type: ignore[union-attr]
        closed = anyio.Event()

        async def closer() -> None:
            await client.close()
            closed.set()

        tg.start_soon(closer)
        with anyio.fail_after(15):
            await closed.wait()
        assert not client.is_connected
    assert not process_alive(pid)


async def test_task_group_end_closes_the_session() -> None:
    client = stdio_client()
    with anyio.move_on_after(10) as scope:
        async with anyio.create_task_group() as tg:
            await client.connect(task_group=tg)
            pid = int((await client.call_tool("pid")).content[0].text)  # type: ignore[union-attr]
            tg.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert not process_alive(pid)
    with pytest.raises(MCPError, match=r"ended|not connected"):
        await client.call_tool("pid")


async def test_close_from_another_task_without_a_task_group() -> None:
    client = stdio_client()
    await client.connect()
    pid = int((await client.call_tool("pid")).content[0].text)  # type: ignore[union-attr]
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.close)
    assert not client.is_connected
    assert not process_alive(pid)


async def test_misuse_is_a_clear_error() -> None:
    client = stdio_client()
    with pytest.raises(MCPError, match=r"not connected"):
        await client.list_tools()
    with pytest.raises(MCPError, match=r"not connected"):
        await client.close()
    async with client:
        with pytest.raises(MCPError, match=r"already connected"):
            await client.connect()
        fn = await client.get_callable_function("add")
        with pytest.raises(ValueError, match=r"execution_timeout"):
            await client.get_callable_function("add", execution_timeout=-1)
    with pytest.raises(MCPError, match=r"not connected"):
        await fn(a=1, b=2)


async def test_two_clients_close_in_reverse_order() -> None:
    async with stdio_client("one") as one, stdio_client("two") as two:
        first = (await one.call_tool("add", {"a": 1, "b": 1})).content[0]
        second = (await two.call_tool("add", {"a": 2, "b": 2})).content[0]
        assert (first.text, second.text) == ("2", "4")  # type: ignore[union-attr]


async def test_clients_close_in_any_order() -> None:
    one, two = stdio_client("one"), stdio_client("two")
    await one.connect()
    await two.connect()
    pids = [int((await c.call_tool("pid")).content[0].text) for c in (one, two)]  # type: ignore[union-attr]
    # Each session lives in a task of its own, outside the caller's cancel scopes.
    await one.close()
    assert not one.is_connected and two.is_connected
    assert (await two.call_tool("add", {"a": 2, "b": 2})).content[0].text == "4"  # type: ignore[union-attr]
    await two.close()
    assert not any(process_alive(pid) for pid in pids)


async def test_a_cancelled_close_still_releases_the_server() -> None:
    client = stdio_client()
    await client.connect()
    pid = int((await client.call_tool("pid")).content[0].text)  # type: ignore[union-attr]
    with anyio.CancelScope() as scope:
        scope.cancel()
        await client.close()
    assert not client.is_connected
    assert not process_alive(pid)


def test_content_mapping_covers_every_kind() -> None:
    png = base64.b64encode(b"\x89PNG....").decode()
    blocks = convert_mcp_content(
        [
            mcp.types.TextContent(text="hello"),
            mcp.types.ImageContent(data=png, mime_type="image/png"),
            mcp.types.AudioContent(data=png, mime_type="audio/mpeg"),
            mcp.types.EmbeddedResource(
                resource=mcp.types.BlobResourceContents(
                    uri="file:///clip.mp4", mime_type="video/mp4", blob=png
                )
            ),
            mcp.types.EmbeddedResource(
                resource=mcp.types.BlobResourceContents(
                    uri="file:///data.bin", mime_type="application/octet-stream", blob="AAEC"
                )
            ),
            mcp.types.EmbeddedResource(
                resource=mcp.types.TextResourceContents(uri="file:///a.txt", text="body")
            ),
            mcp.types.ResourceLink(uri="file:///b.txt", name="b"),
        ]
    )
    text, image, audio, video, binary, resource, link = blocks
    assert text == TextBlock(text="hello")
    assert isinstance(image, ImageBlock)
    assert image.source.media_type == "image/png"  # type: ignore[union-attr]
    assert isinstance(audio, AudioBlock)
    assert audio.source.media_type == "audio/mpeg"  # type: ignore[union-attr]
    assert isinstance(video, VideoBlock)
    assert video.source.data == png  # type: ignore[union-attr]
    assert binary == TextBlock(
        text="[binary resource file:///data.bin (application/octet-stream), 3 bytes]"
    )
    assert resource == TextBlock(text="[resource file:///a.txt]\nbody")
    assert link == TextBlock(text="[resource link] b: file:///b.txt")
