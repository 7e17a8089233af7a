"""SystemProducer of the in-memory system.

Messages are appended at ``send`` (there is nothing to make durable, so ``flush`` has nothing to
do) and the system's condition is notified so a waiting consumer wakes at once. Sending to a
stream that was never created raises StreamNotFoundError, as on the log system.
"""

from __future__ import annotations

import time

from samza_dagster.config.config import Config
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.errors import WrongSystemError
from samza_dagster.system.inmemory.state import system_state
from samza_dagster.system.partitioner import RoundRobin, choose_partition


class InMemorySystemProducer:
    #: ``flush`` has nothing to wait for, for any source (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self._state = system_state(system_name)
        self._round_robin = RoundRobin()
        self._sources: set[str] = set()

    def register(self, source: str) -> None:
        self._sources.add(source)

    def start(self) -> None:
        pass

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        system_stream = envelope.system_stream
        if system_stream.system != self.system_name:
            raise WrongSystemError(
                f"in-memory producer of system {self.system_name!r} was sent a message for {system_stream}"
            )
        timestamp = envelope.event_time
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        condition = self._state.condition
        with condition:
            partitions = self._state.stream(system_stream.stream).partitions
            partition = choose_partition(envelope, len(partitions), self._round_robin)
            partitions[partition].append((envelope.key, envelope.message, timestamp))
            condition.notify_all()

    def flush(self, source: str) -> None:
        pass

    def stop(self) -> None:
        pass
