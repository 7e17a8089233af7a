"""``tagged-json``: JSON that brings Python values back as the types they were, without pickle.

The operator runtime keeps its own state (window panes, join buffers, tables) in stores whose
keys and values are whatever the user's functions produced: tuples used as keys, bytes,
dictionaries keyed by integers, dataclasses. Plain JSON loses those types (a tuple comes back a
list, so a window pane key is no longer hashable); pickle keeps them but runs code named by the
bytes it reads, so anyone who can write a changelog stream could run code in the job at restore.
This serde keeps the types and runs nothing the bytes name: a value JSON cannot hold is written
as a one-key object whose key starts with NUL (a tag), and a user class is rebuilt only if the
job registered it (``register_type``) — the bytes carry its name, never code.

Tags: ``"\\u0000t"`` tuple, ``"\\u0000b"`` bytes (base64), ``"\\u0000s"`` set,
``"\\u0000f"`` frozenset, ``"\\u0000d"`` a dict whose keys are not all strings (or a string key
starts with NUL) as ``[[k, v], ...]``, ``"\\u0000T"`` datetime, ``"\\u0000D"`` date,
``"\\u0000N"`` Decimal, ``"\\u0000U"`` UUID, ``"\\u0000o"`` a registered class
``[name, fields]``. Everything else JSON holds is written as itself, so most state reads as
ordinary JSON.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from collections.abc import Callable
from typing import Any

from samza_dagster.serde.serdes import SerdeError, _preview

_TAG = "\x00"
_PICKLE_PREFIX = 0x80  # the first byte of every pickle of protocol 2 or later

#: registered user classes: name → (class, encode to JSON-able fields, decode fields to instance)
_REGISTRY: dict[str, tuple[type, Callable[[Any], Any], Callable[[Any], Any]]] = {}
_NAMES: dict[type, str] = {}


def register_type(cls: type, name: str | None = None) -> type:
    """Let ``tagged-json`` write and read instances of ``cls`` (a dataclass, a NamedTuple or an
    Enum). Usable as a class decorator. The name written into the bytes is ``module.QualName``
    unless given; register the class in the module that defines it, so every container that
    imports the job's code has it registered before a store is opened."""
    type_name = name or f"{cls.__module__}.{cls.__qualname__}"
    if dataclasses.is_dataclass(cls):
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        codec = (lambda obj: {f: _encode(getattr(obj, f)) for f in fields}, lambda data: cls(**data))
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        codec = (lambda obj: [_encode(v) for v in obj], lambda data: cls(*data))
    elif issubclass(cls, enum.Enum):
        codec = (lambda obj: _encode(obj.value), cls)
    else:
        raise TypeError(f"register_type: {cls.__qualname__} is not a dataclass, NamedTuple or Enum")
    existing = _REGISTRY.get(type_name)
    if existing is not None and existing[0] is not cls:
        raise TypeError(f"register_type: the name {type_name!r} is already registered for {existing[0]!r}")
    _REGISTRY[type_name] = (cls, *codec)
    _NAMES[cls] = type_name
    return cls


def _encode(obj: Any) -> Any:
    t = type(obj)
    if t is str or t is int or t is float or t is bool or obj is None:
        return obj
    if t is list:
        return [_encode(v) for v in obj]
    if t is dict:
        if all(type(k) is str and not k.startswith(_TAG) for k in obj):
            return {k: _encode(v) for k, v in obj.items()}
        return {_TAG + "d": [[_encode(k), _encode(v)] for k, v in obj.items()]}
    if t is tuple:
        return {_TAG + "t": [_encode(v) for v in obj]}
    name = _NAMES.get(t)
    if name is not None:
        return {_TAG + "o": [name, _REGISTRY[name][1](obj)]}
    if t is bytes or t is bytearray:
        return {_TAG + "b": base64.b64encode(obj).decode("ascii")}
    if t is set or t is frozenset:
        # in a canonical order, so equal sets (as keys) give equal bytes whatever their history
        return {_TAG + ("s" if t is set else "f"): sorted((_encode(v) for v in obj), key=_canonical)}
    if t is datetime.datetime:
        return {_TAG + "T": obj.isoformat()}
    if t is datetime.date:
        return {_TAG + "D": obj.isoformat()}
    if t is decimal.Decimal:
        return {_TAG + "N": str(obj)}
    if t is uuid.UUID:
        return {_TAG + "U": str(obj)}
    raise SerdeError(
        f"tagged-json: cannot encode a value of type {t.__module__}.{t.__qualname__}; register it with "
        "samza_dagster.serde.register_type (dataclasses, NamedTuples, Enums), or name another serde for the store"
    )


