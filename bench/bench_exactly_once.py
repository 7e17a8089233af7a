"""The cost of ``job.processing.guarantee=exactly-once`` on the embedded log and on Kafka (issue 30).

    python -m bench.bench_exactly_once [messages] [repetitions]
    python -m bench.bench_exactly_once kafka [messages] [repetitions]

Two jobs over one 4-partition input of ``messages`` 100-byte messages with 1,000 distinct keys,
bounded, one container (4 tasks), each run at-least-once and exactly-once, alternating, every
run in its own child process (bench/harness.py) under a fresh job name:

* **B1's job** — a no-op StreamTask, commit every 10 s (what exactly-once adds to a job that
  writes nothing: ``read_committed`` reads and the commit point);
* **B2's job on the log** — count per key in a RocksDB store with a changelog, each count sent to
  a 4-partition output (B2's ``CountPerKeyTask``), at commit intervals of 5 s, 1 s and 100 ms: the
  commit interval is the latency/throughput trade, as in Kafka.

With ``kafka``: B2's and B3's jobs on a local Apache Kafka node (bench/bench_kafka.py: ``CountPerKeyTask``
with a RocksDB store and its changelog, and ``PassThroughTask``; 4 partitions, 10,000 keys, confluent
client, commit every 5 s, then B2's at 1 s and 100 ms), at-least-once vs exactly-once
(librdkafka's transactional producer: one transaction per commit).

Prints a markdown table: median (min–max) msgs/s, and per repetition the ratios exactly-once /
at-least-once of the rate and of the CPU seconds the run's process used (all threads; on a shared
machine the CPU ratio is the steadier of the two).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.harness import alternate, column, fmt, isolated, load_average
from samza_dagster.config import Config
from samza_dagster.container import SamzaContainer
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.factories import system_factory
from samza_dagster.task.api import InitableTask, StreamTask

PARTITIONS = 4
KEYS = 1000


class LogCountPerKeyTask(StreamTask, InitableTask):
    """B2's task with its output on the log: count[key] += 1 in the ``counts`` store; emit (key, count)."""

    OUT = SystemStream("log", "out")

    def init(self, context):
        self.store = context.get_store("counts")

    def process(self, envelope, collector, coordinator):
        key = envelope.key
        store = self.store
        count = (store.get(key) or 0) + 1
        store.put(key, count)
        collector.send(OutgoingMessageEnvelope(self.OUT, count, key=key))


def _config(root: Path, name: str, workload: str, guarantee: str, commit_ms: int) -> Config:
    entries = {
        "job.name": name,
        "job.default.system": "log",
        "job.processing.guarantee": guarantee,
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(root / "log"),
        "task.inputs": "log.input",
        "systems.log.streams.input.samza.bounded": "true",
        "task.commit.ms": str(commit_ms),
        "job.logged.store.base.dir": str(root / "state"),
    }
    if workload == "noop":
        entries["task.class"] = "support.tasks:NoOpTask"
    else:
        entries.update(
            {
                "task.class": "bench.bench_exactly_once:LogCountPerKeyTask",
                "systems.log.samza.key.serde": "string",
                "systems.log.streams.input.samza.msg.serde": "bytes",
                "systems.log.streams.out.samza.msg.serde": "long",
                "stores.counts.factory": "rocksdb",
                "stores.counts.key.serde": "string",
                "stores.counts.msg.serde": "long",
                "stores.counts.changelog": f"log.{name}-counts-changelog",
            }
        )
    return Config(entries)


def child_prepare(root: str, messages: int) -> dict:
    config = _config(Path(root), "prepare", "noop", "at-least-once", 10_000)
    factory = system_factory(config, "log")
    admin = factory.get_admin("log", config)
    admin.create_stream(StreamSpec("input", "input", "log", PARTITIONS))
    admin.create_stream(StreamSpec("out", "out", "log", PARTITIONS))
    producer = factory.get_producer("log", config)
    producer.register("bench")
    producer.start()
    ss = SystemStream("log", "input")
    payload = b"x" * 100
    for i in range(messages):
        producer.send(
            "bench", OutgoingMessageEnvelope(ss, payload, key=f"k{i % KEYS}".encode(), partition=i % PARTITIONS)
        )
    producer.stop()
    return {}


def child_run(root: str, messages: int, workload: str, guarantee: str, commit_ms: int, run: int) -> dict:
    name = f"{workload}-{guarantee}-{commit_ms}-{run}"
    config = _config(Path(root), name, workload, guarantee, commit_ms)
    model = build_job_model(config).model
    t0 = time.perf_counter()
    summary = SamzaContainer("0", model).run()
    elapsed = time.perf_counter() - t0
    assert summary.messages_processed == messages, summary.one_line()
    return {"rate": messages / elapsed}


