"""Issue 30 — exactly-once output (``job.processing.guarantee=exactly-once``) under SIGKILL.

The stateful job of tests/test_reliability_crash.py (word counts in a RocksDB store with a
changelog, each input's id sent to ``out``) runs with exactly-once on, and its container is killed
with SIGKILL ten times at seeded-random moments — mid-process, before and after the producers'
flush, after the checkpoint is sent but before the commit point, between the commit point and the
markers, mid-restore, at random — then run to the end. Checked: a ``read_committed`` reader of
``out`` sees every input's id exactly once; the stores equal a crash-free run's. The process
runner kills the container process; the thread runner runs in a ``samza-dagster run`` process
that is killed whole.

And a zombie: a container paused inside its commit while a new instance of it starts is fenced —
its commit fails, nothing it wrote is readable — and the new instance's output is exact.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.container.container import SamzaContainer
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.runtime import run_job
from samza_dagster.system.log import LogSystemFactory, transactions
from samza_dagster.system.log.transactions import ProducerFencedError
from samza_dagster.task.api import AsyncStreamTask, StreamTask
from support.log_reading import read_partition
from tests.apps.harness import job_model
from tests.test_reliability_crash import (
    MESSAGES,
    SEED,
    CountAndEchoTask,
    _FaultyConsumer,
    _FaultyProducer,
    _fill,
    _Pause,
    _pause_for,
    _run_and_kill,
    _store_contents,
)
from tests.test_reliability_crash import (
    _config as crash_config,
)

FACTORY = "tests.test_reliability_exactly_once:ExactlyOnceFaultyLogSystemFactory"


class _TransactionalFaultyProducer(_FaultyProducer):
    def commit_transaction(self):
        self._pause.at("before-commit")  # outputs, changelog and checkpoint written; not committed
        self.inner.commit_transaction()


class ExactlyOnceFaultyLogSystemFactory(LogSystemFactory):
    """The crash test's faulty log system, with two more moments to pause at: ``before-commit`` and
    ``markers`` (between the commit point and the commit markers)."""

    pause_for = staticmethod(_pause_for)

    def get_consumer(self, system_name, config):
        return _FaultyConsumer(super().get_consumer(system_name, config), self.pause_for(config))

    def get_producer(self, system_name, config):
        pause = self.pause_for(config)
        write_markers = transactions.write_markers
        if pause.phase == "markers" and not getattr(write_markers, "paused", False):

            def paused(*args):
                pause.at("markers")
                write_markers(*args)

            paused.paused = True
            transactions.write_markers = paused
        return _TransactionalFaultyProducer(super().get_producer(system_name, config), pause)


def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {"systems.log.samza.factory": FACTORY, "job.processing.guarantee": "exactly-once"}
    entries.update(extra)
    return crash_config(tmp_path, **entries)


def _committed_output(config: Config) -> Counter:
    """What a ``read_committed`` reader of ``out`` reads now (up to its last stable offset)."""
    reader = config.with_overrides(
        {"systems.log.samza.factory": "log", "systems.log.consumer.isolation.level": "read_committed"}
    )
    return Counter(value for _offset, _key, value in read_partition(reader, "log", "out", 0, "0"))


def _crash_free_stores(tmp_path: Path) -> dict:
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = _config(ref_dir, **{"systems.log.samza.factory": "log", "test.process.delay.us": "0"})
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


def _check_final(crash_dir: Path, expected: dict, outcomes: list[str]) -> None:
    final = run_job(_config(crash_dir))
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
    rnd = random.Random(SEED)
    outcomes = []
    for phase in PHASES:
        nth = rnd.randint(1, 4) if phase != "restore" else 1
        config = _config(crash_dir, **{"test.fault.phase": phase, "test.fault.nth": str(nth)})
        outcomes.append(_run_and_kill(config, crash_dir, phase, rnd.uniform(0.2, 1.2)))
    killed = [o for o in outcomes if o.startswith("killed")]
    assert len(killed) == 10, outcomes
    assert {o.split(" ")[1] for o in killed} >= {
        "mid-before-commit",
        "mid-markers",
        "mid-after-flush",
        "mid-process",
        "mid-restore",
    }, outcomes
    _check_final(crash_dir, expected, outcomes)


def _run_cli_and_kill(config: Config, tmp_path: Path, phase: str, delay_s: float) -> str:
    """``samza-dagster run`` on the thread runner in a process of its own (its containers are
    threads of it), SIGKILLed at ``phase``."""
    for marker in tmp_path.glob("in-*"):
        marker.unlink()
    props = tmp_path / "job.properties"
    props.write_text("".join(f"{k}={v}\n" for k, v in config.to_dict().items()))
    env = dict(os.environ, SAMZA_CONTAINER_ID="0")  # the pauses act only inside a container's process
    proc = subprocess.Popen(
        [sys.executable, "-m", "samza_dagster.cli", "run", "--config-path", str(props)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.monotonic()
    outcome = "finished before the fault"
    try:
        while time.monotonic() - started < 60 and proc.poll() is None:
            if phase == "random" and time.monotonic() - started >= delay_s:
                outcome = f"killed at random +{delay_s:.2f}s"
                break
            if (tmp_path / f"in-{phase}").exists():
                outcome = f"killed mid-{phase}"
                break
            time.sleep(0.002)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    return outcome


def test_thread_runner_sigkill_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    _fill(_config(crash_dir))
    rnd = random.Random(SEED + 1)
    outcomes = []
    for phase in PHASES:
        nth = rnd.randint(1, 4) if phase != "restore" else 1
        config = _config(
            crash_dir, **{"job.factory.class": "thread", "test.fault.phase": phase, "test.fault.nth": str(nth)}
        )
        # a thread runner's start (a Python process, the job coordinator) takes longer than a container's
        outcomes.append(_run_cli_and_kill(config, crash_dir, phase, rnd.uniform(1.5, 3.0)))
    killed = [o for o in outcomes if o.startswith("killed")]
    assert len(killed) == 10, outcomes
    _check_final(crash_dir, expected, outcomes)


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
    config = _config(
        tmp_path, **{"systems.log.samza.factory": "log", "job.factory.class": "thread", "test.process.delay.us": "0"}
    )
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

    config = _config(tmp_path, **{"systems.log.samza.factory": "log", **extra})
    with pytest.raises(ConfigError, match="job.processing.guarantee") as info:
        check_job_config(config)
    assert info.value.key == key
    assert key in str(info.value)


def test_an_async_task_with_exactly_once_is_a_config_error(tmp_path):
    from samza_dagster.runtime.preflight import check_job_config

    config = _config(
        tmp_path, **{"systems.log.samza.factory": "log", "task.class": "tests.test_reliability_exactly_once:AsyncEcho"}
    )
    with pytest.raises(ConfigError, match="AsyncStreamTask") as info:
        check_job_config(config)
    assert info.value.key == "task.class"


class AsyncEcho(AsyncStreamTask):
    def process_async(self, envelope, collector, coordinator, callback):
        callback.complete()


# -- the spark runner ----------------------------------------------------------------------------
class _ScheduledPause(_Pause):
    """On Spark one run holds every crash: each stage attempt's container pauses at the next phase
    of ``test.fault.schedule`` (``phase:nth,...``; the number of ``killed-*`` files the test left
    says which), writing ``in-<phase>`` with its pid, and the test SIGKILLs that Python worker —
    Spark then retries the stage, as it restarts a crashed container. Never in the test's own
    process (``test.driver.pid``), where the job coordinator runs."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self.driver = config.get_int("test.driver.pid")
        schedule = [entry.split(":") for entry in config.get_list("test.fault.schedule")]
        done = len(list(Path(self.dir).glob("killed-*")))
        self.phase, self.nth = (schedule[done][0], int(schedule[done][1])) if done < len(schedule) else ("", 0)

    def inside_container(self) -> bool:
        return os.getpid() != self.driver


