"""Changelog restore from a compacted embedded-log changelog against the same changelog uncompacted.

    python -m bench.bench_log_compaction [--updates N] [--keys K] [--repetitions R]

One changelog partition holds N updates (default 1,000,000) spread over K keys (default 10,000),
written by the log producer as a store's LoggedStore writes them (8-byte key, 64-byte value).
The file is copied; the copy is compacted by one cleaning pass (the pass the producers' cleaner
thread runs), its time and the disk bytes before and after measured. Then the store is restored
(the engine's ``restore_stores`` into a fresh RocksDB store) from each file, alternating which
goes first, R times; both restores must give the same store. Also in the same run: produce rate
into a file with ``auto_vacuum=INCREMENTAL`` (the files of streams whose policy removes messages)
against one without (every other stream file), the cost of giving freed pages back.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from bench.report import command_line, fmt_rate, machine_line, summarize, write_section
from samza_dagster.config import Config
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.storage.restore import restore_stores
from samza_dagster.storage.specs import StoreSpec
from samza_dagster.storage.task_stores import TaskStores
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.log import LogSystemFactory, storage
from samza_dagster.system.log.formats import CURRENT

SYSTEM = "bench"
STREAM = "store-changelog"
VALUE = b"v" * 64


def _config(root: str) -> Config:
    # the producer's own cleaner stays out of the way: the uncompacted file must stay whole
    return Config(
        {
            f"systems.{SYSTEM}.log.path": root,
            f"systems.{SYSTEM}.log.synchronous": "NORMAL",
            f"systems.{SYSTEM}.log.fetch.size": "1000",
            f"systems.{SYSTEM}.log.cleaner.interval.ms": str(10**12),
        }
    )


def _disk_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(root, n)) for n in os.listdir(root) if not n.startswith("."))


def write_changelog(root: str, updates: int, keys: int) -> float:
    """The changelog file; returns the produce rate (messages/s)."""
    config = _config(root)
    factory = LogSystemFactory()
    admin = factory.get_admin(SYSTEM, config)
    # no compaction lag: the bench compacts right after writing
    admin.create_stream(
        StreamSpec(STREAM, STREAM, SYSTEM, 1, {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"})
    )
    admin.stop()
    return _produce(config, updates, keys)


def _produce(config: Config, updates: int, keys: int) -> float:
    producer = LogSystemFactory().get_producer(SYSTEM, config)
    producer.register("bench")
    ss = SystemStream(SYSTEM, STREAM)
    started = time.perf_counter()
    for i in range(updates):
        producer.send("bench", OutgoingMessageEnvelope(ss, VALUE, (i % keys).to_bytes(8, "big"), None, 0))
    producer.stop()
    return updates / (time.perf_counter() - started)


def produce_without_auto_vacuum(root: str, updates: int, keys: int) -> float:
    """The same produce into a stream file laid out as files created before auto_vacuum."""
    os.makedirs(root)
    conn = sqlite3.connect(storage.stream_file(root, STREAM), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for statement in (storage.META_SCHEMA, *CURRENT.schema):
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?)", [("partition_count", "1"), ("format", str(CURRENT.version))]
    )
    conn.close()
    return _produce(_config(root), updates, keys)


def compact(root: str) -> tuple[float, int]:
    """One cleaning pass; (seconds, messages removed)."""
    admin = LogSystemFactory().get_admin(SYSTEM, _config(root))
    started = time.perf_counter()
    stats = admin.clean_stream(STREAM)
    elapsed = time.perf_counter() - started
    admin.stop()
    return elapsed, stats.deleted


def restore(root: str, state: Path) -> tuple[float, int, dict[bytes, bytes]]:
    """Restore a RocksDB store from the changelog; (seconds, messages applied, the store)."""
    config = _config(root)
    factory = LogSystemFactory()
    admins = {SYSTEM: factory.get_admin(SYSTEM, config)}
    spec = StoreSpec("store", "rocksdb", "bytes", "bytes", SystemStream(SYSTEM, STREAM), cache_size=0)
    shutil.rmtree(state, ignore_errors=True)
    producer = factory.get_producer(SYSTEM, config)  # the LoggedStore's; restore writes nothing
    task_stores = TaskStores("Partition 0", 0, [spec], SerdeRegistry(config), state, {SYSTEM: producer})
    started = time.perf_counter()
    applied = restore_stores([task_stores], admins, lambda system: factory.get_consumer(system, config))["store"]
    elapsed = time.perf_counter() - started
    contents = dict(task_stores.raw["store"].all())
    task_stores.close()
    producer.stop()
    admins[SYSTEM].stop()
    return elapsed, applied, contents


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument(
        "--produce-updates", type=int, default=500_000, help="messages of the auto_vacuum produce comparison"
    )
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    run_started = time.perf_counter()
    work = tempfile.mkdtemp(prefix="bench-compaction-")
    try:
        full, compacted = os.path.join(work, "full"), os.path.join(work, "compacted")
        write_changelog(full, args.updates, args.keys)
        shutil.copytree(full, compacted)  # every connection is closed: the WAL is in the file
        bytes_before = _disk_bytes(compacted)
        compact_s, removed = compact(compacted)
        bytes_after = _disk_bytes(compacted)
        times: dict[str, list[float]] = {"full": [], "compacted": []}
        applied: dict[str, int] = {}
        for rep in range(args.repetitions):
            order = ["full", "compacted"] if rep % 2 == 0 else ["compacted", "full"]
            contents = {}
            for side in order:
                elapsed, applied[side], contents[side] = restore(
                    full if side == "full" else compacted, Path(work) / "state"
                )
                times[side].append(elapsed)
            assert contents["full"] == contents["compacted"], "compacted restore differs from the full one"
            assert len(contents["full"]) == args.keys
            print(
                f"repetition {rep + 1}: restore full {times['full'][-1]:.2f} s, compacted {times['compacted'][-1]:.3f} s",
                flush=True,
            )
        produce: dict[str, list[float]] = {"incremental": [], "none": []}
        for rep in range(args.repetitions):
            for side in ["incremental", "none"] if rep % 2 == 0 else ["none", "incremental"]:
                root = os.path.join(work, f"produce-{side}-{rep}")
                if side == "incremental":
                    rate = write_changelog(root, args.produce_updates, args.keys)
                else:
                    rate = produce_without_auto_vacuum(root, args.produce_updates, args.keys)
                produce[side].append(rate)
                shutil.rmtree(root)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total_s = time.perf_counter() - run_started

    full_med, compacted_med = summarize(times["full"])[0], summarize(times["compacted"])[0]
    speedup = full_med / compacted_med
    verdict = "met" if speedup >= 20 else "NOT met"
    per_rep = ", ".join(f"{f / c:.0f}×" for f, c in zip(times["full"], times["compacted"], strict=True))

    def secs(values: list[float]) -> str:
        med, lo, hi = summarize(values)
        return f"{med:.3f} ({lo:.3f}–{hi:.3f})"

    markdown = f"""## Changelog restore, compacted vs not (`log-compaction`)

