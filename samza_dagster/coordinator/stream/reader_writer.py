"""Writing and reading the coordinator stream through any system's admin, consumer and producer.

The stream lives on ``job.coordinator.system`` (default: the job's default system), has one
partition, and is created compacted (``cleanup.policy=compact``, which Kafka honours and other
systems ignore): the stream is a key/value table whose latest value per key is the state.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.coordinator.stream.messages import (
    CoordinatorStreamFormatError,
    CoordinatorStreamMessage,
    coordinator_stream_name,
)
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.errors import SamzaError
from samza_dagster.model import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import stop_admin, system_factory
from samza_dagster.system.protocols import SystemAdmin, SystemConsumer

log = logging.getLogger(__name__)

#: How long a catch-up read may take to reach the head it saw before it gives up.
READ_TIMEOUT_KEY = keys.JOB_COORDINATOR_STREAM_READ_TIMEOUT_MS.name
DEFAULT_READ_TIMEOUT_MS: int = keys.JOB_COORDINATOR_STREAM_READ_TIMEOUT_MS.default
STREAM_PROPERTIES = {"cleanup.policy": "compact"}


class CoordinatorStreamError(SamzaError, RuntimeError):
    """The coordinator stream could not be read or written; the message names the stream."""


@dataclass(frozen=True)
class CoordinatorStreamLocation:
    system: str
    stream: str

    @classmethod
    def from_config(cls, config: Config) -> CoordinatorStreamLocation:
        job = JobConfig(config)
        return cls(job.coordinator_system, coordinator_stream_name(job.name, job.id))

    @property
    def system_stream(self) -> SystemStream:
        return SystemStream(self.system, self.stream)

    @property
    def ssp(self) -> SystemStreamPartition:
        return SystemStreamPartition(self.system, self.stream, 0)

    def __str__(self) -> str:
        return f"{self.system}.{self.stream}"


def close_admin(admin: object) -> None:
    """Release an admin's connections (``stop_admin``), best effort: a failure is logged at DEBUG."""
    try:
        stop_admin(admin)
    except Exception:  # noqa: BLE001 - best effort at shutdown
        log.debug("closing admin %r failed", admin, exc_info=True)


def create_coordinator_stream(config: Config, admin: SystemAdmin | None = None) -> bool:
    """Create the coordinator stream if it does not exist; True if it was created."""
    where = CoordinatorStreamLocation.from_config(config)
    spec = StreamSpec(where.stream, where.stream, where.system, 1, dict(STREAM_PROPERTIES))
    if admin is not None:
        return bool(admin.create_stream(spec))
    admin = system_factory(config, where.system).get_admin(where.system, config)
    try:
        return bool(admin.create_stream(spec))
    finally:
        close_admin(admin)


