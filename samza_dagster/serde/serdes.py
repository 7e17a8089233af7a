"""The built-in serdes. Each turns one object into bytes and back."""

from __future__ import annotations

import json
import pickle
import struct
from typing import Any, Protocol, runtime_checkable

from samza_dagster.errors import SamzaError


class SerdeError(SamzaError, ValueError):
    """A serde could not encode or decode a value. Callers add the stream coordinates."""


@runtime_checkable
class Serde(Protocol):
    def to_bytes(self, obj: Any) -> bytes: ...

    def from_bytes(self, data: bytes) -> Any: ...


class JsonSerde:
    """Compact UTF-8 JSON, as Samza's JsonSerde writes it."""

    __slots__ = ()
    _dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    _loads = staticmethod(json.loads)

    def to_bytes(self, obj: Any) -> bytes:
        try:
            return self._dumps(obj).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SerdeError(f"json: cannot encode {type(obj).__name__}: {exc}") from None
        except RecursionError:
            raise SerdeError(f"json: cannot encode {type(obj).__name__}: nested too deeply") from None

    def from_bytes(self, data: bytes) -> Any:
        try:
            return self._loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            raise SerdeError(f"json: cannot decode {_preview(data)}: {exc}") from None
        except RecursionError:
            # deeply nested input ("[[[[...") exhausts the parser's stack: still just bad input
            raise SerdeError(f"json: cannot decode {_preview(data)}: nested too deeply") from None


class StringSerde:
    __slots__ = ("encoding",)

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def to_bytes(self, obj: Any) -> bytes:
        if not isinstance(obj, str):
            raise SerdeError(f"string: expected str, got {type(obj).__name__}")
        return obj.encode(self.encoding)

    def from_bytes(self, data: bytes) -> str:
        try:
            return data.decode(self.encoding)
        except (UnicodeDecodeError, AttributeError) as exc:
            raise SerdeError(f"string: cannot decode {_preview(data)}: {exc}") from None


class BytesSerde:
    __slots__ = ()

    def to_bytes(self, obj: Any) -> bytes:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return bytes(obj)
        raise SerdeError(f"bytes: expected bytes, got {type(obj).__name__}")

    def from_bytes(self, data: bytes) -> bytes:
        return bytes(data)


class MetricsSnapshotBytesSerde(BytesSerde):
    """What Samza's ``MetricsSnapshotSerdeFactory`` / ``MetricsSnapshotSerdeV2Factory`` named in
    ``serializers.registry.<name>.class`` resolve to: the metrics stream's messages pass as bytes
    (the snapshot reporter encodes them, ``metrics/snapshot.py``), and ``snapshot_form`` says in
    which of Samza's two forms (``json`` or ``v2``) it writes them."""

    __slots__ = ("snapshot_form",)

    def __init__(self, snapshot_form: str) -> None:
        self.snapshot_form = snapshot_form


class _StructSerde:
    __slots__ = ()
    _struct: struct.Struct
    _name: str

    def to_bytes(self, obj: Any) -> bytes:
        if isinstance(obj, bool) or not isinstance(obj, int):
            raise SerdeError(f"{self._name}: expected int, got {type(obj).__name__}")
        try:
            return self._struct.pack(obj)
        except struct.error as exc:
            raise SerdeError(f"{self._name}: {obj} out of range: {exc}") from None

    def from_bytes(self, data: bytes) -> int:
        try:
            return self._struct.unpack(data)[0]
        except (struct.error, TypeError) as exc:
            raise SerdeError(f"{self._name}: cannot decode {_preview(data)}: {exc}") from None


class IntegerSerde(_StructSerde):
    """4-byte big-endian signed, as Java's ByteBuffer.putInt (Samza's IntegerSerde)."""

    __slots__ = ()
    _struct = struct.Struct(">i")
    _name = "integer"


class LongSerde(_StructSerde):
    """8-byte big-endian signed, as Samza's LongSerde."""

    __slots__ = ()
    _struct = struct.Struct(">q")
    _name = "long"


class NoOpSerde:
    """Passes objects through unchanged: for systems that carry Python objects themselves
    (the in-memory system) and for values already in bytes."""

    __slots__ = ()

    def to_bytes(self, obj: Any) -> Any:
        return obj

    def from_bytes(self, data: Any) -> Any:
        return data


class PickleSerde:
    """Python pickle. Never chosen by default: unpickling runs code, so a user must name it."""

    __slots__ = ()

    def to_bytes(self, obj: Any) -> bytes:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)

    def from_bytes(self, data: bytes) -> Any:
        try:
            return pickle.loads(data)  # noqa: S301 - opted into by the user by name
        except Exception as exc:  # noqa: BLE001 - pickle raises many kinds
            raise SerdeError(f"pickle: cannot decode {_preview(data)}: {exc}") from None


def _preview(data: Any, limit: int = 40) -> str:
    if isinstance(data, (bytes, bytearray)):
        shown = bytes(data[:limit])
        return repr(shown) + ("..." if len(data) > limit else "")
    return repr(data)[:limit]
