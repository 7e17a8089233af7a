"""B13: cost that stays flat as a job grows — one container over 4 … 1,024 partitions.

The same messages spread evenly over a log-system stream of P partitions; one container,
group-by-partition (one task per partition), a no-op task. Per P, each in its own process:

* **produce** — the log producer writing the messages (no partition, no key: round robin), so a
  batch of ``log.batch.size`` touches min(P, batch) partitions;
* **raw** — the log consumer's own poll loop over every partition (the baseline);
* **engine** — ``SamzaContainer.run`` end to end, with its start-up and shutdown (the container's
  ``start_s``/``shutdown_s`` metrics) reported apart, ``task.commit.ms`` 10000 as in B1, so commits of all P
  tasks are part of the run;
* **memory** — the engine over messages of 1 KiB, enough to fill every partition's buffer: peak
  RSS against the container's buffer budget (``systems.<s>.samza.fetch.threshold.bytes``).

Targets: engine at 1,024 ≥ 0.8 × at 4, producer at 1,024 ≥ 0.8 × at 4, peak RSS at 1,024
within the budget.

python -m bench --only B13              # in the runner (docs/benchmarks.md section B13)
python -m bench.bench_scale [MESSAGES] [REPETITIONS]
python -m bench.bench_scale kafka [MESSAGES] [REPETITIONS]   # the Kafka sweep alone: its table
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench import bench_container
from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.factories import system_factory

PARTITIONS = (4, 64, 256, 1024)
MESSAGES = 400_000
#: the memory run: messages of 1 KiB, more than 1,024 partitions × the per-partition floor
MEMORY_MESSAGES = 600_000
MEMORY_PARTITIONS = (4, 1024)
KAFKA_MESSAGES = 200_000
UNBOUNDED = {"systems.log.samza.fetch.threshold": "-1", "systems.log.samza.fetch.threshold.bytes": "-1"}
SPARK_MESSAGES = 400_000


#: B1's job: the no-op task over bounded ``log.input``, committing every 10 s
_config = bench_container._config


def child_produce(root: str, partitions: int, messages: int, value_bytes: int = 100) -> dict:
    """Create the stream and write ``messages`` to it; the producer's rate."""
    config = _config(Path(root), "produce")
    shutil.rmtree(Path(root) / "log", ignore_errors=True)
    factory = system_factory(config, "log")
    factory.get_admin("log", config).create_stream(StreamSpec("input", "input", "log", partitions))
    producer = factory.get_producer("log", config)
    producer.register("bench")
    producer.start()
    ss = SystemStream("log", "input")
    payload = b"x" * value_bytes
    t0 = time.perf_counter()
    for _ in range(messages):
        producer.send("bench", OutgoingMessageEnvelope(ss, payload))
    producer.flush("bench")
    elapsed = time.perf_counter() - t0
    producer.stop()
    return {"rate": messages / elapsed}


def child_produce_sql(root: str, partitions: int, messages: int, value_bytes: int = 100) -> dict:
    """Plain sqlite3 running the log format's insert in transactions of ``log.batch.size`` rows
    spread the same way, offsets kept in a list, the file's default ``synchronous=FULL`` — no
    producer, no envelopes, and every seal inside the batch that fills the head (the producer
    leaves seals to its sealer thread: sealer.py), so at width the producer can beat it."""
    from samza_dagster.system.log import storage
    from samza_dagster.system.log.config import DEFAULT_BATCH_SIZE
    from samza_dagster.system.log.formats import CURRENT

    path = Path(root) / "sql"
    shutil.rmtree(path, ignore_errors=True)
    storage.create_stream_file("log", str(path), "input", partitions, {})
    conn, _ = storage.open_stream("log", str(path), "input", "FULL", 30.0)
    payload = b"x" * value_bytes
    next_offset = [0] * partitions
    t0 = time.perf_counter()
    for start in range(0, messages, DEFAULT_BATCH_SIZE):
        rows = []
        for i in range(start, min(messages, start + DEFAULT_BATCH_SIZE)):
            p = i % partitions
            rows.append((p, next_offset[p], None, payload, 0))
            next_offset[p] += 1
        conn.execute("BEGIN IMMEDIATE")
        CURRENT.insert(conn, rows)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - t0
    conn.close()
    shutil.rmtree(path, ignore_errors=True)
    return {"rate": messages / elapsed}


