"""StateModule: objects whose state can be saved to JSON and loaded back.

The contract is AgentScope's: attributes holding other StateModules are saved automatically
and nested to any depth; other attributes are opted in with
:meth:`StateModule.register_state`. What differs is how values are serialised: registered
attributes go through the shared cattrs converter, so attrs values (messages, blocks, plans,
your own attrs classes, and lists/dicts of them) round-trip without custom functions.

Loading is all-or-nothing: :meth:`StateModule.load_state_dict` first builds every new value of
the whole tree, and only when all of them are valid assigns them. A bad state raises
:class:`~agentscope_rt.exception.StateError` and leaves every module unchanged. A sub-module
whose class overrides ``load_state_dict`` is loaded through its override (before anything
else is assigned), so it must check its state before changing anything; if a later one fails,
those already loaded are given back the state they saved before.
"""

from __future__ import annotations

import enum
import json
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._json import MAX_JSON_DEPTH, check_json
from ..exception import MessageFormatError, StateError
from ..message.serde import converter, structure

__all__ = ["StateModule"]

_PRIMITIVES = (str, int, float, bool)


@attrs.frozen
class _StateAttr:
    """How one registered attribute is saved and loaded."""

    to_json: Callable[[Any], Any] | None
    from_json: Callable[[Any], Any] | None
    state_type: Any
    # True when ``to_json`` itself guarantees JSON data (raising MessageFormatError with the
    # path otherwise), so saving skips walking its output again: see _declare_json_checked.
    json_checked: bool = False


# Equal _StateAttr values, shared: every agent of a class registers the same attributes the
# same way, and one record per attribute per agent is memory many idle agents would repeat.
_state_attrs: dict[_StateAttr, _StateAttr] = {}
_STATE_ATTRS_MAX = 4096


# The registered-attribute mappings themselves, shared the same way: every agent of a class
# ends up with the same few names mapped to the same shared records, so one dict serves them
# all. A module's mapping is never changed in place: a change replaces it (_with_attr).
_attr_dicts: dict[tuple[tuple[str, _StateAttr], ...], dict[str, _StateAttr]] = {}
_ATTR_DICTS_MAX = 1024
_NO_ATTRS: dict[str, _StateAttr] = {}  # before the first registration; never changed


def _with_attr(
    registered: Mapping[str, _StateAttr], name: str, attr: _StateAttr | None
) -> dict[str, _StateAttr]:
    """*registered* with *name* set to *attr* (removed for ``None``): a new mapping, shared
    with every module registered the same way when possible."""
    changed = dict(registered)
    if attr is None:
        changed.pop(name, None)
    else:
        changed[name] = attr
    try:
        key = tuple(changed.items())
        shared = _attr_dicts.get(key)
    except TypeError:  # an unhashable state type: not shared
        return changed
    if shared is not None:
        return shared
    if len(_attr_dicts) < _ATTR_DICTS_MAX:
        _attr_dicts[key] = changed
    return changed


def _shared_state_attr(
    to_json: Callable[[Any], Any] | None,
    from_json: Callable[[Any], Any] | None,
    state_type: Any,
    json_checked: bool = False,
) -> _StateAttr:
    """A :class:`_StateAttr` equal to one made from the arguments, shared when possible."""
    attr = _StateAttr(to_json, from_json, state_type, json_checked)
    try:
        shared = _state_attrs.get(attr)
    except TypeError:  # an unhashable state type: not shared
        return attr
    if shared is not None:
        return shared
    if len(_state_attrs) < _STATE_ATTRS_MAX:  # bounded: per-instance closures never match
        _state_attrs[attr] = attr
    return attr


def _declare_json_checked(module: StateModule, attr_name: str) -> None:
    """Declare that *attr_name*'s registered ``custom_to_json`` returns only JSON data within
    :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels, and raises
    :class:`~agentscope_rt.exception.MessageFormatError` naming the path (from *attr_name*)
    of anything else: :meth:`StateModule.state_dict` then trusts its output.

    For this package's own state (a memory's messages), whose converter checks only the
    parts users fill in (metadata, tool arguments) instead of every string of every message.
    """
    attr = module._attribute_dict[attr_name]
    if attr.to_json is None:
        raise StateError(f"{type(module).__name__}.{attr_name} has no custom_to_json to trust")
    module.__dict__["_attribute_dict"] = _with_attr(
        module._attribute_dict,
        attr_name,
        _shared_state_attr(attr.to_json, attr.from_json, attr.state_type, json_checked=True),
    )


def _infer_type(value: Any) -> Any:
    """A type the converter can structure *value*'s JSON form back into.

    Containers get their element type from their items when all items agree; otherwise (and
    for empty containers) the elements stay plain JSON.
    """
    if value is None:
        return Any
    cls = type(value)
    if cls in _PRIMITIVES or attrs.has(cls) or issubclass(cls, enum.Enum):
        return cls
    if cls is list or cls is tuple:
        item_types = {_infer_type(item) for item in value}
        item = item_types.pop() if len(item_types) == 1 else Any
        return list[item] if cls is list else tuple[item, ...]  # type: ignore[valid-type]
    if cls is dict:
        value_types = {_infer_type(item) for item in value.values()}
        item = value_types.pop() if len(value_types) == 1 else Any
        return dict[str, item]  # type: ignore[valid-type]
    return cls


