"""The stream model every layer shares (the bottom of the engine, beside config and serde):
SystemStream, SystemStreamPartition, envelopes, stream metadata and StreamSpec. Re-exported by
``samza_dagster.system``, where users import it from.

This module imports nothing else from the engine, so every layer (config included) may
use these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: The offset carried by an end-of-stream envelope, as in Samza.
END_OF_STREAM_OFFSET = "END_OF_STREAM"


class SystemStream(NamedTuple):
    """A stream on a system. A NamedTuple so hashing and equality run in C on the hot path."""

    system: str
    stream: str

    def __str__(self) -> str:
        return f"{self.system}.{self.stream}"


class SystemStreamPartition(NamedTuple):
    """One partition of a stream on a system."""

    system: str
    stream: str
    partition: int

    @property
    def system_stream(self) -> SystemStream:
        return SystemStream(self.system, self.stream)

    def __str__(self) -> str:
        return f"SystemStreamPartition [{self.system}, {self.stream}, {self.partition}]"


class IncomingMessageEnvelope:
    """A message read from an input partition.

    ``key`` and ``message`` hold raw bytes as the consumer read them until the task instance
    deserializes them (lazily, so a bad message fails with its coordinates where it is
    processed). ``offset`` is a string, as in Samza.
    """

    __slots__ = ("ssp", "offset", "key", "message", "size", "event_time")

    def __init__(
        self,
        ssp: SystemStreamPartition,
        offset: str,
        key: Any,
        message: Any,
        size: int = 0,
        event_time: int | None = None,
    ) -> None:
        self.ssp = ssp
        self.offset = offset
        self.key = key
        self.message = message
        self.size = size
        self.event_time = event_time

    @classmethod
    def end_of_stream(cls, ssp: SystemStreamPartition) -> IncomingMessageEnvelope:
        return cls(ssp, END_OF_STREAM_OFFSET, None, None)

    @property
    def is_end_of_stream(self) -> bool:
        return self.offset == END_OF_STREAM_OFFSET

    @property
    def system_stream_partition(self) -> SystemStreamPartition:
        return self.ssp

    def __repr__(self) -> str:
        return (
            f"IncomingMessageEnvelope({self.ssp.system}.{self.ssp.stream}[{self.ssp.partition}]"
            f"@{self.offset}, key={self.key!r}, message={self.message!r})"
        )


class ColumnarEnvelope(IncomingMessageEnvelope):
    """A run of one partition's rows as one Arrow record batch (beyond Samza), for a task that
    takes batches in columnar form (``BatchStreamTask.batch_format``): no Python object per row.

    ``message`` is the ``pyarrow.RecordBatch``; ``offset`` is the offset of its *last* row — what
    the task's checkpoint records once the batch is processed, and what choosers compare — and
    ``first_offset`` that of its first; ``rows`` its row count. Consumers that can read columns
    (the files system) deliver these only for the partitions the container asks them to.
    """

    __slots__ = ("first_offset", "rows")

    def __init__(self, ssp: SystemStreamPartition, first_offset: str, offset: str, batch: Any) -> None:
        # the buffers it holds (a slice holds its parent's): what it costs the container's byte
        # budget, and ~0.5 µs where ``nbytes`` walks every value's extent (~16 µs a batch)
        super().__init__(ssp, offset, None, batch, batch.get_total_buffer_size())
        self.first_offset = first_offset
        self.rows: int = batch.num_rows

    def __repr__(self) -> str:
        return (
            f"ColumnarEnvelope({self.ssp.system}.{self.ssp.stream}[{self.ssp.partition}]"
            f"@{self.first_offset}..{self.offset}, {self.rows} rows)"
        )


class OutgoingMessageEnvelope:
    """A message for a producer.

    ``partition`` picks the partition outright; else ``partition_key`` (or ``key``) is hashed
    as Kafka's default partitioner does; else the producer spreads messages.
    ``event_time`` (ms) becomes the record's timestamp; the producer uses the current time
    when it is None.
    """

    __slots__ = ("system_stream", "message", "key", "partition_key", "partition", "event_time")

    def __init__(
        self,
        system_stream: SystemStream,
        message: Any,
        key: Any = None,
        partition_key: Any = None,
        partition: int | None = None,
        event_time: int | None = None,
    ) -> None:
        self.system_stream = system_stream
        self.message = message
        self.key = key
        self.partition_key = partition_key
        self.partition = partition
        self.event_time = event_time

    def __repr__(self) -> str:
        return (
            f"OutgoingMessageEnvelope({self.system_stream}, key={self.key!r}, "
            f"partition={self.partition!r}, message={self.message!r})"
        )


@dataclass(frozen=True, slots=True)
class SystemStreamPartitionMetadata:
    """Offsets of one partition: ``newest_offset`` is None for an empty partition;
    ``upcoming_offset`` is the offset the next message written will get."""

    oldest_offset: str
    newest_offset: str | None
    upcoming_offset: str


@dataclass(frozen=True, slots=True)
class SystemStreamMetadata:
    stream_name: str
    partitions: dict[int, SystemStreamPartitionMetadata]

    @property
    def partition_count(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class StreamSpec:
    """What a system needs to create a stream: its id, physical name, system, partition
    count and extra properties (e.g. ``cleanup.policy=compact`` on Kafka)."""

    id: str
    physical_name: str
    system: str
    partition_count: int
    config: dict[str, str] | None = field(default=None)

    @property
    def system_stream(self) -> SystemStream:
        return SystemStream(self.system, self.physical_name)