def child_raw(root: str, partitions: int, messages: int) -> dict:
    """The baseline: B1's raw log consumer loop over the stream's ``partitions``."""
    from bench.bench_container import raw_consumer_rate

    return {"rate": raw_consumer_rate(_config(Path(root), "raw"), messages, partitions)}


def child_engine(root: str, partitions: int, messages: int, run: int, **extra: str) -> dict:
    """The no-op container; its rate end to end, start-up and shutdown seconds, and the rate in
    between (processing and commits)."""
    config = _config(Path(root), f"engine-{partitions}-{run}", **extra)  # fresh checkpoints each run
    t0 = time.perf_counter()
    model = build_job_model(config).model
    model_s = time.perf_counter() - t0
    summary = SamzaContainer("0", model).run()
    elapsed = time.perf_counter() - t0
    if summary.messages_processed != messages:
        raise RuntimeError(summary.one_line())
    container = summary.metrics["container"]
    start_s, shutdown_s = container["start_s"], container["shutdown_s"]
    commits = sum(t["commit_count"] for t in summary.metrics["tasks"].values())
    commit_s = sum(t["commit_s"] for t in summary.metrics["tasks"].values())
    return {
        "rate": messages / elapsed,
        "steady_rate": messages / max(1e-9, elapsed - model_s - start_s - shutdown_s),
        "model_s": model_s,
        "start_s": start_s,
        "shutdown_s": shutdown_s,
        "commits": commits,
        "commit_s": commit_s,
        "null_chooses": container["null_chooses"],
    }


def child_job_model(root: str, partitions: int = 4096, containers: int = 8, runs: int = 3) -> dict:
    """Job model build (partition counts read from the stream file, grouping, assignment to
    ``containers``) for a log input of ``partitions`` partitions, and planning a high-level
    application (the planner benchmark's 12-operator block) whose inputs have that many
    partitions; best of ``runs`` after a warm-up, seconds."""
    from bench.bench_planner import CONFIG, BlocksApp
    from samza_dagster.application import StreamApplicationDescriptor
    from samza_dagster.planner import ExecutionPlanner

    config = _config(Path(root), "job-model", **{"job.container.count": str(containers)})
    factory = system_factory(config, "log")
    factory.get_admin("log", config).create_stream(StreamSpec("input", "input", "log", partitions))
    counts = {"OUT": partitions, "A0": partitions, "C0": partitions}
    builds, plans = [], []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        model = build_job_model(config).model
        t1 = time.perf_counter()
        ExecutionPlanner(CONFIG, counts).plan(StreamApplicationDescriptor.of(BlocksApp(1), CONFIG))
        t2 = time.perf_counter()
        builds.append(t1 - t0)
        plans.append(t2 - t1)
    tasks = sum(len(c.tasks) for c in model.containers.values())
    if len(model.containers) != containers or tasks != partitions:
        raise RuntimeError(f"job model has {len(model.containers)} containers and {tasks} tasks")
    return {"build_s": min(builds[1:]), "plan_s": min(plans[1:])}


# -- the same sweep on Kafka (one local Apache Kafka node) ----------------------------------------
KAFKA_PARTITIONS = (4, 64, 256)


def _kafka_config(bootstrap: str, topic: str, job: str) -> Config:
    return Config(
        {
            "job.name": job,
            "job.default.system": "kafka",
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.consumer.bootstrap.servers": bootstrap,
            "systems.kafka.producer.bootstrap.servers": bootstrap,
            f"systems.kafka.streams.{topic}.samza.bounded": "true",
            "task.inputs": f"kafka.{topic}",
            "task.class": "support.tasks:NoOpTask",
            "task.commit.ms": "1000",
        }
    )


