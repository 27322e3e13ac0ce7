"""Generate the golden formatter outputs in ``tests/formatter/golden/`` with AgentScope itself.

Run it with a Python that has ``agentscope==1.0.21`` installed (it needs ``mcp<2``, ``tqdm`` and
``greenlet`` beside it), from the repository root::

    /path/to/agentscope-venv/bin/python tests/formatter/make_golden.py

It writes:

- ``golden/cases.json``: the input conversations, as AgentScope ``Msg.to_dict()`` data, with
  ``{DATA}`` standing for the absolute path of ``tests/formatter/data``;
- ``golden/<Formatter>[__<variant>].json``: AgentScope's ``await formatter.format(msgs)`` for
  every case that formatter is given.

Two normalisations keep the files machine-independent: the data directory is written back as
``{DATA}``, and the temporary file AgentScope writes for base64 media inside a tool result
(a fresh random name each time) is written as ``{SAVED}.<ext>``. The tests apply the same
normalisation to this project's output.

Cases with web URLs are only given to formatters that pass URLs through; AgentScope's Gemini
and Ollama formatters (and OpenAI's for audio) download web media, which needs the network.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
GOLDEN = HERE / "golden"

PNG_B64 = base64.b64encode((DATA / "pixel.png").read_bytes()).decode()
WAV_B64 = base64.b64encode((DATA / "tone.wav").read_bytes()).decode()
WEB_IMAGE = "https://example.com/images/cat.png"


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def image_url(url: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "url": url}}


def image_b64(data: str = PNG_B64, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def tool_use(id_: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def tool_result(id_: str, name: str, output: Any) -> dict[str, Any]:
    return {"type": "tool_result", "id": id_, "name": name, "output": output}


def msg(name: str, content: Any, role: str, n: int) -> dict[str, Any]:
    return {
        "id": f"msg{n:02d}",
        "name": name,
        "role": role,
        "content": content,
        "metadata": {},
        "timestamp": "2025-01-01 00:00:00.000",
    }


SYSTEM = "You are a helpful assistant named Friday."

CASES: dict[str, list[dict[str, Any]]] = {
    # Plain chat with thinking, two parallel tool calls, results (string and multi-text).
    "tools": [
        msg("system", SYSTEM, "system", 1),
        msg("user", "What's the weather and time in Paris?", "user", 2),
        msg(
            "Friday",
            [
                {"type": "thinking", "thinking": "I should call both tools."},
                text("Let me check."),
                tool_use("call_1", "get_weather", {"city": "Paris"}),
                tool_use("call_2", "get_time", {"tz": "Europe/Paris", "fmt": "24h"}),
            ],
            "assistant",
            3,
        ),
        msg("system", [tool_result("call_1", "get_weather", "Sunny, 21°C")], "system", 4),
        msg(
            "system",
            [tool_result("call_2", "get_time", [text("14:05"), text("CEST")])],
            "system",
            5,
        ),
        msg("Friday", "It is sunny and 21°C in Paris; the time is 14:05.", "assistant", 6),
        msg("user", "Thanks! 谢谢", "user", 7),
    ],
    # Images from base64 data, a local path and a file:// URL.
    "image_local": [
        msg("system", SYSTEM, "system", 1),
        msg(
            "user",
            [
                text("Compare these pictures."),
                image_b64(),
                image_url("{DATA}/pixel.png"),
                image_url("file://{DATA}/pixel.png"),
            ],
            "user",
            2,
        ),
        msg("Friday", "They are the same red pixel.", "assistant", 3),
    ],
    # A web image URL (passed through, or dropped where images are not accepted).
    "image_web": [
        msg("user", [text("What is in this picture?"), image_url(WEB_IMAGE)], "user", 1),
        msg("Friday", "A cat.", "assistant", 2),
    ],
    # Audio (base64 and a local wav) and a local video.
    "audio_video": [
        msg(
            "user",
            [
                text("Listen and watch."),
                {
                    "type": "audio",
                    "source": {"type": "base64", "media_type": "audio/wav", "data": WAV_B64},
                },
                {"type": "audio", "source": {"type": "url", "url": "{DATA}/tone.wav"}},
                {"type": "video", "source": {"type": "url", "url": "{DATA}/clip.mp4"}},
            ],
            "user",
            1,
        ),
        msg("Friday", "A short tone and a tiny clip.", "assistant", 2),
    ],
    # Tool results that carry media: a local image and base64 data.
    "tool_result_media": [
        msg("system", SYSTEM, "system", 1),
        msg("user", "Take a screenshot.", "user", 2),
        msg("Friday", [tool_use("call_9", "screenshot", {})], "assistant", 3),
        msg(
            "system",
            [
                tool_result(
                    "call_9",
                    "screenshot",
                    [text("Captured."), image_url("{DATA}/pixel.png"), image_b64()],
                )
            ],
            "system",
            4,
        ),
        msg("Friday", "Here is your screenshot.", "assistant", 5),
    ],
    # Several named speakers, a tool sequence in the middle, thinking to leave out.
    "multiagent": [
        msg("system", "You are Bob in a group chat.", "system", 1),
        msg("Alice", "Hi all, shall we plan the trip?", "user", 2),
        msg(
            "Bob",
            [{"type": "thinking", "thinking": "Be friendly."}, text("Sure, Alice!")],
            "assistant",
            3,
        ),
        msg(
            "Carol",
            [text("Here is the map."), image_url("{DATA}/pixel.png"), text("Any ideas?")],
            "assistant",
            4,
        ),
        msg("Bob", [tool_use("call_5", "search", {"query": "Lyon hotels"})], "assistant", 5),
        msg("system", [tool_result("call_5", "search", "3 hotels found")], "system", 6),
        msg("Bob", "I found 3 hotels in Lyon.", "assistant", 7),
        msg("Alice", "Great, book the cheapest.", "user", 8),
    ],
}

# Which cases each formatter gets, and the constructor variants.
URL_PASSING = [
    "tools",
    "image_local",
    "image_web",
    "audio_video",
    "tool_result_media",
    "multiagent",
]
DOWNLOADING = ["tools", "image_local", "audio_video", "tool_result_media", "multiagent"]

FORMATTERS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("OpenAIChatFormatter", "", {}, URL_PASSING),
    ("OpenAIChatFormatter", "promote", {"promote_tool_result_images": True}, ["tool_result_media"]),
    ("OpenAIMultiAgentFormatter", "", {}, URL_PASSING),
    # AgentScope puts promoted tool-result images before the function_call_output they belong
    # to; here they follow it, so that variant is tested in test_formatter_openai_response.py.
    ("OpenAIResponseChatFormatter", "", {}, URL_PASSING),
    ("OpenAIResponseMultiAgentFormatter", "", {}, URL_PASSING),
    ("AnthropicChatFormatter", "", {}, URL_PASSING),
    ("AnthropicMultiAgentFormatter", "", {}, URL_PASSING),
    ("DashScopeChatFormatter", "", {}, URL_PASSING),
    (
        "DashScopeChatFormatter",
        "promote",
        {"promote_tool_result_images": True},
        ["tool_result_media"],
    ),
    ("DashScopeMultiAgentFormatter", "", {}, URL_PASSING),
    ("GeminiChatFormatter", "", {}, DOWNLOADING),
    ("GeminiChatFormatter", "promote", {"promote_tool_result_images": True}, ["tool_result_media"]),
    ("GeminiMultiAgentFormatter", "", {}, DOWNLOADING),
    ("OllamaChatFormatter", "", {}, DOWNLOADING),
    ("OllamaChatFormatter", "promote", {"promote_tool_result_images": True}, ["tool_result_media"]),
    ("OllamaMultiAgentFormatter", "", {}, DOWNLOADING),
    ("DeepSeekChatFormatter", "", {}, URL_PASSING),
    ("DeepSeekMultiAgentFormatter", "", {}, URL_PASSING),
]


def substitute(value: Any, data_dir: str) -> Any:
    """Replace ``{DATA}`` by *data_dir* everywhere in *value*."""
    if isinstance(value, str):
        return value.replace("{DATA}", data_dir)
    if isinstance(value, list):
        return [substitute(v, data_dir) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, data_dir) for k, v in value.items()}
    return value


def normalise(value: Any, data_dir: str, saved_dir: str) -> Any:
    """Write the data directory as ``{DATA}`` and saved base64 media files as
    ``{SAVED}.<ext>`` (shared with the tests)."""
    pattern = re.compile(re.escape(saved_dir.rstrip("/")) + r"/[^\s'\"]+?\.(\w+)(?=$|[\s'\"])")
    if isinstance(value, str):
        # The data directory first: a checkout may itself live in the temp directory.
        value = value.replace(data_dir, "{DATA}")
        return pattern.sub(lambda m: "{SAVED}." + m.group(1), value)
    if isinstance(value, list):
        return [normalise(v, data_dir, saved_dir) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v, data_dir, saved_dir) for k, v in value.items()}
    return value


async def main() -> None:
    import agentscope
    from agentscope import formatter as as_formatter
    from agentscope.message import Msg

    if agentscope.__version__ != "1.0.21":
        sys.exit(f"expected agentscope 1.0.21, found {agentscope.__version__}")
    GOLDEN.mkdir(exist_ok=True)
    (GOLDEN / "cases.json").write_text(
        json.dumps(CASES, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    data_dir = str(DATA)
    for class_name, variant, kwargs, case_names in FORMATTERS:
        formatter = getattr(as_formatter, class_name)(**kwargs)
        results = {}
        for case in case_names:
            msgs = [Msg.from_dict(substitute(m, data_dir)) for m in CASES[case]]
            output = await formatter.format(msgs)
            results[case] = normalise(output, data_dir, tempfile.gettempdir())
        name = class_name + (f"__{variant}" if variant else "")
        payload = {"formatter": class_name, "kwargs": kwargs, "cases": results}
        (GOLDEN / f"{name}.json").write_text(
            json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
        )
        print(f"wrote golden/{name}.json ({len(results)} cases)")


if __name__ == "__main__":
    asyncio.run(main())
