"""``samza-dagster streams``: a stream's contents without writing Python.

Streams are named ``system.stream`` or just ``stream`` (the job's ``job.default.system``, else
``log``). Without ``--config-path`` the commands work on the embedded log under
``SAMZA_LOG_PATH`` (default ``./.samza-log``). Messages go through the stream's configured serdes
(``systems.<s>.samza.msg.serde``, ``...key.serde`` or the stream-level keys): ``produce`` turns
each line into a message the way the job will read it (a JSON line for ``json``, the line's text
for ``string``, its bytes otherwise) and ``tail`` prints them back decoded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO

from samza_dagster.cli.errors import EXIT_OK, UsageError
from samza_dagster.cli.text import count_of
from samza_dagster.config import Config, keys
from samza_dagster.config.job_config import JobConfig
from samza_dagster.errors import ReadTimeoutError
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.serde.serdes import SerdeError, StringSerde
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.factories import absent_input_hint, nearest_stream, system_admin
from samza_dagster.system.positions import position_reached
from samza_dagster.system.protocols import (
    CleansStreams,
    DeletesStreams,
    DescribesTables,
    ListsPartitionFiles,
    ListsStreams,
    PartitionFile,
)

TAIL_TIMEOUT_S = 30.0
#: a read_committed tail gives up on a partition that returned nothing this long: an open
#: transaction holds it (it would wait for the writer to commit or abort, maybe forever)
HELD_AFTER_S = 3.0


def reads_committed(config: Config, system: str) -> bool:
    """The system's consumers stop at open transactions (``read_committed``): set so, or by
    default — the confluent Kafka client always, any system in an exactly-once job's config."""
    level = keys.SYSTEM_CONSUMER_ISOLATION_LEVEL.get(config, system=system)
    if level is not None:
        return bool(level == "read_committed")
    if keys.JOB_PROCESSING_GUARANTEE.get(config) == "exactly-once":
        return True
    factory = (config.get_str(keys.SYSTEM_FACTORY.key(system=system)) or "log").strip()
    return factory == "kafka" and keys.SYSTEM_KAFKA_CLIENT.get(config, system=system) == "confluent"


def run_streams_command(args: argparse.Namespace, config: Config) -> int:
    action = args.streams_command
    if action == "list":
        return list_streams(config, args.system or _default_system(config))
    target = parse_stream(args.stream, config)
    if action == "create":
        return create(config, target, args.partitions)
    if action == "describe":
        return describe(config, target)
    if action == "produce":
        if args.file == "-":
            return produce(config, target, sys.stdin, "<stdin>", args.key_field)
        with open(args.file, encoding="utf-8") as lines:
            return produce(config, target, lines, args.file, args.key_field)
    if action == "tail":
        return tail(config, target, args.lines)
    if action == "clean":
        return clean(config, target)
    if action == "delete":
        return delete(config, target)
    raise AssertionError(action)


def _default_system(config: Config) -> str:
    return JobConfig(config).default_system


def parse_stream(text: str, config: Config) -> SystemStream:
    system, dot, stream = text.partition(".")
    if not dot:
        return SystemStream(_default_system(config), text)
    if not system or not stream:
        raise UsageError(f"stream {text!r}: expected [SYSTEM.]STREAM, e.g. log.sentences")
    return SystemStream(system, stream)


@contextmanager
def _admin(config: Config, system: str) -> Iterator[Any]:
    factory_key = keys.SYSTEM_FACTORY.key(system=system)
    if system != "log" and not config.get_str(factory_key):
        # the engine takes a system without a factory for the embedded log; here that would
        # quietly put "kafka.orders" in ./.samza-log
        raise UsageError(
            f"system {system!r} is not configured: give --config-path with "
            f"{factory_key} (or --config {factory_key}=...)"
        )
    with system_admin(config, system) as admin:
        yield admin


