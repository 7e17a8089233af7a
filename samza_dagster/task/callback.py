"""TaskCallback: completes one asynchronously processed message, from any thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from samza_dagster.errors import SamzaError


class CallbackError(SamzaError, RuntimeError):
    """A callback was misused (completed twice, or after it timed out)."""


class TaskCallback:
    """Given to ``AsyncStreamTask.process_async``. Exactly one of ``complete()`` /
    ``failure(exc)`` must be called, once; a second call raises :class:`CallbackError` and
    also fails the task (a task that completes twice has a bug that would corrupt offsets)."""

    __slots__ = ("task_name", "envelope", "_on_done", "_lock", "_done", "started_at")

    def __init__(
        self,
        task_name: str,
        envelope: Any,
        on_done: Callable[[TaskCallback, BaseException | None], None],
        started_at: float,
    ) -> None:
        self.task_name = task_name
        self.envelope = envelope
        self._on_done = on_done
        self._lock = threading.Lock()
        self._done = False
        self.started_at = started_at

    def _finish(self, exc: BaseException | None) -> None:
        with self._lock:
            if self._done:
                err = CallbackError(
                    f"callback for task {self.task_name!r}, {_coords(self.envelope)} was completed more than once"
                )
                self._on_done(self, err)
                raise err
            self._done = True
        self._on_done(self, exc)

    def complete(self) -> None:
        self._finish(None)

    def failure(self, exc: BaseException) -> None:
        if not isinstance(exc, BaseException):
            exc = CallbackError(str(exc))
        self._finish(exc)

    @property
    def is_done(self) -> bool:
        return self._done

    def expire(self) -> bool:
        """Mark done because it timed out; False if it completed meanwhile."""
        with self._lock:
            if self._done:
                return False
            self._done = True
            return True


def _coords(envelope: Any) -> str:
    ssp = envelope.ssp
    return f"stream {ssp.system}.{ssp.stream} partition {ssp.partition} offset {envelope.offset}"
