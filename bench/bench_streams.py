"""B4 (real-time latency under a batch flood, priority vs round-robin) and B5 (bootstrap rate).

B4. A log-system job reads a ``batch`` stream (4 partitions, pre-filled: the flood) and a
``rt`` stream (1 partition) that a producer thread in the same process writes to at a steady
rate while the job runs; every message costs the task a fixed busy-wait (``--work-us``), so the
container has a fixed capacity. The real-time stream needs more than its round-robin share of
that capacity (1/5 with 4 batch partitions) but far less than all of it — the situation stream
priorities are for. Latency of a real-time message = when the task starts processing it − when
it was handed to the producer (the producer's own write and the consumer's poll included).
Compared: ``systems.log.streams.rt.samza.priority=1`` (batch 0) vs no priorities (the
round-robin chooser).

B5. A 4-partition log stream of N records marked ``samza.bootstrap`` plus an ``other`` stream
with one message per partition: seconds from ``SamzaContainer.run()`` to the first ``other``
message processed (every bootstrap record must have been processed before it), as records/s,
vs the raw ``LogSystemConsumer`` poll loop reading the same N records.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.task.api import InitableTask, StreamTask
from samza_dagster.task.coordinator import RequestScope

BATCH_PARTITIONS = 4
_TIME = struct.Struct(">d")
_END = b"END"


def _log_config(root: str, job: str, **extra: str) -> Config:
    return Config(
        {
            "job.name": job,
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(Path(root) / "log"),
            "task.commit.ms": "10000",
            "metrics.timer.enabled": "false",
            **extra,
        }
    )


def _produce(config: Config, stream: str, partitions: int, messages: int, payload: bytes = b"x" * 100) -> None:
    from samza_dagster.system.factories import system_factory

    factory = system_factory(config, "log")
    factory.get_admin("log", config).create_stream(StreamSpec(stream, stream, "log", partitions))
    producer = factory.get_producer("log", config)
    producer.register("bench")
    producer.start()
    ss = SystemStream("log", stream)
    for i in range(messages):
        producer.send("bench", OutgoingMessageEnvelope(ss, payload, key=None, partition=i % partitions))
    producer.flush("bench")
    producer.stop()


# -- B4 --------------------------------------------------------------------------------------------
class _Latencies:
    values: list[float] = []
    batch_processed = 0


class PriorityLatencyTask(StreamTask, InitableTask):
    """Busy-waits ``bench.work.us`` per message; records real-time messages' latency; the end
    marker on ``rt`` stops the container."""

    def init(self, context):
        self.work_s = context.config.get_int("bench.work.us", 200) / 1e6
        self.rt = context.config.get_str("bench.rt.stream")

    def process(self, envelope, collector, coordinator):
        now = time.time()
        end = time.perf_counter() + self.work_s
        if envelope.ssp.stream == self.rt:
            message = envelope.message
            if message == _END:
                coordinator.shutdown(RequestScope.ALL_TASKS_IN_CONTAINER)
            else:
                _Latencies.values.append(now - _TIME.unpack(message)[0])
        else:
            _Latencies.batch_processed += 1
        while time.perf_counter() < end:
            pass


def child_b4_prepare(root: str, flood: int) -> dict[str, Any]:
    config = _log_config(root, "prepare")
    _produce(config, "batch", BATCH_PARTITIONS, flood)
    return {}


def child_b4(root: str, job: str, priority: bool, rt_messages: int, rt_rate: int, work_us: int) -> dict[str, Any]:
    from samza_dagster.container import SamzaContainer
    from samza_dagster.coordinator.model.builder import build_job_model
    from samza_dagster.system.factories import system_factory

    rt_stream = f"rt_{job}"  # a fresh real-time stream per run (the batch flood is shared, read from 0)
    extra = {
        "task.inputs": f"log.batch,log.{rt_stream}",
        "task.class": "bench.bench_streams:PriorityLatencyTask",
        "bench.work.us": str(work_us),
        "bench.rt.stream": rt_stream,
    }
    if priority:
        extra.update(
            {f"systems.log.streams.{rt_stream}.samza.priority": "1", "systems.log.streams.batch.samza.priority": "0"}
        )
    config = _log_config(root, job, **extra)
    system_factory(config, "log").get_admin("log", config).create_stream(StreamSpec(rt_stream, rt_stream, "log", 1))
    model = build_job_model(config).model
    container = SamzaContainer("0", model)

    # The real-time producer is another process, as a real one would be: in this process it
    # would wait for the GIL behind the task's busy CPU and never reach its rate.
    feeder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.harness",
            "bench.bench_streams:child_b4_feed",
            json.dumps({"root": root, "rt_stream": rt_stream, "rt_messages": rt_messages, "rt_rate": rt_rate}),
        ],
        cwd=str(Path(__file__).resolve().parent.parent),
        stdout=subprocess.DEVNULL,
    )
    try:
        t0 = time.perf_counter()
        container.run()
        wall = time.perf_counter() - t0
    finally:
        if feeder.wait(timeout=60) != 0:
            raise RuntimeError(f"the real-time producer exited with {feeder.returncode}")
    values = sorted(_Latencies.values)
    if len(values) != rt_messages:
        raise RuntimeError(f"{len(values)} of {rt_messages} real-time messages processed")

    def pct(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))] * 1000

    return {
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": values[-1] * 1000,
        "wall_s": wall,
        "batch_processed": _Latencies.batch_processed,
    }


def child_b4_feed(root: str, rt_stream: str, rt_messages: int, rt_rate: int) -> dict[str, Any]:
    """Write ``rt_messages`` timestamped messages at ``rt_rate``/s in 5 ms ticks, then the end marker."""
    from samza_dagster.system.factories import system_factory

    config = _log_config(root, "feed")
    producer = system_factory(config, "log").get_producer("log", config)
    producer.register("rt")
    producer.start()
    rt = SystemStream("log", rt_stream)
    tick = 0.005
    time.sleep(0.5)  # let the container start and the flood begin
    start = time.perf_counter()
    sent = 0
    while sent < rt_messages:
        due = min(rt_messages, int((time.perf_counter() - start) * rt_rate) + 1)
        while sent < due:
            producer.send("rt", OutgoingMessageEnvelope(rt, _TIME.pack(time.time()), partition=0))
            sent += 1
        producer.flush("rt")
        time.sleep(tick)
    producer.send("rt", OutgoingMessageEnvelope(rt, _END, partition=0))
    producer.flush("rt")
    producer.stop()
    return {"seconds": time.perf_counter() - start}


def b4_section(
    repetitions: int,
    workdir: Path,
    log=print,
    rt_messages: int = 6000,
    rt_rate: int = 1500,
    work_us: int = 200,
    flood: int = 60_000,
):
    from bench.harness import Section, alternate, column, fmt, isolated, median

    t0 = time.perf_counter()
    root = str(workdir / "b4")
    isolated("bench.bench_streams:child_b4_prepare", root=root, flood=flood)
    runs = alternate(
        repetitions,
        {
            "priority": lambda rep: isolated(
                "bench.bench_streams:child_b4",
                root=root,
                job=f"prio-{rep}",
                priority=True,
                rt_messages=rt_messages,
                rt_rate=rt_rate,
                work_us=work_us,
            ),
            "round-robin": lambda rep: isolated(
                "bench.bench_streams:child_b4",
                root=root,
                job=f"rr-{rep}",
                priority=False,
                rt_messages=rt_messages,
                rt_rate=rt_rate,
                work_us=work_us,
            ),
        },
        log,
    )
    ratios = [
        p / r for p, r in zip(column(runs["priority"], "p99_ms"), column(runs["round-robin"], "p99_ms"), strict=True)
    ]
    ratio = median(ratios)
    capacity = 1e6 / work_us
    rows = "\n".join(
        f"| {name} | {fmt(column(r, 'p50_ms'), ',.1f')} | {fmt(column(r, 'p99_ms'), ',.1f')} | "
        f"{fmt(column(r, 'max_ms'), ',.1f')} | {fmt(column(r, 'batch_processed'))} | {fmt(column(r, 'wall_s'), '.1f')} |"
        for name, r in runs.items()
    )
    body = f"""
