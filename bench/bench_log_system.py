"""Produce and consume rate of the embedded log system next to a plain sqlite3 loop.

    python -m bench.bench_log_system [--messages N] [--repetitions R]

Both sides write the same rows (100-byte values, no key, 4 partitions round-robin) into the same
schema (the log's own DDL, WAL, the same synchronous setting: FULL unless --synchronous) in transactions of the same batch size, and
read them back with the same range query. The difference is the log system's own cost: building
an OutgoingMessageEnvelope per message and choosing its partition, reading each partition's last
offset inside the transaction, and on the read side building an IncomingMessageEnvelope per row.
Repetitions alternate which side runs first. Extra rows: keyed produce (murmur2 partitioning in
pure Python, kafka-python's) and produce with the other synchronous setting (NORMAL when the run
uses the default FULL, which fsyncs at every batch commit).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time

from bench.report import fmt_rate, machine_line, summarize, write_section
from samza_dagster.config import Config
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory, storage
from samza_dagster.system.log.formats import CURRENT

PARTITIONS = 4
VALUE = b"v" * 100
SYSTEM = "bench"


def _config(root: str, batch_size: int, synchronous: str) -> Config:
    return Config(
        {
            f"systems.{SYSTEM}.log.path": root,
            f"systems.{SYSTEM}.log.batch.size": batch_size,
            f"systems.{SYSTEM}.log.fetch.size": batch_size,
            f"systems.{SYSTEM}.log.synchronous": synchronous,
        }
    )


def log_produce(root: str, n: int, batch_size: int, synchronous: str, keyed: bool = False) -> float:
    config = _config(root, batch_size, synchronous)
    factory = LogSystemFactory()
    factory.get_admin(SYSTEM, config).create_stream(StreamSpec("s", "s", SYSTEM, PARTITIONS))
    producer = factory.get_producer(SYSTEM, config)
    producer.register("bench")
    producer.start()
    stream = SystemStream(SYSTEM, "s")
    send = producer.send
    started = time.perf_counter()
    if keyed:
        for i in range(n):
            send("bench", OutgoingMessageEnvelope(stream, VALUE, key=b"key-%d" % (i % 10_000)))
    else:
        for _ in range(n):
            send("bench", OutgoingMessageEnvelope(stream, VALUE))
    producer.flush("bench")
    elapsed = time.perf_counter() - started
    producer.stop()
    return n / elapsed


def log_consume(root: str, n: int, batch_size: int, synchronous: str) -> float:
    config = _config(root, batch_size, synchronous)
    consumer = LogSystemFactory().get_consumer(SYSTEM, config)
    ssps = [SystemStreamPartition(SYSTEM, "s", p) for p in range(PARTITIONS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    seen = 0
    started = time.perf_counter()
    while seen < n:
        for envelopes in consumer.poll(ssps, 1.0).values():
            seen += len(envelopes)
    elapsed = time.perf_counter() - started
    consumer.stop()
    assert seen == n, (seen, n)
    return n / elapsed


def plain_produce(root: str, n: int, batch_size: int, synchronous: str) -> float:
    """The floor: the same rows and transactions, offsets counted in memory."""
    os.makedirs(root, exist_ok=True)
    conn = sqlite3.connect(os.path.join(root, "plain.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    for statement in (storage.META_SCHEMA, *CURRENT.schema):
        conn.execute(statement)
    offsets = [0] * PARTITIONS
    rows: list[tuple] = []
    started = time.perf_counter()
    for i in range(n):
        p = i % PARTITIONS
        rows.append((p, offsets[p], None, VALUE, int(time.time() * 1000)))
        offsets[p] += 1
        if len(rows) == batch_size:
            conn.execute("BEGIN IMMEDIATE")
            CURRENT.insert(conn, rows)
            conn.execute("COMMIT")
            rows = []
    if rows:
        conn.execute("BEGIN IMMEDIATE")
        CURRENT.insert(conn, rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return n / elapsed


def plain_consume(root: str, n: int, batch_size: int, synchronous: str) -> float:
    conn = sqlite3.connect(os.path.join(root, "plain.db"), isolation_level=None)
    conn.execute(f"PRAGMA synchronous={synchronous}")
    positions = [0] * PARTITIONS
    seen = 0
    started = time.perf_counter()
    while seen < n:
        for p in range(PARTITIONS):
            rows = CURRENT.read(conn, p, positions[p], batch_size)
            if rows:
                positions[p] = rows[-1][0] + 1
                seen += len(rows)
    elapsed = time.perf_counter() - started
    conn.close()
    assert seen == n, (seen, n)
    return n / elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument(
        "--synchronous",
        choices=("FULL", "NORMAL", "OFF"),
        default="FULL",
        help="the setting of both sides (the log system's default is FULL)",
    )
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    n, batch, sync = args.messages, args.batch_size, args.synchronous
    other = "NORMAL" if sync != "NORMAL" else "FULL"
    extra_n = max(n // 4, batch)  # the extra rows use fewer messages to keep the run under ~2 minutes
    results: dict[str, list[float]] = {
        k: []
        for k in (
            "log_produce",
            "plain_produce",
            "log_consume",
            "plain_consume",
            "log_produce_keyed",
            "log_produce_other",
        )
    }
    run_started = time.perf_counter()
    for rep in range(args.repetitions):
        work = tempfile.mkdtemp(prefix="bench-log-")
        try:
            sides = ["log", "plain"] if rep % 2 == 0 else ["plain", "log"]
            for side in sides:
                root = os.path.join(work, side)
                if side == "log":
                    results["log_produce"].append(log_produce(root, n, batch, sync))
                    results["log_consume"].append(log_consume(root, n, batch, sync))
                else:
                    results["plain_produce"].append(plain_produce(root, n, batch, sync))
                    results["plain_consume"].append(plain_consume(root, n, batch, sync))
            results["log_produce_keyed"].append(
                log_produce(os.path.join(work, "keyed"), extra_n, batch, sync, keyed=True)
            )
            results["log_produce_other"].append(log_produce(os.path.join(work, "other"), extra_n, batch, other))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"repetition {rep + 1}: " + ", ".join(f"{k}={v[-1]:,.0f}/s" for k, v in results.items()), flush=True)
    total_s = time.perf_counter() - run_started

    def ratio(a: str, b: str) -> str:
        return f"{summarize(results[a])[0] / summarize(results[b])[0]:.2f}×"

    def per_rep(a: str, b: str) -> str:
        return ", ".join(f"{x / y:.2f}" for x, y in zip(results[a], results[b], strict=True))

    command = (
        "python -m bench.bench_log_system"
        + (f" --messages {n}" if n != 1_000_000 else "")
        + (f" --repetitions {args.repetitions}" if args.repetitions != 3 else "")
        + (f" --batch-size {batch}" if batch != 1000 else "")
        + (f" --synchronous {sync}" if sync != "FULL" else "")
    )
    markdown = f"""## Embedded log system (`log-system`)

