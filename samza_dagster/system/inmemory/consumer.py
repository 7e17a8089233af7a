"""SystemConsumer of the in-memory system.

``poll`` waits on the system's condition, which every producer of that system notifies, so an
idle consumer sleeps until data arrives or the timeout passes. Bounded streams
(``streams.<id>.samza.bounded``) end at the upcoming offset each registered partition had at
``start()``: after the message just before it, the next poll returns the partition's
end-of-stream envelope, once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import ConsumerSetupError, PartitionError
from samza_dagster.system.inmemory.state import Record, system_state
from samza_dagster.system.int_offsets import parse_offset

DEFAULT_FETCH_SIZE: int = keys.INMEMORY_FETCH_SIZE.default


class InMemorySystemConsumer:
    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self._state = system_state(system_name)
        key = keys.INMEMORY_FETCH_SIZE.key(system=system_name)
        self._fetch_size = config.get_int(key, DEFAULT_FETCH_SIZE) or DEFAULT_FETCH_SIZE
        self._stream_config = StreamConfig(config)
        self._positions: dict[SystemStreamPartition, int] = {}
        self._logs: dict[SystemStreamPartition, list[Record]] = {}
        self._ends: dict[SystemStreamPartition, int] = {}
        self._ended: set[SystemStreamPartition] = set()
        self._stopped = False

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self._positions[ssp] = parse_offset(ssp, offset, "in-memory")

    def start(self) -> None:
        bounded: dict[tuple[str, str], bool] = {}
        with self._state.condition:
            for ssp in self._positions:
                self._logs[ssp] = self._partition_log(ssp)
                stream_key = (ssp.system, ssp.stream)
                if stream_key not in bounded:
                    bounded[stream_key] = self._stream_config.is_bounded(ssp.system_stream)
                if bounded[stream_key]:
                    self._ends[ssp] = len(self._logs[ssp])

    def stop(self) -> None:
        with self._state.condition:
            self._stopped = True
            self._state.condition.notify_all()

    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        ssps = list(ssps)
        condition = self._state.condition
        deadline: float | None = None
        with condition:
            while True:
                result = self._collect(ssps)
                if result or self._stopped:
                    return result
                now = time.monotonic()
                if deadline is None:
                    deadline = now + timeout_s
                remaining = deadline - now
                if remaining <= 0:
                    return result
                condition.wait(remaining)

    # -- internals (called with the condition held) -------------------------------------------
    def _partition_log(self, ssp: SystemStreamPartition) -> list[Record]:
        partitions = self._state.stream(ssp.stream).partitions
        if not 0 <= ssp.partition < len(partitions):
            raise PartitionError(f"{ssp}: stream {ssp.stream!r} has {len(partitions)} partitions")
        return partitions[ssp.partition]

    def _collect(self, ssps: list[SystemStreamPartition]) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        result: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
        positions, ends, fetch = self._positions, self._ends, self._fetch_size
        for ssp in ssps:
            position = positions.get(ssp)
            if position is None:
                raise ConsumerSetupError(f"{ssp} was polled but never registered with the in-memory consumer")
            log = self._logs.get(ssp)
            if log is None:
                log = self._logs[ssp] = self._partition_log(ssp)
            end = ends.get(ssp)
            limit = len(log) if end is None else end
            if position < limit:
                stop = min(limit, position + fetch)
                envelopes = []
                for offset in range(position, stop):
                    key, message, timestamp = log[offset]
                    size = len(message) if isinstance(message, (bytes, bytearray, str)) else 0
                    envelopes.append(IncomingMessageEnvelope(ssp, str(offset), key, message, size, timestamp))
                positions[ssp] = stop
                result[ssp] = envelopes
            elif end is not None and ssp not in self._ended:
                self._ended.add(ssp)
                result[ssp] = [IncomingMessageEnvelope.end_of_stream(ssp)]
        return result
