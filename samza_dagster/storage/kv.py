"""The KeyValueStore API (as Samza's) and the byte-level stores under it.

Layering, as in Samza: SerializedKeyValueStore (objects <-> bytes with the store's serdes)
→ LoggedStore (every write also goes to the changelog) → a raw byte store (RocksDB or
in-memory). Restore writes straight into the raw store, never back to the changelog."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any, Protocol


class KeyValueStore(Protocol):
    def get(self, key: Any) -> Any: ...
    def put(self, key: Any, value: Any) -> None: ...
    def delete(self, key: Any) -> None: ...
    def get_all(self, keys: Iterable[Any]) -> dict[Any, Any]: ...
    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None: ...
    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]: ...
    def all(self) -> Iterator[tuple[Any, Any]]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class InMemoryRawStore:
    """Bytes → bytes in a dict; ``range``/``all`` sort the keys (byte order, as RocksDB)."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._data[key] = value

    def delete(self, key: bytes) -> None:
        self._data.pop(key, None)

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        keys = sorted(self._data)
        lo = bisect.bisect_left(keys, from_key)
        hi = bisect.bisect_left(keys, to_key)
        data = self._data
        return iter([(k, data[k]) for k in keys[lo:hi]])

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        data = self._data
        return iter([(k, data[k]) for k in sorted(data)])

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def clear(self) -> None:
        self._data.clear()


class RocksDBRawStore:
    """Bytes → bytes in a RocksDB database (rocksdict, raw mode) at ``path``."""

    def __init__(self, path: str) -> None:
        from rocksdict import Options, Rdict

        self.path = path
        self._db = Rdict(path, Options(raw_mode=True))

    def get(self, key: bytes) -> bytes | None:
        return self._db.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        self._db[key] = value

    def delete(self, key: bytes) -> None:
        self._db.delete(key)

    def range(self, from_key: bytes, to_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.iter()
        it.seek(from_key)
        while it.valid():
            key = it.key()
            if key >= to_key:
                return
            yield key, it.value()
            it.next()

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        it = self._db.iter()
        it.seek_to_first()
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def flush(self) -> None:
        self._db.flush()

    def close(self) -> None:
        self._db.close()
