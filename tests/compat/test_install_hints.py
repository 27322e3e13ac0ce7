"""Every optional feature used without its extra fails naming the extra and the command that
installs it from a clone (the package is not on a package index), never with a bare
``ModuleNotFoundError``.

Each case runs in a fresh interpreter whose first meta-path finder refuses the extra's modules,
as if they were not installed, then imports or uses the feature.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentscope_rt._extras import install_command

_PACKAGE = Path(__file__).resolve().parents[2] / "agentscope_rt"

_BLOCKER = """
import importlib.abc, json, sys

BLOCKED = {blocked!r}

class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Refuse())
try:
{code}
except Exception as exc:
    print(json.dumps({{"type": type(exc).__name__, "import_error": isinstance(exc, ImportError),
                      "message": str(exc)}}))
else:
    print(json.dumps(None))
"""

# (id, modules refused, the extra that installs them, code using the feature)
_CASES = [
    ("studio-wsproto", ["wsproto"], "studio", "import agentscope_rt.studio"),
    ("studio-starlette", ["starlette"], "studio", "import agentscope_rt.studio"),
    ("studio-hypercorn", ["hypercorn"], "studio", "import agentscope_rt.studio"),
    ("studio-otel-sdk", ["opentelemetry.sdk"], "studio", "import agentscope_rt.studio"),
    (
        "init-studio-url",
        ["wsproto"],
        "studio",
        "import agentscope_rt\nagentscope_rt.init(studio_url='http://127.0.0.1:9')",
    ),
    ("a2a-sdk", ["a2a"], "a2a", "import agentscope_rt.a2a"),
    ("a2a-starlette", ["starlette"], "a2a", "import agentscope_rt.a2a"),
    ("a2a-hypercorn", ["hypercorn"], "a2a", "import agentscope_rt.a2a"),
    (
        "tracing-sdk",
        ["opentelemetry.sdk"],
        "tracing",
        "from agentscope_rt.tracing import setup_tracing\n"
        "setup_tracing('http://127.0.0.1:9/v1/traces')",
    ),
    (
        "tracing-exporter",
        ["opentelemetry.exporter"],
        "tracing",
        "from agentscope_rt.tracing import setup_tracing\n"
        "setup_tracing('http://127.0.0.1:9/v1/traces')",
    ),
    (
        "init-tracing-url",
        ["opentelemetry"],
        "tracing",
        "import agentscope_rt\nagentscope_rt.init(tracing_url='http://127.0.0.1:9/v1/traces')",
    ),
    (
        "ray-evaluator",
        ["ray"],
        "ray",
        "from agentscope_rt.evaluate import ArithmeticBenchmark, FileEvaluatorStorage, "
        "RayEvaluator\n"
        "RayEvaluator('e', ArithmeticBenchmark(), 1, FileEvaluatorStorage('out'), 1)",
    ),
    (
        "distributed",
        ["ray"],
        "ray",
        "from agentscope_rt.distributed import AgentHost\nAgentHost()",
    ),
    (
        "dashscope-audio",
        ["wsproto"],
        "dashscope",
        "import anyio\n"
        "from agentscope_rt.tool import dashscope_text_to_audio\n"
        "response = anyio.run(dashscope_text_to_audio, 'hi', 'key')\n"
        # A tool answers with its error as text: the text is what the model (and user) reads.
        "raise ImportError(response.content[0].text)",
    ),
    (
        "huggingface",
        ["tokenizers"],
        "huggingface",
        "from agentscope_rt.token import HuggingFaceTokenCounter\nHuggingFaceTokenCounter('m')",
    ),
    (
        "huggingface-jinja2",
        ["jinja2"],
        "huggingface",
        "from agentscope_rt.token import HuggingFaceTokenCounter\nHuggingFaceTokenCounter('m')",
    ),
    (
        "redis",
        ["redis"],
        "redis",
        "from agentscope_rt.session import RedisSession\nRedisSession()",
    ),
    (
        "sql",
        ["sqlalchemy"],
        "sql",
        "from agentscope_rt.memory import AsyncSQLAlchemyMemory\nAsyncSQLAlchemyMemory()",
    ),
    (
        "sql-postgresql-driver",
        ["psycopg"],
        "sql",
        "from agentscope_rt.memory import AsyncSQLAlchemyMemory\n"
        "AsyncSQLAlchemyMemory('postgresql+psycopg://user@127.0.0.1:9/db')",
    ),
    (
        "durable-postgres",
        ["psycopg"],
        "sql",
        "from agentscope_rt.durable import PostgresRunStore\nPostgresRunStore('host=127.0.0.1')",
    ),
    (
        "durable-redis",
        ["redis"],
        "redis",
        "from agentscope_rt.durable import RedisRunStore\nRedisRunStore()",
    ),
    (
        "durable-redis-url",
        ["redis"],
        "redis",
        "from agentscope_rt.durable import RedisRunStore\nRedisRunStore('redis://127.0.0.1:9/0')",
    ),
    (
        "embedding",
        ["tokenizers"],
        "embedding",
        "import anyio\n"
        "from agentscope_rt.embedding import LocalTextEmbedding\n"
        "anyio.run(LocalTextEmbedding().__call__, ['hello'])",
    ),
    (
        "embedding-threadpoolctl",
        ["threadpoolctl"],
        "embedding",
        "import anyio\n"
        "from agentscope_rt.embedding import LocalTextEmbedding\n"
        "anyio.run(LocalTextEmbedding().__call__, ['hello'])",
    ),
    (
        "pdf",
        ["pypdf"],
        "pdf",
        "import anyio\n"
        "from agentscope_rt.rag import PDFReader\n"
        "anyio.run(PDFReader().__call__, 'missing.pdf')",
    ),
    (
        "office",
        ["docx"],
        "office",
        "import anyio\n"
        "from agentscope_rt.rag import WordReader\n"
        "anyio.run(WordReader().__call__, 'missing.docx')",
    ),
    (
        "office-excel",
        ["openpyxl"],
        "office",
        "import anyio\n"
        "from agentscope_rt.rag import ExcelReader\n"
        "anyio.run(ExcelReader().__call__, 'missing.xlsx')",
    ),
    (
        "office-powerpoint",
        ["pptx"],
        "office",
        "import anyio\n"
        "from agentscope_rt.rag import PowerPointReader\n"
        "anyio.run(PowerPointReader().__call__, 'missing.pptx')",
    ),
    (
        "vector",
        ["usearch"],
        "vector",
        "from agentscope_rt.rag import LocalVectorStore\nLocalVectorStore()",
    ),
    (
        "qdrant",
        ["qdrant_client"],
        "qdrant",
        "from agentscope_rt.rag import QdrantStore\nQdrantStore(':memory:', 'c', 4)",
    ),
    (
        "milvus",
        ["pymilvus"],
        "milvus",
        "from agentscope_rt.rag import MilvusLiteStore\nMilvusLiteStore('m.db', 'c', 4)",
    ),
    (
        "mem0",
        ["mem0"],
        "mem0",
        "from agentscope_rt.memory import Mem0LongTermMemory\n"
        "Mem0LongTermMemory(agent_name='a', mem0_config={})",
    ),
    (
        "local",
        ["xllamacpp"],
        "local",
        "from agentscope_rt.model import LlamaCppChatModel\nLlamaCppChatModel()",
    ),
]


@pytest.mark.parametrize(
    ("blocked", "extra", "code"),
    [case[1:] for case in _CASES],
    ids=[case[0] for case in _CASES],
)
def test_a_missing_extra_is_named_with_the_command_that_installs_it(
    blocked: list[str], extra: str, code: str, tmp_path: Path
) -> None:
    script = _BLOCKER.format(blocked=blocked, code=textwrap.indent(code, "    "))
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr
    error = json.loads(run.stdout.strip().splitlines()[-1])
    assert error is not None, f"{code!r} ran with {blocked} refused"
    assert error["import_error"], error
    assert error["type"] != "ModuleNotFoundError", error
    message = error["message"]
    assert f"'{extra}' extra" in message, message
    assert install_command(extra) in message, message
    assert blocked[0].split(".")[0] in message, message


def test_the_blocker_refuses_what_it_is_given(tmp_path: Path) -> None:
    # Without this, a case could pass because its module was never asked for.
    script = _BLOCKER.format(blocked=["json.tool"], code="    import json.tool")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    error = json.loads(run.stdout.strip().splitlines()[-1])
    assert error["type"] == "ModuleNotFoundError"


def test_no_message_sends_the_user_to_a_package_index() -> None:
    # The package is installed from a clone: every install hint in it gives the clone's form.
    index_form = re.compile(r"""pip install ['"]?agentscope-rt\[""")
    found = [
        f"{path.relative_to(_PACKAGE.parent)}:{number}"
        for path in sorted(_PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if index_form.search(line)
    ]
    assert not found, found


def test_the_install_command_is_the_clone_form() -> None:
    assert install_command("studio") == (
        'pip install -e ".[studio]" in a clone of the agentscope-rt repository'
    )
