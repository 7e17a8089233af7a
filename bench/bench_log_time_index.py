"""Offset-for-timestamp lookups on the embedded log: the max-timestamp index vs a full scan.

    python -m bench.bench_log_time_index [--messages N] [--lookups Q] [--repetitions R] [--no-report]

One partition of N messages (100-byte values) whose timestamps rise by 1 ms a message with
±500 ms of seeded jitter — not monotone, as event times are not. Each repetition (in a fresh
copy of the file, so the index is built anew):

* **build**: the first ``offsets_for_times`` call, which indexes the whole partition;
* **indexed**: Q lookups of seeded-random timestamps through ``LogSystemAdmin.offsets_for_times``
  (what a timestamp startpoint does), per lookup;
* **scan**: the baseline, the same question answered without the index — the partition read in
  offset order until the first timestamp at or after the one asked for (the best a plain
  ``SELECT ... WHERE timestamp >= ? ORDER BY offset LIMIT 1`` does), on the same timestamps;
* **catch-up**: a lookup after appending N/100 more messages (indexes only those).

Every indexed answer is checked against the scan's; a difference stops the run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import time

from bench.report import machine_line, summarize, write_section
from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory, storage
from samza_dagster.system.log.time_index import scan_offset_for_time

SYSTEM = "bench"
STREAM = "timed"
VALUE = b"v" * 100
BASE_TS = 1_700_000_000_000
JITTER_MS = 500
SEED = 2121


def _config(root: str) -> Config:
    return Config(
        {
            f"systems.{SYSTEM}.log.path": root,
            f"systems.{SYSTEM}.log.batch.size": 10_000,
            f"systems.{SYSTEM}.log.synchronous": "OFF",
        }
    )


def fill(root: str, n: int, start: int = 0) -> None:
    """Messages ``start .. start+n-1`` at ``BASE_TS + i`` ± jitter."""
    config = _config(root)
    factory = LogSystemFactory()
    factory.get_admin(SYSTEM, config).create_stream(StreamSpec(STREAM, STREAM, SYSTEM, 1))
    producer = factory.get_producer(SYSTEM, config)
    producer.register("bench")
    rnd = random.Random(SEED + start)
    stream = SystemStream(SYSTEM, STREAM)
    for i in range(start, start + n):
        ts = BASE_TS + i + rnd.randint(-JITTER_MS, JITTER_MS)
        producer.send("bench", OutgoingMessageEnvelope(stream, VALUE, partition=0, event_time=ts))
    producer.stop()


def one_repetition(master: str, work: str, n: int, lookups: int, scans: int) -> dict[str, list[float]]:
    shutil.copytree(master, work)
    config = _config(work)
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    ssp = SystemStreamPartition(SYSTEM, STREAM, 0)
    rnd = random.Random(SEED)
    targets = [BASE_TS + rnd.randint(0, n) for _ in range(lookups)]
    out: dict[str, list[float]] = {"build": [], "indexed": [], "scan": [], "catch_up": []}

    t0 = time.perf_counter()
    admin.offsets_for_times({ssp: BASE_TS + n // 2})
    out["build"].append(time.perf_counter() - t0)

    answers = {}
    for ts in targets:
        t0 = time.perf_counter()
        answers[ts] = admin.offsets_for_times({ssp: ts})[ssp]
        out["indexed"].append(time.perf_counter() - t0)

    conn = sqlite3.connect(storage.stream_file(work, STREAM))
    try:
        for ts in targets[:scans]:
            t0 = time.perf_counter()
            found = scan_offset_for_time(conn, 2, 0, ts)
            out["scan"].append(time.perf_counter() - t0)
            if (None if found is None else str(found)) != answers[ts]:
                raise SystemExit(f"index and scan disagree for {ts}: {answers[ts]} vs {found}")
    finally:
        conn.close()

    admin.stop()
    fill(work, n // 100, start=n)
    admin = LogSystemFactory().get_admin(SYSTEM, config)
    t0 = time.perf_counter()
    admin.offsets_for_times({ssp: BASE_TS + n})
    out["catch_up"].append(time.perf_counter() - t0)
    admin.stop()
    return out


def _ms(values: list[float]) -> str:
    med, lo, hi = summarize([v * 1000 for v in values])
    return f"{med:,.3f} ({lo:,.3f}–{hi:,.3f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=200, help="indexed lookups per repetition")
    parser.add_argument(
        "--scans", type=int, default=20, help="baseline scans per repetition (the first lookups' timestamps)"
    )
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--no-report", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    n = args.messages
    base = tempfile.mkdtemp(prefix="bench-time-index-")
    started = time.perf_counter()
    try:
        master = os.path.join(base, "master")
        t0 = time.perf_counter()
        fill(master, n)
        fill_s = time.perf_counter() - t0
        results: dict[str, list[float]] = {"build": [], "indexed": [], "scan": [], "catch_up": []}
        for rep in range(args.repetitions):
            got = one_repetition(master, os.path.join(base, f"rep{rep}"), n, args.lookups, args.scans)
            for k, v in got.items():
                results[k].extend(v)
            shutil.rmtree(os.path.join(base, f"rep{rep}"), ignore_errors=True)
            print(
                f"repetition {rep + 1}: build {got['build'][0]:.2f} s, indexed median "
                f"{statistics.median(got['indexed']) * 1e3:.3f} ms, scan median {statistics.median(got['scan']) * 1e3:.1f} ms",
                flush=True,
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    total_s = time.perf_counter() - started
    p99 = sorted(results["indexed"])[int(0.99 * (len(results["indexed"]) - 1))] * 1000
    speedup = statistics.median(results["scan"]) / statistics.median(results["indexed"])
    breakeven = statistics.median(results["build"]) / statistics.median(results["scan"])
    command = (
        "python -m bench.bench_log_time_index"
        + (f" --messages {n}" if n != 1_000_000 else "")
        + (f" --lookups {args.lookups}" if args.lookups != 200 else "")
        + (f" --scans {args.scans}" if args.scans != 20 else "")
        + (f" --repetitions {args.repetitions}" if args.repetitions != 3 else "")
    )
    markdown = f"""## Embedded log: offset for a timestamp (`log-time-index`)

