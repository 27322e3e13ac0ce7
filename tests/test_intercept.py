"""The routes: one generated wrapper per class and method, interceptors registered per kind."""

from __future__ import annotations

import ast
import inspect
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt import _intercept
from agentscope_rt._intercept import Call, Precondition, Routed


class Recorder:
    """An interceptor that records what it sees and optionally rewrites the arguments."""

    def __init__(self, label: str, log: list[Any], rewrite: Callable[..., Any] | None = None):
        self.label = label
        self.log = log
        self.rewrite = rewrite

    async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
        self.log.append((self.label, "in", call.kind, call.method, call.arguments()))
        args, kwargs = call.args, call.kwargs
        if self.rewrite is not None:
            args, kwargs = call.rebuild(self.rewrite(call.arguments()))
        result = await proceed(args, kwargs)
        self.log.append((self.label, "out", result))
        return result


def _checked(obj: Any, value: Any) -> None:
    raise TypeError(f"{type(obj).__name__}.greet: value must be a str, not {type(value).__name__}")


class Greeter(Routed):
    async def greet(self, name: str, punctuation: str = "!", *, loud: bool = False) -> str:
        text = f"hello {name}{punctuation}"
        return text.upper() if loud else text

    async def greet_all(self, *names: str, **options: Any) -> list[str]:
        return [await self.greet(name, **options) for name in names]

    def stream(self, count: int) -> list[int]:
        return list(range(count))


_intercept.declare(
    Greeter,
    "greet",
    "test_greet",
    precondition=Precondition("{name}.__class__ is str", _checked, arguments=(("name", 0),)),
)
_intercept.declare(Greeter, "greet_all", "test_greet")
_intercept.declare(Greeter, "stream", "test_stream", is_async=False)


class Polite(Greeter):
    async def greet(self, name: str, punctuation: str = "!", *, loud: bool = False) -> str:
        return "dear " + await super().greet(name, punctuation, loud=loud)


def registered(kind: str, *interceptors: Any) -> Any:
    """A context manager registering *interceptors* on *kind* for a block."""

    class _Registered:
        def __enter__(self) -> None:
            for item in interceptors:
                _intercept.register(kind, item)

        def __exit__(self, *exc: object) -> None:
            for item in interceptors:
                _intercept.unregister(kind, item)

    return _Registered()


def test_every_class_defining_a_route_gets_one_wrapper_with_its_signature() -> None:
    for cls in (Greeter, Polite):
        wrapper = cls.__dict__["greet"]
        kind, func = _intercept.route_of(wrapper) or ("", None)
        assert (
            kind == "test_greet"
            and func is not None
            and func.__qualname__ == f"{cls.__name__}.greet"
        )
        assert inspect.signature(wrapper) == inspect.signature(func)
        assert inspect.iscoroutinefunction(wrapper)
        assert wrapper.__name__ == "greet" and wrapper.__qualname__ == f"{cls.__name__}.greet"
    assert not inspect.iscoroutinefunction(Greeter.stream)
    assert _intercept.route_of(Greeter.stream) is not None

    class Again(Polite):
        greet = Greeter.greet  # a wrapper already: not wrapped twice

    assert Again.__dict__["greet"] is Greeter.__dict__["greet"]


async def test_with_nothing_registered_a_call_reaches_the_method_as_it_was_made() -> None:
    greeter = Greeter()
    assert await greeter.greet("ada") == "hello ada!"
    assert await greeter.greet("ada", "?", loud=True) == "HELLO ADA?"
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        await greeter.greet("ada", colour="red")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        await greeter.greet()  # type: ignore[call-arg]


