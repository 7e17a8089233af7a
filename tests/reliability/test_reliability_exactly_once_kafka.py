"""Exactly-once on Kafka under SIGKILL: the crash test of tests/reliability/test_reliability_exactly_once.py
with every stream on Apache Kafka — the input, the output, the store's changelog, the
checkpoints and the coordinator stream — on both Kafka clients.

The stateful job (word counts in a RocksDB store with a Kafka changelog, each input's id sent to
an output topic) runs with ``job.processing.guarantee=exactly-once`` on the process runner; its
container is killed with SIGKILL at ten seeded points — mid-process, before and after the
producers' flush, after the checkpoint is sent, before the transaction's commit, mid-restore, at
random — each reached by the job itself (tests/kill_points.py), then the job is run to its end.
Checked: a ``read_committed`` reader of the output sees every input's id exactly once, and the
stores equal a crash-free run's. A killed container leaves its transaction open; the next
instance's ``InitProducerId`` fences and aborts it, and its aborted records stay invisible.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.config import Config
from samza_dagster.model import SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.serde import LongSerde, StringSerde
from samza_dagster.storage import RocksDBRawStore
from tests.apps.harness import create_stream, produce
from tests.kill_points import Kills, seeded_points, with_kill_points
from tests.reliability.test_reliability_crash import (
    MESSAGES,
    PARTITIONS,
    SEED,
    WORDS,
    CountAndEchoTask,
    kill_process_runner_at,
)
from tests.system.kafka.test_exactly_once_kafka import _read

pytestmark = pytest.mark.kafka

#: the embedded log's ``markers`` phase has no counterpart: Kafka's transaction coordinator
#: writes the markers after EndTxn, outside the container
PHASES = [
    "after-flush",
    "process",
    "before-commit",
    "restore",
    "after-checkpoint",
    "before-commit",
    "random",
    "before-flush",
    "after-flush",
    "random",
]


class KafkaCountAndEcho(CountAndEchoTask):
    """The crash test's task, sending to the Kafka topic ``test.output`` names."""

    def init(self, context):
        super().init(context)
        self.OUT = SystemStream("kafka", context.config.get_str("test.output") or "")


class Job:
    """One exactly-once word-count job on the session broker, under a name of its own."""

    def __init__(self, kafka_config: Config, prefix: str, state_dir: Path, **extra: str) -> None:
        self.name = f"eos-crash-{uuid.uuid4().hex[:8]}"
        self.words, self.out = f"{prefix}-{self.name}-words", f"{prefix}-{self.name}-out"
        self.state_dir = state_dir
        self.config = kafka_config.with_overrides(
            {
                "job.name": self.name,
                "job.factory.class": "process",
                "job.container.count": "1",
                "job.default.system": "kafka",
                "job.processing.guarantee": "exactly-once",
                "task.inputs": f"kafka.{self.words}",
                "task.class": f"{__name__}:KafkaCountAndEcho",
                "task.commit.ms": "40",
                "systems.kafka.samza.msg.serde": "string",
                "systems.kafka.samza.key.serde": "string",
                f"systems.kafka.streams.{self.words}.samza.bounded": "true",
                "stores.counts.factory": "rocksdb",
                "stores.counts.key.serde": "string",
                "stores.counts.msg.serde": "long",
                "stores.counts.changelog": f"kafka.{prefix}-{self.name}-counts-changelog",
                "job.logged.store.base.dir": str(state_dir),
                # at least 1.5 ms a message: a commit (every 40 ms) covers a few dozen, so every
                # planned point has input left to reach it
                "test.process.delay.us": "1500",
                "test.output": self.out,
                **extra,
            }
        )

    def fill(self) -> None:
        create_stream(self.config, "kafka", self.words, PARTITIONS)
        create_stream(self.config, "kafka", self.out, 1)
        rnd = random.Random(SEED)
        messages = [(i % PARTITIONS, None, f"m{i}:{rnd.choice(WORDS)}".encode()) for i in range(MESSAGES)]
        produce(self.config, "kafka", self.words, messages)

    def run_to_end(self) -> None:
        result = run_job(self.config)
        assert result.succeeded, result.summary_line()

    def stores(self) -> dict[str, dict[str, int]]:
        kser, vser = StringSerde(), LongSerde()
        contents = {}
        for task_dir in sorted((self.state_dir / f"{self.name}-1" / "counts").iterdir()):
            raw = RocksDBRawStore(str(task_dir))
            contents[task_dir.name] = {kser.from_bytes(k): vser.from_bytes(v) for k, v in raw.all()}
            raw.close()
        return contents

    def committed_ids(self) -> Counter:
        """What a ``read_committed`` reader of the output reads (up to its last stable offset)."""
        bootstrap = self.config.get_str("systems.kafka.consumer.bootstrap.servers") or ""
        return Counter(value.decode() for value in _read(bootstrap, self.out, "read_committed", wait_s=30.0))


def test_process_runner_sigkill_at_ten_points_on_kafka_leaves_each_output_exactly_once(
    kafka_config, kafka_topic_prefix, tmp_path
):
    reference = Job(kafka_config, kafka_topic_prefix, tmp_path / "ref-state", **{"test.process.delay.us": "0"})
    reference.fill()
    reference.run_to_end()
    expected = reference.stores()
    assert sum(sum(counts.values()) for counts in expected.values()) == MESSAGES
    assert reference.committed_ids() == Counter({f"m{i}": 1 for i in range(MESSAGES)})

    job = Job(kafka_config, kafka_topic_prefix, tmp_path / "state")
    job.fill()
    kills = Kills(tmp_path / "faults", seeded_points(PHASES, random.Random(SEED + 2)))
    kill_process_runner_at(kills, with_kill_points(job.config, "kafka", kills))
    job.run_to_end()

    assert job.stores() == expected, kills.landed
    ids = job.committed_ids()
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    twice = {k: n for k, n in ids.items() if n > 1}
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]} ({kills.landed})"
    assert not twice, f"{len(twice)} inputs in the output more than once, e.g. {list(twice.items())[:5]}"
