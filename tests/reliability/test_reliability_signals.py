"""Ctrl-C and SIGTERM of ``samza-dagster run`` on every runner: the first signal stops the job
gracefully — in-flight work finishes, the final checkpoint covers every processed message, the
summary line is printed, exit 0 — and a second one exits at once (130) saying what was not
committed. On the process runner a signal to the runner alone stops its container processes too.

Each job copies ``words`` to ``output`` slowly (``ProgressCopyTask`` records every processed
offset in a file) with a commit interval far longer than the test, so only the final commit can
cover what was processed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jobs.stream_helpers import create_streams, produce, read_stream
from samza_dagster.config import Config
from support.waiting import wait_until
from tests import REPO
from tests.apps.harness import read_checkpoints

CLI = Path(sys.executable).with_name("samza-dagster")
MESSAGES = 400


def _job(tmp_path: Path, runner: str, sleep_ms: int) -> tuple[Path, Config, Path]:
    progress = tmp_path / "processed.txt"
    properties = tmp_path / "job.properties"
    properties.write_text(
        "\n".join(
            [
                "job.name=signals",
                f"job.factory.class={runner}",
                "job.default.system=log",
                "systems.log.samza.factory=log",
                "systems.log.samza.msg.serde=string",
                f"systems.log.log.path={tmp_path / 'log'}",
                "task.class=tests.apps.tasks:ProgressCopyTask",
                "task.inputs=log.words",
                "task.commit.ms=600000",
                f"test.sleep.ms={sleep_ms}",
                f"test.progress.file={progress}",
                "spark.master=local[1]",
                "",
            ]
        )
    )
    config = Config.from_properties(str(properties))
    create_streams(config, {"words": 1, "output": 1})
    produce(config, "words", [(None, f"w{i}".encode(), None) for i in range(MESSAGES)], source="test")
    return properties, config, progress


def _as_from_a_terminal() -> None:
    """The signal dispositions a job started from a terminal has: the suite itself may run with
    SIGINT ignored (a shell's background job) and children inherit that."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _as_a_background_job_ignoring_both() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _start(properties: Path, dispositions=_as_from_a_terminal) -> subprocess.Popen[str]:
    # a session of its own: the signal goes to the runner's process alone, not to a process group
    return subprocess.Popen(
        [str(CLI), "run", "--config-path", str(properties)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=dispositions,
    )


def _processed(progress: Path) -> list[int]:
    return [int(line) for line in progress.read_text().split()] if progress.exists() else []


def _container_processes_of(pid: int) -> list[int]:
    """Container processes a process runner with ``pid`` started that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SAMZA_PARENT_PID={pid}".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize(
    ("runner", "signum", "to_group"),
    [
        ("thread", signal.SIGINT, False),
        ("thread", signal.SIGTERM, False),
        ("process", signal.SIGINT, False),
        ("process", signal.SIGINT, True),
        ("process", signal.SIGTERM, False),
        pytest.param("spark", signal.SIGINT, True, marks=pytest.mark.spark),
    ],
    ids=["thread-SIGINT", "thread-SIGTERM", "process-SIGINT", "process-Ctrl-C", "process-SIGTERM", "spark-Ctrl-C"],
)
@pytest.mark.timeout(240)
def test_the_first_signal_stops_gracefully_with_a_final_commit_of_every_processed_message(
    tmp_path, runner, signum, to_group
):
    """``to_group``: the signal goes to the whole process group, as a terminal's Ctrl-C does."""
    properties, config, progress = _job(tmp_path, runner, sleep_ms=20)
    proc = _start(properties)
    try:
        wait_until(lambda: len(_processed(progress)) >= 10 or proc.poll() is not None, 180, "ten processed messages")
        assert proc.poll() is None, proc.communicate()
        if to_group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 0, (out, err)
    processed = _processed(progress)
    assert 10 <= len(processed) < MESSAGES
    assert processed == list(range(len(processed)))  # in order, none twice
    # the summary line, and a final checkpoint at the last processed message
    assert f"job signals on {runner}: 1 container shutdown, {len(processed):,} messages" in out, (out, err)
    assert f"stopped by {name}, everything processed committed" in out
    # the notice is a plain line, as the command's other messages are (it was a logging line with
    # a timestamp, level and module path)
    notice = f"job signals: {name}: stopping gracefully; in-flight work finishes and is committed"
    assert any(line.startswith(notice) for line in err.splitlines()), err
    checkpoint = read_checkpoints(config)["Partition 0"]
    assert checkpoint.offsets[("log", "words", 0)] == str(processed[-1])
    assert len(read_stream(config, "output")) == len(processed)  # the outputs before the checkpoint
    if runner == "process":
        assert _container_processes_of(proc.pid) == []


@pytest.mark.timeout(240)
def test_sigterm_stops_a_job_started_with_stop_signals_ignored_and_its_containers_too(tmp_path):
    """A job started where SIGINT and SIGTERM are ignored (a background job of a shell that
    ignores SIGTERM too): SIGINT stays ignored, as nohup's convention asks, but SIGTERM — how
    service managers, Dagster and the process runner stop a job — still stops the runner and, through
    it, every container gracefully (they inherit the ignored dispositions)."""
    properties, config, progress = _job(tmp_path, "process", sleep_ms=20)
    proc = _start(properties, _as_a_background_job_ignoring_both)
    try:
        wait_until(lambda: len(_processed(progress)) >= 10 or proc.poll() is not None, 180, "ten processed messages")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (out, err)
    assert "stopped by SIGTERM, everything processed committed" in out, (out, err)
    processed = _processed(progress)
    assert read_checkpoints(config)["Partition 0"].offsets[("log", "words", 0)] == str(processed[-1])
    assert _container_processes_of(proc.pid) == []


@pytest.mark.timeout(120)
def test_a_second_signal_exits_at_once_saying_what_was_not_committed(tmp_path):
    properties, config, progress = _job(tmp_path, "thread", sleep_ms=1500)
    proc = _start(properties)
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        wait_until(lambda: len(_processed(progress)) >= 1 or proc.poll() is not None, 90, "a processed message")
        proc.send_signal(signal.SIGINT)
        # two signals before the handler runs would be one: wait until the first was handled
        wait_until(lambda: any("stopping gracefully" in line for line in lines), 30, "the first SIGINT handled")
        proc.send_signal(signal.SIGINT)
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(60)
        reader.join(10)
        err = "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    last = _processed(progress)[-1]
    assert "SIGINT again: exiting at once, without the final commit" in err, err
    assert (
        f"Not committed (processed again at the next start): container 0, task Partition 0: log.words "
        f"partition 0 processed up to offset {last}, nothing committed yet"
    ) in err, err
    assert "Traceback" not in err
    assert read_checkpoints(config) == {}


@pytest.mark.timeout(120)
def test_a_container_whose_process_runner_is_killed_stops_gracefully_by_itself(tmp_path):
    properties, config, progress = _job(tmp_path, "process", sleep_ms=20)
    proc = _start(properties)
    try:
        wait_until(lambda: len(_processed(progress)) >= 10 or proc.poll() is not None, 90, "ten processed messages")
        containers = _container_processes_of(proc.pid)
        assert len(containers) == 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        wait_until(
            lambda: (
                not Path(f"/proc/{containers[0]}").exists()
                or Path(f"/proc/{containers[0]}/stat").read_text().split()[2] == "Z"
            ),
            60,
            "the orphaned container to stop",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
    processed = _processed(progress)
    assert read_checkpoints(config)["Partition 0"].offsets[("log", "words", 0)] == str(processed[-1])