# Per class: the annotations' fingerprint (see _annotations_fingerprint) and the resolved
# hints (None when they cannot be resolved). Resolving is ~1 ms for an agent class, and every
# instance registers its state: many agents of one class share one resolution.
_hints_cache: weakref.WeakKeyDictionary[type, tuple[tuple[Any, ...], dict[str, Any] | None]] = (
    weakref.WeakKeyDictionary()
)


def _annotations_fingerprint(owner: type) -> tuple[Any, ...]:
    """Which annotation dicts the class and its bases have, and their sizes: a class whose
    annotations are added to (or replaced) after a first lookup is resolved again."""
    found = []
    for cls in owner.__mro__:
        # The dict itself, not inspect.get_annotations' copy: its identity is the point.
        annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063
        if annotations is not None:
            found.append((id(annotations), len(annotations)))
    return tuple(found)


def _annotated_type(owner: type, attr_name: str) -> Any:
    """The attribute's annotation on the class (or a base), if it can be resolved."""
    fingerprint = _annotations_fingerprint(owner)
    cached = _hints_cache.get(owner)
    if cached is not None and cached[0] == fingerprint:
        hints = cached[1]
    else:
        try:
            hints = typing.get_type_hints(owner)
        except Exception:  # unresolvable forward references: fall back to inference
            hints = None
        _hints_cache[owner] = (fingerprint, hints)
    return None if hints is None else hints.get(attr_name)


def _check_saveable(module: StateModule, data: Any, key: str) -> None:
    """:raises StateError: if *data*, what *module* saves under *key*, is not JSON data."""
    try:
        check_json(data, key)
    except MessageFormatError as exc:
        raise StateError(f"{type(module).__name__}: cannot save {exc}") from None


def _too_deep(module: StateModule, attr_name: str) -> StateError:
    return StateError(
        f"{type(module).__name__}.{attr_name} is nested too deeply to be saved as JSON (JSON "
        f"data may be nested at most {MAX_JSON_DEPTH} levels deep)"
    )


