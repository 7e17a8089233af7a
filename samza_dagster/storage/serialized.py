"""SerializedKeyValueStore: the user-facing store; keys and values go through the store's
serdes (``stores.<name>.key.serde`` / ``msg.serde``) to bytes below it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from samza_dagster.serde.msgpack_serde import PICKLE_KEY_RANGE, PickledStateError, is_pickle
from samza_dagster.serde.serdes import SerdeError, _preview


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

    def _decode_failed(self, exc: SerdeError, what: str) -> SerdeError:
        if isinstance(exc, PickledStateError):
            return PickledStateError(exc.preview, self.name)
        return SerdeError(f"store {self.name!r}: cannot deserialize {what}: {exc}")

    def get(self, key: Any) -> Any:
        raw = self._inner.get(self._key(key))
        if raw is None:
            return None
        try:
            return self._vde(raw)
        except SerdeError as exc:
            raise self._decode_failed(exc, f"the value of key {key!r}") from exc

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
        return self._decoded(self._inner.range(self._key(from_key), self._key(to_key)))

    def all(self) -> Iterator[tuple[Any, Any]]:
        return self._decoded(self._inner.all())

    def _decoded(self, entries: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Any, Any]]:
        kde, vde = self._kde, self._vde
        try:
            for k, v in entries:
                yield kde(k), vde(v)
        except SerdeError as exc:
            raise self._decode_failed(exc, "an entry") from exc

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._inner.close()


def refuse_pickled_state(name: str, raw: Any, key_serde: str, msg_serde: str) -> None:
    """Fail before the task's first message when a ``msgpack`` store holds pickles (state of an
    earlier version): the new serde would not find a single key, and a join or table read would
    quietly see an empty store. One seek over the keys a pickle can start with, and one look at
    the first value, decide it."""
    if key_serde == "msgpack":
        for key, _ in raw.range(*PICKLE_KEY_RANGE):
            raise PickledStateError(_preview(key), name)
    if msg_serde == "msgpack":
        for _, value in raw.all():
            if is_pickle(value):
                raise PickledStateError(_preview(value), name)
            break
