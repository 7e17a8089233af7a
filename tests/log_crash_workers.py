"""The processes of tests/reliability/test_reliability_log.py: log writers appending until killed, and
readers checking what they see. Started as ``python -c`` by the test, so this module imports
only what they need (not pytest): each of the test's 24 restarts pays for these imports."""

from __future__ import annotations

import json
import time
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.system.log import LogSystemFactory

STREAM = "crashlog"
WRITERS = 3
BATCH = 200
PAD = b"x" * 1500


def log_config(root: str) -> Config:
    # linger off: a batch of BATCH rows is written by its flush alone, so whole batches are what
    # a reader may see (with the default linger a flush's rows can be written in several parts)
    return Config(
        {
            "systems.log.samza.factory": "log",
            "systems.log.log.path": root,
            "systems.log.log.batch.size": str(BATCH * 10),
            "systems.log.log.fetch.size": "100000",
            "systems.log.log.linger.ms": "0",
        }
    )


def writer(root: str, partition: int) -> None:
    """Append batches of BATCH rows ``b"<partition>:<seq>:"+PAD`` forever (until killed)."""
    config = log_config(root)
    factory = LogSystemFactory()
    md = factory.get_admin("log", config).get_system_stream_metadata([STREAM])[STREAM].partitions[partition]
    seq = 0 if md.newest_offset is None else int(md.newest_offset) + 1
    producer = factory.get_producer("log", config)
    producer.register("w")
    producer.start()
    ss = SystemStream("log", STREAM)
    print("ready", flush=True)
    while True:
        for _ in range(BATCH):
            producer.send("w", OutgoingMessageEnvelope(ss, b"%d:%d:" % (partition, seq) + PAD, partition=partition))
            seq += 1
        producer.flush("w")


def reader(root: str, stop_file: str) -> None:
    """Poll every partition and the metadata until ``stop_file`` exists (the test writes it
    after its last kill, so the readers watch every kill whatever the machine's speed); print a
    JSON report of what was wrong."""
    config = log_config(root)
    factory = LogSystemFactory()
    admin = factory.get_admin("log", config)
    consumer = factory.get_consumer("log", config)
    ssps = [SystemStreamPartition("log", STREAM, p) for p in range(WRITERS)]
    for ssp in ssps:
        consumer.register(ssp, "0")
    consumer.start()
    expect = {ssp: 0 for ssp in ssps}
    problems: list[str] = []
    snapshots = 0
    stop = Path(stop_file)
    deadline = time.monotonic() + 300  # only if the test died without saying stop
    while not stop.exists() and time.monotonic() < deadline and len(problems) < 10:
        for p, m in admin.get_system_stream_metadata([STREAM])[STREAM].partitions.items():
            snapshots += 1
            if int(m.upcoming_offset) % BATCH:
                problems.append(f"partition {p}: {m.upcoming_offset} rows visible, not whole batches")
        for ssp, envs in consumer.poll(ssps, 0.05).items():
            for env in envs:
                want = expect[ssp]
                if env.offset != str(want) or not env.message.startswith(b"%d:%d:" % (ssp.partition, want)):
                    problems.append(
                        f"partition {ssp.partition}: offset {env.offset} holds {env.message[:20]!r}, expected seq {want}"
                    )
                expect[ssp] = int(env.offset) + 1
            if expect[ssp] % BATCH:
                # a poll may stop mid-batch (fetch size); the rest must already be visible
                more = admin.get_system_stream_metadata([STREAM])[STREAM].partitions[ssp.partition]
                if int(more.upcoming_offset) % BATCH:
                    problems.append(f"partition {ssp.partition}: partial batch visible ({more.upcoming_offset})")
    consumer.stop()
    print(
        json.dumps({"problems": problems, "snapshots": snapshots, "read": {s.partition: n for s, n in expect.items()}})
    )
