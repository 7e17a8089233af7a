"""The ``samza`` data source over a files stream: its rows as columns, with their offsets.

    spark.read.format("samza").option("system", "files").option("stream", "trips")
        .option("config.systems.files.samza.factory", "files")
        .option("config.systems.files.files.root", "/data/lake").load()
    -> partition INT, offset STRING, <the files' columns>

One Spark partition per stream partition (a group of files, read in offset order by the files
system's own consumer, as a job reads it); ``offset`` is the row's offset as the files system
writes it in checkpoints and startpoints, ``<file>:<row>``. The columns are the first file's (its
Arrow schema: Parquet's own types; JSON lines and CSV as pyarrow infers them); another file's
column the schema lacks is left out, a column it lacks is null, a value that does not cast fails
naming the file. A user schema (``.schema(...)``) picks and types the columns instead. The files'
Arrow batches go to Spark as they are read: no Python object per row. A row a text file cannot
parse fails the read naming the file and the row. ``partitions`` selects stream partitions;
``startOffset`` / ``endOffset`` do not apply (filter on ``offset`` instead).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from contextlib import closing
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from samza_dagster.config.config import Config
from samza_dagster.model import ColumnarEnvelope, SystemStreamPartition
from samza_dagster.spark.options import SamzaDataSourceError, build_config
from samza_dagster.system.factories import system_factory

#: the columns every row of a files stream gets ahead of its own
METADATA = ("partition", "offset")


def files_schema(system: str, stream: str, config: Config, oldest: dict[int, str]) -> StructType:
    """``partition INT, offset STRING`` and the columns of the stream's first batch of rows."""
    from pyspark.sql.pandas.types import from_arrow_schema

    first = None
    for p, start in sorted(oldest.items()):
        with closing(_batches(system, stream, config, p, start)) as batches:
            first = next(batches, None)
        if first is not None:
            break
    if first is None:
        raise SamzaDataSourceError(
            f"samza data source: files stream {system}.{stream} holds no row to take its columns from; "
            'give a schema: spark.read.format("samza").schema("partition INT, offset STRING, <column> <TYPE>, ...")'
        )
    clash = [name for name in first.schema.names if name in METADATA]
    if clash:
        raise SamzaDataSourceError(
            f"samza data source: files stream {system}.{stream} has column(s) {', '.join(clash)}, which the "
            "data source gives every row (the stream partition and the row's offset); give a schema without them"
        )
    columns = from_arrow_schema(first.schema)
    return StructType([StructField("partition", IntegerType()), StructField("offset", StringType()), *columns.fields])


class FilesInputPartition(InputPartition):
    def __init__(self, partition: int, start: str) -> None:
        self.partition = partition
        #: the partition's oldest offset (its first file's row 0), as the admin gave it at planning
        self.start = start


class FilesReader(DataSourceReader):
    """Reads a files stream's partitions whole (module docstring)."""

    def __init__(self, opts: dict[str, str], system: str, stream: str, oldest: dict[int, str], schema: Any) -> None:
        for option in ("startoffset", "endoffset"):
            if opts.get(option):
                name = {"startoffset": "startOffset", "endoffset": "endOffset"}[option]
                raise SamzaDataSourceError(
                    f'samza data source: option "{name}" does not apply to files stream {system}.{stream}: '
                    "its partitions are read whole; filter on the offset column (<file>:<row>)"
                )
        self.opts = opts
        self.system = system
        self.stream = stream
        self.oldest = oldest
        partitions = len(oldest)
        self.wanted = list(range(partitions))
        raw = opts.get("partitions", "").strip()
        if raw:
            try:
                self.wanted = sorted({int(p) for p in raw.split(",") if p.strip()})
            except ValueError:
                raise SamzaDataSourceError(
                    f'samza data source: option "partitions" must be integers, got {raw!r}'
                ) from None
            unknown = [p for p in self.wanted if not 0 <= p < partitions]
            if unknown:
                raise SamzaDataSourceError(
                    f'samza data source: option "partitions" names partitions {unknown} of files stream '
                    f"{system}.{stream}, which has partitions 0..{partitions - 1}"
                )
        self.schema_json = schema.json()

    def partitions(self) -> list[FilesInputPartition]:
        return [FilesInputPartition(p, self.oldest[p]) for p in self.wanted]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, FilesInputPartition)  # Spark hands back what partitions() made
        schema = to_arrow_schema(StructType.fromJson(json.loads(self.schema_json)))
        p = partition.partition
        for envelope in _batches(self.system, self.stream, build_config(self.opts), p, partition.start, whole=True):
            yield _with_offsets(envelope, p, schema, pa)


def _batches(
    system: str, stream: str, config: Config, partition: int, start: str, *, whole: bool = False
) -> Generator[Any, None, None]:
    """A partition's rows from ``start``, as the files consumer's ColumnarEnvelopes (``whole``) or
    their record batches; a row that does not parse fails naming its file and row."""
    consumer: Any = system_factory(config, system).get_consumer(system, config)
    ssp = SystemStreamPartition(system, stream, partition)
    consumer.deliver_columnar([ssp])
    consumer.register(ssp, start)
    consumer.start()
    try:
        while True:
            for envelope in consumer.poll([ssp], 0).get(ssp, []):
                if envelope.is_end_of_stream:
                    return
                if type(envelope) is not ColumnarEnvelope:
                    bad = envelope.message
                    raise SamzaDataSourceError(
                        f"samza data source: files stream {system}.{stream} partition {partition}: file "
                        f"{getattr(bad, 'file', '?')} row {getattr(bad, 'row', '?')} does not parse: "
                        f"{getattr(bad, 'cause', bad)}"
                    )
                if envelope.rows:
                    yield envelope if whole else envelope.message
    finally:
        consumer.stop()


def _with_offsets(envelope: ColumnarEnvelope, partition: int, schema: Any, pa: Any) -> Any:
    """The envelope's batch as the read's schema: the partition, each row's ``<file>:<row>``, and
    the batch's columns the schema names (cast to its types; absent ones null)."""
    import pyarrow.compute as pc

    batch = envelope.message
    n = envelope.rows
    name, _, first = envelope.first_offset.rpartition(":")
    rows = pa.array(range(int(first), int(first) + n), pa.int64())
    columns = []
    for field in schema:
        if field.name == "partition":
            columns.append(pa.array([partition] * n, field.type))
        elif field.name == "offset":
            columns.append(pc.binary_join_element_wise(f"{name}:", pc.cast(rows, pa.string()), ""))
        elif batch.schema.get_field_index(field.name) < 0:
            columns.append(pa.nulls(n, field.type))
        else:
            try:
                columns.append(batch.column(field.name).cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SamzaDataSourceError(
                    f"samza data source: file {name}: column {field.name!r} ({batch.schema.field(field.name).type}) "
                    f"does not cast to {field.type}: {exc}"
                ) from None
    return pa.RecordBatch.from_arrays(columns, schema=schema)