Flood: {flood:,} messages pre-loaded in a {BATCH_PARTITIONS}-partition `batch` stream. Real time: {rt_messages:,} messages
written to a 1-partition `rt` stream at {rt_rate:,}/s by a producer thread in the job's process while it
runs. Every message costs the task {work_us} µs of busy CPU, so the container can process at most
~{capacity:,.0f} msgs/s; round-robin over 5 partitions gives `rt` at most ~{capacity / 5:,.0f}/s of it, less than
the {rt_rate:,}/s it receives. One process per run, alternating; median (min–max) of {repetitions}; ms.

| chooser | p50, ms | p99, ms | max, ms | batch msgs processed meanwhile | wall, s |
|---|---:|---:|---:|---:|---:|
{rows}
| p99 priority / round-robin, per repetition | | {fmt(ratios, ".3f")} | | | |

With priority the real-time latency is the producer's write plus one poll of the log consumer;
with round-robin the `rt` partition's buffer grows by the difference of the two rates for as long as
the flood lasts.
"""
    return Section(
        key="B4",
        title="real-time latency during a batch flood: priority vs round-robin",
        command=f"python -m bench --only B4 --repetitions {repetitions}",
        body=body,
        result=f"p99 {median(column(runs['priority'], 'p99_ms')):,.1f} ms vs {median(column(runs['round-robin'], 'p99_ms')):,.1f} ms "
        f"({ratio:.3f}×)",
        target="p99 with priority ≤ 1/10 of round-robin's",
        met=ratio <= 0.1,
        why="" if ratio <= 0.1 else "Why: see the section.",
        elapsed_s=time.perf_counter() - t0,
    )


# -- B5 --------------------------------------------------------------------------------------------
#: B5's target: the default config reads a bootstrap stream at this fraction of the raw consumer
#: (issue 54; 0.8 before)
B5_TARGET = 0.85


class _Boot:
    first_other_at = 0.0


class BootstrapProbeTask(StreamTask):
    """Notes when the first ``other`` message arrives and stops the container there. Its work per
    bootstrap record is one comparison: how many came before the first ``other`` is read after the
    run from the engine's own counts (the shutdown stops the run loop after that message, so the
    final counts are those at it). A Python counter per record here cost 7 % of B5's run loop
    (py-spy), work the raw loop it is compared with does not do."""

    def process(self, envelope, collector, coordinator):
        if envelope.ssp.stream != "boot" and not _Boot.first_other_at:
            _Boot.first_other_at = time.perf_counter()
            coordinator.shutdown(RequestScope.ALL_TASKS_IN_CONTAINER)


def child_b5_prepare(root: str, records: int) -> dict[str, Any]:
    config = _log_config(root, "prepare")
    t0 = time.perf_counter()
    _produce(config, "boot", BATCH_PARTITIONS, records)
    _produce(config, "other", BATCH_PARTITIONS, BATCH_PARTITIONS)
    return {"produce_s": time.perf_counter() - t0}


def child_b5_engine(root: str, job: str, records: int, batch_size: int | None = None) -> dict[str, Any]:
    """``batch_size`` None: the default config (task.consumer.batch.size unset)."""
    from samza_dagster.container import SamzaContainer
    from samza_dagster.coordinator.model.builder import build_job_model

    settings = {
        "task.inputs": "log.boot,log.other",
        "task.class": "bench.bench_streams:BootstrapProbeTask",
        "systems.log.streams.boot.samza.bootstrap": "true",
    }
    if batch_size is not None:
        settings["task.consumer.batch.size"] = str(batch_size)
    config = _log_config(root, job, **settings)
    model = build_job_model(config).model
    t0 = time.perf_counter()
    processed = SamzaContainer("0", model).run().messages_per_stream
    if processed != {"log.boot": records, "log.other": 1}:
        raise RuntimeError(f"expected all {records} bootstrap records, then one other message; processed {processed}")
    seconds = _Boot.first_other_at - t0
    return {"rate": records / seconds, "seconds": seconds}


def child_b5_raw(root: str, records: int) -> dict[str, Any]:
    from samza_dagster.system.factories import system_factory

    config = _log_config(root, "raw")
    consumer = system_factory(config, "log").get_consumer("log", config)
    ssps = [SystemStreamPartition("log", "boot", p) for p in range(BATCH_PARTITIONS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    t0 = time.perf_counter()
    consumer.start()
    seen = 0
    while seen < records:
        for envelopes in consumer.poll(ssps, 0.05).values():
            seen += len(envelopes)
    seconds = time.perf_counter() - t0
    consumer.stop()
    return {"rate": records / seconds, "seconds": seconds}


def b5_section(records: int, repetitions: int, workdir: Path, log=print):
    from bench.harness import Section, alternate, column, fmt, isolated, median

    t0 = time.perf_counter()
    root = str(workdir / "b5")
    prep = isolated("bench.bench_streams:child_b5_prepare", root=root, records=records)
    log(f"  produced {records:,} bootstrap records in {prep['produce_s']:.1f} s")
    runs = alternate(
        repetitions,
        {
            "raw": lambda rep: isolated("bench.bench_streams:child_b5_raw", root=root, records=records),
            "default": lambda rep: isolated(
                "bench.bench_streams:child_b5_engine", root=root, job=f"boot-d-{rep}", records=records
            ),
            "samza": lambda rep: isolated(
                "bench.bench_streams:child_b5_engine", root=root, job=f"boot-s-{rep}", records=records, batch_size=1
            ),
        },
        log,
    )
    raw, default, samza = (column(runs[k], "rate") for k in ("raw", "default", "samza"))
    ratios = [e / r for e, r in zip(default, raw, strict=True)]
    samza_ratios = [e / r for e, r in zip(samza, raw, strict=True)]
    ratio = median(ratios)
    body = f"""
{records:,} records of 100 bytes in a {BATCH_PARTITIONS}-partition log stream marked `samza.bootstrap`, plus an
`other` stream with one message per partition; one process per run, alternating; median (min–max) of {repetitions}.
Every run checked that all {records:,} bootstrap records were processed before the first `other` message.

