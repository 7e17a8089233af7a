"""B2 and B3: the engine on Apache Kafka (one local node), against Quix Streams (and Faust).

B2 — stateful count per key: every input message increments its key's count in a RocksDB store
with a changelog topic and emits ``(key, count)`` to an output topic. The same logic runs in
Quix Streams (RocksDB state with its changelog topic, ``to_topic``) and, when it installs, in
Faust (faust-streaming, a Table with its changelog topic). Same broker, same input topic, same
commit interval (5 s); each run reads the whole topic from the beginning under a fresh job name /
consumer group and state directory. Each system creates its changelog topic itself, as it does for
a user (the engine's is compacted). The broker's CPU seconds during each run are recorded apart:
what the broker costs, not the engine.

B3 — message passing: consume and send each message to an output topic. Reported per core
*used*: messages / CPU seconds of the engine's process (all its threads: poller, run loop,
kafka-python's sender), the measure behind Samza's "1.2 M msgs/s per 24-core node".

Each measurement runs in its own process (bench.harness.isolated); wall times include start-up
(connections, Quix's consumer-group join, changelog topic creation) and the final commit.

    python -m bench --only B2,B3 --kafka-messages 1000000
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task.api import InitableTask, StreamTask

PARTITIONS = 4
KEYS = 10_000
COMMIT_S = 5
#: Faust runs once over this prefix of the B2 input (it is the slowest of the three)
FAUST_MESSAGES = 100_000


# -- the engine's tasks ------------------------------------------------------------------------------
class _Clock:
    """First and last process() times of the run (this process runs one job)."""

    first = 0.0
    last = 0.0


class CountPerKeyTask(StreamTask, InitableTask):
    """count[key] += 1 in the ``counts`` store (RocksDB + changelog); emit (key, count)."""

    def init(self, context):
        self.store = context.get_store("counts")
        self.out = SystemStream("kafka", context.config.get_str("bench.output.stream"))

    def process(self, envelope, collector, coordinator):
        key = envelope.key
        store = self.store
        count = (store.get(key) or 0) + 1
        store.put(key, count)
        collector.send(OutgoingMessageEnvelope(self.out, count, key=key))


class NoOpTask(StreamTask):
    """Consumes only: the engine's side of the B1-style ratio against the raw consumer loop."""

    def process(self, envelope, collector, coordinator):
        pass


class PassThroughTask(StreamTask, InitableTask):
    """Sends every message on, unchanged, to the output topic."""

    def init(self, context):
        self.out = SystemStream("kafka", context.config.get_str("bench.output.stream"))

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message, key=envelope.key))


def _engine_config(bootstrap: str, job: str, input_topic: str, output_topic: str, task: str, state: str):
    from samza_dagster.config import Config

    return Config(
        {
            "job.name": job,
            "job.default.system": "kafka",
            "systems.kafka.samza.factory": "kafka",
            "systems.kafka.consumer.bootstrap.servers": bootstrap,
            "systems.kafka.producer.bootstrap.servers": bootstrap,
            f"systems.kafka.streams.{input_topic}.samza.bounded": "true",
            f"systems.kafka.streams.{output_topic}.samza.key.serde": "bytes",
            "task.inputs": f"kafka.{input_topic}",
            "task.class": task,
            "task.commit.ms": str(COMMIT_S * 1000),
            "bench.output.stream": output_topic,
            "stores.counts.factory": "rocksdb",
            "stores.counts.key.serde": "bytes",
            "stores.counts.msg.serde": "long",
            "stores.counts.changelog": f"kafka.{job}-counts-changelog",
            "job.logged.store.base.dir": state,
            f"systems.kafka.streams.{output_topic}.samza.msg.serde": "long" if "Count" in task else "bytes",
            "metrics.timer.enabled": "false",
        }
    )


