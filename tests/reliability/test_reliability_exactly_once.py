"""Issue 30 — exactly-once output (``job.processing.guarantee=exactly-once``) under SIGKILL.

The stateful job of tests/reliability/test_reliability_crash.py (word counts in a RocksDB store with a
changelog, each input's id sent to ``out``) runs with exactly-once on, and its container is killed
with SIGKILL at ten seeded points — mid-process, before and after the producers' flush, after the
checkpoint is sent but before the commit point, between the commit point and the markers,
mid-restore, at random — then run to the end. The job reaches each point and pauses there
(tests/kill_points.py), so every kill lands mid-run whatever the machine's speed. Checked: a
``read_committed`` reader of ``out`` sees every input's id exactly once; the stores equal a
crash-free run's. The process runner kills the container process; the thread runner runs in a
``samza-dagster run`` process that is killed whole; on Spark the Python worker of each stage
attempt is killed and Spark retries the stage.

And a zombie: a container paused inside its commit while a new instance of it starts is fenced —
its commit fails, nothing it wrote is readable — and the new instance's output is exact.
"""

from __future__ import annotations

import random
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.system.log.transactions import ProducerFencedError
from samza_dagster.task.api import AsyncStreamTask, StreamTask
from support.log_reading import read_partition
from tests.apps.harness import job_model
from tests.kill_points import (
    KillPoint,
    Kills,
    SubprocessRun,
    ThreadedRun,
    kill_at_each_point,
    seeded_points,
    with_kill_points,
)
from tests.reliability.test_reliability_crash import (
    MESSAGES,
    SEED,
    _fill,
    _store_contents,
    kill_process_runner_at,
)
from tests.reliability.test_reliability_crash import (
    _config as crash_config,
)


def _config(tmp_path: Path, **extra: str) -> Config:
    return crash_config(tmp_path, **{"job.processing.guarantee": "exactly-once", **extra})


def _committed_output(config: Config) -> Counter:
    """What a ``read_committed`` reader of ``out`` reads now (up to its last stable offset)."""
    reader = config.with_overrides(
        {"systems.log.samza.factory": "log", "systems.log.consumer.isolation.level": "read_committed"}
    )
    return Counter(value for _offset, _key, value in read_partition(reader, "log", "out", 0, "0"))


def _crash_free_stores(tmp_path: Path) -> dict:
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = _config(ref_dir, **{"test.process.delay.us": "0"})
    _fill(ref)
    result = run_job(ref)
    assert result.succeeded, result.summary_line()
    assert _committed_output(ref) == Counter({f"m{i}": 1 for i in range(MESSAGES)})
    return _store_contents(ref_dir)


PHASES = [
    "after-flush",
    "process",
    "before-commit",
    "markers",
    "restore",
    "after-checkpoint",
    "before-commit",
    "random",
    "markers",
    "random",
]


def _check_final(
    crash_dir: Path, expected: dict, outcomes: list[KillPoint], extra: dict[str, str] | None = None
) -> None:
    final = run_job(_config(crash_dir, **(extra or {})))
    assert final.succeeded, final.summary_line()
    assert _store_contents(crash_dir) == expected, outcomes
    ids = _committed_output(_config(crash_dir))
    missing = [f"m{i}" for i in range(MESSAGES) if ids[f"m{i}"] == 0]
    twice = {k: n for k, n in ids.items() if n > 1}
    assert not missing, f"{len(missing)} inputs never reached the output, e.g. {missing[:5]}"
    assert not twice, f"{len(twice)} inputs in the output more than once, e.g. {list(twice.items())[:5]} ({outcomes})"


def test_process_runner_sigkill_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    kills = Kills(crash_dir / "faults", seeded_points(PHASES, random.Random(SEED)))
    kill_process_runner_at(kills, with_kill_points(_config(crash_dir), "log", kills))
    _check_final(crash_dir, expected, kills.landed)


