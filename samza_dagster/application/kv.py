"""KV: a key and a value travelling together, as Samza's ``KV``."""

from __future__ import annotations

from typing import Any, NamedTuple

from samza_dagster.serde.msgpack_serde import register_type


class KV(NamedTuple):
    """A (key, value) pair. A NamedTuple, so a plain ``(key, value)`` tuple is accepted
    wherever a KV is expected, and unpacking works: ``key, value = kv``."""

    key: Any
    value: Any


register_type(KV, "samza.KV")  # operator state (join buffers, tables) holds KVs