| | records/s | seconds | peak RSS, MB |
|---|---:|---:|---:|
| raw `LogSystemConsumer` poll loop over the bootstrap stream | {fmt(raw)} | {fmt(column(runs["raw"], "seconds"), ".2f")} | {fmt(column(runs["raw"], "peak_rss_mb"))} |
| container, default config (`task.consumer.batch.size` unset): start → first `other` message processed | {fmt(default)} | {fmt(column(runs["default"], "seconds"), ".2f")} | {fmt(column(runs["default"], "peak_rss_mb"))} |
| container, `task.consumer.batch.size=1` (Samza's default chooser): the same | {fmt(samza)} | {fmt(column(runs["samza"], "seconds"), ".2f")} | {fmt(column(runs["samza"], "peak_rss_mb"))} |
| default / raw, per repetition (the result) | {fmt(ratios, ".2f")} | | |
| `batch.size=1` / raw, per repetition | {fmt(samza_ratios, ".2f")} | | |

The result is the default config: with `task.consumer.batch.size` unset, a bootstrap stream's
priority tier batches 250 envelopes of one partition per chooser decision (a deliberate
difference from Samza, whose default is 1 for every stream; see docs/decisions.md). With the key
set to 1 every envelope costs an update/choose pair through three choosers (bootstrapping,
priority tiers, round-robin).
"""
    return Section(
        key="B5",
        title="bootstrapping a stream before the first other message",
        command=f"python -m bench --only B5 --messages {records} --repetitions {repetitions}",
        body=body,
        result=f"{ratio:.2f}× of raw with the default config ({median(default):,.0f} vs {median(raw):,.0f} "
        f"records/s; {median(samza_ratios):.2f}× with batch.size=1)",
        target=f"≥ {B5_TARGET:.2f} × the raw rate with defaults",
        met=ratio >= B5_TARGET,
        why="" if ratio >= B5_TARGET else "Why: see *Profiles* below.",
        elapsed_s=time.perf_counter() - t0,
    )
