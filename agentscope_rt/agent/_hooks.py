"""Hooks around an agent's hooked methods, woven once per class.

AgentScope weaves hooks with a metaclass that calls ``inspect.signature`` and ``deepcopy`` on
every call, and keeps one class-hook registry shared by every agent class. Here:

* each hooked method (``reply``, ``observe``, ``print``; ``_reasoning`` and ``_acting`` on
  ReAct agents) is wrapped once, when its class is created (``AgentBase.__init_subclass__``).
  The wrapper knows in advance how positional arguments map to parameter names
  (:class:`_CallSpec`), so binding arguments costs one dict build;
* with no hook of a kind registered, the wrapper calls the method directly: no binding, no
  copies;
* when a subclass's ``reply`` calls ``super().reply()``, only the outermost wrapper (the one
  ``type(self)`` resolves to) runs hooks, so each hook fires once per call. Because the check
  is "which wrapper is outermost for this class", it holds under concurrency without any
  per-instance flag;
* hooks receive copies (``Msg.copy()`` for messages and blocks, fresh containers around
  them), so a hook can neither corrupt the caller's objects nor, by mutating without
  returning, change what the method or the next hook sees;
* class hooks are stored per class. Resolution walks the MRO, so a hook registered on a
  subclass affects that subclass and its descendants only. The resolved tuple is cached per
  class and invalidated by a global version number bumped on every class-hook change.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..exception import AgentError
from ..message import Msg

if TYPE_CHECKING:
    from ._agent_base import AgentBase

__all__ = [
    "HOOK_COUNTS",
    "HookEntry",
    "check_hook",
    "copy_hook_value",
    "direct_method",
    "instance_hooks",
    "resolved_class_hooks",
    "wrap_hooked_method",
    "wrapped_function",
]

HookEntry = tuple[str, Callable[..., Any], bool]
"""``(hook_name, hook, is_coroutine_function)``."""

_NO_HOOKS: tuple[HookEntry, ...] = ()

# Bumped whenever any class hook is registered or removed; a class's cached resolution is
# valid only for the version it was built at. ``_state[1]`` counts live class hooks so the
# common case (none at all) skips resolution entirely.
_state = [0, 0]
_sequence = [0]

HOOK_COUNTS = _state
"""``HOOK_COUNTS[1]`` is the number of class hooks registered anywhere (read-only outside this
module); with :func:`direct_method` it lets a hot caller see at a glance that no hook applies."""


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


def next_sequence() -> int:
    """A number ordering class-hook registrations globally."""
    _sequence[0] += 1
    return _sequence[0]


def class_hooks_changed(delta: int) -> None:
    """Invalidate every class's resolved hooks; *delta* is the change in live class hooks."""
    _state[0] += 1
    _state[1] += delta


def resolved_class_hooks(cls: type) -> dict[str, tuple[HookEntry, ...]]:
    """The class hooks that apply to instances of *cls*, per hook type, in registration order.

    Hooks registered on *cls* or any base class apply; hooks on subclasses or siblings do not.
    """
    cache: list[Any] = cls._class_hook_cache  # type: ignore[attr-defined]
    if cache[0] == _state[0]:
        resolved: dict[str, tuple[HookEntry, ...]] = cache[1]
        return resolved
    gathered: dict[str, list[tuple[int, HookEntry]]] = {}
    for klass in cls.__mro__:
        own: dict[str, dict[str, tuple[int, Callable[..., Any], bool]]] | None = klass.__dict__.get(
            "_own_class_hooks"
        )
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
    cache[0] = _state[0]
    cache[1] = resolved
    return resolved


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