def create(config: Config, target: SystemStream, partitions: int) -> int:
    with _admin(config, target.system) as admin:
        created = admin.create_stream(StreamSpec(target.stream, target.stream, target.system, partitions))
        if created is False:
            existing = len(admin.get_system_stream_metadata([target.stream])[target.stream].partitions)
            print(f"{target.system}.{target.stream} already exists ({count_of(existing, 'partition')})")
            return EXIT_OK
    print(f"created {target.system}.{target.stream} ({count_of(partitions, 'partition')})")
    return EXIT_OK


def list_streams(config: Config, system: str) -> int:
    with _admin(config, system) as admin:
        lister = admin if isinstance(admin, ListsStreams) else None
        if lister is None:
            raise UsageError(f"system {system!r} cannot list its streams; describe one by name instead")
        names = sorted(n for n in lister.list_streams() if not n.startswith("__"))
        metadata = admin.get_system_stream_metadata(names) if names else {}
    for name in names:
        md = metadata[name]
        messages = _message_count(md)
        counted = f"  {count_of(messages, 'message')}" if messages is not None else ""
        print(f"{system}.{name}  {count_of(len(md.partitions), 'partition')}{counted}")
    if not names:
        print(f"no streams on system {system!r}")
    return EXIT_OK


def _message_count(md: Any) -> int | None:
    """Messages between the oldest and upcoming offsets, where offsets are numbers (not a files
    stream's ``<file>:<row>``)."""
    try:
        return sum(int(m.upcoming_offset) - int(m.oldest_offset) for m in md.partitions.values())
    except ValueError:
        return None


def _metadata(admin: Any, target: SystemStream) -> Any:
    try:
        return admin.get_system_stream_metadata([target.stream])[target.stream]
    except (StreamNotFoundError, KeyError):
        hint = absent_input_hint(admin, target.system, target.stream)
        raise StreamNotFoundError(target.system, target.stream, hint) from None


def describe(config: Config, target: SystemStream) -> int:
    with _admin(config, target.system) as admin:
        if isinstance(admin, DescribesTables):
            return _describe_table(admin, target)
        md = _metadata(admin, target)
        files = admin.partition_files(target.stream) if isinstance(admin, ListsPartitionFiles) else None
    print(f"{target.system}.{target.stream}: {count_of(len(md.partitions), 'partition')}")
    header = ["partition", "oldest", "newest", "upcoming"]
    rows = [
        [str(p), m.oldest_offset, m.newest_offset if m.newest_offset is not None else "-", m.upcoming_offset]
        for p, m in sorted(md.partitions.items())
    ]
    if files is not None:  # a files stream: a partition is a group of files, offsets <file>:<row>
        header[1:1] = ["files", "rows"]
        for row, group in zip(rows, files, strict=True):
            row[1:1] = [str(len(group)), str(sum(f.rows for f in group))]
    _print_table(header, rows)
    if files is not None:
        for p, group in enumerate(files):
            print(f"  partition {p}:")
            _print_table(
                ["file", "rows", "bytes", "modified"],
                [[f.name, str(f.rows), str(f.size), _utc(f.modified_ms)] for f in group],
                indent="    ",
                names=True,
            )
    return EXIT_OK


