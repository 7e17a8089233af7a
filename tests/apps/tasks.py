"""Task classes for the container tests (the ones the benchmarks share are in support/tasks.py and
imported here, so ``tests.apps.tasks:NoOpTask`` names them too)."""

from __future__ import annotations

import os
import threading
import time
from typing import NamedTuple

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.task import (
    AsyncStreamTask,
    ClosableTask,
    EndOfStreamListenerTask,
    InitableTask,
    StreamTask,
    WindowableTask,
)
from support.tasks import NoOpBatchTask, NoOpTask, ProfileLookupTask, SleepTask, WordCountTask  # noqa: F401


class NotATask:
    """Has none of the task methods."""

    def run(self):
        pass


class FailingTask(StreamTask):
    """Raises on the message ``"boom"``."""

    def process(self, envelope, collector, coordinator):
        if envelope.message == "boom" or envelope.message == b"boom":
            raise ValueError("bad message boom")


class CopyTask(StreamTask):
    """Copies each message to ``output`` (system ``log`` unless ``test.output.system``)."""

    def init(self, context):
        system = context.config.get_str("test.output.system", "log")
        self.out = SystemStream(system, context.config.get_str("test.output.stream", "output"))

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message, key=envelope.key))


class EndOfStreamCountingTask(StreamTask, EndOfStreamListenerTask, InitableTask, ClosableTask):
    """Counts messages; on end of stream writes ``<task>|<count>|<eos calls>`` to a marker file
    under ``test.marker.dir`` (so a test can check from another process) and asks nothing."""

    def init(self, context):
        self.name = context.task_name
        self.dir = context.config.get_str("test.marker.dir")
        self.count = 0
        self.eos_calls = 0

    def process(self, envelope, collector, coordinator):
        self.count += 1

    def on_end_of_stream(self, collector, coordinator):
        self.eos_calls += 1
        if self.dir:
            safe = self.name.replace(" ", "_")
            with open(os.path.join(self.dir, f"{safe}.eos"), "a") as f:
                f.write(f"{self.name}|{self.count}|{self.eos_calls}\n")

    def close(self):
        pass


class Event(NamedTuple):
    """One thing a recording task saw or did. ``kind`` is ``process`` or ``window`` (a call, from
    ``start`` to ``end``), ``start`` or ``complete`` (an asynchronous message begun or completed:
    an instant, ``start == end``) or ``violation`` (what went wrong in ``detail``)."""

    kind: str
    task: str
    thread: int = 0
    start: float = 0.0
    end: float = 0.0
    offset: str | None = None
    ssp: SystemStreamPartition | None = None
    detail: str = ""


