"""Helpers of the operator-runtime tests: configs, stream creation, producing JSON rows,
reading a stream back, and running an application through ``samza_dagster.runtime.run_job``.

Every helper takes the system name (``log`` by default) so the same tests run on Kafka.
"""

from __future__ import annotations

import json
from typing import Any

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.system.factories import system_factory
from samza_dagster.system.positions import position_reached


def physical(config: Config, stream_id: str) -> str:
    return config.get_str(f"streams.{stream_id}.samza.physical.name") or stream_id


def create(config: Config, stream: str, partitions: int, system: str = "log") -> None:
    admin = system_factory(config, system).get_admin(system, config)
    name = physical(config, stream)
    try:
        admin.create_stream(StreamSpec(stream, name, system, partitions))
    finally:
        stop = getattr(admin, "stop", None)
        if callable(stop):
            stop()


def produce(config: Config, stream: str, rows, event_times=None, system: str = "log") -> None:
    """rows: (partition, key or None, json-able message); keys and messages JSON-encoded.
    One flush at the end; on Kafka, callers configure ``producer.batch.size=0`` (see the
    Kafka tests for why)."""
    producer = system_factory(config, system).get_producer(system, config)
    producer.register("t")
    producer.start()
    ss = SystemStream(system, physical(config, stream))
    try:
        for i, (p, key, msg) in enumerate(rows):
            et = event_times[i] if event_times is not None else None
            k = None if key is None else json.dumps(key).encode()
            producer.send("t", OutgoingMessageEnvelope(ss, json.dumps(msg).encode(), k, None, p, et))
        producer.flush("t")
    finally:
        producer.stop()


def read_all(config: Config, stream: str, system: str = "log", decode: bool = True) -> list[tuple[Any, Any]]:
    """Every message of every partition, up to the newest offset seen now, as (key, message)
    (JSON-decoded unless ``decode`` is False)."""
    factory = system_factory(config, system)
    name = physical(config, stream)
    admin = factory.get_admin(system, config)
    try:
        md = admin.get_system_stream_metadata([name])[name]
    finally:
        stop = getattr(admin, "stop", None)
        if callable(stop):
            stop()
    consumer = factory.get_consumer(system, config)
    wanted = {}
    for p, pm in md.partitions.items():
        if pm.newest_offset is not None:
            ssp = SystemStreamPartition(system, name, p)
            consumer.register(ssp, pm.oldest_offset)
            wanted[ssp] = int(pm.newest_offset)
    consumer.start()
    out = []
    try:
        while wanted:
            polled = consumer.poll(set(wanted), 0.2)
            for ssp in [s for s in wanted if not polled.get(s)]:
                if position_reached(consumer, ssp, wanted[ssp] + 1):  # the newest offset is a commit marker
                    wanted.pop(ssp)
            for ssp, envs in polled.items():
                for env in envs:
                    if env.is_end_of_stream:
                        wanted.pop(ssp, None)
                        continue
                    if decode:
                        out.append((json.loads(env.key) if env.key else None, json.loads(env.message)))
                    else:
                        out.append((env.key, env.message))
                    if int(env.offset) >= wanted.get(ssp, 1 << 60):
                        wanted.pop(ssp, None)
    finally:
        consumer.stop()
    return out


def bounded(config: Config, *streams: str) -> Config:
    """Mark stream ids bounded (``streams.<id>.samza.bounded``)."""
    return config.with_overrides({f"streams.{s}.samza.bounded": "true" for s in streams})


def run(config: Config, runner: str = "thread", **overrides: str) -> Any:
    """run_job on ``runner``; the job must succeed (the result is returned)."""
    result = run_job(config.with_overrides({"job.factory.class": runner, **overrides}))
    assert result.succeeded, result.summary_line()
    return result


def statuses(result: Any) -> set[str]:
    return {s.status.value for s in result.summaries}


def task_names(result: Any) -> set[str]:
    return {name for s in result.summaries for name in s.metrics.get("tasks", {})}


def counter(result: Any, name: str) -> int:
    """A task counter (TaskMetrics.counters) summed over every task of every container."""
    return sum(
        t.get("counters", {}).get(name, 0) for s in result.summaries for t in s.metrics.get("tasks", {}).values()
    )