def _canonical(encoded: Any) -> str:
    return json.dumps(encoded, separators=(",", ":"), sort_keys=True)


def _decode_object(name: str, fields: Any) -> Any:
    entry = _REGISTRY.get(name)
    if entry is None:
        raise SerdeError(
            f"tagged-json: the bytes hold a {name!r}, which is not registered in this process; "
            "call samza_dagster.serde.register_type on it in the module that defines it"
        )
    return entry[2](fields)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    _TAG + "t": tuple,
    _TAG + "d": lambda pairs: {_hashable(k): v for k, v in pairs},
    _TAG + "b": base64.b64decode,
    _TAG + "s": lambda items: {_hashable(v) for v in items},
    _TAG + "f": lambda items: frozenset(_hashable(v) for v in items),
    _TAG + "T": datetime.datetime.fromisoformat,
    _TAG + "D": datetime.date.fromisoformat,
    _TAG + "N": decimal.Decimal,
    _TAG + "U": uuid.UUID,
    _TAG + "o": lambda pair: _decode_object(pair[0], pair[1]),
}


def _hashable(value: Any) -> Any:
    if type(value) is list:  # a list inside a key was a tuple (lists cannot be keys); be lenient
        return tuple(value)
    return value


def _object_hook(obj: dict) -> Any:
    if len(obj) == 1:
        (key, value), = obj.items()
        if key.startswith(_TAG):
            decoder = _DECODERS.get(key)
            if decoder is None:
                raise SerdeError(f"tagged-json: unknown tag {key[1:]!r}")
            return decoder(value)
    return obj


class TaggedJsonSerde:
    """See the module docstring. Keys encode canonically (equal keys of the same types give
    equal bytes), as a key-value store needs — except dictionaries, written in insertion order."""

    __slots__ = ()
    _dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    _decoder = json.JSONDecoder(object_hook=_object_hook)

    def to_bytes(self, obj: Any) -> bytes:
        try:
            return self._dumps(_encode(obj)).encode("utf-8")
        except RecursionError:
            raise SerdeError(f"tagged-json: cannot encode {type(obj).__name__}: nested too deeply") from None

    def from_bytes(self, data: bytes) -> Any:
        if data[:1] and data[0] == _PICKLE_PREFIX:
            raise PickledStateError(_preview(data), "<store>")
        try:
            return self._decoder.decode(data.decode("utf-8"))
        except SerdeError:
            raise
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise SerdeError(f"tagged-json: cannot decode {_preview(data)}: {exc}") from None


class PickledStateError(SerdeError):
    """The bytes are a pickle: state written before operator stores stopped using pickle."""

    def __init__(self, preview: str, store: str) -> None:
        self.preview = preview
        super().__init__(
            f"store {store!r}: the bytes are a pickle ({preview}), written by an earlier version that kept operator "
            "state with pickle. This version does not unpickle state unless told to. Either keep reading it as "
            f"pickle — set stores.{store}.key.serde=pickle and stores.{store}.msg.serde=pickle "
            "(only if you trust everyone who can write its changelog stream) — or start the state afresh: "
            "delete the store's changelog stream and its local state directory and reprocess the input "
            "(docs/operations.md, 'Operator state without pickle')"
        )