`{command}` — {machine_line()}, SQLite {sqlite3.sqlite_version}; {n:,} messages of 100-byte values,
no key, {PARTITIONS} partitions round-robin, batch (transaction) and fetch size {batch}, WAL,
synchronous={sync} on both sides; {args.repetitions} alternating repetitions, median (min–max) messages/s; whole run {total_s:.0f} s.
"Plain sqlite3" writes the same rows into the same schema in the same transactions with offsets
counted in memory, and reads them with the same range query without building envelopes: the floor.

| | log system | plain sqlite3 | log / plain |
|---|---:|---:|---:|
| produce | {fmt_rate(results["log_produce"])} | {fmt_rate(results["plain_produce"])} | {ratio("log_produce", "plain_produce")} |
| consume | {fmt_rate(results["log_consume"])} | {fmt_rate(results["plain_consume"])} | {ratio("log_consume", "plain_consume")} |

Also measured in the same run, with {extra_n:,} messages each:

| | log system | vs. unkeyed produce |
|---|---:|---:|
| produce, keyed (10,000 distinct keys, murmur2 in pure Python) | {fmt_rate(results["log_produce_keyed"])} | {ratio("log_produce_keyed", "log_produce")} |
| produce, synchronous={other} | {fmt_rate(results["log_produce_other"])} | {ratio("log_produce_other", "log_produce")} |

Log / plain within each repetition (steadier than the absolute rates: the machine is shared
with other work while this runs): produce {per_rep("log_produce", "plain_produce")};
consume {per_rep("log_consume", "plain_consume")}.
Where the difference goes: on the write side, an OutgoingMessageEnvelope and a partition choice
per message and one `MAX(offset)` per partition inside each transaction (what keeps offsets dense
with writers in several processes); on the read side, almost all of it is building one
IncomingMessageEnvelope (a Python object with a string offset) per row — the floor builds none.
"""
    print(markdown)
    if not args.no_report:
        write_section("log-system", markdown)


if __name__ == "__main__":
    main()
