"""The ``samza`` Spark data source: batch read and write of any stream of the systems.

    spark.read.format("samza").option("system", "log").option("stream", "page-views")
        .option("config.systems.log.log.path", "/data/log").load()
    -> partition INT, offset LONG, key BINARY, value BINARY, timestamp LONG

    df.write.format("samza").option("system", "log").option("stream", "out")
        .option("config.systems.log.log.path", "/data/log").mode("append").save()

Everything goes through ``system_factory`` and the System* protocols, so the log and Kafka
systems (and any user system whose workers can reach it) work alike. Reading plans one Spark
partition per stream partition, with the range fixed at planning time (see
:func:`samza_dagster.spark.options.offset_ranges`); a stream that does not exist fails the
planning on the driver with the stream's name. Offsets must be integers (log, Kafka); a files
stream reads through its own reader (spark/files_source.py: its rows as columns, one Spark
partition per stream partition, offsets ``<file>:<row>`` as a column), and an Iceberg table is
refused, naming Iceberg's own Spark runtime (spark/iceberg.py), which reads it.
A consumer with ``position(ssp)`` (the Kafka one) ends a partition's read once its fetch
position reaches the end offset, so a range ending in offsets that hold no message (a
transaction's commit marker) is read without waiting ``pollTimeoutMs``.

Read options: ``system`` (default ``log``), ``stream`` (required), ``config`` / ``config.<key>`` /
``configPath``, ``partitions`` (comma list), ``startOffset`` / ``endOffset`` (an offset,
``oldest`` / ``upcoming``, or JSON ``{"0": 10, ...}``; end is exclusive), ``serde`` / ``keySerde``
(serde names decoding value / key; with a user schema, fields other than the metadata columns
``partition``, ``offset``, ``key``, ``timestamp`` are taken by name from a decoded dict value,
``value`` is the whole decoded value), ``pollTimeoutMs`` (how long a read waits for a message
it knows exists before failing; default 60000).

Write options: ``system``, ``stream``, config as above; columns ``value`` (binary or string;
or ``valueColumns=a,b`` to JSON-encode those columns into the value), ``key`` or
``keyColumn=<col>`` (optional), ``partition`` (optional; honoured when not null, else the key's
murmur2 partition as Kafka's default partitioner, else round-robin), ``timestamp`` (optional,
ms event time); ``serde`` encodes a non-binary ``value``; ``reportPath`` makes the driver write
a JSON summary ``{"total": n, "partitions": {"0": n, ...}}`` once the write commits.
Each Spark task flushes its producer before it reports success (the writer commit): at-least-once,
a failed and retried write sends again what a finished task wrote.

Exactly-once: ``transactionalId=<write id>`` (the write's idempotence key, e.g. the job, stream and
day of a backfill) makes the write one transaction on the embedded log (spark/transactional.py):
the tasks' rows become readable to ``read_committed`` readers together at the driver's commit,
never partly, and a write whose id was committed before writes nothing (the summary then says
``"already_written": true`` with the earlier write's counts). ``transactionStream`` overrides the
stream holding the transaction state and ledger (default ``__samza_spark_writes``). On another
system it is a ConfigError naming ``systems.<s>.samza.factory``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.spark.files_source import FilesReader, files_schema
from samza_dagster.spark.options import (
    SamzaDataSourceError,
    build_config,
    config_option,
    normalized,
    offset_ranges,
    required,
)
from samza_dagster.spark.transactional import STATE_STREAM, SparkWriteTransaction
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import stop_admin, system_factory
from samza_dagster.system.log.two_phase import LedgerRecord, PreparedTransaction
from samza_dagster.system.partitioner import key_to_bytes, partition_for_key
from samza_dagster.system.protocols import DescribesTables, ListsPartitionFiles

DEFAULT_SCHEMA = "partition INT, offset LONG, key BINARY, value BINARY, timestamp LONG"
DEFAULT_SCHEMA_STRING = "struct<partition:int,offset:bigint,key:binary,value:binary,timestamp:bigint>"
BATCH_ROWS = 10_000
DEFAULT_POLL_TIMEOUT_MS = 60_000


def _stream_metadata(system: str, stream: str, config: Any) -> Any:
    return _stream_info(system, stream, config)[0]


def _stream_info(system: str, stream: str, config: Any) -> tuple[Any, bool]:
    """The stream's metadata from its system's admin, and whether it is a files stream; a clear
    error naming a missing stream, or — a table of the iceberg system — what reads it."""
    admin = system_factory(config, system).get_admin(system, config)
    try:
        if isinstance(admin, DescribesTables):
            raise SamzaDataSourceError(
                f"samza data source: stream {stream!r} of system {system!r} is an Iceberg table "
                f"({admin.table_name(stream)}): Spark reads and writes it through Iceberg's own Spark runtime, "
                f"over the same catalog — spark = samza_dagster.spark.iceberg.iceberg_session(config, {system!r}); "
                f"spark.table('{system}.{admin.table_name(stream)}')"
            )
        metadata = admin.get_system_stream_metadata([stream]).get(stream)
        files = isinstance(admin, ListsPartitionFiles)
    except StreamNotFoundError as exc:
        raise SamzaDataSourceError(f"samza data source: {exc}") from None
    finally:
        stop_admin(admin)
    if metadata is None or not metadata.partitions:
        raise SamzaDataSourceError(f"samza data source: stream {stream!r} does not exist on system {system!r}")
    return metadata, files


def _oldest(metadata: Any) -> dict[int, str]:
    return {p: m.oldest_offset for p, m in metadata.partitions.items()}


class SamzaDataSource(DataSource):
    """Format ``samza``: see the module docstring for options."""

    @classmethod
    def name(cls) -> str:
        return "samza"

    def _opts(self) -> dict[str, str]:
        return normalized(self.options)

    def schema(self) -> str | StructType:
        """The default schema; also checks the stream exists, so a missing one fails at
        ``load()`` on the driver (with a user schema it fails when the read is planned)."""
        opts = self._opts()
        system, stream, config = (
            opts.get("system", "log").strip() or "log",
            required(opts, "stream"),
            build_config(opts),
        )
        metadata, files = _stream_info(system, stream, config)
        if files:
            return files_schema(system, stream, config, _oldest(metadata))
        serde = opts.get("serde")
        if serde in ("string",):
            return DEFAULT_SCHEMA.replace("value BINARY", "value STRING")
        if serde in ("integer", "long"):
            return DEFAULT_SCHEMA.replace("value BINARY", "value LONG")
        if serde:
            raise SamzaDataSourceError(
                f'samza data source: option "serde"={serde!r} needs a schema: spark.read.format("samza")'
                '.schema("partition INT, offset LONG, <field> <TYPE>, ...")'
            )
        return DEFAULT_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        opts = self._opts()
        system, stream = opts.get("system", "log").strip() or "log", required(opts, "stream")
        metadata, files = _stream_info(system, stream, build_config(opts))
        if files:
            return FilesReader(opts, system, stream, _oldest(metadata), schema)
        return SamzaReader(opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> SamzaWriter:
        opts = self._opts()
        if overwrite:
            raise SamzaDataSourceError(
                f'samza data source: stream {opts.get("stream")!r} is append-only; use .mode("append")'
            )
        return SamzaWriter(opts, schema)


# -- reading ----------------------------------------------------------------------------------


class SamzaInputPartition(InputPartition):
    """One stream partition and its offset range [start, end)."""

    def __init__(self, partition: int, start: int, end: int) -> None:
        self.partition = partition
        self.start = start
        self.end = end


class SamzaReader(DataSourceReader):
    def __init__(self, opts: dict[str, str], schema: StructType) -> None:
        self.opts = opts
        self.system = opts.get("system", "log").strip() or "log"
        self.stream = required(opts, "stream")
        self.field_names = list(schema.fieldNames())
        self.schema_json = schema.json()
        config = build_config(opts)
        metadata = _stream_metadata(self.system, self.stream, config)
        self.ranges = offset_ranges(opts, self.stream, metadata.partitions)
        self.arrow = (
            schema.simpleString() == DEFAULT_SCHEMA_STRING and not opts.get("serde") and not opts.get("keyserde")
        )
        timeout = opts.get("polltimeoutms", str(DEFAULT_POLL_TIMEOUT_MS))
        try:
            self.poll_timeout_s = int(timeout) / 1000.0
        except ValueError:
            raise SamzaDataSourceError(
                f'samza data source: option "pollTimeoutMs" must be an integer, got {timeout!r}'
            ) from None

    def partitions(self) -> list[SamzaInputPartition]:
        return [SamzaInputPartition(p, start, end) for p, (start, end) in sorted(self.ranges.items())]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, SamzaInputPartition)  # Spark hands back what partitions() made
        if partition.start >= partition.end:
            return iter(())
        chunks = self._chunks(partition)
        if self.arrow:
            return _arrow_batches(partition.partition, chunks)
        return self._rows(chunks, partition.partition)

    def _chunks(self, part: SamzaInputPartition) -> Iterator[list[Any]]:
        """Lists of envelopes in offset order, exactly covering [start, end)."""
        config = build_config(self.opts)
        consumer = system_factory(config, self.system).get_consumer(self.system, config)
        ssp = SystemStreamPartition(self.system, self.stream, part.partition)
        ssps = (ssp,)
        consumer.register(ssp, str(part.start))
        consumer.start()
        try:
            end = part.end
            last_needed = end - 1
            deadline = time.monotonic() + self.poll_timeout_s
            # Kafka: the offsets just below the end may hold no message (a transaction's commit
            # marker ends every transactional partition), so a quiet poll asks the consumer's
            # fetch position, when it has one, whether the range is done.
            position = getattr(consumer, "position", None)
            done = False
            while not done:
                envelopes = consumer.poll(ssps, 0.5).get(ssp)
                if not envelopes:
                    if position is not None:
                        now_at = position(ssp)
                        if now_at is not None and int(now_at) >= end:
                            break
                    if time.monotonic() > deadline:
                        raise SamzaDataSourceError(
                            f"samza data source: stream {self.stream!r} partition {part.partition}: no message "
                            f"for {self.poll_timeout_s:.0f}s while reading offsets [{part.start}, {end}); "
                            "is the system reachable and the range retained?"
                        )
                    continue
                deadline = time.monotonic() + self.poll_timeout_s
                tail = envelopes[-1]
                if tail.is_end_of_stream or int(tail.offset) >= last_needed:
                    # The last batch: cut it at the end offset (and drop any end-of-stream marker).
                    kept = []
                    for env in envelopes:
                        if env.is_end_of_stream or int(env.offset) >= end:
                            break
                        kept.append(env)
                    envelopes = kept
                    done = True
                if envelopes:
                    yield envelopes
        finally:
            consumer.stop()

    def _rows(self, chunks: Iterator[list[Any]], partition: int) -> Iterator[tuple[Any, ...]]:
        registry = SerdeRegistry(build_config(self.opts))
        value_serde = registry.get(self.opts["serde"], "serde") if self.opts.get("serde") else None
        key_serde = registry.get(self.opts["keyserde"], "keySerde") if self.opts.get("keyserde") else None
        names = self.field_names
        for envelopes in chunks:
            for env in envelopes:
                value = env.message
                if value_serde is not None and value is not None:
                    value = value_serde.from_bytes(value)
                key = env.key
                if key_serde is not None and key is not None:
                    key = key_serde.from_bytes(key)
                row: list[object] = []  # the columns of the requested fields, of their own types
                for name in names:
                    if name == "partition":
                        row.append(partition)
                    elif name == "offset":
                        row.append(int(env.offset))
                    elif name == "key":
                        row.append(key)
                    elif name == "timestamp":
                        row.append(env.event_time)
                    elif name == "value":
                        row.append(value)
                    else:
                        row.append(value.get(name) if isinstance(value, dict) else None)
                yield tuple(row)


def _arrow_batches(partition: int, chunks: Iterator[list[Any]]) -> Iterator[Any]:
    """Default-schema rows as Arrow record batches of up to BATCH_ROWS rows (far cheaper for
    Spark to ingest than Python tuples)."""
    # pyarrow loads only inside Spark's Python workers
    import pyarrow as pa

    schema = pa.schema(
        [
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("timestamp", pa.int64()),
        ]
    )
    offsets: list[int] = []
    keys: list[Any] = []
    values: list[Any] = []
    times: list[Any] = []

    def batch() -> Any:
        n = len(offsets)
        return pa.RecordBatch.from_arrays(
            [
                pa.array([partition] * n, pa.int32()),
                pa.array(offsets, pa.int64()),
                pa.array(keys, pa.binary()),
                pa.array(values, pa.binary()),
                pa.array(times, pa.int64()),
            ],
            schema=schema,
        )

    for envelopes in chunks:
        offsets.extend([int(e.offset) for e in envelopes])
        keys.extend([e.key for e in envelopes])
        values.extend([e.message for e in envelopes])
        times.extend([e.event_time for e in envelopes])
        if len(offsets) >= BATCH_ROWS:
            yield batch()
            offsets, keys, values, times = [], [], [], []
    if offsets:
        yield batch()


# -- writing ----------------------------------------------------------------------------------


@dataclass
class SamzaCommitMessage(WriterCommitMessage):
    """What one Spark task wrote (and flushed): messages per stream partition; in an exactly-once
    write, its prepared transaction (committed by the driver with every other task's)."""

    counts: dict[int, int] = field(default_factory=dict)
    prepared: PreparedTransaction | None = None


class SamzaWriter(DataSourceArrowWriter):
    def __init__(self, opts: dict[str, str], schema: StructType) -> None:
        self.opts = opts
        self.system = opts.get("system", "log").strip() or "log"
        self.stream = required(opts, "stream")
        self.columns = list(schema.fieldNames())
        value_columns = [c.strip() for c in opts.get("valuecolumns", "").split(",") if c.strip()]
        self.value_columns = value_columns
        self.key_column = opts.get("keycolumn", "key" if "key" in self.columns else "").strip() or None
        missing = [c for c in value_columns + ([self.key_column] if self.key_column else []) if c not in self.columns]
        if not value_columns and "value" not in self.columns:
            missing.append("value")
        if missing:
            raise SamzaDataSourceError(
                f"samza data source: writing to stream {self.stream!r}: the DataFrame has no column(s) {missing} "
                f"(columns: {self.columns}); give a 'value' column or option valueColumns"
            )
        config = build_config(opts)
        metadata = _stream_metadata(self.system, self.stream, config)
        self.partition_count = len(metadata.partitions)
        #: exactly-once (option transactionalId): the write's transaction protocol, and its ledger
        #: record when an earlier launch committed it already (then nothing is written)
        self.transaction: SparkWriteTransaction | None = None
        self.already_written: LedgerRecord | None = None
        write_id = opts.get("transactionalid")
        if write_id is not None:
            state_stream = opts.get("transactionstream", "").strip() or STATE_STREAM
            self.transaction = SparkWriteTransaction(config, self.system, write_id, state_stream)
            self.already_written = self.transaction.begin()

    def write(self, iterator: Iterator[Any]) -> SamzaCommitMessage:
        if self.already_written is not None:
            return SamzaCommitMessage()  # an earlier launch committed this write: write nothing
        config = build_config(self.opts)
        value_serde = SerdeRegistry(config).get(self.opts["serde"], "serde") if self.opts.get("serde") else None
        dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode
        producer = system_factory(config, self.system).get_producer(self.system, config)
        source = f"spark-writer-{self.stream}"
        producer.register(source)
        producer.start()
        if self.transaction is not None:
            partition_id, attempt = _task_attempt()
            # the log's producer (SparkWriteTransaction checked the system): its transaction calls
            transactional: Any = producer
            transactional.init_transactions(
                self.transaction.task_producer_id(partition_id, attempt), self.transaction.state_stream
            )
        prepared: PreparedTransaction | None = None
        stream = SystemStream(self.system, self.stream)
        count = self.partition_count
        counts = [0] * count
        next_rr = _task_partition_id() % count
        value_columns, key_column = self.value_columns, self.key_column
        try:
            for batch in iterator:
                cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
                n = batch.num_rows
                if value_columns:
                    picked = [cols[c] for c in value_columns]
                    values: list[Any] = [
                        dumps(dict(zip(value_columns, row, strict=True))).encode("utf-8")
                        for row in zip(*picked, strict=True)
                    ]
                else:
                    values = cols["value"]
                keys = cols[key_column] if key_column else [None] * n
                parts = cols.get("partition") or [None] * n
                times = cols.get("timestamp") or [None] * n
                for i in range(n):
                    value = values[i]
                    if value is not None and not isinstance(value, bytes):
                        if value_serde is not None:
                            value = value_serde.to_bytes(value)
                        elif isinstance(value, str):
                            value = value.encode("utf-8")
                        else:
                            raise SamzaDataSourceError(
                                f"samza data source: writing to stream {self.stream!r}: value {value!r} is "
                                f"{type(value).__name__}; give a binary/string value column, option serde, or valueColumns"
                            )
                    key = keys[i]
                    if key is not None and not isinstance(key, bytes):
                        key = key_to_bytes(key)
                    partition = parts[i]
                    if partition is None:
                        if key is not None:
                            partition = partition_for_key(key, count)
                        else:
                            partition = next_rr
                            next_rr = (next_rr + 1) % count
                    elif not 0 <= partition < count:
                        raise SamzaDataSourceError(
                            f"samza data source: stream {self.stream!r} has {count} partitions; a row asked "
                            f"for partition {partition}"
                        )
                    producer.send(source, OutgoingMessageEnvelope(stream, value, key, None, partition, times[i]))
                    counts[partition] += 1
            if self.transaction is not None:
                # written but open: the driver's commit makes every task's rows readable at once
                prepared = transactional.prepare_transaction()
            else:
                producer.flush(source)
        finally:
            producer.stop()  # a transaction not prepared (the task failed) is aborted here
        return SamzaCommitMessage({p: c for p, c in enumerate(counts) if c}, prepared)

    def commit(self, messages: list[Any]) -> None:
        summary = summarize_commits(messages)
        if self.transaction is not None:
            earlier = self.already_written
            if earlier is None:
                prepared = [m.prepared for m in messages if isinstance(m, SamzaCommitMessage) and m.prepared]
                earlier = self.transaction.commit(prepared, summary)
            summary = _with_ledger(summary, self.transaction.write_id, earlier)
        path = self.opts.get("reportpath")
        if path:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(summary, fh)

    def abort(self, messages: list[Any]) -> None:
        if self.transaction is not None:
            # nothing of the write was readable: remove what its tasks wrote
            self.transaction.abort()
        # Otherwise a stream cannot take back what a finished task flushed: a retried job
        # re-sends (at-least-once), as Samza's producers do.


def summarize_commits(messages: list[Any]) -> dict[str, Any]:
    per: dict[int, int] = {}
    for message in messages:
        if isinstance(message, SamzaCommitMessage):
            for p, c in message.counts.items():
                per[p] = per.get(p, 0) + c
    return {"total": sum(per.values()), "partitions": {str(p): per[p] for p in sorted(per)}}


def _with_ledger(summary: dict[str, Any], write_id: str, earlier: LedgerRecord | None) -> dict[str, Any]:
    """The report of an exactly-once write: what this launch wrote, or — when an earlier launch
    had committed the write — nothing, and what that one wrote and when."""
    if earlier is None:
        return {**summary, "write_id": write_id, "already_written": False}
    return {
        "total": 0,
        "partitions": {},
        "write_id": write_id,
        "already_written": True,
        "written": earlier.value,
        "written_at_ms": earlier.committed_ms,
    }


def _task_attempt() -> tuple[int, int]:
    """This Spark task's partition and attempt number (0, 0 outside Spark): an exactly-once
    write's task producer id, distinct per attempt so a retry never fences a finished attempt."""
    # pyspark (and its JVM gateway) loads only where Spark runs
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return (ctx.partitionId(), ctx.attemptNumber()) if ctx is not None else (0, 0)


def _task_partition_id() -> int:
    """Spreads unkeyed rows of different Spark tasks over different starting partitions."""
    try:
        # pyspark (and its JVM gateway) loads only where Spark runs
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return ctx.partitionId() if ctx is not None else 0
    except Exception:  # noqa: BLE001 - only a spreading hint
        return 0


def read_options(system: str, stream: str, config: Mapping[str, str]) -> dict[str, str]:
    """Options for ``spark.read/df.write.format("samza").options(**...)`` carrying ``config``
    verbatim (case preserved)."""
    return {"system": system, "stream": stream, "config": config_option(config)}