`{command_line("bench.bench_log_compaction")}` — {machine_line()}, SQLite {sqlite3.sqlite_version};
one changelog partition of {args.updates:,} updates over {args.keys:,} keys (8-byte keys, 64-byte
values), synchronous=NORMAL; restore = the engine's `restore_stores` into a fresh RocksDB store,
{args.repetitions} alternating repetitions, median (min–max) seconds; whole run {total_s:.0f} s. Both
restores give the same {args.keys:,} entries (checked every repetition).

| | messages applied | restore, s |
|---|---:|---:|
| uncompacted changelog (baseline) | {applied["full"]:,} | {secs(times["full"])} |
| compacted changelog | {applied["compacted"]:,} | {secs(times["compacted"])} |

Speed-up {speedup:.0f}× (per repetition {per_rep}); target ≥ 20×: **{verdict}**.

The compaction pass (one `clean_stream`, as the producers' cleaner runs it: a read scan, then
deletes of {5000:,} messages per transaction, then `incremental_vacuum`) removed {removed:,} messages
in {compact_s:.1f} s. Disk (stream file + WAL): {bytes_before / 1e6:.1f} MB before, {bytes_after / 1e6:.2f} MB after.

Produce rate ({args.produce_updates:,} keyed messages, batch 1000, same run, messages/s): file with
`auto_vacuum=INCREMENTAL` (streams whose policy removes messages) {fmt_rate(produce["incremental"])},
without (every other stream) {fmt_rate(produce["none"])} — ratio
{summarize(produce["incremental"])[0] / summarize(produce["none"])[0]:.2f} (per repetition
{", ".join(f"{a / b:.2f}" for a, b in zip(produce["incremental"], produce["none"], strict=True))}).
"""
    print(markdown)
    if not args.no_report:
        write_section("log-compaction", markdown)


if __name__ == "__main__":
    main()