async def test_interceptors_run_in_registration_order_and_may_rewrite_the_call() -> None:
    log: list[Any] = []
    outer = Recorder("outer", log, rewrite=lambda kw: {**kw, "punctuation": "?"})
    inner = Recorder("inner", log)
    with registered("test_greet", outer, inner):
        assert await Greeter().greet("ada", loud=True) == "HELLO ADA?"
    assert log == [
        ("outer", "in", "test_greet", "greet", {"name": "ada", "punctuation": "!", "loud": True}),
        ("inner", "in", "test_greet", "greet", {"name": "ada", "punctuation": "?", "loud": True}),
        ("inner", "out", "HELLO ADA?"),
        ("outer", "out", "HELLO ADA?"),
    ]
    log.clear()
    assert await Greeter().greet("bo") == "hello bo!"  # unregistered: nothing runs
    assert log == []


async def test_a_call_through_several_routes_of_a_kind_is_intercepted_once() -> None:
    log: list[Any] = []
    with registered("test_greet", Recorder("r", log)):
        # super().greet() passes a second wrapper; greet_all calls greet on the same object.
        assert await Polite().greet("ada") == "dear hello ada!"
        assert await Polite().greet_all("a", "b") == ["dear hello a!", "dear hello b!"]
    entered = [entry[3] for entry in log if entry[1] == "in"]
    assert entered == ["greet", "greet_all"]


async def test_calls_from_other_tasks_are_intercepted_each() -> None:
    log: list[Any] = []
    greeter = Greeter()

    class Slow:
        async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            log.append(call.args[0])
            await anyio.sleep(0.01)  # both calls are inside the interceptor at once
            return await proceed(call.args, call.kwargs)

    with registered("test_greet", Slow()):
        async with anyio.create_task_group() as tg:
            tg.start_soon(greeter.greet, "a")
            tg.start_soon(greeter.greet, "b")
    assert sorted(log) == ["a", "b"]


async def test_a_task_started_inside_an_intercepted_call_is_part_of_it() -> None:
    log: list[Any] = []
    greeter = Greeter()

    class Spawning:
        async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            log.append(call.args[0])
            if call.args[0] == "outer":
                async with anyio.create_task_group() as tg:
                    tg.start_soon(greeter.greet, "child")
            return await proceed(call.args, call.kwargs)

    with registered("test_greet", Spawning()):
        await greeter.greet("outer")
        assert _intercept.intercepting("test_greet", greeter) is False
    assert log == ["outer"]


async def test_an_interceptor_unregistered_during_a_call_finishes_that_call() -> None:
    log: list[Any] = []
    recorder = Recorder("r", log)

    class Unregistering:
        async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            _intercept.unregister("test_greet", recorder)
            return await proceed(call.args, call.kwargs)

    unregistering = Unregistering()
    _intercept.register("test_greet", unregistering)
    _intercept.register("test_greet", recorder)
    try:
        await Greeter().greet("ada")
    finally:
        _intercept.unregister("test_greet", unregistering)
    assert [entry[:2] for entry in log] == [("r", "in"), ("r", "out")]


async def test_the_precondition_runs_first_and_costs_no_call_when_fine() -> None:
    log: list[Any] = []
    with registered("test_greet", Recorder("r", log)):
        with pytest.raises(TypeError, match=r"Greeter\.greet: value must be a str, not int"):
            await Greeter().greet(5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not bytes"):
            await Greeter().greet(name=b"x")  # type: ignore[arg-type]
    assert log == []  # refused before any interceptor


def test_a_synchronous_route_returns_what_the_method_returns() -> None:
    seen: list[int] = []

    class Sync:
        def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            seen.append(call.args[0])
            return [*proceed(call.args, call.kwargs), "traced"]

    greeter = Greeter()
    assert greeter.stream(2) == [0, 1]
    with registered("test_stream", Sync()):
        assert greeter.stream(3) == [0, 1, 2, "traced"]
    assert seen == [3]


async def test_a_traceback_through_a_wrapper_shows_its_source() -> None:
    class Failing(Greeter):
        async def greet(self, name: str, punctuation: str = "!", *, loud: bool = False) -> str:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError) as info:
        await Failing().greet("ada")
    text = "".join(traceback.format_exception(info.value))
    assert "route wrapper" in text and "Failing.greet" in text
    assert "return await _rw_func(self, name, punctuation, loud=loud)" in text


