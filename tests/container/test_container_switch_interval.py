"""A container lowers the interpreter's switch interval so poller threads are not starved by a
CPU-bound task (see samza_dagster/container/gil.py for the measurement behind it) — and raises the
GC threshold (gc_threshold.py) — only while it runs: both are the process's, and the process gets
its own back when its last container stops (process_setting.py)."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

import dagster as dg
import pytest

from samza_dagster.config import Config, ConfigError, keys
from samza_dagster.container.gc_threshold import GC_THRESHOLD, hold_gc_threshold
from samza_dagster.container.gil import SWITCH_INTERVAL, SWITCH_INTERVAL_KEY, hold_switch_interval
from samza_dagster.container.process_setting import ProcessSetting
from samza_dagster.runtime import run_job
from samza_dagster.task import StreamTask
from tests.apps.harness import create_stream, produce

ORIGINAL_INTERVAL = 0.004  # not CPython's default either, so a "reset to 5 ms" would show
ORIGINAL_THRESHOLD = 900


@pytest.fixture
def process_settings():
    """The interpreter's settings as a user's process might have them, restored after the test."""
    interval, threshold = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(ORIGINAL_INTERVAL)
    gc.set_threshold(ORIGINAL_THRESHOLD, threshold[1], threshold[2])
    yield
    assert not SWITCH_INTERVAL.held and not GC_THRESHOLD.held, "a lease was left held"
    sys.setswitchinterval(interval)
    gc.set_threshold(*threshold)


# -- the held setting ----------------------------------------------------------------------------
def test_default_lowers_the_interval_to_half_a_millisecond_until_released(process_settings):
    lease = hold_switch_interval(Config({}))
    assert lease.value == pytest.approx(0.0005) and sys.getswitchinterval() == pytest.approx(0.0005)
    lease.release()
    assert sys.getswitchinterval() == pytest.approx(ORIGINAL_INTERVAL)
    lease.release()  # a second release changes nothing
    assert sys.getswitchinterval() == pytest.approx(ORIGINAL_INTERVAL)


def test_never_raises_an_interval_already_lower(process_settings):
    sys.setswitchinterval(0.0001)
    lease = hold_switch_interval(Config({SWITCH_INTERVAL_KEY: "2000"}))
    assert lease.value == pytest.approx(0.0001)
    lease.release()
    assert sys.getswitchinterval() == pytest.approx(0.0001)


def test_zero_leaves_the_interval_alone_and_bad_values_name_the_key(process_settings):
    lease = hold_switch_interval(Config({SWITCH_INTERVAL_KEY: "0"}))
    assert lease.value == pytest.approx(ORIGINAL_INTERVAL) and not SWITCH_INTERVAL.held
    lease.release()
    with pytest.raises(ConfigError, match=SWITCH_INTERVAL_KEY):
        hold_switch_interval(Config({SWITCH_INTERVAL_KEY: "-1"}))
    with pytest.raises(ConfigError, match=SWITCH_INTERVAL_KEY):
        hold_switch_interval(Config({SWITCH_INTERVAL_KEY: "fast"}))
    assert sys.getswitchinterval() == pytest.approx(ORIGINAL_INTERVAL)


def test_the_lowest_of_the_running_holders_is_in_force_and_the_last_release_restores():
    value = [5.0]
    setting = ProcessSetting(lambda: value[0], lambda v: value.__setitem__(0, v), min)
    a = setting.hold(2.0)
    b = setting.hold(1.0)
    assert value[0] == 1.0
    b.release()  # the lower one stops: the other's is in force again
    assert value[0] == 2.0
    c = setting.hold(3.0)  # asks for less than is in force: changes nothing
    assert value[0] == 2.0
    a.release()
    assert value[0] == 3.0  # c's, the only one left (below the original's 5)
    c.release()
    assert value[0] == 5.0 and not setting.held


def test_a_change_made_while_held_is_kept():
    value = [5.0]
    setting = ProcessSetting(lambda: value[0], lambda v: value.__setitem__(0, v), min)
    a = setting.hold(1.0)
    value[0] = 0.5  # the user's code sets its own while the container runs
    a.release()
    assert value[0] == 0.5
    # and an interval changed by someone else becomes the baseline the next holder returns to
    a = setting.hold(1.0)
    b = setting.hold(2.0)
    value[0] = 3.0
    b.release()  # worked out again from the new baseline: 3.0 and a's 1.0
    assert value[0] == 1.0
    a.release()
    assert value[0] == 3.0


def test_the_gc_threshold_is_raised_until_released_and_keeps_the_older_generations(process_settings):
    _, middle, old = gc.get_threshold()
    lease = hold_gc_threshold(Config({}))
    assert lease.value == 50_000 and gc.get_threshold() == (50_000, middle, old)
    lease.release()
    assert gc.get_threshold() == (ORIGINAL_THRESHOLD, middle, old)
    lease = hold_gc_threshold(Config({keys.JOB_CONTAINER_GC_THRESHOLD.name: "0"}))
    assert lease.value == ORIGINAL_THRESHOLD and not GC_THRESHOLD.held
    lease.release()


# -- containers: the thread runner's two in one process, and a Dagster run worker ------------------
class RecordingTask(StreamTask):
    """Records the interpreter's settings while it processes (the class keeps them)."""

    seen: list[tuple[float, int]] = []
    lock = threading.Lock()

    def process(self, envelope, collector, coordinator):
        with RecordingTask.lock:
            RecordingTask.seen.append((sys.getswitchinterval(), gc.get_threshold()[0]))


def _thread_job(tmp_path: Path) -> Config:
    config = Config(
        {
            "job.name": "settings",
            "job.factory.class": "thread",
            "job.container.count": "2",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.input",
            "systems.log.streams.input.samza.bounded": "true",
            "task.class": f"{__name__}:RecordingTask",
        }
    )
    create_stream(config, "log", "input", 2)
    produce(config, "log", "input", [(i % 2, None, b"x") for i in range(20)])
    return config


def test_a_thread_runner_job_of_two_containers_ends_with_the_process_settings(tmp_path, process_settings):
    config = _thread_job(tmp_path)
    RecordingTask.seen = []
    result = run_job(config)
    assert result.succeeded and len(result.summaries) == 2, result.summary_line()
    assert len(RecordingTask.seen) == 20
    assert all(interval == pytest.approx(0.0005) for interval, _ in RecordingTask.seen)
    assert {threshold for _, threshold in RecordingTask.seen} == {50_000}
    assert sys.getswitchinterval() == pytest.approx(ORIGINAL_INTERVAL)
    assert gc.get_threshold()[0] == ORIGINAL_THRESHOLD


def test_a_dagster_run_worker_ends_with_the_process_settings(tmp_path, process_settings):
    config = _thread_job(tmp_path)
    RecordingTask.seen = []

    @dg.asset
    def settings_job() -> None:
        result = run_job(config)
        assert result.succeeded, result.summary_line()

    # in process: this interpreter is the run worker, as a user's `dagster dev` run worker is theirs
    assert dg.materialize([settings_job], instance=dg.DagsterInstance.ephemeral()).success
    assert len(RecordingTask.seen) == 20
    assert all(interval == pytest.approx(0.0005) for interval, _ in RecordingTask.seen)
    assert sys.getswitchinterval() == pytest.approx(ORIGINAL_INTERVAL)
    assert gc.get_threshold()[0] == ORIGINAL_THRESHOLD
