"""Agent hooks: an interceptor of the agent routes, and the registries it reads.

AgentScope weaves hooks with a metaclass that calls ``inspect.signature`` and ``deepcopy`` on
every call, and keeps one class-hook registry shared by every agent class. Here:

* hooks are one interceptor per hooked method (``reply``, ``observe``, ``print``;
  ``_reasoning`` and ``_acting`` on ReAct agents), registered with
  :mod:`agentscope_rt._intercept` while at least one hook of its kind exists (an instance hook
  of a living agent or a class hook) and unregistered when the last one goes. With none, a
  call of the method costs its route's one test;
* with hooks, the interceptor binds the call's arguments to names (computed once per method)
  and copies them: hooks receive copies (``Msg.copy()`` for messages and blocks, fresh
  containers around them), so a hook can neither corrupt the caller's objects nor, by
  mutating without returning, change what the method or the next hook sees;
* when a subclass's ``reply`` calls ``super().reply()``, the interceptor runs once for the
  call (the routes' rule), so each hook fires once;
* class hooks are stored per class. Resolution walks the MRO, so a hook registered on a
  subclass affects that subclass and its descendants only. The resolved tuple is cached per
  class and invalidated by a version number bumped on every class-hook change.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import _intercept
from ..exception import AgentError
from ..message import Msg

if TYPE_CHECKING:
    from ._agent_base import AgentBase

__all__ = [
    "HOOK_KINDS",
    "HookEntry",
    "InstanceHooks",
    "add_class_hook",
    "check_hook",
    "check_hook_type",
    "copy_hook_value",
    "instance_hooks",
    "missing_init",
    "own_class_hooks",
    "remove_class_hooks",
    "resolved_class_hooks",
]

HookEntry = tuple[str, Callable[..., Any], bool]
"""``(hook_name, hook, is_coroutine_function)``."""

HOOK_KINDS = ("reply", "observe", "print", "reasoning", "acting")
"""The route kinds hooks run around (``pre_<kind>`` / ``post_<kind>``)."""

_NO_HOOKS: tuple[HookEntry, ...] = ()


# -- checking registrations ----------------------------------------------------------------


def check_hook(
    owner: str, supported: Sequence[str], hook_type: Any, hook_name: Any, hook: Any
) -> bool:
    """Validate a hook registration; return whether *hook* is a coroutine function.

    :raises ValueError: for an unknown hook type.
    :raises TypeError: for a non-string name or a non-callable hook.
    """
    check_hook_type(owner, supported, hook_type)
    if not isinstance(hook_name, str):
        raise TypeError(f"hook_name must be a str, not {type(hook_name).__name__}")
    if not callable(hook):
        raise TypeError(
            f"hook {hook_name!r} for {hook_type!r} must be callable (a function or coroutine "
            f"function taking (self, kwargs{', output' if hook_type.startswith('post_') else ''}"
            f")), not {type(hook).__name__}"
        )
    return is_async_callable(hook)


def is_async_callable(fn: Any) -> bool:
    """Whether calling *fn* returns a coroutine: a coroutine function, or an object whose
    class has an ``async def __call__``."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        inspect.getattr_static(type(fn), "__call__", None)
    )


def check_hook_type(owner: str, supported: Sequence[str], hook_type: Any) -> None:
    """:raises ValueError: when *hook_type* is not one of *supported*."""
    if hook_type not in supported:
        raise ValueError(
            f"unknown hook type {hook_type!r} for {owner}; supported hook types are "
            f"{', '.join(supported)}"
        )


def _kind_of(hook_type: str) -> str:
    return hook_type.partition("_")[2]


# -- how many hooks of each kind exist: the interceptors are registered while any does ------

_alive: dict[str, int] = dict.fromkeys(HOOK_KINDS, 0)


def _hooks_changed(kind: str, delta: int) -> None:
    before = _alive[kind]
    after = _alive[kind] = before + delta
    if before == 0 and after > 0:
        _intercept.register(kind, _INTERCEPTORS[kind])
    elif before > 0 and after == 0:
        _intercept.unregister(kind, _INTERCEPTORS[kind])


def _release(tally: dict[str, int]) -> None:
    """An agent's instance hooks are gone with it."""
    for kind, count in tally.items():
        if count:
            _hooks_changed(kind, -count)
    tally.clear()


# -- instance hooks ------------------------------------------------------------------------