class CoordinatorStreamWriter:
    """Sends coordinator stream messages as raw bytes to partition 0 and flushes on each
    :meth:`send` call, so a message is durable when ``send`` returns."""

    def __init__(self, config: Config, source: str = "samza-dagster", *, create: bool = True) -> None:
        self.location = CoordinatorStreamLocation.from_config(config)
        self.source = source
        factory = system_factory(config, self.location.system)
        if create:
            admin = factory.get_admin(self.location.system, config)
            try:
                create_coordinator_stream(config, admin)
            finally:
                close_admin(admin)
        self._producer = factory.get_producer(self.location.system, config)
        self._producer.register(source)
        self._producer.start()

    def send(self, *messages: CoordinatorStreamMessage) -> None:
        system_stream = self.location.system_stream
        for message in messages:
            key, value = message.encode()
            self._producer.send(self.source, OutgoingMessageEnvelope(system_stream, value, key=key, partition=0))
        if messages:
            self._producer.flush(self.source)

    def close(self) -> None:
        self._producer.stop()

    def __enter__(self) -> CoordinatorStreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CoordinatorStreamReader:
    """Reads the coordinator stream from an offset up to the head seen at the start of the read.

    The consumer is kept between reads (a monitor catches up every few seconds); it is
    re-registered only when asked for an offset other than where the last read stopped.
    Messages that cannot be decoded are skipped with a WARNING naming their offset.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self.location = CoordinatorStreamLocation.from_config(config)
        self._factory = system_factory(config, self.location.system)
        self.admin = self._factory.get_admin(self.location.system, config)
        self._timeout_s = (config.get_int(READ_TIMEOUT_KEY, DEFAULT_READ_TIMEOUT_MS) or DEFAULT_READ_TIMEOUT_MS) / 1000
        self._consumer: SystemConsumer | None = None
        self._consumer_next: str | None = None

    def oldest_offset(self) -> str:
        return self._metadata().oldest_offset

    def _metadata(self):
        stream = self.location.stream
        metadata = self.admin.get_system_stream_metadata([stream])[stream]
        if 0 not in metadata.partitions:
            raise CoordinatorStreamError(f"coordinator stream {self.location} has no partition 0")
        return metadata.partitions[0]

    def read(self, from_offset: str | None = None) -> tuple[list[tuple[str, CoordinatorStreamMessage]], str]:
        """Messages from ``from_offset`` (the oldest when None) to the current head, with their
        offsets, and the offset to read from next time."""
        head = self._metadata()
        start = head.oldest_offset if from_offset is None else from_offset
        if head.newest_offset is None or self.admin.offset_comparator(start, head.newest_offset) > 0:
            return [], start if from_offset is not None else head.upcoming_offset
        consumer = self._consumer_at(start)
        ssp = self.location.ssp
        compare = self.admin.offset_comparator
        result: list[tuple[str, CoordinatorStreamMessage]] = []
        last: str | None = None
        deadline = time.monotonic() + self._timeout_s
        while last is None or compare(last, head.newest_offset) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._drop_consumer()
                raise CoordinatorStreamError(
                    f"coordinator stream {self.location}: read from offset {start} stopped at "
                    f"{last if last is not None else 'nothing'} before the head {head.newest_offset} "
                    f"within {self._timeout_s:.1f} s ({READ_TIMEOUT_KEY})"
                )
            polled = consumer.poll([ssp], min(remaining, 0.5)).get(ssp, ())
            for envelope in polled:
                if envelope.is_end_of_stream:
                    continue
                last = envelope.offset
                message = _decode(envelope.key, envelope.message, envelope.offset, self.location)
                if message is not None:
                    result.append((envelope.offset, message))
        next_offset = self.admin.get_offsets_after({ssp: last})[ssp]
        self._consumer_next = next_offset
        return result, next_offset

    def read_state(
        self, state: CoordinatorStreamState | None = None, from_offset: str | None = None
    ) -> tuple[CoordinatorStreamState, str]:
        """Fold the stream from ``from_offset`` into ``state`` (a new one when None)."""
        state = CoordinatorStreamState() if state is None else state
        messages, next_offset = self.read(from_offset)
        state.apply_all(messages)
        return state, next_offset

    def _consumer_at(self, offset: str) -> SystemConsumer:
        if self._consumer is not None and self._consumer_next == offset:
            return self._consumer
        self._drop_consumer()
        consumer = self._factory.get_consumer(self.location.system, self.config)
        consumer.register(self.location.ssp, offset)
        consumer.start()
        self._consumer = consumer
        self._consumer_next = offset
        return consumer

    def _drop_consumer(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.stop()
            finally:
                self._consumer = None
                self._consumer_next = None

    def close(self) -> None:
        self._drop_consumer()
        close_admin(self.admin)

    def __enter__(self) -> CoordinatorStreamReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _decode(
    key: object, value: object, offset: str, where: CoordinatorStreamLocation
) -> CoordinatorStreamMessage | None:
    try:
        if key is not None and not isinstance(key, bytes | bytearray | str):
            raise CoordinatorStreamFormatError(f"key is a {type(key).__name__}, not bytes")
        if value is not None and not isinstance(value, bytes | bytearray | str):
            raise CoordinatorStreamFormatError(f"value is a {type(value).__name__}, not bytes")
        return CoordinatorStreamMessage.decode(key, value)  # type: ignore[arg-type]
    except CoordinatorStreamFormatError as exc:
        log.warning("skipping malformed message at offset %s of coordinator stream %s: %s", offset, where, exc)
        return None


def read_coordinator_stream(config: Config) -> CoordinatorStreamState:
    """The whole stream folded into its state (an empty state if the stream does not exist)."""
    try:
        with CoordinatorStreamReader(config) as reader:
            state, _ = reader.read_state()
    except StreamNotFoundError:
        return CoordinatorStreamState()
    return state