def test_a_batch_task_sigkilled_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    """The same job as a batch task (``process_batch``; kills land inside batches too): a commit
    covers whole batches only, so a restart repeats no output and loses none."""
    batch_task = {"task.class": "tests.reliability.test_reliability_crash:CountAndEchoBatchTask"}
    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    kills = Kills(crash_dir / "faults", seeded_points(PHASES, random.Random(SEED + 7)))
    kill_process_runner_at(kills, with_kill_points(_config(crash_dir, **batch_task), "log", kills))
    _check_final(crash_dir, expected, kills.landed, batch_task)


def test_thread_runner_sigkill_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    """``samza-dagster run`` on the thread runner in a process of its own (its containers are
    threads of it), SIGKILLed whole at each point."""
    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    kills = Kills(crash_dir / "faults", seeded_points(PHASES, random.Random(SEED + 1)))
    config = with_kill_points(_config(crash_dir, **{"job.factory.class": "thread"}), "log", kills)
    props = crash_dir / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in config.to_dict().items()))
    argv = [sys.executable, "-m", "samza_dagster.cli", "run", "--config-path", str(props)]
    kill_at_each_point(kills, lambda: SubprocessRun(argv))
    assert kills.landed == kills.points, f"only {len(kills.landed)} of {kills.points} landed: the job ended first"
    _check_final(crash_dir, expected, kills.landed)


class PausedInCommit:
    """Runs ``container`` on a thread whose first transaction commit waits (outputs, changelog and
    checkpoints written, not committed) until ``resume`` is set; what ``run`` returned or raised
    lands in ``box`` (``summary`` / ``error``)."""

    def __init__(self, container: SamzaContainer) -> None:
        self.container = container
        self.in_commit, self.resume = threading.Event(), threading.Event()
        self.box: dict = {}
        real_start = container._start

        def start() -> None:
            real_start()
            producer = container._transactions
            commit = producer.commit_transaction

            def paused_commit() -> None:
                self.in_commit.set()
                self.resume.wait(60)
                commit()

            producer.commit_transaction = paused_commit

        container._start = start

    def start(self) -> threading.Thread:
        def run() -> None:
            try:
                self.box["summary"] = self.container.run()
            except BaseException as exc:  # noqa: BLE001 - the test checks it
                self.box["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


def test_a_zombie_container_is_fenced_by_its_new_instance(tmp_path):
    """Container 0 pauses in its commit (outputs written, not committed); a new instance of
    container 0 starts and runs the job to its end; the old one resumes and its commit fails."""
    config = _config(tmp_path, **{"job.factory.class": "thread", "test.process.delay.us": "0"})
    _fill(config)
    zombie = PausedInCommit(SamzaContainer("0", job_model(config)))
    thread = zombie.start()
    in_commit, resume, box = zombie.in_commit, zombie.resume, zombie.box
    assert in_commit.wait(60), "the first container never committed"
    assert _committed_output(config) == Counter()  # open: nothing readable yet
    # the new instance, to the end of the input (on another host, so with local state of its own)
    elsewhere = config.with_overrides({"job.logged.store.base.dir": str(tmp_path / "state-elsewhere")})
    summary = SamzaContainer("0", job_model(elsewhere)).run()
    assert summary.status == "completed", summary.one_line()
    resume.set()
    thread.join(60)
    assert isinstance(box.get("error"), ProducerFencedError), box
    ids = _committed_output(config)
    assert ids == Counter({f"m{i}": 1 for i in range(MESSAGES)})


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"systems.log.samza.factory": "inmemory"}, "systems.log.samza.factory"),
        ({"job.container.thread.pool.size": "4"}, "job.container.thread.pool.size"),
        ({"task.max.concurrency": "2"}, "task.max.concurrency"),
        (
            {"stores.counts.changelog": "other.counts-changelog", "systems.other.samza.factory": "log"},
            "stores.counts.changelog",
        ),
        ({"task.dlq.stream": "other.dlq", "systems.other.samza.factory": "log"}, "task.dlq.stream"),
    ],
)
def test_a_combination_that_breaks_exactly_once_is_a_config_error_naming_the_key(tmp_path, extra, key):
    from samza_dagster.runtime.preflight import check_job_config

    config = _config(tmp_path, **extra)
    with pytest.raises(ConfigError, match="job.processing.guarantee") as info:
        check_job_config(config)
    assert info.value.key == key
    assert key in str(info.value)


