"""CPU time of the inline run loop alone: a no-op StreamTask over N in-memory messages in 4
partitions, one SamzaContainer in this process, ``time.process_time()`` around ``run()`` (start-up
included, producing the messages excluded). Less sensitive to a shared machine's load than a rate:
used to compare two checkouts, alternating (docs/benchmarks.md, "TaskInstance ownership").

    python -m bench.inline_cpu 300000      # prints: CPU seconds, wall seconds
"""

from __future__ import annotations

import sys
import time

from samza_dagster.config import Config
from samza_dagster.container import ContainerStatus, SamzaContainer
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system import inmemory
from samza_dagster.system.factories import system_factory

PARTITIONS = 4


def measure(n: int) -> tuple[float, float]:
    inmemory.reset()
    config = Config(
        {
            "job.name": "inline-cpu",
            "job.default.system": "mem",
            "systems.mem.samza.factory": "inmemory",
            "task.inputs": "mem.input",
            "systems.mem.streams.input.samza.bounded": "true",
            "task.class": "support.tasks:NoOpTask",
            "task.commit.ms": "10000",
        }
    )
    factory = system_factory(config, "mem")
    factory.get_admin("mem", config).create_stream(StreamSpec("input", "input", "mem", PARTITIONS))
    producer = factory.get_producer("mem", config)
    producer.register("bench")
    producer.start()
    stream = SystemStream("mem", "input")
    for i in range(n):
        producer.send("bench", OutgoingMessageEnvelope(stream, b"x" * 100, partition=i % PARTITIONS))
    producer.flush("bench")
    producer.stop()
    model = build_job_model(config).model
    cpu, wall = time.process_time(), time.perf_counter()
    summary = SamzaContainer("0", model).run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if summary.status is not ContainerStatus.COMPLETED or summary.messages_processed < n:
        raise SystemExit(f"the run did not process {n} messages: {summary.one_line()}")
    return cpu, wall


if __name__ == "__main__":
    cpu_s, wall_s = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 300_000)
    print(f"{cpu_s:.3f} {wall_s:.3f}")
