"""``msgpack``: MessagePack that brings Python values back as the types they were, without pickle.

The operator runtime keeps its own state (window panes, join buffers, tables) in stores whose
keys and values are whatever the user's functions produced: tuples used as keys, bytes,
dictionaries keyed by integers, dataclasses. JSON loses those types (a tuple comes back a list,
so a window pane key is no longer hashable); pickle keeps them but runs code named by the bytes
it reads, so anyone who can write a changelog stream could run code in the job at restore.

This serde keeps the types and runs nothing the bytes name. What MessagePack holds natively —
None, bool, int (64-bit), float, str, bytes, list, dict with any keys — is written as itself, so
another language's MessagePack reader reads it too. Python's other types are extension types:
1 tuple, 2 set, 3 frozenset, 4 datetime, 5 date, 6 Decimal, 7 UUID, 9 an int beyond 64 bits,
8 a registered class
(``[name, fields]``; rebuilt only when this process registered ``name`` with ``register_type`` —
the bytes carry a name, never code). Chosen over a JSON encoding for speed: the encoder is C,
and only the extension types pass through Python (docs/benchmarks.md, operators).
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import uuid
from collections.abc import Callable
from typing import Any

import msgpack

from samza_dagster.serde.serdes import SerdeError, _preview

_TUPLE, _SET, _FROZENSET, _DATETIME, _DATE, _DECIMAL, _UUID, _OBJECT, _BIG_INT = range(1, 10)

#: registered user classes: name → (class, instance → packable fields, fields → instance)
_REGISTRY: dict[str, tuple[type, Callable[[Any], Any], Callable[[Any], Any]]] = {}
_NAMES: dict[type, str] = {}


def register_type(cls: type, name: str | None = None) -> type:
    """Let the ``msgpack`` serde write and read instances of ``cls`` (a dataclass, a NamedTuple
    or an Enum). Usable as a class decorator. The name written into the bytes is
    ``module.QualName`` unless given; register the class in the module that defines it, so every
    container that imports the job's code has it registered before a store is opened."""
    type_name = name or f"{cls.__module__}.{cls.__qualname__}"
    codec: tuple[Callable[[Any], Any], Callable[[Any], Any]]
    if dataclasses.is_dataclass(cls):
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        codec = (lambda obj: {f: getattr(obj, f) for f in fields}, lambda data: cls(**data))
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        codec = (list, lambda data: cls(*data))
    elif issubclass(cls, enum.Enum):
        codec = (lambda obj: obj.value, cls)
    else:
        raise TypeRegistrationError(f"register_type: {cls.__qualname__} is not a dataclass, NamedTuple or Enum")
    existing = _REGISTRY.get(type_name)
    if existing is not None and existing[0] is not cls:
        raise TypeRegistrationError(f"register_type: the name {type_name!r} is already registered for {existing[0]!r}")
    _REGISTRY[type_name] = (cls, *codec)
    _NAMES[cls] = type_name
    return cls


def _pack(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_default, strict_types=True, use_bin_type=True)


def _canonical(items: Any) -> list:
    """A set's members in the order of their bytes: equal sets (as keys) give equal bytes."""
    return sorted(items, key=_pack)


def _default(obj: Any) -> msgpack.ExtType:
    t = type(obj)
    if t is tuple:
        return msgpack.ExtType(_TUPLE, _pack(list(obj)))
    name = _NAMES.get(t)
    if name is not None:
        return msgpack.ExtType(_OBJECT, _pack([name, _REGISTRY[name][1](obj)]))
    if t is set:
        return msgpack.ExtType(_SET, _pack(_canonical(obj)))
    if t is frozenset:
        return msgpack.ExtType(_FROZENSET, _pack(_canonical(obj)))
    if t is bytearray:
        return bytes(obj)  # type: ignore[return-value]
    if t is datetime.datetime:
        return msgpack.ExtType(_DATETIME, obj.isoformat().encode())
    if t is datetime.date:
        return msgpack.ExtType(_DATE, obj.isoformat().encode())
    if t is decimal.Decimal:
        return msgpack.ExtType(_DECIMAL, str(obj).encode())
    if t is uuid.UUID:
        return msgpack.ExtType(_UUID, obj.bytes)
    if t is int:  # msgpack holds -2**63 .. 2**64-1 natively
        return msgpack.ExtType(_BIG_INT, str(obj).encode())
    raise SerdeError(
        f"msgpack: cannot encode a value of type {t.__module__}.{t.__qualname__}; register it with "
        "samza_dagster.serde.register_type (dataclasses, NamedTuples, Enums), or name another serde for the store"
    )


def _unpack(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext_hook, strict_map_key=False, raw=False)


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _TUPLE:
        return tuple(_unpack(data))
    if code == _OBJECT:
        name, fields = _unpack(data)
        entry = _REGISTRY.get(name)
        if entry is None:
            raise SerdeError(
                f"msgpack: the bytes hold a {name!r}, which is not registered in this process; "
                "call samza_dagster.serde.register_type on it in the module that defines it"
            )
        return entry[2](fields)
    if code == _SET:
        return set(_unpack(data))
    if code == _FROZENSET:
        return frozenset(_unpack(data))
    if code == _DATETIME:
        return datetime.datetime.fromisoformat(data.decode())
    if code == _DATE:
        return datetime.date.fromisoformat(data.decode())
    if code == _DECIMAL:
        return decimal.Decimal(data.decode())
    if code == _UUID:
        return uuid.UUID(bytes=data)
    if code == _BIG_INT:
        return int(data)
    raise SerdeError(f"msgpack: unknown extension type {code}")


def is_pickle(data: bytes) -> bool:
    """Every pickle of protocol 2 or later starts with 0x80 and its protocol number; the only
    MessagePack value starting with 0x80 is the empty map, one byte long."""
    return len(data) > 1 and data[0] == 0x80 and 2 <= data[1] <= 5


#: the range of keys a pickle can start with (``is_pickle``), for one seek in a sorted store
PICKLE_KEY_RANGE = (b"\x80\x02", b"\x80\x06")


class MsgpackSerde:
    """See the module docstring. Keys encode canonically (equal keys of the same types give
    equal bytes), as a key-value store needs — except dictionaries, written in insertion order."""

    __slots__ = ()

    def to_bytes(self, obj: Any) -> bytes:
        try:
            return _pack(obj)
        except SerdeError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise SerdeError(f"msgpack: cannot encode {type(obj).__name__}: {exc}") from None

    def from_bytes(self, data: bytes) -> Any:
        if is_pickle(data):
            raise PickledStateError(_preview(data), "<store>")
        try:
            return _unpack(data)
        except SerdeError:
            raise
        except Exception as exc:  # noqa: BLE001 - msgpack raises several kinds for bad bytes
            raise SerdeError(f"msgpack: cannot decode {_preview(data)}: {exc}") from None


class TypeRegistrationError(SerdeError, TypeError):
    """``register_type`` was given a class it cannot encode (not a dataclass, NamedTuple or
    Enum) or a name already registered for another class; names the class and the name."""


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