class InstanceHooks(dict[str, dict[str, HookEntry]]):
    """One agent's instance hooks: hook type -> {name: entry}, made at its first hook.

    Counts its hooks per kind in the process-wide tally from which the hook interceptors are
    registered, and takes them out when it is collected (with its agent).
    """

    __slots__ = ("__weakref__", "_tally")

    def __init__(self) -> None:
        super().__init__()
        self._tally: dict[str, int] = {}
        weakref.finalize(self, _release, self._tally).atexit = False

    def add(self, hook_type: str, name: str, entry: HookEntry) -> None:
        bucket = self.setdefault(hook_type, {})
        if name not in bucket:
            self._count(hook_type, 1)
        bucket[name] = entry

    def remove(self, hook_type: str, name: str) -> None:
        bucket = self[hook_type]
        del bucket[name]
        self._count(hook_type, -1)
        if not bucket:
            # No empty buckets: the interceptor tests the registry's buckets directly.
            del self[hook_type]

    def drop(self, hook_type: str | None = None) -> None:
        for typ in [typ for typ in self if hook_type is None or typ == hook_type]:
            self._count(typ, -len(self.pop(typ)))

    def _count(self, hook_type: str, delta: int) -> None:
        kind = _kind_of(hook_type)
        self._tally[kind] = self._tally.get(kind, 0) + delta
        _hooks_changed(kind, delta)


def missing_init(agent: AgentBase) -> AgentError:
    return AgentError(
        f"{type(agent).__name__}.__init__ must call super().__init__() before the agent is used"
    )


def instance_hooks(agent: AgentBase) -> Mapping[str, Mapping[str, HookEntry]]:
    """*agent*'s instance-hook registry (a shared empty mapping until the agent's first
    instance hook, then its :class:`InstanceHooks`).

    :raises AgentError: when the agent's ``__init__`` did not call ``super().__init__()``.
    """
    try:
        return agent._instance_hooks
    except AttributeError:
        raise missing_init(agent) from None


# -- class hooks ---------------------------------------------------------------------------


class _ClassHooks:
    """Class hooks of every agent class, kept here (not on the classes)."""

    __slots__ = ("own", "resolved", "sequence", "version")

    def __init__(self) -> None:
        # Per class: hook type -> {name: (sequence, hook, is_async)} registered on exactly it.
        self.own: weakref.WeakKeyDictionary[
            type, dict[str, dict[str, tuple[int, Callable[..., Any], bool]]]
        ] = weakref.WeakKeyDictionary()
        # Per class: (version, resolved hooks) as last computed.
        self.resolved: weakref.WeakKeyDictionary[
            type, tuple[int, dict[str, tuple[HookEntry, ...]]]
        ] = weakref.WeakKeyDictionary()
        # Bumped on every change: a class's cached resolution is valid only at its version.
        self.version = 0
        # Orders class-hook registrations globally.
        self.sequence = 0


_class_hooks = _ClassHooks()


def add_class_hook(cls: type, hook_type: str, hook_name: str, hook: Any, is_async: bool) -> None:
    """Register a class hook on *cls* (replacing one of the same type and name, in its place)."""
    own = _class_hooks.own.get(cls)
    if own is None:
        own = _class_hooks.own[cls] = {}
        # A class defined for a while (in a function, a test) takes its hooks with it.
        weakref.finalize(cls, _drop_class_hooks, own, None, None).atexit = False
    bucket = own.setdefault(hook_type, {})
    previous = bucket.get(hook_name)
    if previous is None:
        _class_hooks.sequence += 1
        seq = _class_hooks.sequence
    else:
        seq = previous[0]
    bucket[hook_name] = (seq, hook, is_async)
    _class_hooks.version += 1
    if previous is None:
        _hooks_changed(_kind_of(hook_type), 1)


def own_class_hooks(cls: type, hook_type: str) -> Mapping[str, Any]:
    """The hooks of *hook_type* registered on exactly *cls*, by name."""
    return _class_hooks.own.get(cls, {}).get(hook_type, {})


def remove_class_hooks(cls: type, hook_type: str | None, names: Sequence[str] | None) -> None:
    """Remove *cls*'s own class hooks of *hook_type* (all types with ``None``) named in
    *names* (all with ``None``); the caller checked that named ones exist."""
    _drop_class_hooks(_class_hooks.own.get(cls, {}), hook_type, names)


