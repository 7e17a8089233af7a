"""The process-wide store behind the in-memory system.

Streams live in a registry keyed by system name, so an admin, a consumer and a producer made
separately from the same config (as the container makes them) see the same data. One
``threading.Condition`` per system guards its streams: producers notify it, and a consumer
polling any partition of that system waits on it instead of spinning.
"""

from __future__ import annotations

import threading
from typing import Any

from samza_dagster.system.errors import StreamNotFoundError

#: One stored message: (key, message, timestamp ms). Offsets are list indexes.
Record = tuple[Any, Any, int]


class InMemoryStream:
    __slots__ = ("name", "partitions", "properties")

    def __init__(self, name: str, partition_count: int, properties: dict[str, str] | None) -> None:
        self.name = name
        self.partitions: list[list[Record]] = [[] for _ in range(partition_count)]
        self.properties = dict(properties or {})


class InMemorySystemState:
    """The streams of one in-memory system and the condition that guards them."""

    __slots__ = ("name", "streams", "condition")

    def __init__(self, name: str) -> None:
        self.name = name
        self.streams: dict[str, InMemoryStream] = {}
        self.condition = threading.Condition(threading.Lock())

    def stream(self, stream: str) -> InMemoryStream:
        """The stream called ``stream``; call with the condition held."""
        found = self.streams.get(stream)
        if found is None:
            raise StreamNotFoundError(self.name, stream, "create it with the system admin's create_stream first")
        return found


_registry: dict[str, InMemorySystemState] = {}
_registry_lock = threading.Lock()


def system_state(system: str) -> InMemorySystemState:
    """The shared state of the in-memory system ``system`` (created on first use)."""
    state = _registry.get(system)
    if state is None:
        with _registry_lock:
            state = _registry.setdefault(system, InMemorySystemState(system))
    return state


def reset(system: str | None = None) -> None:
    """Forget every stream of ``system`` (or of every in-memory system): for test isolation.

    Objects already holding the old state keep it; make new admins/consumers/producers after.
    """
    with _registry_lock:
        if system is None:
            _registry.clear()
        else:
            _registry.pop(system, None)
