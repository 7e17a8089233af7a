"""Window definitions for ``MessageStream.window``.

A window groups messages (by key, for keyed windows) into panes and folds each pane with
an aggregate function, as Samza's ``Windows``:

* tumbling: fixed, non-overlapping intervals of ``duration_ms``;
* session: a pane per key that closes after ``gap_ms`` without a message for that key.

``initial`` gives a pane's starting value (a zero-argument callable, or a value which is
shallow-copied for each new pane so a mutable default is never shared); ``fold(message, acc)``
returns the new aggregate, as Samza's ``FoldLeftFunction``. Time is ``"processing"`` (the
wall clock of the task) or ``"event"`` (``timestamp_fn(message)`` when given, else the
envelope's event time), with panes closed by watermarks in event time.

The window operator emits :class:`WindowPane` values downstream.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from samza_dagster.application.errors import ApplicationError
from samza_dagster.serde.msgpack_serde import register_type

TUMBLING = "tumbling"
SESSION = "session"
PROCESSING_TIME = "processing"
EVENT_TIME = "event"


class WindowPane(NamedTuple):
    """One result of a window: its key (None for a global window), its interval and value.

    ``trigger`` is ``"default"`` when the pane closed normally (later kinds may add early
    or late firings)."""

    key: Any
    start_ms: int
    end_ms: int
    value: Any
    trigger: str = "default"


register_type(WindowPane, "samza.WindowPane")  # a downstream table or join may keep panes


@dataclass(frozen=True, eq=False)
class WindowDefinition:
    """What a window operator needs at runtime; built by :class:`Windows`."""

    kind: str
    size_ms: int
    initial: Callable[[], Any]
    fold: Callable[[Any, Any], Any]
    key_fn: Callable[[Any], Any] | None = None
    time: str = PROCESSING_TIME
    timestamp_fn: Callable[[Any], int] | None = None
    key_serde: Any = None
    value_serde: Any = None

    @property
    def keyed(self) -> bool:
        return self.key_fn is not None

    def describe(self) -> dict[str, Any]:
        """The plan's view of this window (functions by name)."""
        size_name = "gap_ms" if self.kind == SESSION else "duration_ms"
        return {
            "kind": self.kind,
            size_name: self.size_ms,
            "keyed": self.keyed,
            "time": self.time,
        }


def _initial_supplier(initial: Any) -> Callable[[], Any]:
    if callable(initial):
        return initial
    return lambda: copy.copy(initial)


def _define(
    kind: str,
    size_name: str,
    size_ms: Any,
    initial: Any,
    fold: Any,
    key_fn: Any,
    time: str,
    timestamp_fn: Callable[[Any], int] | None,
    key_serde: Any,
    value_serde: Any,
) -> WindowDefinition:
    """Validate the arguments of a ``Windows`` factory (errors name the window kind and the
    argument) and build its definition."""
    if isinstance(size_ms, bool) or not isinstance(size_ms, int) or size_ms <= 0:
        raise ApplicationError(
            f"{kind} window: {size_name} must be a positive integer of milliseconds, got {size_ms!r}"
        )
    if not callable(fold):
        raise ApplicationError(f"{kind} window: fold must be callable (fold(message, acc) -> acc), got {fold!r}")
    if key_fn is not None and not callable(key_fn):
        raise ApplicationError(f"{kind} window: key_fn must be callable, got {key_fn!r}")
    if time not in (PROCESSING_TIME, EVENT_TIME):
        raise ApplicationError(f"{kind} window: time must be 'processing' or 'event', got {time!r}")
    return WindowDefinition(
        kind, size_ms, _initial_supplier(initial), fold, key_fn, time, timestamp_fn, key_serde, value_serde
    )


class Windows:
    """Factories of window definitions, named as Samza's ``Windows``."""

    @staticmethod
    def keyed_tumbling(
        key_fn: Callable[[Any], Any],
        duration_ms: int,
        initial: Any,
        fold: Callable[[Any, Any], Any],
        *,
        time: str = PROCESSING_TIME,
        timestamp_fn: Callable[[Any], int] | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
    ) -> WindowDefinition:
        if key_fn is None:
            raise ApplicationError(
                "keyed tumbling window: key_fn is required (use Windows.tumbling for a global window)"
            )
        return _define(
            TUMBLING, "duration_ms", duration_ms, initial, fold, key_fn, time, timestamp_fn, key_serde, value_serde
        )

    @staticmethod
    def tumbling(
        duration_ms: int,
        initial: Any,
        fold: Callable[[Any, Any], Any],
        *,
        time: str = PROCESSING_TIME,
        timestamp_fn: Callable[[Any], int] | None = None,
        value_serde: Any = None,
    ) -> WindowDefinition:
        return _define(TUMBLING, "duration_ms", duration_ms, initial, fold, None, time, timestamp_fn, None, value_serde)

    @staticmethod
    def keyed_session(
        key_fn: Callable[[Any], Any],
        gap_ms: int,
        initial: Any,
        fold: Callable[[Any, Any], Any],
        *,
        time: str = PROCESSING_TIME,
        timestamp_fn: Callable[[Any], int] | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
    ) -> WindowDefinition:
        if key_fn is None:
            raise ApplicationError("session window: key_fn is required")
        return _define(SESSION, "gap_ms", gap_ms, initial, fold, key_fn, time, timestamp_fn, key_serde, value_serde)
