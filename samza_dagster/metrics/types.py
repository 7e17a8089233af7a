"""Samza's four metric types. Each is updated on the thread that owns it (a task's run loop)
and read by a reporter's thread: updates are plain attribute arithmetic — no lock, no
allocation — and a read sees a whole int or float (the GIL makes each store atomic).

``Gauge`` and ``Timer`` can also be *computed*: given a function, they read the value when a
snapshot is taken instead of being set. The engine registers its own metrics that way, over the
counters its hot path already keeps, so registering them costs the hot path nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from samza_dagster.metrics.errors import MetricsError


class Metric:
    """One named value; ``value()`` is what a snapshot records, ``kind`` what it is (a
    snapshot's ``types`` carries it, so Prometheus shows a counter as a counter)."""

    __slots__ = ("name",)
    kind = "gauge"

    def __init__(self, name: str) -> None:
        self.name = name

    def value(self) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {self.value()!r})"


class Counter(Metric):
    """A count (Samza's ``Counter``): ``inc()``/``dec()``; a snapshot records ``count``."""

    __slots__ = ("count",)
    kind = "counter"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def set(self, n: int) -> None:
        self.count = n

    def clear(self) -> None:
        self.count = 0

    def value(self) -> int:
        return self.count


class Gauge(Metric):
    """A value set by its owner (Samza's ``Gauge``), or computed by ``fn`` at each read."""

    __slots__ = ("_value", "_fn")

    def __init__(self, name: str, default: Any = 0, fn: Callable[[], Any] | None = None) -> None:
        super().__init__(name)
        self._value = default
        self._fn = fn

    def set(self, value: Any) -> None:
        self._value = value

    def value(self) -> Any:
        fn = self._fn
        return self._value if fn is None else fn()


class ListGauge(Metric):
    """A bounded list of recent values (Samza's ``ListGauge``: the last ``max_items``, oldest
    first); a snapshot records the list."""

    __slots__ = ("max_items", "_items")
    kind = "list"

    def __init__(self, name: str, max_items: int = 100) -> None:
        super().__init__(name)
        if max_items < 1:
            raise MetricsError(f"ListGauge {name!r}: max_items must be at least 1, got {max_items}")
        self.max_items = max_items
        self._items: list[Any] = []

    def add(self, value: Any) -> None:
        items = self._items
        items.append(value)
        if len(items) > self.max_items:
            del items[0]

    def values(self) -> list[Any]:
        return list(self._items)

    def value(self) -> list[Any]:
        return list(self._items)


class Timer(Metric):
    """Durations in nanoseconds (Samza's ``Timer``, whose snapshot is an average).

    ``update(ns)`` adds to running totals. A snapshot records the mean duration of the updates
    since the previous snapshot — the recent cost, what a chart of ``process-ns`` should show
    — and repeats the last mean when nothing was timed in between. ``totals`` makes it a computed
    timer: a function returning the cumulative ``(total_ns, count)`` the owner keeps itself.
    """

    __slots__ = ("total_ns", "count", "_totals", "_seen_ns", "_seen_count", "_last")
    kind = "timer"

    def __init__(self, name: str, totals: Callable[[], tuple[float, int]] | None = None) -> None:
        super().__init__(name)
        self.total_ns = 0
        self.count = 0
        self._totals = totals
        self._seen_ns: float = 0
        self._seen_count = 0
        self._last = 0.0

    def update(self, duration_ns: int) -> None:
        self.total_ns += duration_ns
        self.count += 1

    def __repr__(self) -> str:  # value() moves the window: a repr must not
        return f"Timer({self.name!r}, count={self.count})"

    def value(self) -> float:
        """The mean since the previous call (one reader: the registry's snapshot)."""
        total, count = self._totals() if self._totals is not None else (self.total_ns, self.count)
        if count > self._seen_count:
            self._last = (total - self._seen_ns) / (count - self._seen_count)
        self._seen_ns, self._seen_count = total, count
        return self._last
