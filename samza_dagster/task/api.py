"""The task interfaces a user implements, as Samza's StreamTask family.

They are plain base classes: a task class subclasses the ones whose hooks it implements.
The engine also accepts duck-typed objects (an object with ``process`` is a stream task,
with ``window`` a windowable one...) because that is what a Python user expects; the
``is_*`` helpers below are the one place that rule lives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, TypeGuard

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


class BatchStreamTask:
    """Processes a batch of messages at a time (beyond Samza, opt-in): returning from
    ``process_batch`` completes every message of the batch.

    A batch is a run of one input partition's messages in offset order, as the chooser picked
    them (``task.consumer.batch.size`` bounds it; a batch task's default is
    :data:`DEFAULT_BATCH_TASK_RUN`). It never mixes partitions, never reorders, and never crosses
    a commit, a window, an end-of-stream or a watermark: those happen between batches, so a
    checkpoint covers only batches that returned. ``envelopes`` is the engine's list, valid for
    the call; copy what you keep. A task with both ``process`` and ``process_batch`` is given
    batches.

    ``batch_format`` says what ``process_batch`` receives: ``"envelopes"`` (the default, the list
    above), or the batch's messages as columns — ``"arrow"`` (a ``pyarrow.Table``) or ``"pandas"``
    (a ``pandas.DataFrame``). In a columnar form, inputs that read columns (the files system) hand
    their Arrow batches over as they are, with no Python object per row; other inputs' messages
    become the columns of a table the way ``map_batches`` makes them (a dict's keys are the
    columns; other messages are the column ``message``). Send a table back in one call with
    ``collector.send_table``."""

    #: what ``process_batch`` receives: "envelopes", "arrow" or "pandas" (task/batch_formats.py)
    batch_format: ClassVar[str] = "envelopes"

    def process_batch(
        self,
        envelopes: Any,
        collector: MessageCollector,
        coordinator: TaskCoordinator,
    ) -> None:
        raise NotImplementedError


#: messages of one partition per batch for a batch task when ``task.consumer.batch.size`` is unset:
#: a pandas batch costs ~1–3 ms whatever its size, so thousands of rows make it cheap per message
#: (Spark's Arrow batches hold up to 10,000 records)
DEFAULT_BATCH_TASK_RUN = 4_096


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


def is_batch_task(obj: object) -> TypeGuard[BatchStreamTask]:
    return _has(obj, "process_batch", BatchStreamTask)


def is_task(obj: object) -> bool:
    return is_async_task(obj) or is_stream_task(obj) or is_batch_task(obj)


def is_windowable(obj: object) -> TypeGuard[WindowableTask]:
    return _has(obj, "window", WindowableTask)


def is_initable(obj: object) -> TypeGuard[InitableTask]:
    return _has(obj, "init", InitableTask)


def is_closable(obj: object) -> TypeGuard[ClosableTask]:
    return _has(obj, "close", ClosableTask)


def is_end_of_stream_listener(obj: object) -> TypeGuard[EndOfStreamListenerTask]:
    return _has(obj, "on_end_of_stream", EndOfStreamListenerTask)