def child_engine(
    bootstrap: str,
    job: str,
    input_topic: str,
    output_topic: str,
    task: str,
    state: str,
    messages: int,
    stateful: bool,
    extra: dict[str, str] | None = None,
    client: str = "confluent",
) -> dict[str, Any]:
    from bench.harness import cpu_seconds
    from samza_dagster.container import SamzaContainer
    from samza_dagster.coordinator.model.builder import build_job_model

    config = _engine_config(bootstrap, job, input_topic, output_topic, task, state)
    if not stateful:
        config = Config_without_store(config)
    overrides = dict(KAFKA_TUNING, **{"systems.kafka.kafka.client": client})
    if client == "confluent":  # librdkafka's fetch totals, for the refetch count
        overrides["systems.kafka.consumer.statistics.interval.ms"] = str(STATISTICS_MS)
        overrides["systems.kafka.producer.statistics.interval.ms"] = str(STATISTICS_MS)
    config = config.with_overrides(dict(overrides, **(extra or {})))
    model = build_job_model(config).model
    cpu0 = cpu_seconds()
    run0, queued0 = _schedstat()
    t0 = time.perf_counter()
    summary = SamzaContainer("0", model).run()
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    run1, queued1 = _schedstat()
    assert summary.messages_processed == messages, summary.one_line()
    shutil.rmtree(state, ignore_errors=True)
    result = {
        "rate": messages / wall,
        "wall_s": wall,
        "run_cpu_s": cpu,
        "rate_per_cpu_s": messages / cpu,
        "busy": cpu / wall,
        # the run loop's thread (this one): on a CPU, runnable but waiting for one (a
        # loaded machine), and the rest — asleep, waiting for messages
        "loop_on_cpu": (run1 - run0) / wall,
        "loop_runnable_waiting": (queued1 - queued0) / wall,
    }
    result["loop_asleep"] = 1.0 - result["loop_on_cpu"] - result["loop_runnable_waiting"]
    if client == "confluent":  # a run shorter than the statistics interval has no report: NaN
        result.update(
            fetched=float("nan"), refetch_ratio=float("nan"), pauses=float("nan"), msgs_per_produce_request=float("nan")
        )
    consumer = summary.metrics.get("consumer-kafka") or {}
    if "librdkafka" in consumer:
        result["fetched"] = consumer["librdkafka"]["rxmsgs"]
        result["refetch_ratio"] = consumer["librdkafka"]["rxmsgs"] / messages
        result["pauses"] = consumer["pauses_for_parking"]
    producer = summary.metrics.get("producer-kafka") or {}
    if producer.get("librdkafka", {}).get("produce_requests"):
        stats = producer["librdkafka"]
        result["msgs_per_produce_request"] = stats["txmsgs"] / stats["produce_requests"]
        result["producer_flushes"] = producer["flushes"]
    return result


def _schedstat() -> tuple[float, float]:
    """This thread's seconds on a CPU and seconds runnable but waiting for one (Linux)."""
    on_cpu, waiting, _ = Path("/proc/thread-self/schedstat").read_text().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9


#: librdkafka statistics interval in the benchmark's engine runs: the last report before the end
#: of a run is at most this old, so "fetched" can miss up to this much of the run's tail
STATISTICS_MS = 200


#: kafka-python settings for throughput (see the B2/B3 profiles in docs/benchmarks.md)
KAFKA_TUNING: dict[str, str] = {
    # kafka-python's default 16 KiB batches cost a request per ~150 records (the gain of these
    # settings: docs/benchmarks.md, "Measurements behind defaults in the code")
    "systems.kafka.producer.batch.size": "1048576",
    "systems.kafka.producer.linger.ms": "50",
}


#: the bounded-memory run on Kafka: this many 1 KiB messages through one container whose address
#: space (RLIMIT_AS: every mapping, not only what is resident) is capped at MEMORY_LIMIT_MB.
#: ~150 MB of that space is reservations (two 64 MiB malloc arenas, thread stacks) whatever the
#: topic; at 256 MiB the peak was 243-252 MB and one run in several aborted in librdkafka's
#: rd_malloc. 320 MiB is still a fifth of the 1.5 GB topic.
MEMORY_MESSAGES = 1_500_000
MEMORY_LIMIT_MB = 320


