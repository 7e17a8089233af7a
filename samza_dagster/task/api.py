"""The task interfaces a user implements, as Samza's StreamTask family.

They are plain base classes: a task class subclasses the ones whose hooks it implements.
The engine also accepts duck-typed objects (an object with ``process`` is a stream task,
with ``window`` a windowable one...) because that is what a Python user expects; the
``is_*`` helpers below are the one place that rule lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:  # pragma: no cover
    from samza_dagster.model import IncomingMessageEnvelope
    from samza_dagster.task.callback import TaskCallback
    from samza_dagster.task.collector import MessageCollector
    from samza_dagster.task.context import TaskContext
    from samza_dagster.task.coordinator import TaskCoordinator


class StreamTask:
    """Processes one message at a time; returning from ``process`` completes it."""

    def process(
        self, envelope: IncomingMessageEnvelope, collector: MessageCollector, coordinator: TaskCoordinator
    ) -> None:
        raise NotImplementedError


class AsyncStreamTask:
    """Processes a message and completes it later, from any thread, through ``callback``.

    ``process_async`` is always invoked on the run loop's thread; ``callback.complete()`` or
    ``callback.failure(exc)`` may be called from any thread."""

    def process_async(
        self,
        envelope: IncomingMessageEnvelope,
        collector: MessageCollector,
        coordinator: TaskCoordinator,
        callback: TaskCallback,
    ) -> None:
        raise NotImplementedError


class WindowableTask:
    """``window`` runs every ``task.window.ms``, never concurrently with ``process``."""

    def window(self, collector: MessageCollector, coordinator: TaskCoordinator) -> None:
        raise NotImplementedError


class InitableTask:
    def init(self, context: TaskContext) -> None:
        raise NotImplementedError


class ClosableTask:
    def close(self) -> None:
        raise NotImplementedError


class EndOfStreamListenerTask:
    """``on_end_of_stream`` runs once, when every input partition of the task has ended."""

    def on_end_of_stream(self, collector: MessageCollector, coordinator: TaskCoordinator) -> None:
        raise NotImplementedError


def _has(obj: object, name: str, base: type) -> bool:
    if isinstance(obj, base):
        return True
    return callable(getattr(obj, name, None))


# TypeGuards: a duck-typed task passes as the interface whose method it has, so the engine's
# calls on it are checked against that interface's signature.
def is_async_task(obj: object) -> TypeGuard[AsyncStreamTask]:
    return _has(obj, "process_async", AsyncStreamTask)


def is_stream_task(obj: object) -> TypeGuard[StreamTask]:
    return _has(obj, "process", StreamTask)


def is_task(obj: object) -> bool:
    return is_async_task(obj) or is_stream_task(obj)


def is_windowable(obj: object) -> TypeGuard[WindowableTask]:
    return _has(obj, "window", WindowableTask)


def is_initable(obj: object) -> TypeGuard[InitableTask]:
    return _has(obj, "init", InitableTask)


def is_closable(obj: object) -> TypeGuard[ClosableTask]:
    return _has(obj, "close", ClosableTask)


def is_end_of_stream_listener(obj: object) -> TypeGuard[EndOfStreamListenerTask]:
    return _has(obj, "on_end_of_stream", EndOfStreamListenerTask)
