"""A2AChatFormatter: AgentScope messages to one A2A message and back, in protocol 1.0 and 0.3."""

from __future__ import annotations

import base64

import pytest
from a2a.compat.v0_3 import types as types_v03
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import ParseDict

from agentscope_rt.a2a import A2AChatFormatter
from agentscope_rt.exception import MessageFormatError
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
)

WAV = base64.b64encode(b"RIFF....WAVEfmt ").decode()


async def test_messages_merge_into_one_user_message_and_come_back() -> None:
    formatter = A2AChatFormatter()
    msgs = [
        Msg("alice", "hello", "user"),
        Msg(
            "bob",
            [
                ThinkingBlock(thinking="hmm"),
                ImageBlock(source=URLSource(url="https://example.org/cat.png")),
                AudioBlock(source=Base64Source(media_type="audio/wav", data=WAV)),
                ToolUseBlock(id="c1", name="add", input={"a": 1, "b": [2, 2.5], "c": None}),
                ToolResultBlock(id="c1", name="add", output="3"),
            ],
            "assistant",
        ),
    ]
    message = await formatter.format(msgs)
    assert message.role == Role.ROLE_USER and message.message_id
    assert [part.WhichOneof("content") for part in message.parts] == [
        "text",
        "text",
        "url",
        "raw",
        "data",
        "data",
    ]
    assert message.parts[3].raw == base64.b64decode(WAV)
    back = await formatter.format_a2a_message("remote", message)
    assert (back.name, back.role) == ("remote", "user")
    assert back.content == [
        TextBlock(text="hello"),
        TextBlock(text="hmm"),
        ImageBlock(source=URLSource(url="https://example.org/cat.png")),
        AudioBlock(source=Base64Source(media_type="audio/wav", data=WAV)),
        # Whole numbers stay integers through protobuf's Struct (which keeps doubles).
        ToolUseBlock(id="c1", name="add", input={"a": 1, "b": [2, 2.5], "c": None}),
        ToolResultBlock(id="c1", name="add", output="3"),
    ]


async def test_a_protocol_0_3_message_is_read() -> None:
    legacy = types_v03.Message(
        message_id="m",
        role=types_v03.Role.agent,
        parts=[
            types_v03.Part(root=types_v03.TextPart(text="hi")),
            types_v03.Part(
                root=types_v03.FilePart(
                    file=types_v03.FileWithUri(uri="https://x.org/a.mp4", mime_type="video/mp4")
                )
            ),
        ],
    )
    msg = await A2AChatFormatter().format_a2a_message("remote", legacy)
    assert msg.role == "assistant"
    assert msg.get_content_blocks()[1]["type"] == "video"


async def test_a_task_gives_its_status_message_and_artifacts() -> None:
    status = Message(message_id="s", role=Role.ROLE_AGENT, parts=[Part(text="done")])
    artifact = Artifact(artifact_id="a", parts=[Part(text="result")])
    ParseDict({"source": "tool"}, artifact.metadata)
    task = Task(
        id="t",
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED, message=status),
        artifacts=[artifact],
    )
    msgs = await A2AChatFormatter().format_a2a_task("remote", task)
    assert len(msgs) == 1
    assert msgs[0].content == [TextBlock(text="done"), TextBlock(text="result")]
    assert msgs[0].metadata == {"source": "tool"}
    # A protocol 0.3 task is read the same way.
    legacy = await A2AChatFormatter().format_a2a_task(
        "remote",
        types_v03.Task(
            id="t",
            context_id="c",
            status=types_v03.TaskStatus(state=types_v03.TaskState.completed),
            artifacts=[
                types_v03.Artifact(
                    artifact_id="a", parts=[types_v03.Part(root=types_v03.TextPart(text="r"))]
                )
            ],
        ),
    )
    assert [m.content for m in legacy] == [[TextBlock(text="r")]]


async def test_files_no_block_holds_become_text() -> None:
    message = Message(
        role=Role.ROLE_AGENT,
        parts=[
            Part(url="https://x.org/report.pdf"),
            Part(raw=b'{"a": 1}', media_type="application/json"),
            Part(raw=b"\x00\x01", media_type="application/zip", filename="data.zip"),
        ],
    )
    ParseDict({"k": [1, 2]}, message.parts.add().data)
    msg = await A2AChatFormatter().format_a2a_message("r", message)
    assert [block["text"] for block in msg.get_content_blocks()] == [
        "https://x.org/report.pdf",
        '{"a": 1}',
        "[data.zip: application/zip, 2 bytes]",
        '{"k": [1, 2]}',
    ]


async def test_bad_input_is_refused_clearly() -> None:
    formatter = A2AChatFormatter()
    bad = Msg("a", [AudioBlock(source=Base64Source(media_type="audio/wav", data="%%%"))], "user")
    with pytest.raises(MessageFormatError, match="not valid base64"):
        await formatter.format([bad])
    with pytest.raises(TypeError, match="list of Msg"):
        await formatter.format(Msg("a", "x", "user"))  # type: ignore[arg-type]
    with pytest.raises(MessageFormatError, match="Unsupported role"):
        await formatter.format_a2a_message("r", Message(parts=[Part(text="x")]))
    with pytest.raises(TypeError, match="a2a-sdk Message"):
        await formatter.format_a2a_message("r", {"parts": []})
