"""The examples read as AgentScope programs: each has a docstring saying what to look for in its
output, keeps its agents' console output on (or, where many agents would bury the output, sends
what they print somewhere a person can read it, through a ``pre_print`` hook), and uses only
public names of the package.

Every ``examples/*.py`` is parsed (not run: ``nox -s examples`` runs them); the checker itself is
tried on snippets that break each rule, so a rule that stopped finding anything would show.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agentscope_rt

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PACKAGE = Path(agentscope_rt.__file__).resolve().parent
# The examples' own helper modules, imported by name from the examples folder.
HELPERS = frozenset({"_models", "_mcp_server", "_paths", "_ray", "_research_server", "_serve"})
CONSOLE_OFF = ("set_console_output_enabled", "disable_console_output")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_names_of_package() -> frozenset[str]:
    """Every private name the package defines: modules, functions, classes, attributes."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if _is_private(path.stem):
            names.add(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Name):
                names.add(node.id)
    return frozenset(n for n in names if _is_private(n))


PRIVATE = _private_names_of_package()


def _own_names(tree: ast.Module) -> set[str]:
    """Private names the example defines itself (its own helpers and attributes)."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
    return own


def _import_problems(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [
            f"line {node.lineno}: imports {a.name}"
            for a in node.names
            if a.name.split(".")[0] == "agentscope_rt"
            and any(_is_private(part) for part in a.name.split("."))
        ]
    module = node.module or ""
    if module.split(".")[0] != "agentscope_rt":
        return []
    if any(_is_private(part) for part in module.split(".")):
        return [f"line {node.lineno}: imports from {module}"]
    return [
        f"line {node.lineno}: imports {a.name} from {module}"
        for a in node.names
        if _is_private(a.name)
    ]


def _registers_a_pre_print_hook(tree: ast.AST) -> bool:
    """Whether the example registers a ``pre_print`` hook (what an agent prints goes there)."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("register_instance_hook", "register_class_hook")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "pre_print"
        for node in ast.walk(tree)
    )


def _call_problems(node: ast.Call, printing_kept: bool = False) -> list[str]:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in CONSOLE_OFF and not printing_kept:
        off = func.attr == "disable_console_output" or (
            node.args and isinstance(node.args[0], ast.Constant) and not node.args[0].value
        )
        if off:
            return [f"line {node.lineno}: turns an agent's console output off"]
    if isinstance(func, ast.Name) and func.id in ("getattr", "setattr") and len(node.args) > 1:
        name = node.args[1]
        if isinstance(name, ast.Constant) and name.value in PRIVATE:
            return [f"line {node.lineno}: reaches the private name {name.value}"]
    return []


def problems(source: str) -> list[str]:
    """What in *source* (an example's text) breaks the rules; empty when nothing does."""
    tree = ast.parse(source)
    found: list[str] = []
    doc = ast.get_docstring(tree)
    if not doc:
        found.append("no module docstring")
    elif "What to look for" not in doc:
        found.append('the docstring has no "What to look for" paragraph')
    own = _own_names(tree)
    printing_kept = _registers_a_pre_print_hook(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += _import_problems(node)
        elif isinstance(node, ast.Call):
            found += _call_problems(node, printing_kept)
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE and node.attr not in own:
            found.append(f"line {node.lineno}: reaches the private name {node.attr}")
    return found


def test_there_are_examples() -> None:
    assert len([p for p in EXAMPLES if not p.name.startswith("_")]) >= 30


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_follows_the_rules(path: Path) -> None:
    if path.stem in HELPERS:
        # Helpers are imported, not run; they only need a docstring.
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        return
    assert problems(path.read_text(encoding="utf-8")) == []


GOOD = '"""Shows X.\n\nWhat to look for: Y.\n"""\n'


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\n", "no module docstring"),
        ('"""Shows X."""\n', '"What to look for"'),
        (GOOD + "agent.set_console_output_enabled(False)\n", "console output off"),
        (GOOD + "agent.disable_console_output()\n", "console output off"),
        (GOOD + "import agentscope_rt\nprint(agentscope_rt._config.run_id)\n", "_config"),
        (GOOD + "from agentscope_rt._run_config import config\n", "_run_config"),
        (GOOD + "from agentscope_rt.agent._console import render_text\n", "agent._console"),
        (GOOD + "from agentscope_rt import _config\n", "_config"),
        (GOOD + "import agentscope_rt._logging\n", "_logging"),
        (GOOD + "agent._hub_links.clear()\n", "_hub_links"),
        (GOOD + "getattr(agent, '_attach_hub')\n", "_attach_hub"),
    ],
)
def test_the_checker_finds_each_kind_of_problem(source: str, expected: str) -> None:
    assert any(expected in problem for problem in problems(source))


def test_the_checker_allows_console_off_where_a_pre_print_hook_keeps_the_printing() -> None:
    source = GOOD + (
        "agent.set_console_output_enabled(False)\n"
        'agent.register_instance_hook("pre_print", "save", save_to_file)\n'
    )
    assert problems(source) == []


def test_the_checker_allows_helpers_own_names_and_console_on() -> None:
    source = GOOD + (
        "from _models import pick_chat_model\n"
        "from agentscope_rt.agent import ReActAgent\n"
        "class Handler:\n"
        "    def _json(self) -> None: ...\n"
        "    def go(self) -> None: self._json()\n"
        "agent.set_console_output_enabled(True)\n"
        "print(module.__doc__)\n"
    )
    assert problems(source) == []