def _drop_class_hooks(
    own: dict[str, dict[str, Any]], hook_type: str | None, names: Sequence[str] | None
) -> None:
    for typ, bucket in own.items():
        if hook_type is not None and typ != hook_type:
            continue
        gone = list(bucket) if names is None else [name for name in names if name in bucket]
        for name in gone:
            del bucket[name]
        if gone:
            _class_hooks.version += 1
            _hooks_changed(_kind_of(typ), -len(gone))


def resolved_class_hooks(cls: type) -> dict[str, tuple[HookEntry, ...]]:
    """The class hooks that apply to instances of *cls*, per hook type, in registration order.

    Hooks registered on *cls* or any base class apply; hooks on subclasses or siblings do not.
    """
    cached = _class_hooks.resolved.get(cls)
    if cached is not None and cached[0] == _class_hooks.version:
        return cached[1]
    gathered: dict[str, list[tuple[int, HookEntry]]] = {}
    for klass in cls.__mro__:
        own = _class_hooks.own.get(klass)
        if not own:
            continue
        for hook_type, hooks in own.items():
            bucket = gathered.setdefault(hook_type, [])
            for name, (seq, hook, is_async) in hooks.items():
                bucket.append((seq, (name, hook, is_async)))
    resolved = {
        hook_type: tuple(entry for _, entry in sorted(bucket, key=lambda item: item[0]))
        for hook_type, bucket in gathered.items()
        if bucket
    }
    _class_hooks.resolved[cls] = (_class_hooks.version, resolved)
    return resolved


# -- running them --------------------------------------------------------------------------


def copy_hook_value(value: Any) -> Any:
    """A copy of *value* safe to hand to a hook.

    Messages and content blocks are copied (``copy()``); dicts, lists and tuples are rebuilt
    around copies of their items; anything else (classes, numbers, services) is passed as is.
    """
    cls = value.__class__
    if cls is Msg:
        return value.copy()
    if cls is dict:
        return {key: copy_hook_value(item) for key, item in value.items()}
    if cls is list:
        return [copy_hook_value(item) for item in value]
    if cls is tuple:
        return tuple(copy_hook_value(item) for item in value)
    if isinstance(value, Msg) or (
        hasattr(cls, "__attrs_attrs__") and callable(getattr(value, "copy", None))
    ):
        return value.copy()
    return value


async def _call_hook(entry: HookEntry, *arguments: Any) -> Any:
    _, hook, is_async = entry
    result = hook(*arguments)
    if is_async or inspect.isawaitable(result):
        result = await result
    return result


class _HookInterceptor:
    """Runs the ``pre_<kind>`` and ``post_<kind>`` hooks that apply to a call."""

    __slots__ = ("post", "pre")

    def __init__(self, kind: str) -> None:
        self.pre = "pre_" + kind
        self.post = "post_" + kind

    def __repr__(self) -> str:
        return f"<agent hooks {self.pre} / {self.post}>"

    async def intercept(
        self, call: _intercept.Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        agent = call.obj
        instance = instance_hooks(agent)
        inst_pre = instance.get(self.pre)
        inst_post = instance.get(self.post)
        resolved = resolved_class_hooks(type(agent))
        cls_pre = resolved.get(self.pre, _NO_HOOKS)
        cls_post = resolved.get(self.post, _NO_HOOKS)
        if not (inst_pre or inst_post or cls_pre or cls_post):
            return await proceed(call.args, call.kwargs)
        pre = (*inst_pre.values(), *cls_pre) if inst_pre else cls_pre
        post = (*inst_post.values(), *cls_post) if inst_post else cls_post
        kw = call.arguments()
        where = f"{call.owner.__name__}.{call.method}"
        for entry in pre:
            result = await _call_hook(entry, agent, copy_hook_value(kw))
            if result is not None:
                if not isinstance(result, dict):
                    raise TypeError(
                        f"pre hook {entry[0]!r} of {where}() must return a dict of arguments "
                        f"or None, not {type(result).__name__}"
                    )
                kw = result
        try:
            args, kwargs = call.rebuild(kw)
        except TypeError as exc:
            raise TypeError(f"a pre hook returned arguments {where}() cannot take: {exc}") from None
        output = await proceed(args, kwargs)
        for entry in post:
            result = await _call_hook(entry, agent, copy_hook_value(kw), copy_hook_value(output))
            if result is not None:
                output = result
        return output


_INTERCEPTORS = {kind: _HookInterceptor(kind) for kind in HOOK_KINDS}