class StateModule:
    """Base class for everything whose state can be saved and restored.

    Attributes that hold StateModules are saved automatically (found when saving and loading,
    in the order they were first assigned); other attributes are saved once registered with
    :meth:`register_state`. :meth:`state_dict` returns plain JSON data. Nothing is set up in
    ``__init__`` (calling ``super().__init__()`` is harmless): attribute assignment is plain
    Python (not intercepted), so it costs nothing extra on hot paths.
    """

    @property
    def _module_dict(self) -> dict[str, StateModule]:
        """The sub-modules: every instance attribute that holds a StateModule."""
        return {key: value for key, value in vars(self).items() if isinstance(value, StateModule)}

    @property
    def _attribute_dict(self) -> Mapping[str, _StateAttr]:
        """The registered attributes (kept even if ``super().__init__()`` was not called); a
        mapping shared with the modules registered the same way, never changed in place."""
        registered: Mapping[str, _StateAttr] = self.__dict__.get("_attribute_dict", _NO_ATTRS)
        return registered

    def __delattr__(self, key: str) -> None:
        registered = self.__dict__.get("_attribute_dict")
        if registered and key in registered:
            self.__dict__["_attribute_dict"] = _with_attr(registered, key, None)
        object.__delattr__(self, key)

    # -- registration ------------------------------------------------------------------

    def register_state(
        self,
        attr_name: str,
        custom_to_json: Callable[[Any], Any] | None = None,
        custom_from_json: Callable[[Any], Any] | None = None,
        *,
        state_type: Any = None,
        json_checked: bool = False,
    ) -> None:
        """Save and load attribute *attr_name* as part of this module's state.

        Without custom functions the value goes through the shared cattrs converter. The type
        to load it back as is *state_type* when given, else the attribute's class annotation,
        else inferred from the current value (an empty list with no annotation loads back as
        plain JSON, so annotate it or pass ``state_type=list[Msg]``).

        :param custom_to_json: turns the value into JSON data when saving.
        :param custom_from_json: turns that JSON data back into the value when loading.
        :param json_checked: a promise that *custom_to_json* returns only JSON data within
            :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels and raises
            :class:`~agentscope_rt.exception.MessageFormatError` naming the path of anything
            else: :meth:`state_dict` then trusts its output instead of checking every value
            (a memory's messages, whose converter checks only what users fill in).
        :raises StateError: if the attribute does not exist, is itself a StateModule (those
            are tracked automatically), or cannot be serialised to JSON (also when it is nested
            deeper than :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels).
        """
        if not hasattr(self, attr_name):
            raise StateError(
                f"{type(self).__name__} has no attribute {attr_name!r} to register as state; "
                "assign it before calling register_state()"
            )
        # The one attribute, not _module_dict: that walks every attribute, per registration.
        if isinstance(vars(self).get(attr_name), StateModule):
            raise StateError(
                f"{type(self).__name__}.{attr_name} is a StateModule and is already saved "
                "automatically; do not register it"
            )
        value = getattr(self, attr_name)
        try:
            if custom_to_json is not None:
                data = custom_to_json(value)
            else:
                if state_type is None:
                    state_type = _annotated_type(type(self), attr_name) or _infer_type(value)
                data = converter.unstructure(value, unstructure_as=state_type)
            json.dumps(data)
        except (TypeError, ValueError) as exc:
            raise StateError(
                f"{type(self).__name__}.{attr_name} ({type(value).__name__}) cannot be saved "
                f"as JSON ({exc}); pass custom_to_json and custom_from_json to register_state()"
            ) from None
        except RecursionError:
            raise _too_deep(self, attr_name) from None
        _check_saveable(self, data, attr_name)
        self.__dict__["_attribute_dict"] = _with_attr(
            self._attribute_dict,
            attr_name,
            _shared_state_attr(custom_to_json, custom_from_json, state_type),
        )
        if json_checked:
            _declare_json_checked(self, attr_name)

    # -- saving ------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The state of this module and its sub-modules, as plain JSON data.

        :raises StateError: if a registered attribute now holds a value that is not JSON
            serialisable (or is nested deeper than
            :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels).
        """
        state: dict[str, Any] = {}
        for key, module in self._module_dict.items():
            state[key] = module.state_dict()
        for key, attr in self._attribute_dict.items():
            value = getattr(self, key)
            try:
                if attr.json_checked:
                    try:
                        data = attr.to_json(value)  # type: ignore[misc]  # set when declared
                    except MessageFormatError as exc:
                        raise StateError(f"{type(self).__name__}: cannot save {exc}") from None
                    state[key] = data
                    continue
                if attr.to_json is not None:
                    data = attr.to_json(value)
                else:
                    data = converter.unstructure(value, unstructure_as=attr.state_type)
            except RecursionError:
                raise _too_deep(self, key) from None
            _check_saveable(self, data, key)
            state[key] = data
        return state

    # -- loading -----------------------------------------------------------------------

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Restore the state saved by :meth:`state_dict`.

        :param strict: when true, missing and unexpected keys (at any depth) are errors;
            when false, keys missing from *state_dict* are left as they are and unknown keys
            are ignored.
        :raises StateError: naming the offending key path. Nothing is changed then.
        """
        plan: list[tuple[StateModule, str, Any]] = []
        custom: list[tuple[StateModule, Any]] = []
        self._plan_load(state_dict, strict, "", plan, custom)
        # Sub-modules with their own load_state_dict go first, each after saving its current
        # state: when one fails, those loaded before it are put back, so the whole tree is
        # unchanged (the plain attributes are assigned only after every one succeeded).
        loaded: list[tuple[StateModule, dict[str, Any]]] = []
        for module, state in custom:
            previous = module.state_dict()
            try:
                module.load_state_dict(state, strict)
            except Exception as exc:
                for done, before in reversed(loaded):
                    done.load_state_dict(before, strict)
                if isinstance(exc, StateError):
                    raise
                raise StateError(
                    f"{type(module).__name__}.load_state_dict failed: {type(exc).__name__}: {exc}"
                ) from exc
            loaded.append((module, previous))
        for module, key, value in plan:
            setattr(module, key, value)

    def _plan_load(
        self,
        state: Any,
        strict: bool,
        path: str,
        plan: list[tuple[StateModule, str, Any]],
        custom: list[tuple[StateModule, Any]],
    ) -> None:
        where = path or type(self).__name__
        if not isinstance(state, dict):
            raise StateError(f"{where}: expected a state object, got {type(state).__name__}")
        if strict:
            expected = self._module_dict.keys() | self._attribute_dict.keys()
            missing = sorted(expected - state.keys())
            unexpected = sorted(state.keys() - expected)
            if missing or unexpected:
                parts = []
                if missing:
                    parts.append(f"missing keys {missing}")
                if unexpected:
                    parts.append(f"unexpected keys {unexpected}")
                raise StateError(
                    f"{where}: {' and '.join(parts)} (pass strict=False to load a partial state)"
                )
        for key, module in self._module_dict.items():
            if key not in state:
                continue
            if type(module).load_state_dict is not StateModule.load_state_dict:
                # A sub-module that customises loading (as AgentScope code may) is honoured.
                custom.append((module, state[key]))
            else:
                sub_path = f"{path}.{key}" if path else key
                module._plan_load(state[key], strict, sub_path, plan, custom)
        for key, attr in self._attribute_dict.items():
            if key not in state:
                continue
            key_path = f"{path}.{key}" if path else key
            raw = state[key]
            try:
                if attr.from_json is not None:
                    value = attr.from_json(raw)
                else:
                    value = structure(raw, attr.state_type, what="state", path=key_path)
            except MessageFormatError as exc:
                raise StateError(str(exc)) from None
            except Exception as exc:
                raise StateError(
                    f"{key_path}: custom_from_json failed: {type(exc).__name__}: {exc}"
                ) from exc
            plan.append((self, key, value))