def test_an_async_task_with_exactly_once_is_a_config_error(tmp_path):
    from samza_dagster.runtime.preflight import check_job_config

    config = _config(tmp_path, **{"task.class": "tests.reliability.test_reliability_exactly_once:AsyncEcho"})
    with pytest.raises(ConfigError, match="AsyncStreamTask") as info:
        check_job_config(config)
    assert info.value.key == "task.class"


class AsyncEcho(AsyncStreamTask):
    def process_async(self, envelope, collector, coordinator, callback):
        callback.complete()


# -- the spark runner ----------------------------------------------------------------------------
#: On Spark one run holds every kill: each stage attempt's container takes the next point, its
#: Python worker is SIGKILLed there, and Spark retries the stage, as it restarts a crashed container.
SPARK_POINTS = [
    KillPoint("after-flush", 2),
    KillPoint("process", 3),
    KillPoint("before-commit", 1),
    KillPoint("markers", 2),
    KillPoint("restore", 1),
    KillPoint("after-checkpoint", 3),
    KillPoint("before-commit", 4),
    KillPoint("process", 1),
    KillPoint("markers", 1),
    KillPoint("after-flush", 4),
]


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_spark_runner_sigkill_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    from samza_dagster.runtime.spark_runner import SparkJobRunner
    from samza_dagster.spark.session import get_or_create_spark

    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    kills = Kills(crash_dir / "faults", SPARK_POINTS)
    config = with_kill_points(
        _config(
            crash_dir,
            **{"job.factory.class": "spark", "job.container.retry.count": str(len(SPARK_POINTS))},
        ),
        "log",
        kills,
    )
    _fill(config)
    spark = get_or_create_spark(
        {"spark.stage.maxConsecutiveAttempts": str(len(SPARK_POINTS) + 1), "spark.sql.shuffle.partitions": "1"},
        master="local[1]",
        app_name="test-eos-spark",
    )
    try:
        runner = SparkJobRunner(config, spark=spark)
        job = ThreadedRun(runner.run, stop=runner.stop, restarts_after_a_kill=True)
        kill_at_each_point(kills, lambda: job)
        job.wait(480)
    finally:
        spark.stop()
    assert kills.landed == kills.points, f"only {len(kills.landed)} of {kills.points} landed: the job ended first"
    assert job.error is None, job.error
    assert job.result.succeeded, job.result.summary_line()
    assert _store_contents(crash_dir) == expected, kills.landed
    ids = _committed_output(config)
    assert ids == Counter({f"m{i}": 1 for i in range(MESSAGES)}), kills.landed


class SendElsewhere(StreamTask):
    """Sends each message to a system outside the job's transactions."""

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(SystemStream("other", "x"), envelope.message))


def test_a_message_to_a_system_outside_the_transactions_fails_the_task_naming_the_stream(tmp_path):
    config = _config(
        tmp_path,
        **{
            "job.factory.class": "thread",
            "task.class": "tests.reliability.test_reliability_exactly_once:SendElsewhere",
            "systems.other.samza.factory": "inmemory",
        },
    )
    _fill(config)
    with pytest.raises(Exception, match="other.x") as info:
        SamzaContainer("0", job_model(config)).run()
    assert "job.processing.guarantee" in str(info.value) or "job.processing.guarantee" in str(info.value.__cause__)
    assert _committed_output(config) == Counter()
