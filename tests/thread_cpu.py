"""The CPU time given threads use over a stretch of a test — what "does not spin" is measured by.

Per thread, not per process: a thread another test left behind in the pytest process must not
count. And with Python's cyclic garbage collector paused (after a collection of what came
before): a collection runs on whichever thread's allocation trips its threshold, and late in a
full run, with the session's heap grown large, one full collection takes a few hundred
milliseconds of CPU (measured on the 2-core test machine under load: 0.13–0.22 s per gen-2
collection on the test thread after only a few test files). A test idling its code for one
second does next to no
allocation of its own (a handful of objects), but when the counts other threads left are near
the threshold, its allocation can be the one that trips it, and the collection of everyone's
garbage would be charged to the code under test (seen as 0.35–0.43 s "idle" CPU in full runs).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterable
from types import TracebackType


class ThreadCpu:
    """``with ThreadCpu(threads) as cpu: ...`` then ``cpu.used``: the CPU seconds the threads (those
    alive at the end) used inside the block, the garbage collector paused in it."""

    def __init__(self, threads: Iterable[threading.Thread]) -> None:
        self.threads = list(threads)
        self.used = 0.0
        self._start = 0.0
        self._collector_was_on = False

    def _now(self) -> float:
        return sum(
            time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            for t in self.threads
            if t.ident is not None and t.is_alive()
        )

    def __enter__(self) -> ThreadCpu:
        gc.collect()
        self._collector_was_on = gc.isenabled()
        gc.disable()
        self._start = self._now()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.used = self._now() - self._start
        if self._collector_was_on:
            gc.enable()

    def names(self) -> list[str]:
        return [t.name for t in self.threads]
