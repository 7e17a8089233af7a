"""A container started again from its last checkpoint when a system lost what it had sent since.

A Kafka cluster restarted under an exactly-once job can abort the container's open transaction
(an out-of-order sequence after a broker came back; librdkafka then drops the queued messages),
and sends can time out while no broker takes them. Nothing committed is lost — the transaction's
writes are discarded and its checkpoint was never written — but the container cannot go on from
where it is: its stores and tasks hold the effects of messages whose output is gone. Samza's
cluster manager restarts such a container; so do the runners, in place: :class:`RestartingContainer`
builds a new container (tasks, stores restored from their changelogs, consumers at the
checkpoint) and runs it, up to ``job.container.retry.count`` times, for a
:class:`TransientSystemError` only. Any other failure fails the container at once, as before. The
spark runner's containers are restarted by Spark's task retry (spark_runner.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from samza_dagster.config import keys
from samza_dagster.container.summary import ContainerSummary
from samza_dagster.system.errors import TransientSystemError

log = logging.getLogger(__name__)


class RestartingContainer:
    """Runs the container ``build()`` makes; builds and runs a new one when it fails with a
    :class:`TransientSystemError`, at most ``max_restarts`` times. Everything else (``stop``,
    ``positions``, ``stall``, ``reporting`` …) is the running container's."""

    def __init__(self, build: Callable[[], Any], max_restarts: int) -> None:
        self._build = build
        self.max_restarts = max_restarts
        self.current = build()
        self.container_id: str = self.current.container_id
        self.summary: ContainerSummary | None = None
        #: set once the last start has ended (each container's own event is set when it ends)
        self.stop_event = threading.Event()
        self._stopped = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current, name)

    def stop(self) -> None:
        self._stopped = True
        self.current.stop()

    def stall(self) -> str | None:
        return self.current.stall()

    def run(self) -> ContainerSummary:
        try:
            return self._run()
        finally:
            self.stop_event.set()

    def _run(self) -> ContainerSummary:
        restarts: list[str] = []
        earlier: list[ContainerSummary] = []
        started = time.monotonic()
        while True:
            try:
                summary = self.current.run()
            except TransientSystemError as exc:
                failed = self.current.summary
                if self._stopped or len(restarts) >= self.max_restarts or failed is None:
                    self.summary = _merged(failed, earlier, restarts, started)
                    raise
                restarts.append(f"{type(exc).__name__}: {exc}")
                earlier.append(failed)
                log.warning(
                    "container %s: %s; starting it again from its last checkpoint (restart %d of at most %d, %s)",
                    self.container_id,
                    exc,
                    len(restarts),
                    self.max_restarts,
                    keys.JOB_CONTAINER_RETRY_COUNT.name,
                )
                self.current = self._build()
                if self._stopped:  # a stop that came while the new one was built
                    self.current.stop()
                continue
            except BaseException:
                self.summary = _merged(self.current.summary, earlier, restarts, started)
                raise
            merged = _merged(summary, earlier, restarts, started)
            assert merged is not None  # (the last start's own summary)
            self.summary = merged
            return merged


def _merged(
    last: ContainerSummary | None, earlier: list[ContainerSummary], restarts: list[str], started: float
) -> ContainerSummary | None:
    """The last start's summary with the counts of every start (messages processed again after a
    restart counted again: the work done) and the reasons for the restarts."""
    if last is None or not earlier:
        return last
    for summary in earlier:
        for stream, count in summary.messages_per_stream.items():
            last.messages_per_stream[stream] = last.messages_per_stream.get(stream, 0) + count
    last.restarts = list(restarts)
    last.elapsed_s = time.monotonic() - started
    return last
