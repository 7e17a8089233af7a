"""SerializedKeyValueStore: the user-facing store; keys and values go through the store's
serdes (``stores.<name>.key.serde`` / ``msg.serde``) to bytes below it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from samza_dagster.serde.serdes import SerdeError


class SerializedKeyValueStore:
    def __init__(self, name: str, inner, key_serde, msg_serde) -> None:
        self.name = name
        self._inner = inner
        self._kser = key_serde.to_bytes
        self._kde = key_serde.from_bytes
        self._vser = msg_serde.to_bytes
        self._vde = msg_serde.from_bytes

    def _key(self, key: Any) -> bytes:
        try:
            return self._kser(key)
        except SerdeError as exc:
            raise SerdeError(f"store {self.name!r}: cannot serialize key {key!r}: {exc}") from exc

    def get(self, key: Any) -> Any:
        raw = self._inner.get(self._key(key))
        return None if raw is None else self._vde(raw)

    def put(self, key: Any, value: Any) -> None:
        if value is None:
            self.delete(key)
            return
        try:
            raw = self._vser(value)
        except SerdeError as exc:
            raise SerdeError(f"store {self.name!r}: cannot serialize value for key {key!r}: {exc}") from exc
        self._inner.put(self._key(key), raw)

    def delete(self, key: Any) -> None:
        self._inner.delete(self._key(key))

    def get_all(self, keys: Iterable[Any]) -> dict[Any, Any]:
        result = {}
        for key in keys:
            value = self.get(key)
            if value is not None:
                result[key] = value
        return result

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        if hasattr(entries, "items"):
            entries = entries.items()  # type: ignore[assignment]
        for key, value in entries:
            self.put(key, value)

    def delete_all(self, keys: Iterable[Any]) -> None:
        for key in keys:
            self.delete(key)

    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]:
        """Entries with ``from_key <= key < to_key`` in serialized-key order."""
        kde, vde = self._kde, self._vde
        for k, v in self._inner.range(self._key(from_key), self._key(to_key)):
            yield kde(k), vde(v)

    def all(self) -> Iterator[tuple[Any, Any]]:
        kde, vde = self._kde, self._vde
        for k, v in self._inner.all():
            yield kde(k), vde(v)

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()
