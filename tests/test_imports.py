"""What importing the package costs (provider SDKs load only when their classes are used), and
the shape of the import graph: layers point down, no private cross-package imports, no cycles."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

# Each SDK takes from a fraction of a second to seconds to import; an application that uses
# one provider must not pay for the others.
_SDKS = (
    "anthropic",
    "openai",
    "google.genai",
    "dashscope",
    "ollama",
    "llama_cpp",
    "xllamacpp",
    "ray",
)


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
        "agentscope_rt.evaluate",
        "agentscope_rt.distributed",
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


_FRAMEWORK = (
    "pipeline",
    "durable",
    "mcp",
    "plan",
    "rag",
    "session",
    "durable",
    "a2a",
    "evaluate",
    "studio",
    "hooks",
    "tracing",
    "distributed",
)
_CORE = ("agent", "model", "formatter", "tool", "memory", "token", "embedding", "tts", "realtime")


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


# --- The import graph, read from the source (nothing is imported) -----------------------------
#
# A "unit" is a sub-package (``model``, ``_provider``) or a top-level module (``_json``).
# Imports are read with ``ast``: those a module runs when it is imported (top level, including
# inside ``if``/``try``, but not under ``if TYPE_CHECKING:`` and not inside functions) decide
# layers and cycles; every import, wherever it stands, counts for the privacy rule.

_PACKAGE_DIR = Path(__file__).resolve().parent.parent / "agentscope_rt"

# docs/architecture.md, "Layers", from the bottom up. The top-level modules (``_json``,
# ``_backend``, ...) and ``_provider`` are foundation too.
_FOUNDATION = ("message", "module", "exception", "types", "_provider")
_LAYERS = {
    **{unit: 0 for unit in _FOUNDATION},
    **{unit: 1 for unit in _CORE},
    **{unit: 2 for unit in _FRAMEWORK},
}
_LAYER_NAMES = ("foundation", "core", "framework")

# Private cross-package imports that remain, each with why: none today. Keys: (importing
# module, imported module). The test fails on an entry that no longer matches anything, so
# this list cannot outlive what it excuses.
_PRIVATE_IMPORTS_ALLOWED: set[tuple[str, str]] = set()

# No cycle between packages is allowed today; an entry would be a frozenset of unit names.
_CYCLES_ALLOWED: set[frozenset[str]] = set()


@dataclasses.dataclass(frozen=True)
class _Import:
    importer: str  # module name, e.g. agentscope_rt.model._openai_model
    path: str  # the importer's file, from the project root
    target: str  # module (or module.name) imported, absolute
    line: int
    at_import_time: bool
    names: tuple[str, ...]

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(_PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(path: Path) -> list[_Import]:
    module = _module_name(path)
    where = path.relative_to(_PACKAGE_DIR.parent).as_posix()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[_Import] = []

    def visit(nodes: list[ast.stmt], at_import_time: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append(
                        _Import(module, where, alias.name, node.lineno, at_import_time, ())
                    )
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                names = tuple(alias.name for alias in node.names)
                found.append(_Import(module, where, target, node.lineno, at_import_time, names))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(node.body, False)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, False)
                visit(node.orelse, at_import_time)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(
                        [n for n in getattr(node, field, []) if isinstance(n, ast.AST)],
                        at_import_time,
                    )
                if isinstance(node, ast.ExceptHandler):
                    visit(node.body, at_import_time)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, True)
    return found


def _all_imports() -> list[_Import]:
    return [imp for path in sorted(_PACKAGE_DIR.rglob("*.py")) for imp in _imports_of(path)]


def _unit(module: str) -> str | None:
    """The sub-package or top-level module *module* belongs to (``None`` outside the package
    and for the package's own ``__init__``)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "agentscope_rt" and len(parts) > 1 else None


def _targets(imp: _Import) -> list[str]:
    """The modules an import names: ``from agentscope_rt import message`` names
    ``agentscope_rt.message``."""
    if imp.target == "agentscope_rt" or _unit(imp.target) is None:
        return [f"{imp.target}.{name}" for name in imp.names] if imp.names else [imp.target]
    return [imp.target]


def _private_cross_imports(imports: list[_Import] | None = None) -> list[tuple[_Import, str]]:
    offending = []
    for imp in _all_imports() if imports is None else imports:
        own = _unit(imp.importer)
        for target in _targets(imp):
            other = _unit(target)
            if other is None or other == own:
                continue
            inner = target.split(".")[2:]
            if any(part.startswith("_") for part in inner):
                offending.append((imp, target))
            elif (_PACKAGE_DIR / other).is_dir() and not inner:
                # ``from agentscope_rt.model import _retry`` is a private module too.
                offending += [(imp, f"{target}.{n}") for n in imp.names if n.startswith("_")]
    return offending


def test_no_package_imports_a_private_module_of_another() -> None:
    # A package's private modules (``_x.py``) are its own: others go through its __init__.
    offending = _private_cross_imports()
    allowed = {(imp.importer, target) for imp, target in offending}
    unexpected = [
        f"{imp.where()}: {imp.importer} imports {target}"
        for imp, target in offending
        if (imp.importer, target) not in _PRIVATE_IMPORTS_ALLOWED
    ]
    assert not unexpected, "private cross-package imports:\n" + "\n".join(unexpected)
    stale = sorted(_PRIVATE_IMPORTS_ALLOWED - allowed)
    assert not stale, f"allowed but no longer imported (drop them from the list): {stale}"


def _unit_graph(*, at_import_time: bool = True) -> dict[str, dict[str, _Import]]:
    """unit -> {unit it imports when imported (with *at_import_time*; else anywhere): one
    such import}."""
    graph: dict[str, dict[str, _Import]] = {}
    for imp in _all_imports():
        own = _unit(imp.importer)
        if own is None or (at_import_time and not imp.at_import_time):
            continue
        for target in _targets(imp):
            other = _unit(target)
            if other is not None and other != own:
                graph.setdefault(own, {}).setdefault(other, imp)
    return graph


def test_layers_point_down_in_the_source() -> None:
    # What a module imports when it is imported stands in its own layer or below
    # (docs/architecture.md); a class may reach up when it is built (an import in a function).
    upward = []
    for own, edges in _unit_graph().items():
        for other, imp in edges.items():
            if _LAYERS.get(own, 0) < _LAYERS.get(other, 0):
                upward.append(
                    f"{imp.where()}: {own} ({_LAYER_NAMES[_LAYERS.get(own, 0)]}) imports "
                    f"{imp.target} ({_LAYER_NAMES[_LAYERS[other]]})"
                )
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_foundation_imports_no_framework_package() -> None:
    # Not even when built or for type checking: the foundation knows nothing above it but the
    # names it hands on (types names the tool package's ToolResponse for annotations only).
    foundation = {unit for unit, layer in _LAYERS.items() if layer == 0}
    above = []
    for imp in _all_imports():
        own = _unit(imp.importer)
        if own is None or (own not in foundation and (_PACKAGE_DIR / own).is_dir()):
            continue
        for target in _targets(imp):
            if _LAYERS.get(_unit(target) or "", 0) == 2:
                above.append(f"{imp.where()}: {imp.importer} imports {target}")
    assert not above, "foundation modules importing the framework:\n" + "\n".join(above)


def _cycles(graph: dict[str, dict[str, _Import]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def _described(cycles: list[list[str]], graph: dict[str, dict[str, _Import]]) -> str:
    return "\n".join(
        " <-> ".join(cycle)
        + "".join(
            f"\n  {imp.where()}: {a} imports {imp.target}"
            for a in cycle
            for b, imp in graph.get(a, {}).items()
            if b in cycle
        )
        for cycle in cycles
    )


def test_no_import_cycle_between_packages() -> None:
    graph = _unit_graph()
    cycles = [c for c in _cycles(graph) if frozenset(c) not in _CYCLES_ALLOWED]
    assert not cycles, "import cycles between packages:\n" + _described(cycles, graph)


def test_no_package_reaches_back_even_when_built_or_for_type_checking() -> None:
    # Stricter than the import-time rule: an import inside a function or under TYPE_CHECKING
    # is a dependency too, and one that points back closes a circle (as the Gemini token
    # counter's on the model package did while the models imported the token package).
    graph = _unit_graph(at_import_time=False)
    cycles = [c for c in _cycles(graph) if frozenset(c) not in _CYCLES_ALLOWED]
    assert not cycles, "packages that depend on each other:\n" + _described(cycles, graph)


def test_the_graph_reader_sees_a_private_import_and_a_cycle() -> None:
    # The checks above pass on an empty graph too: this one shows the reader finds what
    # they look for (a private module of another package, a private name imported from its
    # package, and a circle), on made-up imports beside real ones.
    real = _all_imports()
    assert real
    made_up = [
        _Import(
            "agentscope_rt.pipeline._msghub", "x.py", "agentscope_rt.agent._hooks", 1, True, ()
        ),
        _Import("agentscope_rt.session._x", "x.py", "agentscope_rt.memory", 1, True, ("_secret",)),
        _Import("agentscope_rt.agent._x", "x.py", "agentscope_rt.agent._hooks", 1, True, ()),
    ]
    assert [target for _, target in _private_cross_imports(made_up)] == [
        "agentscope_rt.agent._hooks",
        "agentscope_rt.memory._secret",
    ]
    assert sorted(_cycles(_unit_graph())) == [sorted(c) for c in _CYCLES_ALLOWED]
    edge = next(iter(_unit_graph()["agent"].values()))  # any real edge's record will do
    assert _cycles({"a": {"b": edge}, "b": {"a": edge}, "c": {"a": edge}}) == [["a", "b"]]