def _print_table(header: list[str], rows: list[list[str]], indent: str = "  ", names: bool = False) -> None:
    """Columns as wide as their widest cell, right-aligned (the first left-aligned when it holds
    ``names``)."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        cells = [cell.rjust(w) for cell, w in zip(row, widths, strict=True)]
        if names:
            cells[0] = row[0].ljust(widths[0])
        print(indent + "  ".join(cells).rstrip())


def _utc(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _describe_table(admin: DescribesTables, target: SystemStream) -> int:
    """A table stream (Iceberg): its snapshots and rows, and the checkpoints its job's last commit
    left in the snapshot summary (what a restarted job resumes from)."""
    summary = admin.table_summary(target.stream)
    if summary is None:
        raise StreamNotFoundError(
            target.system,
            target.stream,
            f"no table {admin.table_name(target.stream)} in its catalog (a job's first write creates it)",
        )
    print(
        f"{target.system}.{target.stream}: table {admin.table_name(target.stream)}, 1 partition (offsets count rows): "
        f"{count_of(summary.rows, 'row')}, {count_of(summary.data_files, 'data file')}, "
        f"{count_of(summary.snapshots, 'snapshot')}"
    )
    if summary.current_snapshot_id is not None:
        print(f"  current snapshot {summary.current_snapshot_id} ({_utc(summary.current_snapshot_ms)})")
    if summary.checkpoint_snapshot_id is None:
        print("  no snapshot summary holds a job's checkpoint (no job has committed to it)")
        return EXIT_OK
    newer = "" if summary.checkpoint_snapshot_id == summary.current_snapshot_id else " (newer snapshots hold none)"
    print(
        f"  checkpoint in snapshot {summary.checkpoint_snapshot_id}'s summary{newer}: job {summary.checkpoint_job}, "
        f"container {summary.checkpoint_container}"
    )
    for task, checkpoint in sorted(summary.checkpoints.items()):
        print(f"    {task}: {checkpoint}")
    return EXIT_OK


def clean(config: Config, target: SystemStream) -> int:
    """One retention/compaction pass now, by the policy stored in the stream's file (the log's
    producers run them in the background; a stream nobody writes any more is cleaned here)."""
    with _admin(config, target.system) as admin:
        if not isinstance(admin, CleansStreams):
            raise UsageError(
                f"system {target.system!r} applies its own retention (a Kafka broker does); "
                "streams clean is for the embedded log"
            )
        _metadata(admin, target)
        stats = admin.clean_stream(target.stream)
    print(
        f"{target.system}.{target.stream}: removed {stats.deleted} messages, "
        f"gave {stats.vacuumed_pages} pages back to the file system"
    )
    return EXIT_OK


def delete(config: Config, target: SystemStream) -> int:
    """The stream and every message in it (the embedded log: its file). Names what it held."""
    with _admin(config, target.system) as admin:
        deletes = isinstance(admin, DeletesStreams)  # (a flag: admin stays Any for the calls below)
        if not deletes:
            raise UsageError(
                f"system {target.system!r} cannot delete its streams here; streams delete is for the embedded "
                "log (a Kafka topic: kafka-topics.sh --delete --topic NAME)"
            )
        try:
            md = admin.get_system_stream_metadata([target.stream])[target.stream]
        except (StreamNotFoundError, KeyError):
            near = nearest_stream(admin, target.stream)
            hint = f"did you mean {target.system}.{near}?" if near else "nothing to delete"
            raise StreamNotFoundError(target.system, target.stream, hint) from None
        admin.delete_stream(target.stream)
    messages = _message_count(md)
    held = f", {count_of(messages, 'message')}" if messages is not None else ""
    print(f"deleted {target.system}.{target.stream} ({count_of(len(md.partitions), 'partition')}{held})")
    return EXIT_OK


def produce(config: Config, target: SystemStream, lines: TextIO, source: str, key_field: str | None) -> int:
    """One message per non-empty line; a line the stream's serde cannot take fails naming the
    line and nothing from the file is sent (the lines are checked before the first send)."""
    serdes = SerdeRegistry(config)
    msg_serde, key_serde = serdes.msg_serde(target), serdes.key_serde(target)
    messages: list[tuple[bytes | None, bytes | None]] = []  # a JSON null value is a null message
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        parsed: Any = line
        if _is_json(msg_serde) or key_field:
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{source} line {number}: not a JSON value ({exc.msg}): {line[:60]!r}") from None
        # the message is the parsed JSON for a json serde, else the line as it is (a JSON line
        # read only for its --key-field keeps its text)
        value: Any = parsed if _is_json(msg_serde) else line
        key: Any = None
        if key_field:
            if not isinstance(parsed, dict) or key_field not in parsed:
                raise UsageError(f"{source} line {number}: no field {key_field!r} for --key-field")
            key = parsed[key_field]
            if isinstance(key_serde, StringSerde) and key is not None and not isinstance(key, str):
                key = json.dumps(key)  # 42 -> "42": a string key serde takes the field's JSON text
        try:
            messages.append((_encode(key_serde, key), _encode(msg_serde, value)))
        except SerdeError as exc:
            what = f"the key from field {key_field!r}" if key_field else "the message"
            raise UsageError(
                f"{source} line {number}: {what} does not fit the stream's serde ({exc}); "
                f"set systems.{target.system}.samza.key.serde / msg.serde (--config) to one that takes it"
            ) from None
    with _admin(config, target.system) as admin:
        _metadata(admin, target)  # the stream must exist: producing does not create one
    producer = system_factory(config, target.system).get_producer(target.system, config)
    producer.register("samza-dagster-streams")
    producer.start()
    try:
        for key, value in messages:
            producer.send("samza-dagster-streams", OutgoingMessageEnvelope(target, value, key=key))
        producer.flush("samza-dagster-streams")
    finally:
        producer.stop()
    print(f"wrote {len(messages)} messages to {target.system}.{target.stream}")
    return EXIT_OK


def _is_json(serde: Any) -> bool:
    return type(serde).__name__ == "JsonSerde"


def _encode(serde: Any, value: Any) -> bytes | None:
    if value is None:
        return None
    if serde is not None:
        return serde.to_bytes(value)
    return value if isinstance(value, bytes) else str(value).encode()


def _decode(serde: Any, data: bytes | None) -> str:
    if data is None:
        return "-"
    if serde is None:
        return data.decode(errors="replace")
    try:
        value = serde.from_bytes(data)
    except Exception:  # noqa: BLE001 - show what is there rather than fail the listing
        return data.decode(errors="replace")
    return value if isinstance(value, str) else json.dumps(value, default=str)


def tail(config: Config, target: SystemStream, per_partition: int) -> int:  # noqa: C901 - the command's options each change the loop a little; split when it next grows
    factory = system_factory(config, target.system)
    with _admin(config, target.system) as admin:
        if isinstance(admin, DescribesTables):
            raise UsageError(
                f"{target.system}.{target.stream} is a table (system {target.system!r}): a job's output, with no "
                f"consumer to tail; `streams describe {target.system}.{target.stream}` shows its rows, snapshots and "
                "checkpoint, and pyiceberg or Spark (samza_dagster.spark.iceberg) read its rows"
            )
        md = _metadata(admin, target)
        if isinstance(admin, ListsPartitionFiles):
            return _tail_files(config, target, admin.partition_files(target.stream), per_partition)
    serdes = SerdeRegistry(config)
    msg_serde, key_serde = serdes.msg_serde(target), serdes.key_serde(target)
    wanted: dict[Any, int] = {}
    consumer = factory.get_consumer(target.system, config)
    for p, m in sorted(md.partitions.items()):
        if m.newest_offset is None:
            continue
        start = max(int(m.oldest_offset), int(m.newest_offset) - per_partition + 1)
        ssp = SystemStreamPartition(target.system, target.stream, p)
        consumer.register(ssp, str(start))
        wanted[ssp] = int(m.newest_offset)
    rows: list[tuple[int, int, str, str]] = []
    held: dict[SystemStreamPartition, int] = {}  # partition -> the offset an open transaction holds it at
    if wanted:
        committed = reads_committed(config, target.system)
        consumer.start()
        started = time.monotonic()
        deadline = started + TAIL_TIMEOUT_S
        moved = {ssp: started for ssp in wanted}
        next_offset = {
            ssp: max(int(md.partitions[ssp.partition].oldest_offset), wanted[ssp] - per_partition + 1) for ssp in wanted
        }
        try:
            while wanted:
                now = time.monotonic()
                if now > deadline:
                    raise ReadTimeoutError(
                        f"{target.system}.{target.stream}: partitions {sorted(s.partition for s in wanted)} "
                        f"not read to their newest offset within {TAIL_TIMEOUT_S:.0f} s"
                    )
                polled = consumer.poll(set(wanted), 0.2)
                for ssp in [s for s in wanted if not polled.get(s)]:
                    if position_reached(consumer, ssp, wanted[ssp] + 1):  # the newest offset is a commit marker
                        wanted.pop(ssp)
                    elif committed and now - moved[ssp] >= HELD_AFTER_S:
                        held[ssp] = next_offset[ssp]
                        wanted.pop(ssp)
                for ssp, envelopes in polled.items():
                    for env in envelopes:
                        if env.is_end_of_stream or ssp not in wanted:
                            continue
                        offset = int(env.offset)
                        moved[ssp], next_offset[ssp] = time.monotonic(), offset + 1
                        rows.append(
                            (ssp.partition, offset, _decode(key_serde, env.key), _decode(msg_serde, env.message))
                        )
                        if offset >= wanted[ssp]:
                            wanted.pop(ssp)
        finally:
            consumer.stop()
    for partition, offset, key, value in sorted(rows):
        print(f"{partition}:{offset}\t{key}\t{value}")
    for ssp, offset in sorted(held.items(), key=lambda item: item[0].partition):
        newest = md.partitions[ssp.partition].newest_offset
        print(
            f"{target.system}.{target.stream} partition {ssp.partition}: nothing readable from offset {offset} "
            f"(newest {newest}): an open transaction holds it — a read_committed reader waits until its writer "
            "commits or aborts it; an exactly-once job's container aborts it when it starts again "
            f"(systems.{target.system}.consumer.isolation.level=read_uncommitted shows it as it is)",
            file=sys.stderr,
        )
    if not rows and not held:
        print(f"{target.system}.{target.stream} is empty", file=sys.stderr)
    return EXIT_OK


def _tail_files(config: Config, target: SystemStream, files: list[list[PartitionFile]], per_partition: int) -> int:
    """The last rows of each partition of a files stream, at their offsets ``<file>:<row>``, each
    row as JSON (a row that does not parse: its raw text, and why)."""
    consumer = system_factory(config, target.system).get_consumer(target.system, config)
    ssps = []
    for p, group in enumerate(files):
        start = _rows_back(group, per_partition)
        if start is not None:
            ssp = SystemStreamPartition(target.system, target.stream, p)
            consumer.register(ssp, start)
            ssps.append(ssp)
    rows: dict[SystemStreamPartition, list[str]] = {ssp: [] for ssp in ssps}
    if ssps:
        consumer.start()
        try:
            reading = set(ssps)
            while reading:  # a files partition ends by itself: its end-of-stream after its last row
                for ssp, envelopes in consumer.poll(set(reading), 0).items():
                    for env in envelopes:
                        if env.is_end_of_stream:
                            reading.discard(ssp)
                        else:
                            rows[ssp].append(f"{ssp.partition}:{env.offset}\t-\t{_row_text(env.message)}")
        finally:
            consumer.stop()
    for ssp in ssps:
        for line in rows[ssp]:
            print(line)
    if not any(rows.values()):
        print(f"{target.system}.{target.stream} is empty", file=sys.stderr)
    return EXIT_OK


def _rows_back(group: list[PartitionFile], count: int) -> str | None:
    """The offset ``count`` rows before a partition's end (its first row when it holds fewer);
    None when it holds none."""
    remaining = count
    for entry in reversed(group):
        if entry.rows >= remaining:
            return f"{entry.name}:{entry.rows - remaining}"
        remaining -= entry.rows
    return f"{group[0].name}:0" if remaining < count else None


def _row_text(message: Any) -> str:
    if isinstance(message, dict):
        return json.dumps(message, default=str)
    raw, cause = getattr(message, "raw", None), getattr(message, "cause", None)
    if isinstance(raw, bytes):  # a row that does not parse (the files system's BadRow)
        return f"{raw.decode(errors='replace').rstrip()}\t(does not parse: {cause})"
    return str(message)