`{command}` — {machine_line()}, SQLite {sqlite3.sqlite_version}; one partition of {n:,} messages
(100-byte values) with timestamps rising 1 ms a message ±{JITTER_MS} ms of jitter (not monotone);
{args.repetitions} repetitions on a fresh copy of the file (filled once in {fill_s:.0f} s); whole run
{total_s:.0f} s. Milliseconds, median (min–max) over every lookup of every repetition. The
lookup is Kafka's offsets-for-times: the earliest offset whose timestamp is at or after the one
asked for; every indexed answer was checked against the scan's.

| | ms |
|---|---:|
| indexed lookup (`LogSystemAdmin.offsets_for_times`, {args.lookups} random timestamps) | {_ms(results["indexed"])}, p99 {p99:.3f} |
| baseline: scan in offset order to the first match ({args.scans} of the same timestamps) | {_ms(results["scan"])} |
| building the index: the first lookup on the partition | {_ms(results["build"])} |
| catching up: a lookup after {n // 100:,} more messages | {_ms(results["catch_up"])} |

Indexed vs scan: {speedup:,.0f}× faster per lookup (medians). The index is built by the first
lookup (then extended by each later one), so it pays for itself after about {breakeven:.1f} lookups'
worth of scanning; the scan's cost grows with how far into the partition the answer lies, the
indexed lookup's does not (one seek in the index, one in the messages).
"""
    print(markdown)
    if not args.no_report:
        write_section("log-time-index", markdown)


if __name__ == "__main__":
    main()