class _CallSpec:
    """How a hooked method's arguments map to names, computed once per method.

    :meth:`bind` turns a call's ``(args, kwargs)`` into the one kwargs dict hooks see (defaults
    applied, extra positional arguments under the ``*args`` name, extra keywords under the
    ``**kwargs`` name, as AgentScope does); :meth:`unbind` turns a (possibly rewritten) dict
    back into a call.
    """

    __slots__ = (
        "defaults",
        "keyword_names",
        "keyword_only",
        "order",
        "positional",
        "var_keyword",
        "var_positional",
        "where",
    )

    def __init__(self, func: Callable[..., Any], where: str) -> None:
        params = list(inspect.signature(func).parameters.values())[1:]  # drop self
        self.where = where
        self.positional: tuple[str, ...] = tuple(
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
        self.keyword_only: tuple[str, ...] = tuple(
            p.name for p in params if p.kind is p.KEYWORD_ONLY
        )
        self.keyword_names = frozenset(
            p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        self.defaults: dict[str, Any] = {
            p.name: p.default for p in params if p.default is not p.empty
        }
        self.var_positional: str | None = next(
            (p.name for p in params if p.kind is p.VAR_POSITIONAL), None
        )
        self.var_keyword: str | None = next(
            (p.name for p in params if p.kind is p.VAR_KEYWORD), None
        )
        self.order: tuple[str, ...] = tuple(p.name for p in params)

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments as one dict in signature order.

        :raises TypeError: as Python would for a bad call, naming the method.
        """
        positional = self.positional
        if len(args) > len(positional) and self.var_positional is None:
            raise TypeError(
                f"{self.where}() takes {len(positional)} positional argument(s) but "
                f"{len(args)} were given"
            )
        bound: dict[str, Any] = dict(zip(positional, args, strict=False))
        extra_kwargs: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"{self.where}() got multiple values for argument {key!r}")
            if key in self.keyword_names:
                bound[key] = value
            elif self.var_keyword is not None:
                extra_kwargs[key] = value
            else:
                raise TypeError(f"{self.where}() got an unexpected keyword argument {key!r}")
        result: dict[str, Any] = {}
        for name in self.order:
            if name in bound:
                result[name] = bound[name]
            elif name == self.var_positional:
                result[name] = tuple(args[len(positional) :])
            elif name == self.var_keyword:
                result[name] = extra_kwargs
            elif name in self.defaults:
                result[name] = self.defaults[name]
            else:
                raise TypeError(f"{self.where}() missing required argument {name!r}")
        return result

    def unbind(self, kw: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments that call the method with the values in *kw*.

        Keys that are not parameters go to ``**kwargs`` when the method has one.

        :raises TypeError: when a required argument is missing or a key is unknown.
        """
        args: list[Any] = []
        for name in self.positional:
            if name in kw:
                args.append(kw[name])
            elif name in self.defaults:
                args.append(self.defaults[name])
            else:
                raise TypeError(
                    f"{self.where}(): a pre hook returned arguments without the required "
                    f"argument {name!r}"
                )
        if self.var_positional is not None:
            args.extend(kw.get(self.var_positional, ()))
        kwargs: dict[str, Any] = {name: kw[name] for name in self.keyword_only if name in kw}
        known = self.order
        for key, value in kw.items():
            if key in known:
                continue
            if self.var_keyword is None:
                raise TypeError(f"{self.where}(): a pre hook returned the unknown argument {key!r}")
            kwargs[key] = value
        if self.var_keyword is not None:
            kwargs.update(kw.get(self.var_keyword, {}))
        return args, kwargs


async def _call_hook(entry: HookEntry, *arguments: Any) -> Any:
    _, hook, is_async = entry
    result = hook(*arguments)
    if is_async or inspect.isawaitable(result):
        result = await result
    return result


async def _run_with_hooks(
    self: AgentBase,
    func: Callable[..., Coroutine[Any, Any, Any]],
    spec: _CallSpec,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pre_hooks: tuple[HookEntry, ...],
    post_hooks: tuple[HookEntry, ...],
) -> Any:
    kw = spec.bind(args, kwargs)
    for entry in pre_hooks:
        result = await _call_hook(entry, self, copy_hook_value(kw))
        if result is not None:
            if not isinstance(result, dict):
                raise TypeError(
                    f"pre hook {entry[0]!r} of {spec.where}() must return a dict of arguments "
                    f"or None, not {type(result).__name__}"
                )
            kw = result
    call_args, call_kwargs = spec.unbind(kw)
    output = await func(self, *call_args, **call_kwargs)
    for entry in post_hooks:
        result = await _call_hook(entry, self, copy_hook_value(kw), copy_hook_value(output))
        if result is not None:
            output = result
    return output


def _missing_init(self: AgentBase) -> AgentError:
    return AgentError(
        f"{type(self).__name__}.__init__ must call super().__init__() before the agent is used"
    )


def direct_method(agent: AgentBase, method_name: str) -> Callable[..., Any] | None:
    """The function *agent*'s hooked method *method_name* wraps, for callers that resolve it
    once and call it often (a message hub, once per delivery); ``None`` when the method is not
    a hook wrapper (replaced on the instance or the class), in which case callers must call
    ``getattr(agent, method_name)``.

    Calling ``func(agent, ...)`` is exactly what the wrapper does when no hook applies: no
    instance hook on the agent (its registry, :func:`instance_hooks`, is empty) and no class
    hook anywhere (``not HOOK_COUNTS[1]``); callers check that before every call.
    """
    if method_name in agent.__dict__:  # replaced on the instance
        return None
    # One attribute tells both whether the class attribute is a hook wrapper and what it
    # wraps (this runs on the hot path of every reply).
    return getattr(getattr(agent.__class__, method_name, None), _WRAPS, None)


# Set on every hook wrapper: the function it wraps.
_WRAPS = "__agentscope_rt_wraps__"


def wrapped_function(obj: Any) -> Callable[..., Any] | None:
    """The function *obj* wraps when it is a hook wrapper (made by :func:`wrap_hooked_method`),
    else ``None``."""
    return getattr(obj, _WRAPS, None)


def instance_hooks(agent: AgentBase) -> Mapping[str, Mapping[str, HookEntry]]:
    """*agent*'s live instance-hook registry (mutated in place, never replaced: holding it
    keeps a check current).

    :raises AgentError: when the agent's ``__init__`` did not call ``super().__init__()``.
    """
    try:
        return agent._instance_hooks
    except AttributeError:
        raise _missing_init(agent) from None


def wrap_hooked_method(
    func: Callable[..., Coroutine[Any, Any, Any]],
    method_name: str,
    kind: str,
    owner: str,
    check_input: Callable[[Any, tuple[Any, ...], dict[str, Any]], None] | None = None,
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """Wrap *func* so that ``pre_<kind>`` and ``post_<kind>`` hooks run around it.

    :param method_name: the attribute name (``"reply"``, ``"_reasoning"``).
    :param kind: the hook kind (``"reply"``, ``"reasoning"``).
    :param check_input: ``check_input(self, args, kwargs)`` validates the caller's arguments
        before anything runs.
    """
    spec = _CallSpec(func, f"{owner}.{method_name}")
    pre_type = "pre_" + kind
    post_type = "post_" + kind

    @functools.wraps(func)
    async def hooked(self: AgentBase, *args: Any, **kwargs: Any) -> Any:
        if check_input is not None:
            check_input(self, args, kwargs)
        try:
            instance = self._instance_hooks
        except AttributeError:
            raise _missing_init(self) from None
        inst_pre = instance.get(pre_type)
        inst_post = instance.get(post_type)
        if not (inst_pre or inst_post or _state[1]):
            # No hook anywhere (the common case): whichever wrapper this is, call straight in.
            return await func(self, *args, **kwargs)
        top = getattr(type(self), method_name)
        if top is not hooked and wrapped_function(top) is not None:
            # Reached through super() from a more derived hooked method: its wrapper runs
            # the hooks, so they fire once per call.
            return await func(self, *args, **kwargs)
        if _state[1]:
            resolved = resolved_class_hooks(type(self))
            cls_pre = resolved.get(pre_type, _NO_HOOKS)
            cls_post = resolved.get(post_type, _NO_HOOKS)
        else:
            cls_pre = cls_post = _NO_HOOKS
        if not (inst_pre or inst_post or cls_pre or cls_post):
            return await func(self, *args, **kwargs)
        pre = (*inst_pre.values(), *cls_pre) if inst_pre else cls_pre
        post = (*inst_post.values(), *cls_post) if inst_post else cls_post
        return await _run_with_hooks(self, func, spec, args, kwargs, pre, post)

    setattr(hooked, _WRAPS, func)
    return hooked
