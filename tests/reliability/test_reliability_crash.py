"""Issue 12.1 — crash recovery with exact state (transactional state, Samza 1.5+).

A stateful job on the **process runner** is killed with SIGKILL (from the test, i.e. from
outside the container process) ten times at seeded points, restarted each time, then run to the
end. The points are chosen by phase: mid-process (inside ``process``), mid-flush (before the
producers' flush, and after it but before the checkpoint — the case that double-counted when
restore replayed the whole changelog), mid-commit (right after the checkpoint is durable),
mid-restore (while the changelog is being read back) and at a random point after the k-th
message. The job says when it is at a point (tests/kill_points.py: the fault-injecting system
and the task below write a marker, then pause); the test kills it there, so every kill lands
whatever the machine's speed.

Checked: the final store contents (every task's RocksDB store, rebuilt from its changelog at
the last start) equal a crash-free run's; every input message is in the output at least once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.runtime.process_runner import ProcessJobRunner
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage import RocksDBRawStore
from samza_dagster.task.api import BatchStreamTask, InitableTask, StreamTask
from tests.apps.harness import create_stream, produce
from tests.kill_points import Kills, ThreadedRun, fault_points, kill_at_each_point, seeded_points, with_kill_points

PARTITIONS = 2
MESSAGES = 2400
WORDS = [f"w{i:02d}" for i in range(23)]
SEED = 12


class CountAndEchoTask(StreamTask, InitableTask):
    """Counts words in the ``counts`` store and sends each input's id to ``out``."""

    OUT = SystemStream("log", "out")

    def init(self, context):
        self.store = context.get_store("counts")
        self.points = fault_points(context.config)
        self.delay = (context.config.get_int("test.process.delay.us") or 0) / 1e6

    def process(self, envelope, collector, coordinator):
        self.points.at("process")
        msg_id, word = envelope.message.split(":")
        self.store.put(word, (self.store.get(word) or 0) + 1)
        collector.send(OutgoingMessageEnvelope(self.OUT, msg_id, key=msg_id))
        if self.delay:
            time.sleep(self.delay)


class CountAndEchoBatchTask(CountAndEchoTask, BatchStreamTask):
    """The same job as a batch task: each batch's messages counted and echoed in one call (the
    ``process`` kill point is reached per message, so a kill lands inside a batch)."""

    def process_batch(self, envelopes, collector, coordinator):
        for envelope in envelopes:
            self.process(envelope, collector, coordinator)


# -- the test ------------------------------------------------------------------------------------
def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {
        "job.name": "crashcount",
        "job.factory.class": "process",
        "job.container.count": "1",
        "job.default.system": "log",
        "task.inputs": "log.words",
        "task.class": "tests.reliability.test_reliability_crash:CountAndEchoTask",
        "task.commit.ms": "40",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "systems.log.samza.msg.serde": "string",
        "systems.log.samza.key.serde": "string",
        "systems.log.streams.words.samza.bounded": "true",
        "stores.counts.factory": "rocksdb",
        "stores.counts.key.serde": "string",
        "stores.counts.msg.serde": "long",
        "stores.counts.changelog": "log.crashcount-counts-changelog",
        "job.logged.store.base.dir": str(tmp_path / "state"),
        # a message takes at least 1.5 ms, so a commit (every 40 ms) covers a few dozen: each
        # killed run gets little done, and every planned point has input left to reach it
        "test.process.delay.us": "1500",
    }
    entries.update(extra)
    return Config(entries)


def _fill(config: Config) -> None:
    create_stream(config, "log", "words", PARTITIONS)
    create_stream(config, "log", "out", 1)
    rnd = random.Random(SEED)
    produce(
        config, "log", "words", [(i % PARTITIONS, None, f"m{i}:{rnd.choice(WORDS)}".encode()) for i in range(MESSAGES)]
    )


def _store_contents(tmp_path: Path) -> dict[str, dict[str, int]]:
    result = {}
    kser, vser = StringSerde(), LongSerde()
    for task_dir in sorted((tmp_path / "state" / "crashcount-1" / "counts").iterdir()):
        raw = RocksDBRawStore(str(task_dir))
        result[task_dir.name] = {kser.from_bytes(k): vser.from_bytes(v) for k, v in raw.all()}
        raw.close()
    return result


def read_all(config: Config, stream: str, system: str = "log") -> list:
    """Every envelope of ``stream`` (all partitions) from oldest to the head seen now."""
    from samza_dagster.model import SystemStreamPartition
    from samza_dagster.system.factories import system_factory

    factory = system_factory(config, system)
    md = factory.get_admin(system, config).get_system_stream_metadata([stream])[stream]
    consumer = factory.get_consumer(system, config)
    wanted = {}
    for p, m in md.partitions.items():
        if m.newest_offset is not None:
            ssp = SystemStreamPartition(system, stream, p)
            consumer.register(ssp, m.oldest_offset)
            wanted[ssp] = int(m.newest_offset)
    out: list = []
    if not wanted:
        return out
    consumer.start()
    try:
        deadline = time.monotonic() + 30
        while wanted and time.monotonic() < deadline:
            for ssp, envs in consumer.poll(list(wanted), 0.1).items():
                for env in envs:
                    if env.is_end_of_stream or ssp not in wanted:
                        break
                    out.append(env)
                    if int(env.offset) >= wanted[ssp]:
                        del wanted[ssp]
                        break
    finally:
        consumer.stop()
    assert not wanted, f"could not read {stream} to its head"
    return out


def _output_ids(config: Config) -> Counter:
    return Counter(env.message.decode() for env in read_all(config, "out"))


def kill_process_runner_at(kills: Kills, config: Config) -> None:
    """Run the job on the process runner, SIGKILLing its container at each of ``kills``' points
    (the job started again after each)."""

    def start() -> ThreadedRun:
        runner = ProcessJobRunner(config)
        return ThreadedRun(runner.run, stop=runner.stop)

    kill_at_each_point(kills, start)
    assert kills.landed == kills.points, f"only {len(kills.landed)} of {kills.points} landed: the job ended first"


PHASES = [
    "after-flush",
    "process",
    "before-flush",
    "restore",
    "after-checkpoint",
    "after-flush",
    "random",
    "restore",
    "after-flush",
    "random",
]


def test_sigkill_at_ten_moments_leaves_exactly_the_crash_free_state(tmp_path):
    # the crash-free reference (no faults)
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = _config(ref_dir, **{"test.process.delay.us": "0"})
    _fill(ref)
    result = run_job(ref)
    assert result.succeeded, result.summary_line()
    expected = _store_contents(ref_dir)
    assert sum(sum(c.values()) for c in expected.values()) == MESSAGES

    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    kills = Kills(crash_dir / "faults", seeded_points(PHASES, random.Random(SEED)))
    # every phase is hit, and the restores after the first kill have changelog entries to read
    kill_process_runner_at(kills, with_kill_points(_config(crash_dir), "log", kills))

    final = run_job(_config(crash_dir))
    assert final.succeeded, final.summary_line()
    assert _store_contents(crash_dir) == expected, kills.landed
    ids = _output_ids(_config(crash_dir))
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]}"
    # at-least-once: duplicates are allowed (reprocessed after a crash), but there were crashes
    assert sum(ids.values()) >= MESSAGES
