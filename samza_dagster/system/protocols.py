"""The System* protocols every system (log, kafka, inmemory, user's) implements."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from samza_dagster.config.config import Config
from samza_dagster.model import (
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)


@runtime_checkable
class SystemAdmin(Protocol):
    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """Metadata for every partition of every named stream, in one batched lookup.

        Raises StreamNotFoundError for a stream that does not exist."""
        ...

    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the stream; False if it already existed with the same partition count."""
        ...

    def offset_comparator(self, offset1: str, offset2: str) -> int:
        """Negative, zero or positive as offset1 is before, at or after offset2."""
        ...

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        """The offset of the message after each given one (used to resume after a checkpoint)."""
        ...


@runtime_checkable
class SystemConsumer(Protocol):
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """Read ``ssp`` starting at ``offset`` (the offset of the first message to read)."""
        ...

    def start(self) -> None: ...

    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        """Envelopes available for the given SSPs, blocking up to ``timeout_s`` when there
        are none (without spinning). A bounded partition's last envelope is followed by
        its end-of-stream envelope."""
        ...

    def stop(self) -> None: ...


@runtime_checkable
class SystemProducer(Protocol):
    def register(self, source: str) -> None: ...

    def start(self) -> None: ...

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None: ...

    def flush(self, source: str) -> None:
        """Block until everything ``source`` sent is durable on the system."""
        ...

    def stop(self) -> None: ...


@runtime_checkable
class SystemFactory(Protocol):
    def get_admin(self, system_name: str, config: Config) -> SystemAdmin: ...

    def get_consumer(self, system_name: str, config: Config) -> SystemConsumer: ...

    def get_producer(self, system_name: str, config: Config) -> SystemProducer: ...


# -- optional capabilities ------------------------------------------------------------------------
# A system (or chooser) may offer more than the protocols above; the engine asks with isinstance
# against these rather than probing attribute names, so each capability is named and typed once.


@runtime_checkable
class ReportsMetrics(Protocol):
    """A producer, consumer or chooser with counters of its own, added to the container's metrics."""

    def metrics_snapshot(self) -> dict[str, Any]: ...


@runtime_checkable
class LimitsFetch(Protocol):
    """A consumer told how many envelopes one fetch of a partition may bring, so that a top-up at
    low water fills a buffer to its capacity and not past it."""

    def limit_fetch(self, envelopes: int) -> None: ...


@runtime_checkable
class StoppableAdmin(Protocol):
    """An admin holding connections or threads that the container stops at shutdown."""

    def stop(self) -> None: ...


@runtime_checkable
class ClosableAdmin(Protocol):
    """An admin released by ``close()`` rather than Samza's ``stop()`` (a user's, written to a
    client library's naming)."""

    def close(self) -> None: ...


@runtime_checkable
class ListsStreams(Protocol):
    """An admin that can list its streams (used to suggest the stream a typo meant)."""

    def list_streams(self) -> list[str]: ...


@runtime_checkable
class DeletesStreams(Protocol):
    """An admin that can delete a stream with everything in it (the embedded log): ``streams delete``."""

    def delete_stream(self, stream: str) -> None: ...


@runtime_checkable
class ExplainsMissingStreams(Protocol):
    """An admin that can say why a stream it was asked for is missing or holds nothing to read —
    where it looked (the files system: the directory) — so a missing input's error names that
    instead of advice that cannot work."""

    def explain_missing(self, stream: str) -> str: ...


@runtime_checkable
class TransactionalSystemFactory(Protocol):
    """A system that can run a job's transactions (exactly-once: the checkpoint system's)."""

    def supports_transactions(self, system_name: str, config: Config) -> bool: ...


@runtime_checkable
class CheckpointCommittingSystemFactory(Protocol):
    """A system whose own commits carry the job's checkpoints (Iceberg): exactly-once without the
    job's transactions."""

    def commits_with_checkpoints(self, system_name: str, config: Config) -> bool: ...


@runtime_checkable
class CleansStreams(Protocol):
    """An admin that applies retention and compaction itself (the embedded log): ``streams clean``."""

    def clean_stream(self, stream: str) -> Any: ...


@runtime_checkable
class ReportsCleanupPolicy(Protocol):
    """An admin that knows a stream's ``cleanup.policy`` (what may have removed messages from it)."""

    def cleanup_policy(self, stream: str) -> str: ...


@runtime_checkable
class OffsetsForTimes(Protocol):
    """An admin that finds, per partition, the earliest offset at or after a timestamp (ms)
    (Kafka's ``offsetsForTimes``): timestamp startpoints need it."""

    def offsets_for_times(
        self, timestamps: dict[SystemStreamPartition, int]
    ) -> dict[SystemStreamPartition, str | None]: ...


