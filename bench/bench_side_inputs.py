"""How soon a side-input update is visible to the task's table reads, on the embedded log.

    python -m bench.bench_side_inputs [UPDATES]

A job (thread runner, one container) with a RocksDB side-input store runs while this process
writes UPDATES profile updates, one every 10 ms, each flushed at once. For each update the delay
is from the producer's flush returning to the new value being returned by ``store.get`` on the
task's own store (polled from here every 0.5 ms). The baseline, in the same run, is the embedded
log itself: the delay from the same flush to a plain ``LogSystemConsumer.poll`` returning the
message — what any reader of the log waits. Target (the issue): p99 < 1 s.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.report import machine_line, write_section
from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.runtime import create_runner
from samza_dagster.system.factories import system_factory
from support.waiting import wait_until

INTERVAL_S = 0.010
PROBE_S = 0.0005


def _config(root: Path) -> Config:
    return Config(
        {
            "job.name": "si-bench",
            "job.factory.class": "thread",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(root / "log"),
            "job.logged.store.base.dir": str(root / "state"),
            "task.class": "support.tasks:ProfileLookupTask",
            "task.inputs": "log.users",
            "systems.log.streams.users.samza.msg.serde": "string",
            "systems.log.streams.profiles.samza.key.serde": "string",
            "systems.log.streams.profiles.samza.msg.serde": "json",
            "stores.profiles.factory": "rocksdb",
            "stores.profiles.side.inputs": "log.profiles",
            "stores.profiles.key.serde": "string",
            "stores.profiles.msg.serde": "json",
        }
    )


def _percentiles(delays: list[float]) -> tuple[float, float, float]:
    ordered = sorted(delays)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1000, p99 * 1000, ordered[-1] * 1000


def _measure(config: Config, updates: int, visible) -> list[float]:
    """Write ``updates`` profile updates; ``visible(value)`` tells when one is seen."""
    producer = system_factory(config, "log").get_producer("log", config)
    producer.register("bench")
    producer.start()
    stream = SystemStream("log", "profiles")
    delays = []
    try:
        for i in range(updates):
            value = {"name": f"v{i}"}
            producer.send("bench", OutgoingMessageEnvelope(stream, json.dumps(value).encode(), key=b"u1", partition=0))
            producer.flush("bench")
            flushed = time.perf_counter()
            deadline = flushed + 10
            while not visible(value):
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"update {i} not visible within 10 s")
                time.sleep(PROBE_S)
            delays.append(time.perf_counter() - flushed)
            time.sleep(INTERVAL_S)
    finally:
        producer.stop()
    return delays


def main(updates: int = 300) -> str:
    root = Path(tempfile.mkdtemp(prefix="bench-side-inputs-"))
    try:
        return _run(root, updates)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(root: Path, updates: int) -> str:
    config = _config(root)
    admin = system_factory(config, "log").get_admin("log", config)
    from samza_dagster.model import StreamSpec

    for name in ("users", "profiles", "enriched"):
        admin.create_stream(StreamSpec(name, name, "log", 1))
    admin.stop()

    # baseline: a plain consumer of the same stream
    consumer = system_factory(config, "log").get_consumer("log", config)
    ssp = SystemStreamPartition("log", "profiles", 0)
    consumer.register(ssp, "0")
    consumer.start()
    last: list[bytes] = [b""]

    def polled(value: dict) -> bool:
        for env in consumer.poll({ssp}, 0).get(ssp, ()):
            last[0] = env.message
        return last[0] == json.dumps(value).encode()

    raw = _measure(config, updates, polled)
    consumer.stop()

    runner = create_runner(config)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    container = wait_until(
        lambda: runner.containers and runner.containers[0].run_loop and runner.containers[0],
        60,
        "the container to start",
    )
    store = container.tasks["Partition 0"].task_stores.stores["profiles"]
    try:
        engine = _measure(config, updates, lambda value: store.get("u1") == value)
    finally:
        runner.stop()
        thread.join(60)

    rows = [("log consumer poll (baseline)", raw), ("side-input store, read by the task", engine)]
    table = "\n".join(
        f"| {name} | {len(d)} | {p50:.1f} | {p99:.1f} | {worst:.1f} |"
        for name, d in rows
        for p50, p99, worst in [_percentiles(d)]
    )
    p99_engine = _percentiles(engine)[1]
    md = (
        f"### Side inputs: update visible to the task (`python -m bench.bench_side_inputs {updates}`)\n\n"
        f"{machine_line()}. One update every {INTERVAL_S * 1000:.0f} ms, delay from the producer's flush to the "
        "value being readable; the baseline is the embedded log's own delivery to a plain consumer, same run.\n\n"
        "| reader | updates | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|\n"
        f"{table}\n\n"
        f"Target p99 < 1000 ms: {'met' if p99_engine < 1000 else 'NOT met'} ({p99_engine:.1f} ms). The side-inputs "
        "thread polls with a 50 ms timeout when idle; the log consumer wakes on new data by polling, so the "
        "delay is bounded by that poll interval plus one fetch.\n"
    )
    write_section("side-inputs", md)
    return md


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
