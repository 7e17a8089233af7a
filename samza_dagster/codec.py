"""One way the engine's model objects become JSON and come back: dataclasses (and NamedTuples)
walked field by field, so a wire format is the class's fields, declared once.

* ``to_wire(obj)``: a dataclass → ``{field: value}`` in declaration order (a field's
  ``metadata={"wire": name}`` renames it, ``{"wire": None}`` leaves it out, ``{"sorted": True}``
  sorts a list, ``{"round": n}`` rounds a float); then ``obj.wire_extras()`` if the class has
  it (values computed from the fields, e.g. a stream's main role). A NamedTuple → its fields as a
  dict; a set → a sorted list; a dict → its items sorted by key; an Enum → its value.
* ``from_wire(cls, data)``: the reverse, driven by the class's type hints (dataclasses,
  NamedTuples, ``list``/``set``/``frozenset``/``dict`` of them, ``X | None``, Enums, scalars,
  and any class built from a mapping, such as ``Config``). Keys the class does not declare are
  ignored (a newer writer), missing ones take the field's default.

The formats this produces are pinned byte for byte by tests/test_wire_formats.py.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

T = TypeVar("T")


def to_wire(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            meta = f.metadata
            name = meta.get("wire", f.name)
            if name is None:
                continue
            value = getattr(obj, f.name)
            if meta.get("sorted") and value is not None:
                value = sorted(value)
            elif "round" in meta and value is not None:
                value = round(value, meta["round"])
            out[name] = to_wire(value)
        extras = getattr(obj, "wire_extras", None)
        if extras is not None:
            out.update(extras())
        return out
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {name: to_wire(value) for name, value in zip(obj._fields, obj, strict=True)}
    if isinstance(obj, (set, frozenset)):
        return [to_wire(v) for v in sorted(obj)]
    if isinstance(obj, (list, tuple)):
        return [to_wire(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_wire(v) for k, v in sorted(obj.items())}
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def from_wire(cls: type[T], data: Any) -> T:
    return _decode(cls, data)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(tp: Any, value: Any) -> Any:
    if tp is Any:
        return value
    origin = get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None:
            return None
        options = [a for a in get_args(tp) if a is not type(None)]
        return _decode(options[0], value) if len(options) == 1 else value
    if origin in (set, frozenset, list, tuple):
        (item,) = get_args(tp)[:1] or (Any,)
        return origin(_decode(item, v) for v in value)
    if origin in (dict, Mapping) or tp is dict:
        key_tp, value_tp = get_args(tp) or (Any, Any)
        return {_decode(key_tp, k): _decode(value_tp, v) for k, v in value.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            hints = _hints(tp)
            wire_names = {f.metadata.get("wire", f.name): f for f in dataclasses.fields(tp) if f.init}
            kwargs = {
                f.name: _decode(hints[f.name], value[name])
                for name, f in wire_names.items()
                if name is not None and name in value
            }
            return tp(**kwargs)
        if issubclass(tp, tuple) and hasattr(tp, "_fields"):
            hints = _hints(tp)
            return tp(**{name: _decode(hints.get(name, Any), value[name]) for name in tp._fields if name in value})
        if issubclass(tp, enum.Enum):
            return tp(value)
        if tp in (int, float, str, bool):
            return tp(value)
        if isinstance(value, Mapping):
            # a class built from its mapping (Config): a one-argument constructor
            build: Callable[[Mapping[str, Any]], Any] = tp
            return build(value)
    return value