def child_kafka_engine(bootstrap: str, topic: str, partitions: int, messages: int, run: int) -> dict:
    """The no-op container over a Kafka topic of ``partitions`` partitions (confluent client)."""
    config = _kafka_config(bootstrap, topic, f"b13-kafka-{partitions}-{run}")
    t0 = time.perf_counter()
    summary = SamzaContainer("0", build_job_model(config).model).run()
    elapsed = time.perf_counter() - t0
    if summary.messages_processed != messages:
        raise RuntimeError(summary.one_line())
    container = summary.metrics["container"]
    return {"rate": messages / elapsed, "start_s": container["start_s"], "shutdown_s": container["shutdown_s"]}


def child_kafka_raw(bootstrap: str, topic: str, partitions: int, messages: int) -> dict:
    """The system's own consumer in a bare poll loop over every partition (B3's baseline)."""
    config = _kafka_config(bootstrap, topic, "raw")
    consumer = system_factory(config, "kafka").get_consumer("kafka", config)
    ssps = [SystemStreamPartition("kafka", topic, p) for p in range(partitions)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    t0 = time.perf_counter()
    consumer.start()
    seen = 0
    while seen < messages:
        for envelopes in consumer.poll(ssps, 0.05).values():
            seen += sum(1 for e in envelopes if not e.is_end_of_stream)
    elapsed = time.perf_counter() - t0
    consumer.stop()
    return {"rate": messages / elapsed}


def kafka_sweep(messages: int, repetitions: int, log=print, partitions: tuple[int, ...] = KAFKA_PARTITIONS):
    from bench.bench_kafka import with_broker_cpu
    from bench.harness import alternate, isolated
    from bench.kafka_util import create_topics, end_offsets, start_broker

    broker = start_broker()
    try:
        bootstrap = broker.bootstrap_servers
        results: dict[int, dict[str, list[dict]]] = {}
        for p in partitions:
            topic = f"b13-input-{p}"
            create_topics(bootstrap, [topic], p)
            seconds = isolated(
                "bench.bench_kafka:child_load",
                bootstrap=bootstrap,
                topic=topic,
                messages=messages,
                value_size=100,
                partitions=p,
            )["seconds"]
            ends = end_offsets(bootstrap, topic, p)
            if sum(ends) != messages:
                raise RuntimeError(f"loaded {messages} messages into {topic}, its end offsets sum to {sum(ends)}")
            log(f"  kafka, {p} partitions: loaded in {seconds:.1f} s")
            results[p] = alternate(
                repetitions,
                {
                    "raw": with_broker_cpu(
                        broker,
                        lambda rep, p=p, topic=topic: isolated(
                            "bench.bench_scale:child_kafka_raw",
                            bootstrap=bootstrap,
                            topic=topic,
                            partitions=p,
                            messages=messages,
                        ),
                    ),
                    "engine": with_broker_cpu(
                        broker,
                        lambda rep, p=p, topic=topic: isolated(
                            "bench.bench_scale:child_kafka_engine",
                            bootstrap=bootstrap,
                            topic=topic,
                            partitions=p,
                            messages=messages,
                            run=rep,
                        ),
                    ),
                },
                log,
            )
        return results
    finally:
        broker.stop()


# -- the same sweep on the spark runner, 8 containers ----------------------------------------------
SPARK_PARTITIONS = (8, 64, 256, 1024)
SPARK_CONTAINERS = 8


def child_spark(
    root: str, messages: int, repetitions: int, partitions: list[int], containers: int = SPARK_CONTAINERS
) -> dict:
    """One Spark session (``local[containers]``); per partition count a fresh stream and the
    no-op job on ``containers`` containers, ``repetitions`` times; job wall seconds (coordinator
    start to the last container's summary, Spark scheduling included)."""
    from samza_dagster.runtime.spark_runner import run_spark_job
    from samza_dagster.spark.session import get_or_create_spark

    spark = get_or_create_spark({}, master=f"local[{containers}]", app_name="bench-b13")
    out: dict[str, list[float]] = {}
    try:
        for p in partitions:
            base = Path(root) / f"spark-{p}"
            child_produce(str(base), p, messages)
            walls = []
            for rep in range(repetitions + 1):  # the first warms the Python workers
                config = _config(
                    base,
                    f"b13-spark-{p}-{rep}",
                    **{"job.factory.class": "spark", "job.container.count": str(containers)},
                )
                t0 = time.perf_counter()
                result = run_spark_job(config, spark=spark)
                wall = time.perf_counter() - t0
                if not result.succeeded or result.messages_processed != messages:
                    raise RuntimeError(f"spark run failed or incomplete: {result.summary_line()}")
                if rep:
                    walls.append(wall)
            out[str(p)] = walls
            shutil.rmtree(base, ignore_errors=True)
    finally:
        spark.stop()
    return out


def _rows(results: dict[int, dict[str, list[dict]]], name: str, field: str, spec: str) -> str:
    from bench.harness import column, fmt

    return " | ".join(fmt(column(results[p][name], field), spec) for p in sorted(results))


def runner_section(
    messages: int,
    repetitions: int,
    workdir: Path,
    log=print,
    memory_messages: int = MEMORY_MESSAGES,
    partitions: tuple[int, ...] = PARTITIONS,
    kafka_messages: int = KAFKA_MESSAGES,
    spark_messages: int = SPARK_MESSAGES,
):
    """B13 in the runner: the sweep, every measurement in its own process, the three kinds
    alternating per repetition."""
    from bench.harness import alternate, isolated

    # every partition count in every repetition (4, 64, 256, 1,024, 4, 64, ...): the ratios between
    # partition counts are what the targets compare, so a change of load on the shared machine
    # must hit all of them alike
    measurements = {}
    for p in partitions:
        root = str(workdir / f"b13-{p}")
        measurements.update(
            {
                f"{p} produce": lambda rep, p=p, root=root: isolated(
                    "bench.bench_scale:child_produce", root=root, partitions=p, messages=messages
                ),
                f"{p} sql": lambda rep, p=p, root=root: isolated(
                    "bench.bench_scale:child_produce_sql", root=root, partitions=p, messages=messages
                ),
                f"{p} raw": lambda rep, p=p, root=root: isolated(
                    "bench.bench_scale:child_raw", root=root, partitions=p, messages=messages
                ),
                f"{p} engine": lambda rep, p=p, root=root: isolated(
                    "bench.bench_scale:child_engine", root=root, partitions=p, messages=messages, run=rep
                ),
            }
        )
    runs = alternate(repetitions, measurements, log)
    results: dict[int, dict[str, list[dict]]] = {
        p: {kind: runs[f"{p} {kind}"] for kind in ("produce", "sql", "raw", "engine")} for p in partitions
    }
    for p in partitions:
        shutil.rmtree(workdir / f"b13-{p}", ignore_errors=True)
    memory: dict[int, dict] = {}
    unbounded: dict[int, dict] = {}
    for p in MEMORY_PARTITIONS if memory_messages else ():
        root = str(workdir / f"b13-mem-{p}")
        isolated("bench.bench_scale:child_produce", root=root, partitions=p, messages=memory_messages, value_bytes=1024)
        memory[p] = isolated("bench.bench_scale:child_engine", root=root, partitions=p, messages=memory_messages, run=0)
        log(f"  memory, {p} partitions: {memory[p]['peak_rss_mb']:.0f} MB")
        if p == max(MEMORY_PARTITIONS):  # the same with the container-wide bounds off: per-partition buffers only
            unbounded[p] = isolated(
                "bench.bench_scale:child_engine", root=root, partitions=p, messages=memory_messages, run=1, **UNBOUNDED
            )
            log(f"  memory, {p} partitions, fetch thresholds off: {unbounded[p]['peak_rss_mb']:.0f} MB")
        shutil.rmtree(root, ignore_errors=True)

    kafka = kafka_sweep(kafka_messages, repetitions, log) if kafka_messages else {}
    spark: dict[str, list[float]] = {}
    if spark_messages:
        spark = isolated(
            "bench.bench_scale:child_spark",
            timeout_s=3600,
            root=str(workdir / "b13-spark"),
            messages=spark_messages,
            repetitions=repetitions,
            partitions=list(SPARK_PARTITIONS),
        )
        spark = {p: walls for p, walls in spark.items() if p.isdigit()}  # the harness adds peak_rss_mb, cpu_s
        log(f"  spark: {spark}")
    job_model = isolated("bench.bench_scale:child_job_model", root=str(workdir / "b13-job-model"))
    shutil.rmtree(workdir / "b13-job-model", ignore_errors=True)
    log(
        f"  job model, 4,096 partitions over 8 containers: build {job_model['build_s']:.3f} s, "
        f"plan {job_model['plan_s']:.3f} s"
    )
    return render_section(
        messages,
        repetitions,
        results,
        memory,
        unbounded,
        memory_messages,
        kafka,
        spark,
        spark_messages,
        job_model,
        kafka_messages,
    )


def render_section(
    messages: int,
    repetitions: int,
    results: dict[int, dict[str, list[dict]]],
    memory: dict[int, dict],
    unbounded: dict[int, dict],
    memory_messages: int,
    kafka: dict[int, dict[str, list[dict]]],
    spark: dict[str, list[float]],
    spark_messages: int,
    job_model: dict,
    kafka_messages: int = KAFKA_MESSAGES,
):
    """B13's section from its measurements."""
    from bench.harness import Section, column, median

    partitions = tuple(sorted(results))
    lo, hi = min(partitions), max(partitions)
    for by_kind in results.values():  # CPU time is steadier than wall time on a shared machine
        for runs in by_kind.values():
            for r in runs:
                r["cpu_rate"] = messages / r["cpu_s"]
    cpu_engine = {p: median(column(results[p]["engine"], "cpu_rate")) for p in partitions}
    cpu_produce = {p: median(column(results[p]["produce"], "cpu_rate")) for p in partitions}
    engine = {p: median(column(results[p]["engine"], "rate")) for p in partitions}
    produce = {p: median(column(results[p]["produce"], "rate")) for p in partitions}
    sql = {p: median(column(results[p]["sql"], "rate")) for p in partitions}
    engine_ratio, produce_ratio, sql_ratio = engine[hi] / engine[lo], produce[hi] / produce[lo], sql[hi] / sql[lo]
    raw = {p: median(column(results[p]["raw"], "rate")) for p in partitions}
    raw_ratio = raw[hi] / raw[lo]
    # where the raw read itself falls with the width, the engine is held to the raw read's own ratio
    engine_keeps = engine_ratio / raw_ratio
    header = " | ".join(f"{p:,}" for p in partitions)
    budget_mb = DEFAULT_BUDGET_MB
    mem_rows = "\n".join(
        [
            f"| {p:,} | {memory_messages:,} × 1 KiB | defaults | {m['peak_rss_mb']:.0f} | {_rate(m)} |"
            for p, m in memory.items()
        ]
        + [
            f"| {p:,} | {memory_messages:,} × 1 KiB | `fetch.threshold` and `.bytes` = -1 (per-partition buffers only, "
            f"as before) | {m['peak_rss_mb']:.0f} | {_rate(m)} |"
            for p, m in unbounded.items()
        ]
    )
    memory_ok = all(m["peak_rss_mb"] <= memory_budget_rss_mb() for m in memory.values()) if memory else None
    body = f"""
{messages:,} messages of 100 bytes spread evenly (round robin) over a log-system stream of P partitions,
bounded; one container, group-by-partition (P tasks), `support.tasks:NoOpTask`, `task.commit.ms=10000` (as B1).
Every measurement in its own process; each repetition measures every partition count in turn (produce, plain
sqlite3, raw, engine), so load changes hit all counts alike; median (min–max) of {repetitions}.

| P (partitions = tasks) | {header} |
|---|{"---:|" * len(partitions)}
| produce, msgs/s | {_rows(results, "produce", "rate", ",.0f")} |
| plain sqlite3, the format's statements in the producer's batches, seals inline, msgs/s | {_rows(results, "sql", "rate", ",.0f")} |
| raw log consumer loop, msgs/s | {_rows(results, "raw", "rate", ",.0f")} |
| engine end to end, msgs/s | {_rows(results, "engine", "rate", ",.0f")} |
| engine between start-up and shutdown, msgs/s | {_rows(results, "engine", "steady_rate", ",.0f")} |
| produce, msgs per CPU second of its process | {_rows(results, "produce", "cpu_rate", ",.0f")} |
| plain sqlite3, msgs per CPU second | {_rows(results, "sql", "cpu_rate", ",.0f")} |
| raw, msgs per CPU second | {_rows(results, "raw", "cpu_rate", ",.0f")} |
| engine, msgs per CPU second (the whole process: imports, start-up, shutdown included) | {_rows(results, "engine", "cpu_rate", ",.0f")} |
| job model build (first in the process: imports included), s | {_rows(results, "engine", "model_s", ".3f")} |
| container start-up, s | {_rows(results, "engine", "start_s", ".3f")} |
| container shutdown, s | {_rows(results, "engine", "shutdown_s", ".3f")} |
| commits (all tasks) | {_rows(results, "engine", "commits", ",.0f")} |
| time in commits, s | {_rows(results, "engine", "commit_s", ".3f")} |
| engine peak RSS, MB | {_rows(results, "engine", "peak_rss_mb", ",.0f")} |

Engine at {hi:,} / at {lo:,}: **{engine_ratio:.2f}** (the raw log consumer loop: {raw_ratio:.2f}, so the
engine keeps **{engine_keeps:.2f}** of the raw read's own ratio); producer at {hi:,} / at {lo:,}: **{produce_ratio:.2f}**
(plain sqlite3 with the seals inline: {sql_ratio:.2f}; producer / plain sqlite3 at {lo:,}: {produce[lo] / sql[lo]:.2f}, at {hi:,}: {produce[hi] / sql[hi]:.2f}).
By CPU time (messages per CPU second of the measuring process, steadier under load): engine **{cpu_engine[hi] / cpu_engine[lo]:.2f}**,
producer **{cpu_produce[hi] / cpu_produce[lo]:.2f}**.

Job model for 4,096 partitions over 8 containers (`job.container.count=8`, group-by-partition, partition
counts read from the stream file), best of 3 after a warm-up: build {job_model["build_s"]:.3f} s; planning a
high-level application (the planner benchmark's 12-operator block) over 4,096-partition inputs:
{job_model["plan_s"]:.3f} s; together {job_model["build_s"] + job_model["plan_s"]:.3f} s (target: under 1 s).

{_kafka_table(kafka)}
{_spark_table(spark, spark_messages)}

Memory: the same container over messages of 1 KiB, one run each; the container's buffer budget is
the default `systems.log.samza.fetch.threshold.bytes` = {budget_mb} MiB (RSS allowed: {memory_budget_rss_mb():.0f} MB,
the budget plus the interpreter, the engine and SQLite's page caches).

| P | stream | buffer bounds | peak RSS, MB | msgs/s |
|---:|---|---|---:|---:|
{mem_rows}
"""
    met = (
        (engine_ratio >= 0.8 or engine_keeps >= 0.8)
        and produce_ratio >= 0.8
        and memory_ok is not False
        and job_model["build_s"] + job_model["plan_s"] < 1.0
    )
    return Section(
        key="B13",
        title="cost that stays flat as a job grows (4 → 1,024 partitions, one container)",
        # every size the run used, so the command reproduces the section
        command=(
            f"python -m bench --only B13 --repetitions {repetitions} --scale-messages {messages} "
            f"--scale-memory-messages {memory_messages} --scale-kafka-messages {kafka_messages} "
            f"--scale-spark-messages {spark_messages}"
        ),
        body=body,
        result=(
            f"engine {engine_ratio:.2f}×, producer {produce_ratio:.2f}× at {hi:,} vs {lo:,} partitions "
            f"(by CPU time {cpu_engine[hi] / cpu_engine[lo]:.2f}×, {cpu_produce[hi] / cpu_produce[lo]:.2f}×)"
            + (f"; peak RSS {memory[hi]['peak_rss_mb']:.0f} MB with 1 KiB messages" if hi in memory else "")
        ),
        target=(
            f"producer at {hi:,} partitions ≥ 0.8 × at {lo:,}; engine too, or ≥ 0.8 of the raw read's own ratio "
            "where the raw read falls; peak RSS within the buffer budget"
        ),
        met=met,
    )


def _rate(run: dict) -> str:
    rate = run.get("rate")
    return "–" if rate is None or rate != rate else f"{rate:,.0f}"


def _kafka_table(kafka: dict[int, dict[str, list[dict]]]) -> str:
    if not kafka:
        return ""
    from bench.bench_kafka import load_line
    from bench.harness import column, median
    from support.kafka_dist import kafka_version

    ps = sorted(kafka)
    engine = {p: median(column(kafka[p]["engine"], "rate")) for p in ps}
    raw = {p: median(column(kafka[p]["raw"], "rate")) for p in ps}
    return f"""
On Kafka (Apache Kafka {kafka_version()}, one KRaft node on the same machine; confluent client; a topic per
partition count loaded with the same number of keyed 100-byte messages; no-op task, one container,
group-by-partition; *broker CPU* is the Kafka node's CPU seconds during the run, not the engine's):

| P | {" | ".join(f"{p:,}" for p in ps)} |
|---|{"---:|" * len(ps)}
| raw system consumer poll loop, msgs/s | {_rows(kafka, "raw", "rate", ",.0f")} |
| engine end to end, msgs/s | {_rows(kafka, "engine", "rate", ",.0f")} |
| container start-up, s | {_rows(kafka, "engine", "start_s", ".3f")} |
| container shutdown, s | {_rows(kafka, "engine", "shutdown_s", ".3f")} |
| broker CPU during the raw loop, s | {_rows(kafka, "raw", "broker_cpu_s", ".2f")} |
| broker CPU during the engine's run, s | {_rows(kafka, "engine", "broker_cpu_s", ".2f")} |

{load_line({f"{p} {kind}": kafka[p][kind] for p in ps for kind in ("raw", "engine")})}
Engine at {ps[-1]:,} / at {ps[0]:,} on Kafka: **{engine[ps[-1]] / engine[ps[0]]:.2f}** (the raw loop:
{raw[ps[-1]] / raw[ps[0]]:.2f}; engine / raw at {ps[0]:,}: {engine[ps[0]] / raw[ps[0]]:.2f}, at {ps[-1]:,}:
{engine[ps[-1]] / raw[ps[-1]]:.2f}).
"""


def _spark_table(spark: dict[str, list[float]], messages: int) -> str:
    if not spark:
        return ""
    from bench.harness import fmt

    ps = sorted(spark, key=int)
    return f"""
On the spark runner, {SPARK_CONTAINERS} containers (`job.container.count={SPARK_CONTAINERS}`, `local[{SPARK_CONTAINERS}]` on the
2 cores), the same no-op job over {messages:,} log messages; job wall time from the coordinator's start to the last
container's summary (Spark scheduling included), one session, a warm-up job first:

| P | {" | ".join(f"{int(p):,}" for p in ps)} |
|---|{"---:|" * len(ps)}
| job wall time, s | {" | ".join(fmt(spark[p], ".2f") for p in ps)} |
| msgs/s | {" | ".join(fmt([messages / w for w in spark[p]], ",.0f") for p in ps)} |
"""


#: the default container-wide buffer budget (samza_dagster.system.consumers) and what the process
#: may hold beyond it (the interpreter, imports, SQLite page caches), for the memory verdict
DEFAULT_BUDGET_MB = 64
OVERHEAD_MB = 96


def memory_budget_rss_mb() -> float:
    return DEFAULT_BUDGET_MB + OVERHEAD_MB


def main(messages: int = MESSAGES, repetitions: int = 3) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        section = runner_section(messages, repetitions, workdir)
        print(section.markdown())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def kafka_main(messages: int = KAFKA_MESSAGES, repetitions: int = 3) -> None:
    """B13's Kafka sweep alone (the log sweep takes most of B13's time): prints its table."""
    from bench.harness import load_average

    print(f"load average before: {load_average()}", flush=True)
    table = _kafka_table(kafka_sweep(messages, repetitions))
    print(f"load average after: {load_average()}")
    print(table)


if __name__ == "__main__":
    if sys.argv[1:2] == ["kafka"]:
        kafka_main(*(int(a) for a in sys.argv[2:4]))
    else:
        main(*(int(a) for a in sys.argv[1:]))
