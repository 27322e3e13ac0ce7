"""The Responses API formatters: chat and multi-agent histories, tools, media, reasoning.

What AgentScope 1.0.21 produces for the shared conversations is checked in
``test_formatter_golden.py``; here are the exact payloads of histories written for these
formatters, and the places where they deliberately go further than AgentScope (encrypted
reasoning sent back, promoted images after the tool output they belong to).
"""

from __future__ import annotations

import base64
import warnings
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt._provider import reasoning_signature
from agentscope_rt.formatter import (
    OpenAIResponseChatFormatter,
    OpenAIResponseMultiAgentFormatter,
    UnsupportedBlockWarning,
)
from agentscope_rt.message import Msg, ThinkingBlock
from agentscope_rt.token import CharTokenCounter

DATA = Path(__file__).parent / "data"
PNG_B64 = base64.b64encode((DATA / "pixel.png").read_bytes()).decode()
WAV_B64 = base64.b64encode((DATA / "tone.wav").read_bytes()).decode()
WEB_IMAGE = "https://example.com/cat.png"


def tool_use(id_: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def tool_result(id_: str, name: str, output: Any) -> dict[str, Any]:
    return {"type": "tool_result", "id": id_, "name": name, "output": output}


def image(url: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "url": url}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def input_text(value: str) -> dict[str, Any]:
    return {"type": "input_text", "text": value}


PNG_URL = f"data:image/png;base64,{PNG_B64}"


async def test_chat_history_with_tool_pairs_and_images() -> None:
    msgs = [
        Msg("system", "You are Friday.", "system"),
        Msg("user", [text("What is on it?"), image(str(DATA / "pixel.png"))], "user"),
        Msg(
            "Friday",
            [
                text("Let me look closer."),
                tool_use("c1", "zoom", factor=2),
                tool_use("c2", "ocr", lang="中文"),
            ],
            "assistant",
        ),
        Msg("system", [tool_result("c1", "zoom", "A red pixel.")], "system"),
        Msg("system", [tool_result("c2", "ocr", [text("no"), text("text")])], "system"),
        Msg("Friday", "A red pixel without text.", "assistant"),
        Msg("user", [image(WEB_IMAGE)], "user"),
    ]
    assert await OpenAIResponseChatFormatter().format(msgs) == [
        {"role": "system", "content": [input_text("You are Friday.")]},
        {
            "role": "user",
            "content": [
                input_text("What is on it?"),
                {"type": "input_image", "image_url": PNG_URL},
            ],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look closer."}]},
        {"type": "function_call", "call_id": "c1", "name": "zoom", "arguments": '{"factor": 2}'},
        {"type": "function_call", "call_id": "c2", "name": "ocr", "arguments": '{"lang": "中文"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "A red pixel."},
        {"type": "function_call_output", "call_id": "c2", "output": "- no\n- text"},
        {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "A red pixel without text."}],
        },
        {"role": "user", "content": [{"type": "input_image", "image_url": WEB_IMAGE}]},
    ]


async def test_user_audio_is_input_audio_and_assistant_audio_is_left_out() -> None:
    wav = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": WAV_B64},
    }
    local = {"type": "audio", "source": {"type": "url", "url": str(DATA / "tone.wav")}}
    msgs = [
        Msg("user", [text("Listen."), wav, local], "user"),
        Msg("Friday", [text("A tone."), wav], "assistant"),
    ]
    audio = {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}}
    assert await OpenAIResponseChatFormatter().format(msgs) == [
        {"role": "user", "content": [input_text("Listen."), audio, audio]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "A tone."}]},
    ]


async def test_video_is_dropped_with_one_warning() -> None:
    video = {"type": "video", "source": {"type": "url", "url": str(DATA / "clip.mp4")}}
    msgs = [Msg("user", [text("Watch."), video, video], "user")]
    with pytest.warns(UnsupportedBlockWarning, match="2 video") as record:
        output = await OpenAIResponseChatFormatter().format(msgs)
    assert len(record) == 1
    assert output == [{"role": "user", "content": [input_text("Watch.")]}]


async def test_promoted_tool_result_images_follow_the_tool_output() -> None:
    msgs = [
        Msg("Friday", [tool_use("c9", "screenshot")], "assistant"),
        Msg(
            "system",
            [tool_result("c9", "screenshot", [text("Captured."), image(WEB_IMAGE)])],
            "system",
        ),
    ]
    output = await OpenAIResponseChatFormatter(promote_tool_result_images=True).format(msgs)
    assert output == [
        {"type": "function_call", "call_id": "c9", "name": "screenshot", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c9",
            "output": f"- Captured.\n- The returned image can be found at: {WEB_IMAGE}",
        },
        {
            "role": "user",
            "content": [
                input_text(
                    "<system-info>The following are the image contents from the tool result "
                    "of 'screenshot':"
                ),
                input_text(f"\n- The image from '{WEB_IMAGE}': "),
                {"type": "input_image", "image_url": WEB_IMAGE},
                input_text("</system-info>"),
            ],
        },
    ]
    # Without the option the image stays a reference in the tool output only.
    assert len(await OpenAIResponseChatFormatter().format(msgs)) == 2