def child_memory_run(bootstrap: str, topic: str, messages: int, limit_mb: int) -> dict[str, Any]:
    """The consume-only container over the whole topic with the address space capped: it can
    only finish if what it holds (librdkafka's queue, parked messages, SystemConsumers' buffers)
    does not grow with the topic."""
    import ctypes
    import resource

    # glibc reserves 64 MiB of address space per malloc arena, one per thread that allocates:
    # librdkafka's threads alone would pass the cap ("Unable to create broker thread"). Two
    # arenas, as MALLOC_ARENA_MAX=2 in the environment would give (docs/operations.md).
    m_arena_max = -8
    ctypes.CDLL("libc.so.6").mallopt(m_arena_max, 2)
    limit = limit_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    result = child_engine(
        bootstrap, "b3-memory", topic, "unused", "bench.bench_kafka:NoOpTask", "/tmp/unused", messages, stateful=False
    )
    # this process's own high-water marks (getrusage's peak RSS carries the parent's over exec)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    result["vm_hwm_mb"] = int(status["VmHWM"].split()[0]) / 1024
    result["vm_peak_mb"] = int(status["VmPeak"].split()[0]) / 1024
    return result


def child_load(
    bootstrap: str, topic: str, messages: int, value_size: int, partitions: int = PARTITIONS
) -> dict[str, Any]:
    """Fill ``topic`` in a process of its own (the loader's memory stays out of the runner)."""
    from bench.kafka_util import load

    return {"seconds": load(bootstrap, topic, messages, partitions, KEYS, value_size=value_size)}


def memory_row(bootstrap: str, messages: int, log=print) -> str:
    """The bounded-memory table row of B3 (one run, its own 1 KiB topic)."""
    from bench.harness import isolated
    from bench.kafka_util import create_topics

    topic = "bench-memory"
    create_topics(bootstrap, [topic], PARTITIONS)
    seconds = isolated(
        "bench.bench_kafka:child_load", bootstrap=bootstrap, topic=topic, messages=messages, value_size=1024
    )["seconds"]
    log(f"  loaded {messages:,} messages of 1 KiB into {topic} in {seconds:.0f} s")
    run = isolated(
        "bench.bench_kafka:child_memory_run",
        bootstrap=bootstrap,
        topic=topic,
        messages=messages,
        limit_mb=MEMORY_LIMIT_MB,
    )
    log(f"  memory run: {run}")
    return (
        f"| consume-only (`NoOpTask`, confluent, default config) over {messages:,} messages of 1 KiB "
        f"with the container's address space capped at {MEMORY_LIMIT_MB} MiB (`RLIMIT_AS`), one run: "
        f"completed | {run['rate']:,.0f} msgs/s | peak RSS {run['vm_hwm_mb']:.0f} MB, peak address space "
        f"{run['vm_peak_mb']:.0f} MB; librdkafka fetched {run.get('refetch_ratio', float('nan')):.2f}× consumed |"
    )


def child_raw_confluent(bootstrap: str, input_topic: str, messages: int) -> dict[str, Any]:
    """The baseline of the B1-style ratio: a bare librdkafka consume loop over the whole topic
    (assign every partition from offset 0, consume in batches of 500, touch key and value)."""
    from confluent_kafka import Consumer, TopicPartition

    from bench.harness import cpu_seconds

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-raw", "enable.auto.commit": False, "fetch.wait.max.ms": 100}
    )
    consumer.assign([TopicPartition(input_topic, p, 0) for p in range(PARTITIONS)])
    cpu0, t0, seen = cpu_seconds(), time.perf_counter(), 0
    while seen < messages:
        for m in consumer.consume(500, 1.0):
            if m.error() is None:
                m.key(), m.value()
                seen += 1
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    consumer.close()
    return {"rate": messages / wall, "wall_s": wall, "run_cpu_s": cpu, "rate_per_cpu_s": messages / cpu}