def main(messages: int = 200_000, repetitions: int = 3) -> None:
    root = tempfile.mkdtemp(prefix="bench-eos-")
    isolated("bench.bench_exactly_once:child_prepare", root=root, messages=messages)
    print(f"load average before: {load_average()}", flush=True)
    cases = [("noop", 10_000), ("count", 5_000), ("count", 1_000), ("count", 100)]
    rows = []
    for workload, commit_ms in cases:

        def measure(guarantee: str, workload: str = workload, commit_ms: int = commit_ms):
            return lambda rep: isolated(
                "bench.bench_exactly_once:child_run",
                root=root,
                messages=messages,
                workload=workload,
                guarantee=guarantee,
                commit_ms=commit_ms,
                run=rep,
            )

        out = alternate(
            repetitions, {"at-least-once": measure("at-least-once"), "exactly-once": measure("exactly-once")}
        )
        alo, eos = column(out["at-least-once"], "rate"), column(out["exactly-once"], "rate")
        ratios = [e / a for e, a in zip(eos, alo, strict=True)]
        cpu = [
            e / a
            for e, a in zip(column(out["exactly-once"], "cpu_s"), column(out["at-least-once"], "cpu_s"), strict=True)
        ]
        rows.append((workload, commit_ms, alo, eos, ratios, cpu))
    print(f"load average after: {load_average()}")
    print(
        "\n| job | commit | at-least-once, msgs/s | exactly-once, msgs/s | rate, exactly-once / at-least-once "
        "| CPU s, exactly-once / at-least-once |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for workload, commit_ms, alo, eos, ratios, cpu in rows:
        job = "B1's no-op task" if workload == "noop" else "B2's count per key + output, on the log"
        print(f"| {job} | {commit_ms} ms | {fmt(alo)} | {fmt(eos)} | {fmt(ratios, '.2f')} | {fmt(cpu, '.2f')} |")


def kafka_main(messages: int = 300_000, repetitions: int = 3) -> None:
    from bench.bench_kafka import _prepare
    from bench.kafka_util import create_topics

    workdir = Path(tempfile.mkdtemp(prefix="bench-eos-kafka-"))
    setup = _prepare(workdir, messages, print)
    broker, topic = setup["broker"], setup["topic"]
    bootstrap = broker.bootstrap_servers
    print(f"load average before: {load_average()}", flush=True)
    cases = [
        ("CountPerKeyTask", 5_000),
        ("PassThroughTask", 5_000),
        ("CountPerKeyTask", 1_000),
        ("CountPerKeyTask", 100),
    ]
    rows = []
    try:
        for task, commit_ms in cases:

            def measure(guarantee: str, task: str = task, commit_ms: int = commit_ms):
                def run(rep: int) -> dict:
                    job = f"eos-{task[:5].lower()}-{guarantee[:5]}-{commit_ms}-{rep}"
                    create_topics(bootstrap, [f"{job}-out", f"{job}-counts-changelog"], 4)
                    return isolated(
                        "bench.bench_kafka:child_engine",
                        bootstrap=bootstrap,
                        job=job,
                        input_topic=topic,
                        output_topic=f"{job}-out",
                        task=f"bench.bench_kafka:{task}",
                        state=str(workdir / job),
                        messages=messages,
                        stateful=task == "CountPerKeyTask",
                        extra={"job.processing.guarantee": guarantee, "task.commit.ms": str(commit_ms)},
                    )

                return run

            out = alternate(
                repetitions, {"at-least-once": measure("at-least-once"), "exactly-once": measure("exactly-once")}
            )
            alo, eos = column(out["at-least-once"], "rate"), column(out["exactly-once"], "rate")
            ratios = [e / a for e, a in zip(eos, alo, strict=True)]
            cpu = [
                e / a
                for e, a in zip(
                    column(out["exactly-once"], "run_cpu_s"), column(out["at-least-once"], "run_cpu_s"), strict=True
                )
            ]
            rows.append((task, commit_ms, alo, eos, ratios, cpu))
    finally:
        broker.stop()
    print(f"load average after: {load_average()}")
    print(
        "\n| job (Kafka, confluent) | commit | at-least-once, msgs/s | exactly-once, msgs/s "
        "| rate, exactly-once / at-least-once | CPU s, exactly-once / at-least-once |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for task, commit_ms, alo, eos, ratios, cpu in rows:
        job = "B2: `CountPerKeyTask` + store + changelog" if task == "CountPerKeyTask" else "B3: `PassThroughTask`"
        print(f"| {job} | {commit_ms} ms | {fmt(alo)} | {fmt(eos)} | {fmt(ratios, '.2f')} | {fmt(cpu, '.2f')} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["kafka"]:
        kafka_main(*(int(a) for a in sys.argv[2:4]))
    else:
        main(*(int(a) for a in sys.argv[1:3]))