def test_call_arguments_round_trip_with_star_args() -> None:
    greeter = Greeter()
    site_wrapper = Greeter.__dict__["greet_all"]
    log: list[Any] = []

    class Capture:
        async def intercept(self, call: Call, proceed: Callable[..., Any]) -> Any:
            arguments = call.arguments()
            log.append(arguments)
            assert call.rebuild(arguments) == (("a", "b"), {"loud": True})
            # Keys that are no parameter go to **options.
            assert call.rebuild({"names": ("c",), "options": {}, "loud": False}) == (
                ("c",),
                {"loud": False},
            )
            return await proceed(call.args, call.kwargs)

    async def main() -> None:
        with registered("test_greet", Capture()):
            assert await site_wrapper(greeter, "a", "b", loud=True) == ["HELLO A!", "HELLO B!"]

    anyio.run(main)
    assert log == [{"names": ("a", "b"), "options": {"loud": True}}]


def test_bad_declarations_and_registrations_are_refused() -> None:
    class Plain:
        async def go(self) -> None: ...

    with pytest.raises(TypeError, match="subclasses of Routed"):
        _intercept.declare(Plain, "go", "test_bad")
    with pytest.raises(TypeError, match="all async or all sync"):
        _intercept.declare(Greeter, "stream", "test_greet", is_async=False)
    with pytest.raises(TypeError, match=r"Sync\.greet must be an async def method"):

        class Sync(Greeter):
            def greet(self, name: str) -> str:  # type: ignore[override]
                return name

    with pytest.raises(TypeError, match=r"Static\.greet must be a function defined with def"):

        class Static(Greeter):
            @staticmethod
            async def greet(name: str) -> str:  # type: ignore[override]
                return name

    recorder = Recorder("r", [])
    with pytest.raises(ValueError, match="no route of kind 'nope'"):
        _intercept.register("nope", recorder)
    with pytest.raises(ValueError, match="not registered"):
        _intercept.unregister("test_greet", recorder)
    with registered("test_greet", recorder):
        with pytest.raises(ValueError, match="registered for 'test_greet' already"):
            _intercept.register("test_greet", recorder)
        assert _intercept.installed()["test_greet"] == (recorder,)
    assert "test_greet" not in _intercept.installed()


# -- the package: nothing but the routes module changes classes ----------------------------

_PACKAGE = Path(_intercept.__file__).parent

# Class data, not code around methods: what a base class derives for its own subclasses as they
# are defined (a memory that overrides ``add`` may wait), and AgentScope's
# ``UserAgent.override_class_input_method``.
_CLASS_DATA = {
    ("memory/_memory_base.py", "add_may_wait"),
    ("memory/_memory_base.py", "synchronous"),
    ("agent/_user_agent.py", "_input_method"),
}
# A class decorator finishing the classes it is applied to as they are defined (as attrs'
# own decorator does): message blocks' field names and their equality with dicts.
_CLASS_DECORATORS = {("message/_block.py", "_fields"), ("message/_block.py", "__eq__")}


def _looks_like_a_class(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        # Capitalised names are classes; ALL-CAPS ones are module constants (instances).
        return node.id in ("cls", "klass", "owner", "base") or (
            node.id[:1].isupper() and not node.id.isupper()
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "type"
    return False


def test_only_the_routes_module_sets_attributes_on_classes() -> None:
    found: list[str] = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        rel = path.relative_to(_PACKAGE).as_posix()
        if rel == "_intercept.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and node.args
                and _looks_like_a_class(node.args[0])
            ):
                found.append(f"{rel}:{node.lineno} setattr on a class")
            elif isinstance(node, ast.Attribute) and node.attr == "__setattr__":
                if isinstance(node.value, ast.Name) and node.value.id == "type":
                    found.append(f"{rel}:{node.lineno} type.__setattr__")
            elif isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and _looks_like_a_class(target.value)
                        and (rel, target.attr) not in _CLASS_DATA | _CLASS_DECORATORS
                    ):
                        found.append(f"{rel}:{node.lineno} assigns {target.attr} on a class")
    assert not found, "\n".join(found)