class Recorder:
    """Shared, thread-safe log of the :class:`Event` s of every task given it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []

    def add(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def at(self, kind: str, task: str, offset: str | None = None) -> None:
        """An instant on this thread (``start``/``complete`` of an asynchronous message)."""
        now = time.perf_counter()
        self.add(Event(kind, task, threading.get_ident(), now, now, offset))

    def of(self, kind: str) -> list[Event]:
        with self.lock:
            return [e for e in self.events if e.kind == kind]


class RecordingTask(StreamTask, WindowableTask):
    """Sleeps ``sleep_s`` in process and records every process/window with times and threads;
    asserts in-task that process and window never overlap."""

    def __init__(self, name: str, recorder: Recorder, sleep_s: float = 0.0, window_sleep_s: float = 0.0) -> None:
        self.name = name
        self.recorder = recorder
        self.sleep_s = sleep_s
        self.window_sleep_s = window_sleep_s
        self.active = 0
        self.lock = threading.Lock()

    def _enter(self, kind: str) -> None:
        with self.lock:
            self.active += 1
            if self.active > 1 and kind == "window":
                self.recorder.add(Event("violation", self.name, detail=kind))

    def process(self, envelope, collector, coordinator):
        start = time.perf_counter()
        self._enter("process")
        if self.sleep_s:
            time.sleep(self.sleep_s)
        with self.lock:
            self.active -= 1
        self.recorder.add(
            Event(
                "process", self.name, threading.get_ident(), start, time.perf_counter(), envelope.offset, envelope.ssp
            )
        )

    def window(self, collector, coordinator):
        start = time.perf_counter()
        with self.lock:
            if self.active:
                self.recorder.add(Event("violation", self.name, detail="window during process"))
            self.active += 1
        if self.window_sleep_s:
            time.sleep(self.window_sleep_s)
        with self.lock:
            self.active -= 1
        self.recorder.add(Event("window", self.name, threading.get_ident(), start, time.perf_counter()))


class ThreadedAsyncTask(AsyncStreamTask):
    """Completes each message from a helper thread after ``delay_s`` (later offsets sooner when
    ``reverse`` so completion is out of order); ``fail_offset`` completes with failure;
    ``complete_twice`` calls complete() twice for the first message."""

    def __init__(
        self,
        name: str,
        recorder: Recorder,
        delay_s: float = 0.01,
        reverse: bool = False,
        fail_offset: str | None = None,
        complete_twice: bool = False,
        never_complete: bool = False,
    ) -> None:
        self.name = name
        self.recorder = recorder
        self.delay_s = delay_s
        self.reverse = reverse
        self.fail_offset = fail_offset
        self.complete_twice = complete_twice
        self.never_complete = never_complete
        self.second_error: list[BaseException] = []

    def process_async(self, envelope, collector, coordinator, callback):
        self.recorder.at("start", self.name, envelope.offset)
        if self.never_complete:
            return
        delay = self.delay_s
        if self.reverse:
            delay = self.delay_s * (1.0 / (1 + int(envelope.offset) % 4))

        def finish():
            time.sleep(delay)
            self.recorder.at("complete", self.name, envelope.offset)
            if self.fail_offset is not None and envelope.offset == self.fail_offset:
                callback.failure(RuntimeError(f"async failure at {envelope.offset}"))
                return
            callback.complete()
            if self.complete_twice:
                try:
                    callback.complete()
                except Exception as exc:  # noqa: BLE001
                    self.second_error.append(exc)

        threading.Thread(target=finish, daemon=True).start()


class ShutdownAfterTask(StreamTask):
    """Asks the whole container to shut down after ``test.shutdown.after`` messages."""

    def init(self, context):
        self.limit = context.config.get_int("test.shutdown.after", 10)
        self.count = 0

    def process(self, envelope, collector, coordinator):
        self.count += 1
        if self.count == self.limit:
            coordinator.shutdown(coordinator.ALL_TASKS_IN_CONTAINER)


class LeakySecretTask(StreamTask, InitableTask):
    """Fails quoting a secret config value in its exception and on stderr (as careless user code
    might): the runners must not hand the value on."""

    def init(self, context):
        self.secret = context.config.get_str("systems.db.password")

    def process(self, envelope, collector, coordinator):
        import sys

        print(f"connecting with password {self.secret}", file=sys.stderr)
        raise RuntimeError(f"login failed for password {self.secret}")


class UpperNameProcessor:
    """A side-inputs processor: stores the upper-cased ``name`` of a profile; ``{"deleted": true}``
    removes the user."""

    def process(self, envelope, store):
        if envelope.message.get("deleted"):
            return [(envelope.key, None)]
        return [(envelope.key, {"name": envelope.message["name"].upper()})]


class ProgressCopyTask(CopyTask):
    """CopyTask that first sleeps ``test.sleep.ms`` and then appends each processed offset to
    ``test.progress.file`` (one line per message, written at once): a test watches a running job
    from outside, in any runner's processes, without waiting for a commit."""

    def init(self, context):
        super().init(context)
        self.sleep_s = (context.config.get_int("test.sleep.ms", 0) or 0) / 1000.0
        self.progress = open(context.config.get_str("test.progress.file"), "a", buffering=1)

    def process(self, envelope, collector, coordinator):
        if self.sleep_s:
            time.sleep(self.sleep_s)
        super().process(envelope, collector, coordinator)
        self.progress.write(f"{envelope.offset}\n")
