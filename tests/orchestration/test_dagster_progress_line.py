"""The progress line a Dagster run logs while its job runs: messages processed (at the recent rate)
and the lag, as the CLI counts them, beside what was written; and after an idle spell the next
line comes at the next look (the progress interval), not when the idle interval — doubled while
nothing moved — ends."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import dagster as dg

from samza_dagster.config import Config
from samza_dagster.orchestration.live import ProgressLine
from samza_dagster.orchestration.observation import observe_streams
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.supervision import JobSupervisor
from samza_dagster.planner.plan import StreamInfo
from samza_dagster.runtime import run_job
from samza_dagster.runtime.result import JobResult
from tests.apps.harness import create_stream, produce


def test_the_progress_line_says_processed_and_lag_beside_written(tmp_path):
    config = Config(
        {
            "job.name": "progress",
            "job.factory.class": "thread",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "log.words",
            "task.class": "tests.apps.tasks:CopyTask",
            "streams.words.samza.bounded": "true",
        }
    )
    create_stream(config, "log", "words", 2)
    create_stream(config, "log", "output", 1)
    produce(config, "log", "words", [(i % 2, None, f"w{i}".encode()) for i in range(300)])
    read = [StreamInfo("words", "log", "words", 2, {"input"})]
    written = [StreamInfo("output", "log", "output", 1, {"output"})]
    line = ProgressLine(config, written, observe_streams(config, written, with_lag=False), [], read, None)
    before, _ = line.progress()
    assert before[0].startswith("0 processed") and "lag 300" in before[0], before
    assert run_job(config).succeeded
    after, mark = line.progress()
    line.close()
    assert after[0].startswith("300 processed") and after[0].endswith("lag 0"), after
    assert after[1] == "written: output +300" and mark == 600


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class _IdleThenBusy:
    """A runner whose progress stands still, then moves once, then it ends."""

    def __init__(self) -> None:
        self.mark = 0
        self.moved = threading.Event()
        self.end = threading.Event()

    def run(self) -> JobResult:
        self.end.wait(60)
        return JobResult("j", "test")

    def stop(self) -> None:
        self.end.set()

    def progress(self) -> tuple[list[str], int]:
        return [f"mark {self.mark}"], self.mark


def test_traffic_after_an_idle_spell_is_logged_at_the_next_look_not_after_the_doubled_interval():
    runner = _IdleThenBusy()
    records = _Records()
    log = logging.getLogger("test-progress-line")
    log.addHandler(records)
    log.setLevel(logging.INFO)
    context = SimpleNamespace(log=log, instance=dg.DagsterInstance.ephemeral(), run=SimpleNamespace(run_id="r"))
    # looks every 0.5 s; an idle line at 0.5, 1, 2, 4 ... s, up to 60 s apart
    settings = DagsterSettings(progress_interval_s=0.5, progress_max_interval_s=60.0, materialization_interval_s=0)

    def drive() -> None:
        idle = threading.Event()
        idle.wait(9.0)  # idle lines at ~0.5, 1, 2, 4, 8 s; the next idle one would be at ~16 s
        runner.mark = 1
        # the moved line at the next look (~9.5 s), well before the idle interval's next line
        for _ in range(40):
            if any("mark 1" in line for line in records.lines):
                break
            idle.wait(0.1)
        runner.stop()

    threading.Thread(target=drive, daemon=True).start()
    JobSupervisor(context, runner, "j", settings, runner.progress, lambda _s: None).run()  # type: ignore[arg-type]
    idle_lines = [line for line in records.lines if "mark 0" in line]
    moved = [line for line in records.lines if "mark 1" in line]
    assert moved, records.lines
    assert 3 <= len(idle_lines) <= 6, idle_lines  # doubling while idle, not a line per look
    # said at the next look after it moved (~9.5 s in), not at the idle interval's ~16 s
    seconds = int(moved[0].split("running for ")[1].split(" s")[0])
    assert seconds < 13, moved[0]
