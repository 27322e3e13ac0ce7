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