def _scheduled_pause(config: Config) -> _Pause:
    return _pause_for(config, _ScheduledPause)


class ScheduledFaultyLogSystemFactory(ExactlyOnceFaultyLogSystemFactory):
    pause_for = staticmethod(_scheduled_pause)


class ScheduledCountAndEchoTask(CountAndEchoTask):
    def init(self, context):
        super().init(context)
        self.pause = _scheduled_pause(context.config)


SPARK_SCHEDULE = [
    "after-flush:2",
    "process:3",
    "before-commit:1",
    "markers:2",
    "restore:1",
    "after-checkpoint:3",
    "before-commit:4",
    "process:1",
    "markers:1",
    "after-flush:4",
]


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_spark_runner_sigkill_at_ten_moments_leaves_each_output_exactly_once(tmp_path):
    from samza_dagster.runtime.spark_runner import run_spark_job
    from samza_dagster.spark.session import get_or_create_spark

    expected = _crash_free_stores(tmp_path)
    crash_dir = tmp_path / "crash"
    crash_dir.mkdir()
    config = _config(
        crash_dir,
        **{
            "job.factory.class": "spark",
            "job.container.retry.count": str(len(SPARK_SCHEDULE)),
            "systems.log.samza.factory": "tests.test_reliability_exactly_once:ScheduledFaultyLogSystemFactory",
            "task.class": "tests.test_reliability_exactly_once:ScheduledCountAndEchoTask",
            "test.fault.schedule": ",".join(SPARK_SCHEDULE),
            "test.driver.pid": str(os.getpid()),
        },
    )
    _fill(config)
    spark = get_or_create_spark(
        {"spark.stage.maxConsecutiveAttempts": str(len(SPARK_SCHEDULE) + 1), "spark.sql.shuffle.partitions": "1"},
        master="local[1]",
        app_name="test-eos-spark",
    )
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = run_spark_job(config, spark=spark)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    kills: list[str] = []
    try:
        deadline = time.monotonic() + 480
        while thread.is_alive() and time.monotonic() < deadline:
            for marker in crash_dir.glob("in-*"):
                os.kill(int(marker.read_text()), signal.SIGKILL)
                kills.append(marker.name[3:])
                marker.rename(crash_dir / f"killed-{len(kills)}-{marker.name[3:]}")
            time.sleep(0.005)
        thread.join(60)
    finally:
        spark.stop()
    assert "result" in box, box
    assert box["result"].succeeded, box["result"].summary_line()
    assert len(kills) == 10, kills
    assert _store_contents(crash_dir) == expected, kills
    ids = _committed_output(config)
    assert ids == Counter({f"m{i}": 1 for i in range(MESSAGES)}), kills


class SendElsewhere(StreamTask):
    """Sends each message to a system outside the job's transactions."""

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(SystemStream("other", "x"), envelope.message))


def test_a_message_to_a_system_outside_the_transactions_fails_the_task_naming_the_stream(tmp_path):
    config = _config(
        tmp_path,
        **{
            "systems.log.samza.factory": "log",
            "job.factory.class": "thread",
            "task.class": "tests.test_reliability_exactly_once:SendElsewhere",
            "systems.other.samza.factory": "inmemory",
        },
    )
    _fill(config)
    with pytest.raises(Exception, match="other.x") as info:
        SamzaContainer("0", job_model(config)).run()
    assert "job.processing.guarantee" in str(info.value) or "job.processing.guarantee" in str(info.value.__cause__)
    assert _committed_output(config) == Counter()
