"""Hooks around an agent's hooked methods, woven once per class.

AgentScope weaves hooks with a metaclass that calls ``inspect.signature`` and ``deepcopy`` on
every call, and keeps one class-hook registry shared by every agent class. Here:

* each hooked method (``reply``, ``observe``, ``print``; ``_reasoning`` and ``_acting`` on
  ReAct agents) is wrapped once per class: ``observe`` and ``print`` (their input is
  checked) when the class is created, the others when a hook of their kind is first
  registered anywhere (``_agent_base._weave``; until then there is nothing to run around them).
  The wrapper is generated with the method's own signature (as attrs generates ``__init__``),
  so a call passes its arguments straight through: no ``*args`` / ``**kwargs`` packing,
  which on Python 3.11 costs several times the wrapper itself. Every caller — the agent's own
  loop, a message hub, user code — goes through it: there is one route per method;
* with no hook registered anywhere (one attribute test and one counter test), the wrapper
  awaits the method directly: no binding, no copies. Only with hooks does it bind the
  arguments to names (:class:`_CallSpec`, computed once per method) and copy them;
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
from ._checks import InputCheck

if TYPE_CHECKING:
    from ._agent_base import AgentBase

__all__ = [
    "HookEntry",
    "check_hook",
    "copy_hook_value",
    "instance_hooks",
    "resolved_class_hooks",
    "wrap_hooked_method",
    "wrapped_function",
]

HookEntry = tuple[str, Callable[..., Any], bool]
"""``(hook_name, hook, is_coroutine_function)``."""

_NO_HOOKS: tuple[HookEntry, ...] = ()


class _ClassHookRegistry:
    """Global facts about class hooks, read by every hook wrapper on every call."""

    __slots__ = ("live", "sequence", "version")

    def __init__(self) -> None:
        # Bumped whenever any class hook is registered or removed; a class's cached
        # resolution is valid only for the version it was built at.
        self.version = 0
        # Class hooks registered anywhere: with none (the common case) a wrapper skips
        # resolution entirely.
        self.live = 0
        # Orders class-hook registrations globally.
        self.sequence = 0


_class_hooks = _ClassHookRegistry()


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
    _class_hooks.sequence += 1
    return _class_hooks.sequence


def class_hooks_changed(delta: int) -> None:
    """Invalidate every class's resolved hooks; *delta* is the change in live class hooks."""
    _class_hooks.version += 1
    _class_hooks.live += delta


def resolved_class_hooks(cls: type) -> dict[str, tuple[HookEntry, ...]]:
    """The class hooks that apply to instances of *cls*, per hook type, in registration order.

    Hooks registered on *cls* or any base class apply; hooks on subclasses or siblings do not.
    """
    cache: list[Any] = cls._class_hook_cache  # type: ignore[attr-defined]
    if cache[0] == _class_hooks.version:
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
    cache[0] = _class_hooks.version
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


# Set on every hook wrapper: the function it wraps.
_WRAPS = "__agentscope_rt_wraps__"


def wrapped_function(obj: Any) -> Callable[..., Any] | None:
    """The function *obj* wraps when it is a hook wrapper (made by :func:`wrap_hooked_method`),
    else ``None``."""
    return getattr(obj, _WRAPS, None)


