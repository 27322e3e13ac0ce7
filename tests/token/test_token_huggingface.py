"""HuggingFaceTokenCounter: offline, from a tokenizer trained here, counting as AgentScope does.

``data/huggingface_counts.json`` holds three chat templates (Qwen-like with tools and tool
calls, Zephyr-like with special tokens, ``raise_exception`` and ``{% generation %}``, one that
prints list contents raw and breaks out of its loop) and conversations, with the count
AgentScope 1.0.21's ``HuggingFaceTokenCounter`` (transformers 4.57, jinja2 3.1) gives on the
tokenizer ``_tiny_tokenizer.train_tokenizer`` builds; ``vocab`` records that tokenizer's
vocabulary, so a change in training shows up as such. Produced from the repository root with
AgentScope, transformers and tokenizers installed::

    import asyncio, json, pathlib, sys, tempfile
    sys.path.insert(0, "tests/token")
    from _tiny_tokenizer import train_tokenizer
    from agentscope.token import HuggingFaceTokenCounter

    path = pathlib.Path("tests/token/data/huggingface_counts.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        data["vocab"] = train_tokenizer(pathlib.Path(tmp, "tokenizer.json")).get_vocab()
        for name, template in data["templates"].items():
            config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
                      "eos_token": "</s>", "unk_token": "[UNK]", "chat_template": template}
            pathlib.Path(tmp, "tokenizer_config.json").write_text(json.dumps(config))
            counter = HuggingFaceTokenCounter(tmp)
            for case in data["cases"]:
                if case["template"] == name:
                    case["expected"] = asyncio.run(counter.count(case["messages"], case["tools"]))
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\\n", encoding="utf-8")
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from agentscope_rt.token import HuggingFaceTokenCounter
from agentscope_rt.token._huggingface_token_counter import DEFAULT_CHAT_TEMPLATE

from ._tiny_tokenizer import train_tokenizer

DATA = json.loads(
    (Path(__file__).parent / "data" / "huggingface_counts.json").read_text(encoding="utf-8")
)
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "What is the weather in Paris?"}]},
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tokenizer]:
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    return path, train_tokenizer(path)


def model_dir(tmp_path: Path, trained: tuple[Path, Tokenizer], **config: Any) -> Path:
    """A model directory: the trained tokenizer.json plus a tokenizer_config.json."""
    (tmp_path / "tokenizer.json").write_bytes(trained[0].read_bytes())
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "[UNK]", **config}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def encoded(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("case", DATA["cases"], ids=[case["name"] for case in DATA["cases"]])
async def test_counts_equal_agentscope_with_transformers(
    tmp_path: Path, trained: tuple[Path, Tokenizer], case: dict[str, Any]
) -> None:
    assert trained[1].get_vocab() == DATA["vocab"]  # the tokenizer the fixture was made with
    template = DATA["templates"][case["template"]]
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=template))
    assert counter.has_chat_template
    assert await counter.count(case["messages"], case["tools"]) == case["expected"]


async def test_a_bare_tokenizer_json_counts_with_the_chatml_layout(
    trained: tuple[Path, Tokenizer],
) -> None:
    counter = HuggingFaceTokenCounter(trained[0])  # the file itself, nothing beside it
    assert not counter.has_chat_template and counter.chat_template == DEFAULT_CHAT_TEMPLATE
    text = (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n"
    )
    # <|im_start|> system Be brief . <|im_end|> <|im_start|> user What is the weather in
    # Paris ? <|im_end|>
    assert encoded(trained[1], text) == 16
    assert await counter.count(MESSAGES) == 16
    tools = [{"type": "function", "function": {"name": "get_weather"}}]
    with_tools = "<|im_start|>system\n# Tools\n" + json.dumps(tools) + "<|im_end|>\n" + text
    assert await counter.count(MESSAGES, tools) == encoded(trained[1], with_tools)
    primed = await counter.count(MESSAGES, add_generation_prompt=True)
    assert primed == 16 + 2  # <|im_start|> assistant


async def test_tool_calls_count_as_their_json_in_the_default_layout(
    trained: tuple[Path, Tokenizer],
) -> None:
    calls = [{"id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    messages = [{"role": "assistant", "content": None, "tool_calls": calls}]
    text = "<|im_start|>assistant\n" + json.dumps(calls) + "<|im_end|>\n"
    assert await HuggingFaceTokenCounter(trained[0]).count(messages) == encoded(trained[1], text)


async def test_special_tokens_reach_the_template_and_are_not_added_twice(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{{ eos_token }}{% endfor %}"
    folder = model_dir(tmp_path, trained, chat_template=template)
    counter = HuggingFaceTokenCounter(folder)
    assert counter.special_tokens["bos_token"] == "<s>"
    messages = [{"role": "user", "content": "Paris"}]
    assert await counter.count(messages) == 3  # <s> Paris </s>


async def test_added_token_dicts_and_the_special_tokens_map_are_read(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    template = "{{ bos_token }}{{ eos_token }}{{ additional_special_tokens[0] }}"
    folder = model_dir(tmp_path, trained, chat_template=template, eos_token=None)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["bos_token"] = {"content": "<s>", "special": True, "lstrip": False}
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "</s>", "additional_special_tokens": ["<|user|>"]})
    )
    counter = HuggingFaceTokenCounter(folder)
    assert counter.special_tokens["bos_token"] == "<s>"
    assert counter.special_tokens["eos_token"] == "</s>"
    assert await counter.count([]) == 3


async def test_named_templates_are_chosen_as_transformers_chooses(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    templates = [
        {"name": "default", "template": "Paris"},
        {"name": "tool_use", "template": "Paris Paris"},
    ]
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=templates))
    assert await counter.count(MESSAGES) == 1
    assert await counter.count(MESSAGES, tools=[{"type": "function"}]) == 2
    assert await counter.count(MESSAGES, tools=[{}], chat_template="default") == 1
    chosen = HuggingFaceTokenCounter(tmp_path, chat_template="tool_use")
    assert await chosen.count(MESSAGES) == 2


async def test_several_templates_without_a_default_need_a_name(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    templates = [{"name": "a", "template": "x"}, {"name": "b", "template": "y"}]
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=templates))
    with pytest.raises(ValueError, match="pass chat_template=<name>"):
        await counter.count(MESSAGES)
    assert await counter.count(MESSAGES, chat_template="b") == 1  # "y" is unknown: [UNK]


async def test_template_files_take_precedence_over_the_config(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    folder = model_dir(tmp_path, trained, chat_template="Paris")
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": "Paris Paris"}))
    assert await HuggingFaceTokenCounter(folder).count(MESSAGES) == 2
    (folder / "chat_template.jinja").write_text("Paris Paris Paris", encoding="utf-8")
    assert await HuggingFaceTokenCounter(folder).count(MESSAGES) == 3


async def test_a_chat_template_argument_overrides_the_tokenizer_s(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    folder = model_dir(tmp_path, trained, chat_template="Paris")
    assert await HuggingFaceTokenCounter(folder, chat_template="Be brief").count(MESSAGES) == 2
    counter = HuggingFaceTokenCounter(folder)
    per_call = "{% for m in messages %}{{ m.role }} {% endfor %}"
    assert await counter.count(MESSAGES, chat_template=per_call) == 2  # system user
    assert await counter.count(MESSAGES, chat_template=per_call) == 2  # compiled once, reused
    assert await counter.count(MESSAGES) == 1


async def test_template_variables_pass_through(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    template = "{% if enable_thinking %}Paris {% endif %}{% if documents is none %}Paris{% endif %}"
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=template))
    assert await counter.count(MESSAGES) == 1
    assert await counter.count(MESSAGES, enable_thinking=True) == 2


async def test_a_template_that_rejects_the_messages_is_a_value_error(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    template = DATA["templates"]["zephyr_like"]
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=template))
    with pytest.raises(ValueError, match="Unknown role: tool"):
        await counter.count([{"role": "tool", "content": "x"}])


async def test_a_template_with_a_syntax_error_is_refused_before_counting(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    folder = model_dir(tmp_path, trained, chat_template="{% for m in messages %}")
    with pytest.raises(ValueError, match="not valid Jinja") as info:
        HuggingFaceTokenCounter(folder)
    assert str(folder) in str(info.value)
    with pytest.raises(ValueError, match="from the chat_template argument"):
        HuggingFaceTokenCounter(trained[0], chat_template="{{ unclosed")
    counter = HuggingFaceTokenCounter(trained[0])
    with pytest.raises(ValueError, match="from the chat_template argument"):
        await counter.count([], chat_template="{% if %}")


async def test_templates_run_sandboxed(tmp_path: Path, trained: tuple[Path, Tokenizer]) -> None:
    template = "{{ messages.__class__.__mro__[1].__subclasses__() }}"
    counter = HuggingFaceTokenCounter(model_dir(tmp_path, trained, chat_template=template))
    with pytest.raises(ValueError, match="cannot render"):
        await counter.count(MESSAGES)


async def test_counting_runs_in_a_worker_thread(trained: tuple[Path, Tokenizer]) -> None:
    seen: list[int] = []

    def probe() -> str:
        seen.append(threading.get_ident())
        return "Paris"

    counter = HuggingFaceTokenCounter(trained[0])
    assert await counter.count([], chat_template="{{ probe() }}", probe=probe) == 1
    assert seen and seen[0] != threading.get_ident()


async def test_an_invalid_tokenizer_file_is_reported_when_counting(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"version": "1.0", "model": {"type": "Nonsense"}}')
    counter = HuggingFaceTokenCounter(path)
    with pytest.raises(ValueError, match=r"not a valid tokenizer\.json"):
        await counter.count(MESSAGES)


def test_a_name_that_is_not_local_says_how_to_get_the_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="offline") as info:
        HuggingFaceTokenCounter("Qwen/Qwen2.5-7B-Instruct", cache_dir=tmp_path)
    assert "hf download Qwen/Qwen2.5-7B-Instruct tokenizer.json" in str(info.value)
    with pytest.raises(FileNotFoundError, match="save_pretrained"):
        HuggingFaceTokenCounter(tmp_path)  # a directory without tokenizer.json


async def test_a_repository_in_the_local_cache_is_found_offline(
    tmp_path: Path, trained: tuple[Path, Tokenizer]
) -> None:
    # The layout huggingface_hub writes: blobs behind snapshots/<commit>, refs/main -> commit.
    repo = tmp_path / "models--tiny-org--tiny-chat"
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    model_dir(snapshot, trained, chat_template="Paris Paris")
    counter = HuggingFaceTokenCounter("tiny-org/tiny-chat", cache_dir=tmp_path)
    assert counter.tokenizer_file == snapshot / "tokenizer.json"
    assert await counter.count(MESSAGES) == 2
    with pytest.raises(FileNotFoundError):
        HuggingFaceTokenCounter("tiny-org/tiny-chat", cache_dir=tmp_path, revision="feedbeef")


def test_agentscope_arguments_are_accepted_and_unknown_ones_named(
    trained: tuple[Path, Tokenizer], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        counter = HuggingFaceTokenCounter(
            str(trained[0]), use_mirror=True, use_fast=True, trust_remote_code=True, token="x"
        )
    assert counter.use_mirror and counter.use_fast and counter.trust_remote_code
    assert "ignores the arguments ['token']" in caplog.text
    assert repr(counter) == (
        f"HuggingFaceTokenCounter(pretrained_model_name_or_path={str(trained[0])!r})"
    )


def test_tokenizers_and_jinja2_load_only_when_a_counter_is_built(
    trained: tuple[Path, Tokenizer],
) -> None:
    code = (
        "import sys\n"
        "from agentscope_rt.token import HuggingFaceTokenCounter\n"
        "print(sorted(m for m in ('tokenizers', 'jinja2') if m in sys.modules))\n"
        f"HuggingFaceTokenCounter({str(trained[0])!r})\n"
        "print(sorted(m for m in ('tokenizers', 'jinja2') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "['jinja2', 'tokenizers']"]