@runtime_checkable
class SspMetadataAdmin(Protocol):
    """An admin that answers for the asked partitions only (Samza's ``getSSPMetadata``)."""

    def get_ssp_metadata(
        self, ssps: Iterable[SystemStreamPartition]
    ) -> dict[SystemStreamPartition, SystemStreamPartitionMetadata]: ...


@runtime_checkable
class ReportsLastStableOffsets(Protocol):
    """An admin of a system with transactions (Kafka): per partition its *last stable offset*, the
    first offset a ``read_committed`` reader cannot read yet — an open transaction's first offset,
    the upcoming offset when no transaction is open in it."""

    def last_stable_offsets(self, ssps: Iterable[SystemStreamPartition]) -> dict[SystemStreamPartition, str]: ...


@runtime_checkable
class DeliversColumnar(Protocol):
    """A consumer that can deliver a partition's rows as Arrow record batches
    (:class:`~samza_dagster.model.ColumnarEnvelope`), one per poll, instead of an envelope per row:
    the container asks it for the partitions of tasks that take columnar batches, before ``start``."""

    def deliver_columnar(self, ssps: Iterable[SystemStreamPartition]) -> None: ...


@runtime_checkable
class SplitsColumnar(Protocol):
    """An admin of a system that delivers columnar batches, which can cut one in two after a row
    (a restart replaying into a table that holds part of a batch: container/table_replay.py)."""

    def split_columnar(self, envelope: Any, offset: str) -> tuple[Any, Any]: ...


@runtime_checkable
class EmitsBadRows(Protocol):
    """A consumer that hands a row it cannot parse on as an envelope of its own instead of failing
    the read (the files system's JSON lines and CSV): the container decodes its partitions with
    ``bad_row_decoder()``, so such a row fails the job, is dropped or goes to the dead-letter stream
    as a message its serde cannot decode does — and the checkpoint moves past it."""

    def bad_row_decoder(self) -> Any: ...


@runtime_checkable
class AppendsTables(Protocol):
    """A producer that appends a whole Arrow table as it is (Iceberg, files): what a columnar task
    sends with ``MessageCollector.send_table`` reaches it without a Python object per row."""

    def send_table(self, source: str, system_stream: SystemStream, table: Any) -> None: ...


@runtime_checkable
class ReportsPosition(Protocol):
    """A consumer whose fetch position in a partition is known (None before its first fetch):
    past a transaction's commit marker, the end of a range holds no message to read."""

    def position(self, ssp: SystemStreamPartition) -> str | None: ...


@runtime_checkable
class SpacesCommits(Protocol):
    """A producer whose every commit costs something lasting (an Iceberg snapshot): the container's
    timed commits come no closer than ``min_commit_interval_s`` while it has one."""

    @property
    def min_commit_interval_s(self) -> float: ...


@runtime_checkable
class CheckpointCarryingProducer(Protocol):
    """A producer whose commits carry the job's checkpoints (Iceberg): it commits them with its
    output and reports the newest it holds per task."""

    def commit_checkpoints(self, container_id: str, checkpoints: Mapping[str, bytes]) -> list[Any]: ...

    def last_checkpoints(self, tasks: Iterable[str]) -> dict[str, dict[SystemStream, bytes]]: ...


class PartitionFile(NamedTuple):
    """One file of a files stream's partition, as ``ListsPartitionFiles`` gives it."""

    #: the path under the stream's directory: the file part of the partition's offsets
    name: str
    rows: int
    size: int
    #: the file's modification time (ms since the epoch)
    modified_ms: int


@runtime_checkable
class ListsPartitionFiles(Protocol):
    """An admin whose partitions are groups of files (the files system): per partition, in
    offset order, its files with their row counts and modification times."""

    def partition_files(self, stream: str) -> list[list[PartitionFile]]: ...


class TableSummary(NamedTuple):
    """A table stream's state (``DescribesTables``): its snapshots and rows, and the job
    checkpoints (task → checkpoint JSON) in the summary of the newest snapshot that carries any."""

    snapshots: int
    rows: int
    data_files: int
    current_snapshot_id: int | None
    current_snapshot_ms: int | None
    #: the snapshot whose summary holds ``checkpoints`` (None when no snapshot holds any)
    checkpoint_snapshot_id: int | None
    #: the job (``<job.name>-<job.id>``) and container of that commit
    checkpoint_job: str | None
    checkpoint_container: str | None
    checkpoints: dict[str, str]


@runtime_checkable
class DescribesTables(Protocol):
    """An admin whose streams are tables (the iceberg system): what ``streams describe`` shows."""

    def table_summary(self, stream: str) -> TableSummary | None: ...

    def table_name(self, stream: str) -> str:
        """The stream's table as its catalog names it (``<namespace>.<table>``)."""
        ...