def instance_hooks(agent: AgentBase) -> Mapping[str, Mapping[str, HookEntry]]:
    """*agent*'s instance-hook registry (a shared empty mapping until the agent's first
    instance hook, then the agent's own dict, mutated in place from then on).

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
    check_input: InputCheck | None = None,
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """Wrap *func* so that ``pre_<kind>`` and ``post_<kind>`` hooks run around it.

    The wrapper is an ``async def`` with *func*'s own parameters (defaults included), so
    ``inspect.signature`` and ``inspect.iscoroutinefunction`` see what they would see on
    *func*, and a bad call fails as a call of *func* would.

    :param method_name: the attribute name (``"reply"``, ``"_reasoning"``).
    :param kind: the hook kind (``"reply"``, ``"reasoning"``).
    :param check_input: how to validate the caller's ``msg`` (and ``speech``) before
        anything runs.
    """
    spec = _CallSpec(func, f"{owner}.{method_name}")
    pre_type = "pre_" + kind
    post_type = "post_" + kind
    hooked: Callable[..., Coroutine[Any, Any, Any]]

    async def with_hooks(self: AgentBase, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Some hook is registered somewhere: find out whether one applies to this call.
        instance = self._instance_hooks
        inst_pre = instance.get(pre_type)
        inst_post = instance.get(post_type)
        top = getattr(type(self), method_name)
        if top is not hooked and wrapped_function(top) is not None:
            # Reached through super() from a more derived hooked method: its wrapper runs
            # the hooks, so they fire once per call.
            return await func(self, *args, **kwargs)
        if _class_hooks.live:
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

    hooked = _generate_wrapper(func, with_hooks, check_input)
    functools.update_wrapper(hooked, func)
    setattr(hooked, _WRAPS, func)
    return hooked


_PREFIX = "_hw_"


def _generate_wrapper(
    func: Callable[..., Coroutine[Any, Any, Any]],
    with_hooks: Callable[..., Coroutine[Any, Any, Any]],
    check_input: InputCheck | None,
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """The source of the wrapper, with *func*'s parameters, compiled once per method."""
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise TypeError(f"{func.__qualname__} must take the agent as its first argument")
    self_name = params[0].name
    if any(p.name.startswith(_PREFIX) for p in params):
        raise TypeError(
            f"{func.__qualname__}: parameter names starting with {_PREFIX!r} are reserved"
        )
    namespace: dict[str, Any] = {
        f"{_PREFIX}func": func,
        f"{_PREFIX}with_hooks": with_hooks,
        f"{_PREFIX}registry": _class_hooks,
        f"{_PREFIX}missing_init": _missing_init,
    }
    signature: list[str] = []
    forward: list[str] = []  # the call of func, after self
    packed_args: list[str] = []  # the call's positional arguments, for with_hooks
    packed_kwargs: list[str] = []  # and its keyword arguments
    has_star = any(p.kind is p.VAR_POSITIONAL for p in params)
    for index, p in enumerate(params):
        text = p.name
        if p.default is not p.empty:
            namespace[f"{_PREFIX}d_{p.name}"] = p.default
            text += f"={_PREFIX}d_{p.name}"
        if p.kind is p.VAR_POSITIONAL:
            text, passed = "*" + p.name, "*" + p.name
        elif p.kind is p.VAR_KEYWORD:
            text, passed = "**" + p.name, "**" + p.name
        elif p.kind is p.KEYWORD_ONLY:
            passed = f"{p.name}={p.name}"
        else:
            passed = p.name
        if p.kind is p.KEYWORD_ONLY and not has_star:
            signature.append("*")
            has_star = True
        signature.append(text)
        if p.kind is p.POSITIONAL_ONLY and (
            index + 1 == len(params) or params[index + 1].kind is not p.POSITIONAL_ONLY
        ):
            signature.append("/")
        if index == 0:
            continue
        forward.append(passed)
        if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
            packed_kwargs.append(f"{p.name!r}: {p.name}" if p.kind is p.KEYWORD_ONLY else passed)
        else:
            packed_args.append(passed)
    params = params[1:]
    lines = [f"async def {func.__name__}({', '.join(signature)}):"]
    if check_input is not None:
        namespace[f"{_PREFIX}check"] = check_input.check
        namespace[f"{_PREFIX}Msg"] = Msg
        msg_expr = _argument_expr(params, "msg", 0)
        speech_expr = _argument_expr(params, "speech", 2)
        guard = check_input.fine_when.format(
            msg=f"{_PREFIX}m", speech=f"{_PREFIX}s", Msg=f"{_PREFIX}Msg"
        )
        lines += [
            f"    {_PREFIX}m = {msg_expr}",
            f"    {_PREFIX}s = {speech_expr}",
            f"    if not ({guard}):",
            f"        {_PREFIX}check({self_name}, {_PREFIX}m, {_PREFIX}s)",
        ]
    packed = "".join(f"{arg}, " for arg in packed_args)
    lines += [
        "    try:",
        f"        {_PREFIX}instance = {self_name}._instance_hooks",
        "    except AttributeError:",
        f"        raise {_PREFIX}missing_init({self_name}) from None",
        f"    if not {_PREFIX}instance and not {_PREFIX}registry.live:",
        f"        return await {_PREFIX}func({', '.join([self_name, *forward])})",
        f"    return await {_PREFIX}with_hooks({self_name}, ({packed}), "
        f"{{{', '.join(packed_kwargs)}}})",
    ]
    exec(compile("\n".join(lines), f"<hook wrapper of {func.__qualname__}>", "exec"), namespace)
    wrapper: Callable[..., Coroutine[Any, Any, Any]] = namespace[func.__name__]
    return wrapper


def _argument_expr(params: list[inspect.Parameter], name: str, position: int) -> str:
    """An expression giving the argument *name* (else the one at *position*) inside the
    generated wrapper, or ``None`` when the method cannot receive it."""
    for p in params:
        if p.name == name and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return p.name
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if position < len(positional):
        return positional[position].name
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    stars = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    index = position - len(positional)
    from_star = f"{star}[{index}] if len({star}) > {index} else " if star else ""
    from_kwargs = f"{stars}.get({name!r})" if stars else "None"
    return f"({from_star}{from_kwargs})"
