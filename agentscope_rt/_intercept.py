"""Routes and interceptors: the one place that puts code around the methods of classes.

A base class declares its *routes* here, the methods every caller goes through (an agent's
``reply``, ``observe``, ``print`` and ``__call__``; a ReAct agent's ``_reasoning`` and
``_acting``; a chat or embedding model's ``__call__``; a formatter's ``format``; a toolkit's
``call_tool_function``), each under a *kind* (``"reply"``, ``"chat"``, ``"tool"``, ...).
Every class that defines one of those methods gets one generated wrapper for it, when the
class is created (through :class:`Routed`) or when the route is declared, and keeps it for
good. The wrapper has the method's own signature, so a call passes its arguments straight
through (no ``*args`` / ``**kwargs`` packing, which on Python 3.11 costs several times the
wrapper), and its source is registered with :mod:`linecache`, so a traceback shows it.

*Interceptors* (agent hooks, tracing, durable runs) register with a kind and unregister from
it, as trio's instruments do; nothing else ever changes a class. A wrapper tests one thing
before calling the method: whether anything is registered for its kind. Only then does it
build a :class:`Call` and run the interceptors, in registration order (the first registered
is the outermost), each handing the call on with ``proceed``.

*Observers* (the studio) only watch: told of a call before it runs and of its result or
exception after, they can change neither (see :class:`Observer`). The wrapper calls them
itself, so a call that only observers watch costs two method calls and no more: no
:class:`Call`, no chain, no context variable, no further coroutine.

One rule against running interceptors twice for one call: while the interceptors of a kind
run for an object, a call of a route of that kind on the same object from inside that call
(an override calling ``super()``, ``format_within`` calling ``format``, a task the call
starts) goes straight to its method. The rule is a context variable per kind, so it holds
under concurrency: calls from other tasks are intercepted as usual. Observers have a rule
that costs no context variable: they are told of a call at the wrapper the object's class
resolves the method to, so a call through ``super()`` (or ``Base.method(obj, ...)``) is part
of the call it is made in.

This module imports nothing of the package: routes are declared to it.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import linecache
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = [
    "Call",
    "Interceptor",
    "Observer",
    "Precondition",
    "Routed",
    "declare",
    "installed",
    "intercepting",
    "register",
    "register_observer",
    "route_of",
    "unregister",
    "unregister_observer",
]

# The package's logger, by name: this module imports nothing of the package.
logger = logging.getLogger("agentscope_rt")


class Precondition:
    """What a route's wrapper checks of its arguments before anything else runs.

    :param fine_when: a Python expression, true when the arguments are certainly fine, with
        a ``{name}`` placeholder for each argument in *arguments* and for each key of
        *names*; it is compiled into the wrapper, so the common case costs no call.
    :param check: ``check(obj, *values)`` (the values of *arguments*, in order; ``None`` for
        one the method cannot receive), called when *fine_when* is false; it raises for a bad
        input.
    :param arguments: ``(name, position)`` pairs: the argument called *name*, else the one
        at *position* among the method's positional parameters after ``self``.
    :param names: objects the expression refers to (``{"Msg": Msg}``).
    """

    __slots__ = ("arguments", "check", "fine_when", "names")

    def __init__(
        self,
        fine_when: str,
        check: Callable[..., None],
        *,
        arguments: Sequence[tuple[str, int]],
        names: Mapping[str, Any] | None = None,
    ) -> None:
        self.fine_when = fine_when
        self.check = check
        self.arguments = tuple(arguments)
        self.names = dict(names or {})


class Call:
    """One intercepted call of a route, as interceptors see it.

    ``args`` and ``kwargs`` are the caller's own objects: an interceptor that changes what
    the method receives passes new ones to ``proceed`` and never mutates these.
    """

    __slots__ = ("args", "kwargs", "obj", "site")

    def __init__(self, site: _Site, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self.site = site
        self.obj = obj
        self.args = args
        self.kwargs = kwargs

    @property
    def kind(self) -> str:
        """The route's kind (``"reply"``, ``"chat"``, ...)."""
        return self.site.route.kind.name

    @property
    def method(self) -> str:
        """The method's name (``"reply"``, ``"__call__"``, ``"_acting"``, ...)."""
        return self.site.route.method

    @property
    def owner(self) -> type:
        """The class that defines the method being called."""
        return self.site.owner

    def arguments(self) -> dict[str, Any]:
        """The call's arguments as one dict in signature order: defaults applied, extra
        positional arguments under the ``*args`` name, extra keywords under the
        ``**kwargs`` name.

        :raises TypeError: as Python would for a bad call, naming the method.
        """
        return self.site.spec().bind(self.args, self.kwargs)

    def rebuild(self, arguments: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The ``(args, kwargs)`` that call the method with *arguments* (a dict shaped as
        :meth:`arguments` returns; keys that are not parameters go to ``**kwargs`` when the
        method has one).

        :raises TypeError: when a required argument is missing or a key is unknown.
        """
        return self.site.spec().unbind(arguments)


class Interceptor(Protocol):
    """Something that runs around the calls of a kind of route.

    For a route declared ``is_async`` (all but the toolkit's), ``intercept`` is a coroutine
    function and ``proceed(args, kwargs)`` returns an awaitable; for a synchronous route
    both are plain calls. Whatever ``intercept`` returns is what the caller gets.
    """

    def intercept(
        self, call: Call, proceed: Callable[[tuple[Any, ...], dict[str, Any]], Any]
    ) -> Any:
        """Run around *call*; ``proceed(args, kwargs)`` runs the rest of the chain."""
        ...


class Observer(Protocol):
    """Something that watches the calls of a kind of route without taking part in them.

    For each call, ``before`` is called as the call starts and ``after`` once as it ends
    (exactly once, whether it returned, raised or was cancelled), both synchronously in the
    caller's task (or thread, for a synchronous route), for an async route as for a
    synchronous one. An observer cannot change the arguments, the result or the exception:
    an exception raised by ``before`` or ``after`` is logged (logger ``agentscope_rt``) and
    the call carries on as if the observer had returned (``before`` as if it returned
    ``None``). Watching never breaks what is watched; an observer that must be able to
    change or stop a call is an :class:`Interceptor`.
    """

    def before(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call on *obj* starts. *args* holds the method's positional parameters (each
        one, defaults filled in, extra positional arguments after them), *kwargs* its
        keyword-only parameters and extra keywords: the caller's own objects, never to be
        mutated. What this returns is handed to :meth:`after` for the same call."""
        ...

    def after(self, obj: Any, state: Any, result: Any, error: BaseException | None) -> None:
        """The call on *obj* that :meth:`before` returned *state* for ended: with *result*
        (what the caller gets; a stream the caller iterates is a result, its end is not
        watched) and ``error`` ``None``, or with *error* raised (a cancellation included:
        it propagates once this returns) and *result* ``None``."""
        ...


class _Observers:
    """The observers of a kind, as its wrappers call them: ``before`` and ``after`` are the
    observer's own methods when there is one (no call in between), else they call each
    observer in turn (in registration order; ``after`` in the reverse order)."""

    __slots__ = ("after", "before", "items")

    def __init__(self, items: tuple[Observer, ...]) -> None:
        self.items = items
        self.before: Callable[..., Any]
        self.after: Callable[..., None]
        if len(items) == 1:
            self.before, self.after = items[0].before, items[0].after
        else:
            self.before, self.after = self._before_each, self._after_each

    def _before_each(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        states = []
        for item in self.items:
            try:
                state = item.before(obj, args, kwargs)
            except Exception:
                _observer_failed(item, "before")
                state = None
            states.append(state)
        return states

    def _after_each(
        self, obj: Any, states: list[Any], result: Any, error: BaseException | None
    ) -> None:
        for item, state in zip(reversed(self.items), reversed(states), strict=True):
            try:
                item.after(obj, state, result, error)
            except Exception:
                _observer_failed(item, "after")


def _observer_failed(observer: object, method: str) -> None:
    """Log an observer's failure (the call it watches carries on)."""
    logger.exception("%r failed in %s; the call it watches carries on", observer, method)


class _Kind:
    """A kind of route: its interceptors and observers, and its guard against running the
    interceptors twice."""

    __slots__ = ("active", "interceptors", "is_async", "name", "observers", "running")

    def __init__(self, name: str, is_async: bool) -> None:
        self.name = name
        self.is_async = is_async
        # What every wrapper of the kind tests first: false while nothing is registered.
        self.active = False
        self.interceptors: tuple[Interceptor, ...] = ()
        self.observers: _Observers | None = None
        self.running: ContextVar[object] = ContextVar(
            f"agentscope_rt_intercepting_{name}", default=None
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # A class sent by value to another process (Ray, cloudpickle) takes its wrappers with
        # it: there they test that process's kind of the same name.
        return (_kind, (self.name,))


class _Route:
    __slots__ = ("base", "kind", "method", "precondition")

    def __init__(
        self, base: type, method: str, kind: _Kind, precondition: Precondition | None
    ) -> None:
        self.base = base
        self.method = method
        self.kind = kind
        self.precondition = precondition

    def __reduce__(self) -> tuple[Any, ...]:
        return (_declared_route, (self.base, self.method))


def _declared_route(base: type, method: str) -> _Route:
    """The route declared as ``base.<method>`` in this process."""
    for route in _routes:
        if route.base is base and route.method == method:
            return route
    raise LookupError(f"no route {base.__qualname__}.{method} is declared in this process")


class _Site:
    """One wrapped method: a route as one class defines it."""

    __slots__ = ("_spec", "func", "owner", "route")

    def __init__(self, route: _Route, owner: type, func: Callable[..., Any]) -> None:
        self.route = route
        self.owner = owner
        self.func = func
        self._spec: _CallSpec | None = None

    def spec(self) -> _CallSpec:
        if self._spec is None:
            self._spec = _CallSpec(self.func, f"{self.owner.__name__}.{self.route.method}")
        return self._spec


_kinds: dict[str, _Kind] = {}
_routes: list[_Route] = []

# Set on every generated wrapper: its site.
_SITE = "__agentscope_rt_route__"


# -- declaring routes ----------------------------------------------------------------------


class Routed:
    """A base for classes with routes: every subclass's route methods are wrapped as the
    subclass is created."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for route in _routes:
            if issubclass(cls, route.base):
                _wrap(cls, route)


def declare(
    base: type,
    method: str,
    kind: str,
    *,
    is_async: bool = True,
    precondition: Precondition | None = None,
) -> None:
    """Declare ``base.<method>`` a route of *kind*: wrap it in *base* and in every class
    derived from it, now and from now on (*base* derives from :class:`Routed`).

    :param is_async: the route's methods are ``async def`` (awaited); else plain functions
        whose result the caller uses as it is (the toolkit's stream).
    :raises TypeError: when *base* is not :class:`Routed`, when *kind* was declared with the
        other ``is_async``, or when a class defines *method* as something the route cannot
        wrap.
    """
    if not (isinstance(base, type) and issubclass(base, Routed)):
        raise TypeError(f"routes are declared on subclasses of Routed, not on {base!r}")
    known = _kinds.get(kind)
    if known is None:
        known = _kinds[kind] = _Kind(kind, is_async)
    elif known.is_async != is_async:
        raise TypeError(f"the routes of kind {kind!r} are all async or all sync")
    route = _Route(base, method, known, precondition)
    _routes.append(route)
    for cls in _family(base):
        _wrap(cls, route)


def _family(base: type) -> Iterator[type]:
    seen: set[type] = set()
    pending = [base]
    while pending:
        cls = pending.pop()
        if cls not in seen:
            seen.add(cls)
            yield cls
            pending.extend(cls.__subclasses__())


def route_of(func: Any) -> tuple[str, Callable[..., Any]] | None:
    """``(kind, wrapped method)`` when *func* is a route wrapper made here, else ``None``."""
    site: _Site | None = getattr(func, _SITE, None)
    return None if site is None else (site.route.kind.name, site.func)


def _wrap(cls: type, route: _Route) -> None:
    func = cls.__dict__.get(route.method)
    if func is None or route_of(func) is not None or getattr(func, "__isabstractmethod__", False):
        return
    where = f"{cls.__name__}.{route.method}"
    if not inspect.isfunction(func):
        raise TypeError(
            f"{where} must be a function defined with def (it is a route of kind "
            f"{route.kind.name!r}), not {type(func).__name__}"
        )
    if route.kind.is_async and not inspect.iscoroutinefunction(func):
        raise TypeError(
            f"{where} must be an async def method (it is awaited by its callers and "
            f"interceptable as {route.kind.name!r}), not a plain function"
        )
    site = _Site(route, cls, func)
    wrapper = _generate(site)
    functools.update_wrapper(wrapper, func)
    setattr(wrapper, _SITE, site)
    type.__setattr__(cls, route.method, wrapper)


# -- interceptors --------------------------------------------------------------------------


def _kind(name: str) -> _Kind:
    try:
        return _kinds[name]
    except KeyError:
        raise ValueError(
            f"no route of kind {name!r} is declared; declared kinds: {sorted(_kinds)}"
        ) from None


def register(kind: str, interceptor: Interceptor) -> None:
    """Run *interceptor* around every call of the routes of *kind* from now on (after the
    interceptors registered before it, inside them).

    :raises ValueError: for an undeclared kind, or when *interceptor* is registered already.
    """
    known = _kind(kind)
    known.interceptors = _added(known.interceptors, interceptor, kind)
    _settle(known)


def unregister(kind: str, interceptor: Interceptor) -> None:
    """Stop running *interceptor* around calls of *kind* (calls already inside it finish).

    :raises ValueError: for an undeclared kind, or when *interceptor* is not registered.
    """
    known = _kind(kind)
    known.interceptors = _removed(known.interceptors, interceptor, kind)
    _settle(known)


def register_observer(kind: str, observer: Observer) -> None:
    """Tell *observer* of every call of the routes of *kind* from now on (see
    :class:`Observer`), after the observers registered before it (its ``after`` before
    theirs).

    Observers are told of a call at the wrapper the object's class resolves the method to:
    once per call made on the object from outside, whatever runs inside it; a call through
    ``super()`` or ``Base.method(obj, ...)`` from inside is part of that call. Interceptors
    of the kind run inside the observers: ``before`` sees the call as the caller made it,
    ``after`` what the caller gets.

    :raises ValueError: for an undeclared kind, or when *observer* is registered already.
    """
    known = _kind(kind)
    watching = () if known.observers is None else known.observers.items
    _observe(known, _added(watching, observer, kind))


def unregister_observer(kind: str, observer: Observer) -> None:
    """Stop telling *observer* of calls of *kind* (calls it was told of the start of are
    still told to it as they end).

    :raises ValueError: for an undeclared kind, or when *observer* is not registered.
    """
    known = _kind(kind)
    watching = () if known.observers is None else known.observers.items
    _observe(known, _removed(watching, observer, kind))


def _added(items: tuple[Any, ...], item: Any, kind: str) -> tuple[Any, ...]:
    if any(other is item for other in items):
        raise ValueError(f"{item!r} is registered for {kind!r} already")
    return (*items, item)


def _removed(items: tuple[Any, ...], item: Any, kind: str) -> tuple[Any, ...]:
    remaining = tuple(other for other in items if other is not item)
    if len(remaining) == len(items):
        raise ValueError(f"{item!r} is not registered for {kind!r}")
    return remaining


def _observe(known: _Kind, observers: tuple[Observer, ...]) -> None:
    # A new object each time: a call holds the one it was told of the start by.
    known.observers = _Observers(observers) if observers else None
    _settle(known)


def _settle(known: _Kind) -> None:
    known.active = bool(known.interceptors) or known.observers is not None


def installed() -> dict[str, tuple[Interceptor | Observer, ...]]:
    """What is registered now, per kind: its interceptors, then its observers (kinds with
    neither left out)."""
    return {
        name: (*kind.interceptors, *(kind.observers.items if kind.observers else ()))
        for name, kind in _kinds.items()
        if kind.active
    }


def intercepting(kind: str, obj: object) -> bool:
    """Whether the interceptors of *kind* are running for a call on *obj* in this task (a
    call of a route of *kind* on *obj* made now goes straight to its method)."""
    return _kind(kind).running.get() is obj


def _proceed(
    site: _Site, obj: Any, chain: tuple[Interceptor, ...], index: int
) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    if index == len(chain):
        func = site.func
        return lambda args, kwargs: func(obj, *args, **kwargs)
    interceptor = chain[index]
    rest = _proceed(site, obj, chain, index + 1)
    return lambda args, kwargs: interceptor.intercept(Call(site, obj, args, kwargs), rest)


async def _run_async(site: _Site, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call of an async route while something is registered for its kind (the method
    alone when no interceptor is, or they run for *obj* already)."""
    kind = site.route.kind
    if not kind.interceptors or kind.running.get() is obj:
        return await site.func(obj, *args, **kwargs)
    token = kind.running.set(obj)
    try:
        return await _proceed(site, obj, kind.interceptors, 0)(args, kwargs)
    finally:
        kind.running.reset(token)


def _run_sync(site: _Site, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call of a synchronous route while something is registered for its kind (see
    :func:`_run_async`)."""
    kind = site.route.kind
    if not kind.interceptors or kind.running.get() is obj:
        return site.func(obj, *args, **kwargs)
    token = kind.running.set(obj)
    try:
        return _proceed(site, obj, kind.interceptors, 0)(args, kwargs)
    finally:
        kind.running.reset(token)


# -- the generated wrapper -----------------------------------------------------------------

_PREFIX = "_rw_"
_serial = itertools.count(1)


def _generate(site: _Site) -> Callable[..., Any]:
    """The wrapper of *site*, compiled from source with the method's own parameters."""
    func = site.func
    route = site.route
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise TypeError(f"{func.__qualname__} must take the object as its first argument")
    if any(p.name.startswith(_PREFIX) for p in params):
        raise TypeError(
            f"{func.__qualname__}: parameter names starting with {_PREFIX!r} are reserved"
        )
    self_name = params[0].name
    namespace: dict[str, Any] = {
        f"{_PREFIX}func": func,
        f"{_PREFIX}kind": route.kind,
        f"{_PREFIX}site": site,
        f"{_PREFIX}run": _run_async if route.kind.is_async else _run_sync,
        f"{_PREFIX}failed": _observer_failed,
    }
    signature: list[str] = []
    forward: list[str] = []  # the call of func, after self
    packed_args: list[str] = []  # the call's positional arguments, for the interceptors
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
        if p.kind is p.KEYWORD_ONLY:
            packed_kwargs.append(f"{p.name!r}: {p.name}")
        elif p.kind is p.VAR_KEYWORD:
            packed_kwargs.append(passed)
        else:
            packed_args.append(passed)
    lines = [
        f"{'async ' if route.kind.is_async else ''}def {func.__name__}({', '.join(signature)}):"
    ]
    if route.precondition is not None:
        lines += _precondition_lines(route.precondition, params[1:], self_name, namespace)
    packed = "".join(f"{arg}, " for arg in packed_args)
    lines += _dispatch_lines(
        route,
        self_name,
        call=f"{_PREFIX}func({', '.join([self_name, *forward])})",
        packed=(f"({packed})", f"{{{', '.join(packed_kwargs)}}}"),
    )
    source = "\n".join(lines) + "\n"
    filename = f"<route wrapper {next(_serial)} of {site.owner.__module__}.{func.__qualname__}>"
    # Registered so that a traceback through the wrapper shows its source (as attrs does for
    # the methods it generates).
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    wrapper: Callable[..., Any] = namespace[func.__name__]
    # By a name no parameter can shadow: the observers' test of the method the object's
    # class resolves to.
    namespace[f"{_PREFIX}wrapper"] = wrapper
    return wrapper


def _dispatch_lines(
    route: _Route, self_name: str, *, call: str, packed: tuple[str, str]
) -> list[str]:
    """The wrapper's body after its precondition: *call* (the method's call, arguments
    passed through) alone while nothing is registered; else with the observers told around
    it, and through the interceptors (``_run_async`` / ``_run_sync``) when any is registered.
    *packed* is the source of the call's ``(args, kwargs)``."""
    p, obj = _PREFIX, self_name
    awaiting = "await " if route.kind.is_async else ""
    run = f"{awaiting}{p}run({p}site, {obj}, {p}args, {p}kwargs)"
    return [
        f"    if not {p}kind.active:",
        f"        return {awaiting}{call}",
        f"    {p}args, {p}kwargs = {packed[0]}, {packed[1]}",
        f"    {p}seen = {p}kind.observers",
        f"    if {p}seen is None or type({obj}).{route.method} is not {p}wrapper:",
        f"        return {run}",
        "    try:",
        f"        {p}state = {p}seen.before({obj}, {p}args, {p}kwargs)",
        "    except Exception:",
        f"        {p}failed({p}seen.items[0], 'before')",
        f"        {p}state = None",
        "    try:",
        f"        if {p}kind.interceptors:",
        f"            {p}result = {run}",
        "        else:",
        f"            {p}result = {awaiting}{call}",
        f"    except BaseException as {p}error:",
        "        try:",
        f"            {p}seen.after({obj}, {p}state, None, {p}error)",
        "        except Exception:",
        f"            {p}failed({p}seen.items[0], 'after')",
        "        raise",
        "    try:",
        f"        {p}seen.after({obj}, {p}state, {p}result, None)",
        "    except Exception:",
        f"        {p}failed({p}seen.items[0], 'after')",
        f"    return {p}result",
    ]


def _precondition_lines(
    precondition: Precondition,
    params: list[inspect.Parameter],
    self_name: str,
    namespace: dict[str, Any],
) -> list[str]:
    namespace[f"{_PREFIX}check"] = precondition.check
    placeholders: dict[str, str] = {}
    lines: list[str] = []
    for index, (name, position) in enumerate(precondition.arguments):
        local = f"{_PREFIX}a{index}"
        lines.append(f"    {local} = {_argument_expr(params, name, position)}")
        placeholders[name] = local
    for name, value in precondition.names.items():
        namespace[f"{_PREFIX}n_{name}"] = value
        placeholders[name] = f"{_PREFIX}n_{name}"
    values = ", ".join(placeholders[name] for name, _ in precondition.arguments)
    lines += [
        f"    if not ({precondition.fine_when.format(**placeholders)}):",
        f"        {_PREFIX}check({self_name}, {values})",
    ]
    return lines


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


# -- binding a call's arguments to names ---------------------------------------------------


class _CallSpec:
    """How a method's arguments map to names, computed once per method, on first use.

    :meth:`bind` turns a call's ``(args, kwargs)`` into one dict (defaults applied, extra
    positional arguments under the ``*args`` name, extra keywords under the ``**kwargs``
    name, as AgentScope's hooks see them); :meth:`unbind` turns a (possibly rewritten) dict
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

    def unbind(self, kw: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args: list[Any] = []
        for name in self.positional:
            if name in kw:
                args.append(kw[name])
            elif name in self.defaults:
                args.append(self.defaults[name])
            else:
                raise TypeError(f"{self.where}(): missing the required argument {name!r}")
        if self.var_positional is not None:
            args.extend(kw.get(self.var_positional, ()))
        kwargs: dict[str, Any] = {name: kw[name] for name in self.keyword_only if name in kw}
        known = self.order
        for key, value in kw.items():
            if key in known:
                continue
            if self.var_keyword is None:
                raise TypeError(f"{self.where}(): unknown argument {key!r}")
            kwargs[key] = value
        if self.var_keyword is not None:
            kwargs.update(kw.get(self.var_keyword, {}))
        return tuple(args), kwargs
