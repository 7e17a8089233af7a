"""Cost of an exactly-once ``samza`` data source write (the reprocessing backfill's re-send)
against the same write at-least-once, in the same run.

A 4-partition log stream of N rows (default 200k; 100-byte values, 10-byte keys) is written
once. Then, alternating per run, the whole stream is re-sent with ``resend_to_batch_stream`` into
a fresh 4-partition batch stream: at-least-once (plain batches, flushed by each task), and
exactly-once (``transactional_id``: each task writes open batches and prepares, the driver commits
all at one commit point and the markers make them readable; spark/transactional.py). Spark
``local[2]``; the first write (cold Python workers) is not counted. Reported: rows/s, median of
the runs (min–max), and the exactly-once / at-least-once ratio of the medians.

    .venv/bin/python -m bench.bench_spark_write [--rows 200000] [--runs 3] [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from bench.bench_spark_datasource import PARTITIONS, STREAM, produce
from bench.report import fmt_rate, machine_line, write_section
from samza_dagster.config import Config
from samza_dagster.model import StreamSpec
from samza_dagster.system import system_factory


def resend(spark, config: Config, target: str, write_id: str | None, rows: int) -> float:
    from samza_dagster.spark import read_options, resend_to_batch_stream

    system_factory(config, "log").get_admin("log", config).create_stream(StreamSpec(target, target, "log", PARTITIONS))
    plain = dict(config.items())
    start = time.perf_counter()
    df = spark.read.format("samza").options(**read_options("log", STREAM, plain)).load()
    sent = resend_to_batch_stream(
        df, system="log", stream=target, config=plain, key_column="key", transactional_id=write_id
    )
    elapsed = time.perf_counter() - start
    assert sent["total"] == rows, sent
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    from samza_dagster.spark import get_or_create_spark

    root = tempfile.mkdtemp(prefix="bench-spark-write-")
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": root})
    produce(config, args.rows)
    spark = get_or_create_spark(master="local[2]", app_name="bench-spark-write")
    resend(spark, config, "warm-up", None, args.rows)
    plain, exact = [], []
    for run in range(args.runs):
        # alternate which goes first: the machine is shared
        order = [("plain", None), ("exact", f"bench/{run}")]
        for kind, write_id in order if run % 2 == 0 else order[::-1]:
            rate = args.rows / resend(spark, config, f"{kind}-{run}", write_id, args.rows)
            (plain if write_id is None else exact).append(rate)
        print(f"run {run}: at-least-once {plain[-1]:,.0f} rows/s, exactly-once {exact[-1]:,.0f} rows/s")
    spark.stop()
    ratio = statistics.median(exact) / statistics.median(plain)
    print(f"exactly-once / at-least-once: {ratio:.2f}")

    md = f"""## spark-write (exactly-once re-send)

`python -m bench.bench_spark_write --rows {args.rows} --runs {args.runs}` — {machine_line()}.

{args.rows:,} rows (100-byte values, 10-byte keys) of a {PARTITIONS}-partition log stream re-sent by
`resend_to_batch_stream` into a fresh {PARTITIONS}-partition stream on local[2], the two kinds
alternating (which goes first alternates too); the cold first write is not counted:

| write | rows/s (median of {args.runs}, min–max) |
|---|---|
| at-least-once (each task flushes its batches) | {fmt_rate(plain)} |
| exactly-once (`transactional_id`: open batches, prepare, one driver commit, markers) | {fmt_rate(exact)} |

Exactly-once / at-least-once: **{ratio:.2f}** (medians). Timed from `load()` to the returned
summary: the Spark job, the driver's ledger look-up before it and, for exactly-once, the commit
point and markers after it.
"""
    if not args.no_write:
        write_section("spark-write", md)


if __name__ == "__main__":
    main()