async def test_encrypted_reasoning_goes_back_before_what_it_led_to() -> None:
    signature = reasoning_signature("rs_1", "gAAAA-secret")
    msgs = [
        Msg("user", "Weather?", "user"),
        Msg(
            "Friday",
            [
                ThinkingBlock("Call the tool.", signature),
                text("Checking."),
                tool_use("c1", "get_weather", city="Rome"),
            ],
            "assistant",
        ),
        Msg("system", [tool_result("c1", "get_weather", "Hot.")], "system"),
        # Thinking without this API's encrypted reasoning (a plain summary, another
        # provider's signature) is left out silently, as AgentScope leaves out all thinking.
        Msg(
            "Friday",
            [ThinkingBlock("Plain."), ThinkingBlock("Signed.", "EqQBCkgIAR"), text("Hot.")],
            "assistant",
        ),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        output = await OpenAIResponseChatFormatter().format(msgs)
    assert output == [
        {"role": "user", "content": [input_text("Weather?")]},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Call the tool."}],
            "encrypted_content": "gAAAA-secret",
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "get_weather",
            "arguments": '{"city": "Rome"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "Hot."},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Hot."}]},
    ]


def test_reasoning_signature_needs_both_id_and_encrypted_content() -> None:
    assert reasoning_signature("rs_1", None) is None
    assert reasoning_signature(None, "enc") is None
    assert reasoning_signature("rs_1", "enc") == (
        '{"type":"reasoning","id":"rs_1","encrypted_content":"enc"}'
    )


async def test_multiagent_history_is_folded_around_tool_sequences() -> None:
    msgs = [
        Msg("system", "You are Bob in a group chat.", "system"),
        Msg("Alice", "Shall we plan the trip?", "user"),
        Msg("Bob", [ThinkingBlock("Be friendly."), text("Sure, Alice!")], "assistant"),
        Msg(
            "Carol",
            [text("Here is the map."), image(WEB_IMAGE), text("Ideas?")],
            "assistant",
        ),
        Msg("Bob", [tool_use("c5", "search", query="Lyon hotels")], "assistant"),
        Msg("system", [tool_result("c5", "search", "3 hotels found")], "system"),
        Msg("Bob", "I found 3 hotels.", "assistant"),
        Msg("Alice", "Book the cheapest.", "user"),
    ]
    output = await OpenAIResponseMultiAgentFormatter().format(msgs)
    assert output == [
        {"role": "system", "content": [input_text("You are Bob in a group chat.")]},
        {
            "role": "user",
            "content": [
                input_text(
                    "# Conversation History\n"
                    "The content between <history></history> tags contains your "
                    "conversation history\n"
                    "<history>\nAlice: Shall we plan the trip?\nBob: Sure, Alice!\n"
                    "Carol: Here is the map.\nCarol: Ideas?\n</history>"
                ),
                {"type": "input_image", "image_url": WEB_IMAGE},
            ],
        },
        {
            "type": "function_call",
            "call_id": "c5",
            "name": "search",
            "arguments": '{"query": "Lyon hotels"}',
        },
        {"type": "function_call_output", "call_id": "c5", "output": "3 hotels found"},
        {
            "role": "user",
            "content": [
                input_text(
                    "<history>\nBob: I found 3 hotels.\nAlice: Book the cheapest.\n</history>"
                )
            ],
        },
    ]


async def test_multiagent_prompt_promotion_and_audio() -> None:
    wav = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": WAV_B64},
    }
    msgs = [
        Msg("Alice", [text("Hear this."), wav], "user"),
        Msg("Bob", [tool_use("c1", "snap")], "assistant"),
        Msg("system", [tool_result("c1", "snap", [image(WEB_IMAGE)])], "system"),
    ]
    formatter = OpenAIResponseMultiAgentFormatter(
        conversation_history_prompt="Chat so far:\n", promote_tool_result_images=True
    )
    output = await formatter.format(msgs)
    assert output[0] == {
        "role": "user",
        "content": [
            input_text("Chat so far:\n<history>\nAlice: Hear this.\n</history>"),
            {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
        ],
    }
    assert [item.get("type") or item["role"] for item in output[1:]] == [
        "function_call",
        "function_call_output",
        "user",
    ]
    assert output[-1]["content"][2] == {"type": "input_image", "image_url": WEB_IMAGE}


async def test_truncation_keeps_function_calls_with_their_outputs() -> None:
    msgs = [Msg("system", "You are Friday.", "system")]
    for n in range(6):
        msgs.append(Msg("user", f"Question {n} " + "x" * 40, "user"))
        msgs.append(Msg("Friday", [tool_use(f"c{n}", "look", n=n)], "assistant"))
        msgs.append(Msg("system", [tool_result(f"c{n}", "look", "y" * 40)], "system"))
    formatter = OpenAIResponseChatFormatter(
        token_counter=CharTokenCounter(chars_per_token=4.0), max_tokens=200
    )
    output = await formatter.format(msgs)
    full = await OpenAIResponseChatFormatter().format(msgs)
    assert output[0]["role"] == "system"
    assert len(output) < len(full)
    assert output[1:] == full[len(full) - len(output) + 1 :]
    calls = [i["call_id"] for i in output if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in output if i.get("type") == "function_call_output"]
    assert calls and calls == outputs


async def test_formatted_payload_is_accepted_by_the_responses_model_check() -> None:
    # The model's own input check takes items that have a type but no role.
    from agentscope_rt.model._common import check_formatted_messages

    msgs = [
        Msg("Friday", [tool_use("c1", "f")], "assistant"),
        Msg("system", [tool_result("c1", "f", "ok")], "system"),
    ]
    output = await OpenAIResponseChatFormatter().format(msgs)
    check_formatted_messages(output, typed_items=True)
    with pytest.raises(ValueError, match="'role' key"):
        check_formatted_messages(output)
