"""A stop at any moment of a start: SIGTERM to ``samza-dagster run`` before, during and right after
its containers launch ends with the summary line, exit 0, and nothing lost — what was processed
is committed and written, nothing more. On the process runner a container process signalled
while it is still starting (importing, fetching its job model) holds the signal until its handler
is installed, then stops gracefully, instead of dying of it without a summary."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from jobs.stream_helpers import read_stream
from support.waiting import wait_until
from tests.apps.harness import read_checkpoints
from tests.reliability.test_reliability_signals import _container_processes_of, _job, _processed, _start


def _stop_and_check(tmp_path, runner: str, when) -> None:  # type: ignore[no-untyped-def]
    properties, config, progress = _job(tmp_path, runner, sleep_ms=20)
    proc = _start(properties)
    try:
        when(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out, err)
    assert "without a summary" not in out + err, (out, err)
    assert f"job signals on {runner}: 1 container" in out, (out, err)
    processed = _processed(progress)
    assert processed == list(range(len(processed)))
    assert len(read_stream(config, "output")) == len(processed)
    if processed:
        assert read_checkpoints(config)["Partition 0"].offsets[("log", "words", 0)] == str(processed[-1])


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (its ``SigCgt`` mask in /proc)."""
    try:
        status = open(f"/proc/{pid}/status").read()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def _as_soon_as_it_can_be_stopped(proc) -> None:  # type: ignore[no-untyped-def]
    """The earliest moment: the CLI's first handler, before it checks the config or makes streams
    (a signal before its interpreter has started kills any program)."""
    wait_until(lambda: _catches_sigterm(proc.pid) or proc.poll() is not None, 60, "the CLI's SIGTERM handler")


def _as_its_container_process_starts(proc) -> None:  # type: ignore[no-untyped-def]
    wait_until(lambda: _container_processes_of(proc.pid) or proc.poll() is not None, 60, "a container process")


def _a_moment_later(proc) -> None:  # type: ignore[no-untyped-def]
    _as_its_container_process_starts(proc)
    time.sleep(0.3)


def _descendants_running(pid: int, marker: bytes) -> bool:
    """Whether a process below ``pid`` has ``marker`` in its command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            if marker in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
        except OSError:
            pass
        todo.extend(children.get(child, []))
    return False


def _as_its_spark_session_starts(proc) -> None:  # type: ignore[no-untyped-def]
    """Spark's JVM is starting: the session is not made yet, no container has been launched."""
    wait_until(lambda: _descendants_running(proc.pid, b"java") or proc.poll() is not None, 60, "Spark's JVM")


def _as_its_container_starts_on_spark(proc) -> None:  # type: ignore[no-untyped-def]
    """The barrier stage's Python worker is up: the container is starting in it."""
    wait_until(
        lambda: _descendants_running(proc.pid, b"pyspark.daemon") or proc.poll() is not None, 120, "a Spark worker"
    )


@pytest.mark.parametrize(
    ("runner", "when"),
    [
        ("process", _as_soon_as_it_can_be_stopped),
        ("process", _as_its_container_process_starts),
        ("process", _a_moment_later),
        ("thread", _as_soon_as_it_can_be_stopped),
        pytest.param("spark", _as_its_spark_session_starts, marks=pytest.mark.spark),
        pytest.param("spark", _as_its_container_starts_on_spark, marks=pytest.mark.spark),
    ],
    ids=[
        "process-before-launch",
        "process-at-launch",
        "process-after-launch",
        "thread-before-launch",
        "spark-session-start",
        "spark-at-launch",
    ],
)
@pytest.mark.timeout(180)
def test_sigterm_at_the_start_of_a_job_stops_it_with_a_summary_and_loses_nothing(tmp_path, runner, when):
    _stop_and_check(tmp_path, runner, when)