def child_raw_system_consumer(bootstrap: str, input_topic: str, messages: int) -> dict[str, Any]:
    """The B1 way of a raw baseline: the system's own consumer (``ConfluentSystemConsumer``) in a
    bare poll loop — librdkafka plus an envelope per message, nothing of the engine's."""
    from bench.harness import cpu_seconds
    from samza_dagster.config import Config
    from samza_dagster.model import SystemStreamPartition
    from samza_dagster.system.factories import system_factory

    config = Config({"systems.kafka.samza.factory": "kafka", "systems.kafka.consumer.bootstrap.servers": bootstrap})
    consumer = system_factory(config, "kafka").get_consumer("kafka", config)
    ssps = [SystemStreamPartition("kafka", input_topic, p) for p in range(PARTITIONS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    cpu0, t0, seen = cpu_seconds(), time.perf_counter(), 0
    consumer.start()
    while seen < messages:
        for envelopes in consumer.poll(ssps, 0.05).values():
            seen += len(envelopes)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    consumer.stop()
    return {"rate": messages / wall, "wall_s": wall, "run_cpu_s": cpu, "rate_per_cpu_s": messages / cpu}


def Config_without_store(config):  # noqa: N802 - reads as a phrase at the call site
    from samza_dagster.config import Config

    return Config({k: v for k, v in config.items() if not k.startswith("stores.")})


def child_quix(
    bootstrap: str, group: str, input_topic: str, output_topic: str, state: str, messages: int
) -> dict[str, Any]:
    import logging

    from quixstreams import Application
    from quixstreams.models import TopicConfig

    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        state_dir=state,
        commit_interval=COMMIT_S,
        consumer_extra_config={"session.timeout.ms": 6000},
        loglevel=logging.WARNING,
    )
    cfg = TopicConfig(num_partitions=PARTITIONS, replication_factor=1)
    source = app.topic(input_topic, key_deserializer="bytes", value_deserializer="bytes", config=cfg)
    sink = app.topic(output_topic, key_serializer="bytes", value_serializer="int", config=cfg)
    sdf = app.dataframe(source)

    def count(value, state):
        n = state.get("count", 0) + 1
        state.set("count", n)
        return n

    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(sink)
    from bench.harness import cpu_seconds

    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    app.run(count=messages, collect=False)
    wall = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    shutil.rmtree(state, ignore_errors=True)
    return {"rate": messages / wall, "wall_s": wall, "run_cpu_s": cpu, "busy": cpu / wall}


def child_faust(
    bootstrap: str, group: str, input_topic: str, output_topic: str, state: str, messages: int
) -> dict[str, Any]:
    """Faust's count per key: a Table (in-memory store + changelog topic) updated by an agent.

    Faust's ``app.stop()`` from inside its own agent waits forever for that agent's current
    event (measured: "wait_empty: Waiting for tasks"), so the agent reports the result and ends
    the process itself once it has processed ``messages``.
    """
    import faust

    from bench.harness import emit_and_exit

    app = faust.App(
        group,
        broker=f"kafka://{bootstrap}",
        store="memory://",
        datadir=state,
        topic_partitions=PARTITIONS,
        broker_commit_interval=COMMIT_S,
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=6.0,
    )
    source = app.topic(input_topic, key_type=bytes, value_type=bytes, value_serializer="raw", key_serializer="raw")
    sink = app.topic(output_topic, key_type=bytes, value_type=bytes, value_serializer="raw", key_serializer="raw")
    counts = app.Table(f"{group}-counts", default=int, partitions=PARTITIONS)
    done = {"n": 0, "t0": time.perf_counter()}

    @app.agent(source)
    async def process(stream):
        async for key, _value in stream.items():
            counts[key] += 1
            await sink.send(key=key, value=str(counts[key]).encode())
            done["n"] += 1
            if done["n"] == messages:
                wall = time.perf_counter() - done["t0"]
                emit_and_exit({"rate": messages / wall, "wall_s": wall, "messages": messages})

    faust.Worker(app, loglevel="WARNING", quiet=True).execute_from_commandline()
    raise RuntimeError(f"faust stopped after {done['n']} of {messages} messages")


# -- the runner's sections ---------------------------------------------------------------------------
def _prepare(workdir: Path, messages: int, log) -> dict[str, Any]:
    from bench.harness import isolated
    from bench.kafka_util import create_topics, end_offsets, start_broker

    broker = start_broker()
    topic = "bench-input"
    create_topics(broker.bootstrap_servers, [topic], PARTITIONS)
    seconds = isolated(
        "bench.bench_kafka:child_load",
        bootstrap=broker.bootstrap_servers,
        topic=topic,
        messages=messages,
        value_size=100,
    )["seconds"]
    ends = end_offsets(broker.bootstrap_servers, topic, PARTITIONS)
    if sum(ends) != messages:
        broker.stop()
        raise RuntimeError(f"loaded {messages} messages but the broker's end offsets sum to {sum(ends)}: {ends}")
    log(f"  loaded {messages:,} keyed messages into {topic} ({PARTITIONS} partitions) in {seconds:.1f} s")
    return {"broker": broker, "topic": topic}


def b2_b3_sections(  # noqa: C901 - one report over both benchmarks' shared runs; split when it next changes
    messages: int,
    repetitions: int,
    workdir: Path,
    log=print,
    want=("B2", "B3"),
    peers=("quix", "faust"),
    memory_messages: int = MEMORY_MESSAGES,
):
    from bench.harness import MeasurementError, Section, alternate, column, fmt, isolated, median
    from bench.kafka_util import broker_line, create_topics

    setup = _prepare(workdir, messages, log)
    broker, topic = setup["broker"], setup["topic"]
    bootstrap = broker.bootstrap_servers
    sections = []
    try:
        if "B2" in want:
            t0 = time.perf_counter()
            faust_note = ""
            measurements = {}

            def engine_on(client: str):
                def engine(rep):
                    job = f"b2-{client}-{rep}"
                    out = f"{job}-out"
                    create_topics(bootstrap, [out], PARTITIONS)
                    return isolated(
                        "bench.bench_kafka:child_engine",
                        bootstrap=bootstrap,
                        job=job,
                        input_topic=topic,
                        output_topic=out,
                        task="bench.bench_kafka:CountPerKeyTask",
                        state=str(workdir / job),
                        messages=messages,
                        stateful=True,
                        client=client,
                    )

                return engine

            def quix(rep):
                return isolated(
                    "bench.bench_kafka:child_quix",
                    bootstrap=bootstrap,
                    group=f"b2-quix-{rep}",
                    input_topic=topic,
                    output_topic=f"b2-quix-out-{rep}",
                    state=str(workdir / f"b2-quix-{rep}"),
                    messages=messages,
                )

            faust_messages = min(messages, FAUST_MESSAGES)

            def faust(rep):
                return isolated(
                    "bench.bench_kafka:child_faust",
                    timeout_s=max(90.0, faust_messages / 1000),
                    bootstrap=bootstrap,
                    group=f"b2-faust-{rep}",
                    input_topic=topic,
                    output_topic=f"b2-faust-out-{rep}",
                    state=str(workdir / f"b2-faust-{rep}"),
                    messages=faust_messages,
                )

            measurements["engine"] = with_broker_cpu(broker, engine_on("confluent"))
            measurements["engine-kafka-python"] = with_broker_cpu(broker, engine_on("kafka-python"))
            if "quix" in peers:
                measurements["quix"] = with_broker_cpu(broker, quix)
            faust_runs = []
            if "faust" in peers:
                try:  # once, over a prefix of the topic: Faust is several times slower than the others
                    faust_runs.append(faust(0))
                    log(f"  faust: {faust_runs[-1]}")
                except subprocess.TimeoutExpired as exc:
                    faust_note = (
                        f"Faust (faust-streaming {_version('faust-streaming')}, Table + changelog, same broker) "
                        f"was run once over the first {faust_messages:,} messages and had not finished "
                        f"them when stopped after {exc.timeout:.0f} s (< {faust_messages / exc.timeout:,.0f} "
                        "msgs/s)."
                    )
                    log("  " + faust_note)
                except (MeasurementError, Exception) as exc:  # noqa: BLE001 - reported in the section
                    tail = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
                    faust_note = f"Faust (faust-streaming) was tried and did not complete on this broker: `{tail}`."
                    log("  " + faust_note)
            runs = alternate(repetitions, measurements, log)
            eng = column(runs["engine"], "rate")

            def row(label: str, rs: list, fetched: bool = False) -> str:
                refetch = fmt(column(rs, "refetch_ratio"), ".2f") if fetched else ""
                return (
                    f"| {label} | {fmt(column(rs, 'rate'))} | {fmt(column(rs, 'wall_s'), '.1f')} | "
                    f"{fmt(column(rs, 'run_cpu_s'), '.1f')} | {fmt(column(rs, 'busy'), '.2f')} | {refetch} | "
                    f"{fmt(column(rs, 'broker_cpu_s'), '.1f')} | {fmt(column(rs, 'peak_rss_mb'))} |"
                )

            rows = [
                row(
                    "samza_dagster, `kafka.client=confluent` (default): `CountPerKeyTask`, RocksDB store + "
                    "changelog, 1 container, 4 tasks",
                    runs["engine"],
                    fetched=True,
                ),
                row("samza_dagster, `kafka.client=kafka-python`: the same", runs["engine-kafka-python"]),
            ]
            result, met, why = f"{median(eng):,.0f} msgs/s", None, "Quix Streams was not run."
            if "quix" in runs:
                qx = column(runs["quix"], "rate")
                rows.append(
                    row(f"Quix Streams {_version('quixstreams')}: `apply(stateful=True)` + `to_topic`", runs["quix"])
                )
                ratios = [e / q for e, q in zip(eng, qx, strict=True)]
                ratio = median(ratios)
                busy = median(column(runs["engine"], "busy"))
                refetch = median(column(runs["engine"], "refetch_ratio"))
                result = (
                    f"{ratio:.2f}× Quix Streams ({median(eng):,.0f} vs {median(qx):,.0f} msgs/s); engine busy "
                    f"{busy:.2f} (Quix {median(column(runs['quix'], 'busy')):.2f}); fetched {refetch:.2f}× consumed"
                )
                met = ratio >= 1.5 and busy >= 0.9 and refetch <= 1.1
                why = B2_WHY if not met else ""
                rows.append(f"| engine (confluent) / Quix Streams, per repetition | {fmt(ratios, '.2f')} | | | | | | |")
                py_ratios = [e / q for e, q in zip(column(runs["engine-kafka-python"], "rate"), qx, strict=True)]
                rows.append(
                    f"| engine (kafka-python) / Quix Streams, per repetition | {fmt(py_ratios, '.2f')} | | | | | | |"
                )
            if faust_runs:
                fs = column(faust_runs, "rate")
                rows.append(
                    f"| Faust {_version('faust-streaming')}: Table (in-memory store + changelog), "
                    f"**one run over the first {faust_runs[0]['messages']:,} messages only** | "
                    f"{fmt(fs)} | {fmt(column(faust_runs, 'wall_s'), '.1f')} | | | | | "
                    f"{fmt(column(faust_runs, 'peak_rss_mb'))} |"
                )
            body = (
                f"{messages:,} messages (100-byte values, {KEYS:,} distinct keys) in a {PARTITIONS}-partition "
                f"topic on {broker_line(broker)}. Each repetition reads it all under a fresh job name / "
                f"consumer group and state directory; each system creates its own changelog topic; commit every "
                f"{COMMIT_S} s in both; one process per run, alternating; median (min–max) of {repetitions}. "
                "*CPU* is the measured process's (all threads), *broker CPU* the Kafka node's during the same "
                "run (the broker's cost, not counted in busy).\n\n"
                "| | msgs/s | wall, s | CPU, s | busy (CPU s / wall s) | fetched / consumed | broker CPU, s "
                "| peak RSS, MB |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|\n"
                + "\n".join(rows)
                + "\n\n"
                + BUSY_NOTE
                + load_line(runs)
                + loop_split(runs["engine"])
                + (faust_note + "\n" if faust_note else "")
            )
            sections.append(
                Section(
                    key="B2",
                    title="stateful count per key on Kafka vs Quix Streams",
                    command=f"python -m bench --only B2 --kafka-messages {messages} --repetitions {repetitions}",
                    body=body,
                    result=result,
                    target="≥ 1.5 × Quix Streams' rate; busy ≥ 0.9; fetched ≤ 1.1 × consumed",
                    met=met,
                    why=why,
                    elapsed_s=time.perf_counter() - t0,
                )
            )

        if "B3" in want:
            t0 = time.perf_counter()

            def passthrough_on(client: str):
                def passthrough(rep):
                    out = f"b3-{client}-out-{rep}"
                    create_topics(bootstrap, [out], PARTITIONS)
                    return isolated(
                        "bench.bench_kafka:child_engine",
                        bootstrap=bootstrap,
                        job=f"b3-{client}-{rep}",
                        input_topic=topic,
                        output_topic=out,
                        task="bench.bench_kafka:PassThroughTask",
                        state=str(workdir / f"b3-{client}-{rep}"),
                        messages=messages,
                        stateful=False,
                        client=client,
                    )

                return with_broker_cpu(broker, passthrough)

            def consume_only(rep):
                return isolated(
                    "bench.bench_kafka:child_engine",
                    bootstrap=bootstrap,
                    job=f"b3-noop-{rep}",
                    input_topic=topic,
                    output_topic="unused",
                    task="bench.bench_kafka:NoOpTask",
                    state=str(workdir / f"b3-noop-{rep}"),
                    messages=messages,
                    stateful=False,
                )

            def raw(rep):
                return isolated(
                    "bench.bench_kafka:child_raw_confluent", bootstrap=bootstrap, input_topic=topic, messages=messages
                )

            def raw_system(rep):
                return isolated(
                    "bench.bench_kafka:child_raw_system_consumer",
                    bootstrap=bootstrap,
                    input_topic=topic,
                    messages=messages,
                )

            all_runs = alternate(
                repetitions,
                {
                    "confluent": passthrough_on("confluent"),
                    "kafka-python": passthrough_on("kafka-python"),
                    "consume-only": consume_only,
                    "raw": raw,
                    "raw-system": raw_system,
                },
                log,
            )
            runs = all_runs["confluent"]
            per_core = column(runs, "rate_per_cpu_s")
            med = median(per_core)
            py_runs = all_runs["kafka-python"]
            ratios = [
                e / r
                for e, r in zip(column(all_runs["consume-only"], "rate"), column(all_runs["raw"], "rate"), strict=True)
            ]
            sys_ratios = [
                e / r
                for e, r in zip(
                    column(all_runs["consume-only"], "rate"), column(all_runs["raw-system"], "rate"), strict=True
                )
            ]

            def cores(rs):
                return [r["run_cpu_s"] / r["wall_s"] for r in rs]

            memory = memory_row(bootstrap, memory_messages, log) if memory_messages else ""

            body = f"""
{messages:,} messages (the B2 input topic, on {broker_line(broker)}) consumed and sent on to an output
topic by `PassThroughTask`, 1 container, 4 tasks, no serdes (bytes through); one process per repetition, the clients alternating;
median (min–max) of {repetitions}. CPU time is user + system of the engine's process over the run (all
threads, librdkafka's included); the broker's own CPU is shown apart and not counted (Samza's figure
counts the Samza node only).

| | `kafka.client=confluent` (default) | `kafka.client=kafka-python` |
|---|---:|---:|
| wall-clock rate, msgs/s | {fmt(column(runs, "rate"))} | {fmt(column(py_runs, "rate"))} |
| engine CPU, s | {fmt(column(runs, "run_cpu_s"), ".1f")} | {fmt(column(py_runs, "run_cpu_s"), ".1f")} |
| busy: cores used (CPU s / wall s) | {fmt(cores(runs), ".2f")} | {fmt(cores(py_runs), ".2f")} |
| fetched / consumed (librdkafka `rxmsgs`) | {fmt(column(runs, "refetch_ratio"), ".2f")} | |
| **msgs/s per core used** | {fmt(per_core)} | {fmt(column(py_runs, "rate_per_cpu_s"))} |
| broker CPU during the run, s | {fmt(column(runs, "broker_cpu_s"), ".1f")} | {fmt(column(py_runs, "broker_cpu_s"), ".1f")} |
| peak RSS, MB | {fmt(column(runs, "peak_rss_mb"))} | {fmt(column(py_runs, "peak_rss_mb"))} |
| messages per produce request (librdkafka statistics) | {fmt(column(runs, "msgs_per_produce_request"))} | |
{memory}

{loop_split(runs)}
{load_line(all_runs)}
B1-style ratios on the same topic, the engine consuming only (`NoOpTask`, confluent,
{fmt(column(all_runs["consume-only"], "rate"))} msgs/s) against:

* the system's own consumer in a bare poll loop (`ConfluentSystemConsumer`: librdkafka plus an
  envelope per message — B1's baseline on the log is the same kind of loop):
  {fmt(column(all_runs["raw-system"], "rate"))} msgs/s, **{median(sys_ratios):.2f}×** (per repetition
  {fmt(sys_ratios, ".2f")}; target ≥ 0.5);
* a bare confluent-kafka `consume()` loop that only touches each message's key and value:
  {fmt(column(all_runs["raw"], "rate"))} msgs/s, {median(ratios):.2f}× — no Python object is built per
  message there, so this is the distance between C and any Python-level processing.

Baseline for per-core: Apache Samza, 1.2 M msgs/s per 24-core node = 50,000 per core; this round's
target 60,000 per core.
"""
            b3_met = (
                med >= 100_000
                and median(cores(runs)) >= 0.9
                and median(column(runs, "refetch_ratio")) <= 1.1
                and median(sys_ratios) >= 0.5
            )
            sections.append(
                Section(
                    key="B3",
                    title="message passing on Kafka, per core used",
                    command=f"python -m bench --only B3 --kafka-messages {messages} --repetitions {repetitions}",
                    body=body,
                    result=f"{med:,.0f} msgs/s per core with confluent, busy {median(cores(runs)):.2f}, "
                    f"fetched {median(column(runs, 'refetch_ratio')):.2f}× consumed "
                    f"({median(column(py_runs, 'rate_per_cpu_s')):,.0f} with kafka-python); "
                    f"consume-only {median(sys_ratios):.2f}× the system consumer's poll loop "
                    f"({median(ratios):.2f}× a bare librdkafka loop)",
                    target="≥ 100,000 msgs/s per core used; busy ≥ 0.9; fetched ≤ 1.1 × consumed; consume-only ≥ 0.5 × "
                    "the raw consumer loop",
                    met=b3_met,
                    why="" if b3_met else B3_WHY,
                    elapsed_s=time.perf_counter() - t0,
                )
            )
    finally:
        broker.stop()
    return sections


def with_broker_cpu(broker, measure: Callable[[int], dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
    """``measure`` with the broker's CPU seconds during it added as ``broker_cpu_s``."""
    from bench.harness import process_cpu_seconds

    def measured(rep: int) -> dict[str, Any]:
        before = process_cpu_seconds(broker.process.pid)
        result = measure(rep)
        result["broker_cpu_s"] = process_cpu_seconds(broker.process.pid) - before
        return result

    return measured


def load_line(runs: dict[str, list[dict[str, Any]]]) -> str:
    """The machine's 1-minute load average as each measurement's runs started (2 shared cores:
    the absolute rates are under this load; the ratios of alternating runs are steadier)."""
    from bench.harness import column, fmt

    parts = [f"{name} {fmt(column(rs, 'load_1min'), '.1f')}" for name, rs in runs.items() if rs]
    return "Load average (1 min) as the runs started, median (min–max): " + "; ".join(parts) + ".\n\n"


def loop_split(runs: list[dict[str, Any]]) -> str:
    """Where the run loop's thread spent the engine's (confluent) wall time, from the kernel's
    per-thread scheduler statistics."""
    from bench.harness import column, fmt

    if not runs or "loop_on_cpu" not in runs[0]:
        return ""
    return (
        f"The engine's run-loop thread (confluent) spent {fmt(column(runs, 'loop_on_cpu'), '.2f')} of the wall "
        f"time on a CPU, {fmt(column(runs, 'loop_runnable_waiting'), '.2f')} runnable but waiting for a CPU "
        f"(the machine's load), and {fmt(column(runs, 'loop_asleep'), '.2f')} asleep — waiting for messages "
        "or for its commit (`/proc/thread-self/schedstat`).\n\n"
    )


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


B2_WHY = "Why: see *Profiles* below. "
BUSY_NOTE = (
    "*Busy* is the process's CPU seconds (all threads) over its wall seconds for the run: a job that "
    "waits on its client shows it at once, whatever the machine's speed (on 2 cores it can exceed 1). "
    "*Fetched / consumed* is librdkafka's `rxmsgs` statistic (messages received from the broker, "
    "refetches included; its last report is up to 0.2 s before the run ends) over the messages "
    "processed.\n\n"
)
B3_WHY = "Why: see *Profiles* below. "
