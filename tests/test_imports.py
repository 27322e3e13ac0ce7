"""What importing the package costs: provider SDKs load only when their classes are used."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Each SDK takes from a fraction of a second to seconds to import; an application that uses
# one provider must not pay for the others.
_SDKS = ("anthropic", "openai", "google.genai", "dashscope", "ollama", "llama_cpp")


@pytest.mark.parametrize(
    "module",
    [
        "agentscope_rt",
        "agentscope_rt.agent",
        "agentscope_rt.formatter",
        "agentscope_rt.model",
        "agentscope_rt.token",
        "agentscope_rt.pipeline",
        "agentscope_rt.embedding",
        "agentscope_rt.rag",
    ],
)
def test_importing_loads_no_provider_sdk(module: str) -> None:
    code = f"import sys, {module}\nprint(','.join(m for m in {_SDKS!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing {module} loaded {out}"


def test_the_anthropic_counter_still_imports_its_sdk_when_built() -> None:
    code = (
        "import sys\n"
        "from agentscope_rt.token import AnthropicTokenCounter\n"
        "AnthropicTokenCounter('claude-sonnet-4-5', api_key='k')\n"
        "print('anthropic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "True"


def test_subpackages_are_attributes_of_the_package_loaded_on_first_use() -> None:
    # AgentScope programs write `import agentscope; agentscope.agent.ReActAgent(...)`.
    code = (
        "import sys, agentscope_rt\n"
        "before = sorted(m for m in sys.modules if m.startswith('agentscope_rt.') "
        "and not m.startswith('agentscope_rt._'))\n"
        "names = sorted(agentscope_rt.SUBPACKAGES)\n"
        "loaded = [getattr(agentscope_rt, n).__name__ for n in names]\n"
        "print(before)\n"
        "print(loaded == ['agentscope_rt.' + n for n in names])\n"
        "print(agentscope_rt.agent.ReActAgent.__name__, agentscope_rt.message.Msg.__name__)\n"
        "print(set(names) <= set(dir(agentscope_rt)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # Importing the package alone imports no sub-package (each is imported when first read).
    assert out[0] == "[]"
    assert out[1:] == ["True", "ReActAgent Msg", "True"]


def test_an_unknown_attribute_of_the_package_is_an_attribute_error() -> None:
    import agentscope_rt

    with pytest.raises(AttributeError, match="no attribute 'agents'"):
        agentscope_rt.agents  # noqa: B018


_FRAMEWORK = ("pipeline", "mcp", "plan", "rag", "session")
_CORE = ("agent", "model", "formatter", "tool", "memory", "token", "embedding")


@pytest.mark.parametrize("module", [*_CORE, "message", "module", "exception", "types"])
def test_layers_point_down(module: str) -> None:
    # docs/architecture.md: a core module imports nothing of the framework layer above it
    # (ReActAgent takes plan notebooks and knowledge bases through protocols of its own).
    code = (
        f"import sys, agentscope_rt.{module}\n"
        f"print(','.join(m for m in {_FRAMEWORK!r} if 'agentscope_rt.' + m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing agentscope_rt.{module} loaded agentscope_rt.{out}"
