"""Read rate of the ``samza`` Spark data source vs the raw log consumer, same rows, same run.

A 4-partition log stream of N rows (default 1M; 100-byte values, 10-byte keys) is written once.
Then, alternating per run:
* raw: one LogSystemConsumer polls all 4 partitions to their end (what a container's poll does);
* spark: ``spark.read.format("samza")...load()`` aggregated so every row's value crosses into
  Spark (``sum(length(value))``, Python data sources have no column pruning), on local[2].
Spark's first action also starts its Python workers; that cold run is reported separately.
Reported: rows/s, median of the warm runs (min–max).

    .venv/bin/python -m bench.bench_spark_datasource [--rows 1000000] [--runs 3] [--no-write]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from bench.report import fmt_rate, machine_line, write_section
from samza_dagster.config import Config
from samza_dagster.system import (
    OutgoingMessageEnvelope,
    StreamSpec,
    SystemStream,
    SystemStreamPartition,
    system_factory,
)

PARTITIONS = 4
STREAM = "bench-spark"


def produce(config: Config, rows: int) -> float:
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec(STREAM, STREAM, "log", PARTITIONS))
    producer = factory.get_producer("log", config)
    producer.register("bench")
    producer.start()
    stream = SystemStream("log", STREAM)
    value = b"x" * 100
    start = time.perf_counter()
    for i in range(rows):
        producer.send(
            "bench",
            OutgoingMessageEnvelope(
                stream, value, key=b"key-%06d" % (i % 100_000), partition=i % PARTITIONS, event_time=i
            ),
        )
    producer.flush("bench")
    producer.stop()
    return time.perf_counter() - start


def read_raw(config: Config, rows: int) -> float:
    factory = system_factory(config, "log")
    consumer = factory.get_consumer("log", config)
    ssps = [SystemStreamPartition("log", STREAM, p) for p in range(PARTITIONS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    start = time.perf_counter()
    consumer.start()
    seen = 0
    total_bytes = 0
    while seen < rows:
        for envs in consumer.poll(ssps, 0.5).values():
            seen += len(envs)
            for env in envs:
                total_bytes += len(env.message)
    elapsed = time.perf_counter() - start
    consumer.stop()
    assert seen == rows, (seen, rows)
    return elapsed


def read_spark(spark, config: Config, rows: int) -> float:
    from pyspark.sql import functions as F

    from samza_dagster.spark import read_options

    start = time.perf_counter()
    df = spark.read.format("samza").options(**read_options("log", STREAM, config)).load()
    got = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("b")).collect()[0]
    elapsed = time.perf_counter() - start
    assert got["n"] == rows, (got["n"], rows)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    from samza_dagster.spark import get_or_create_spark

    root = tempfile.mkdtemp(prefix="bench-spark-")
    config = Config({"systems.log.samza.factory": "log", "systems.log.log.path": root})
    produce_s = produce(config, args.rows)
    print(f"produced {args.rows:,} rows in {produce_s:.1f}s")
    t0 = time.perf_counter()
    spark = get_or_create_spark(master="local[2]", app_name="bench-spark-datasource")
    session_s = time.perf_counter() - t0
    cold = read_spark(spark, config, args.rows)
    print(f"session {session_s:.1f}s, cold spark read {cold:.1f}s")
    raw_rates, spark_rates = [], []
    for run in range(args.runs):
        raw_rates.append(args.rows / read_raw(config, args.rows))
        spark_rates.append(args.rows / read_spark(spark, config, args.rows))
        print(f"run {run}: raw {raw_rates[-1]:,.0f} rows/s, spark {spark_rates[-1]:,.0f} rows/s")
    spark.stop()

    md = f"""## spark-datasource

`{" ".join(["python -m bench.bench_spark_datasource", f"--rows {args.rows}", f"--runs {args.runs}"])}` — {machine_line()}.

{args.rows:,} rows (100-byte values, 10-byte keys) in a {PARTITIONS}-partition log stream, read in the same run by:

| reader | rows/s (median of {args.runs}, min–max) |
|---|---|
| raw `LogSystemConsumer` (one consumer, 4 partitions, one thread) | {fmt_rate(raw_rates)} |
| `spark.read.format("samza")` on local[2], `count` + `sum(length(value))` | {fmt_rate(spark_rates)} |

Spark session start {session_s:.1f} s; the first (cold) Spark read, which also starts the Python
workers, took {cold:.1f} s ({args.rows / cold:,.0f} rows/s). The data source yields Arrow record
batches of 10k rows per stream partition; 2 cores are shared by the JVM and 2 Python workers.
"""
    if not args.no_write:
        write_section("spark-datasource", md)
    print(md)


if __name__ == "__main__":
    main()
