"""The typed records the Dagster integration reports through: a run's JobReport and the metadata
made of it, a bootstrap stream's outcome over several containers, a backfill's ResendSummary read
from the Spark writer's summary, and the supervisor's view of a runner by its protocols (a runner
with a job coordinator has its JobModel changes reported; one without is still supervised)."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import dagster as dg

from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.orchestration.backfill import ResendSummary, SentRecords
from samza_dagster.orchestration.bootstrap import BootstrapOutcome
from samza_dagster.orchestration.job_report import JobReport, RunnerStart
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.orchestration.supervision import CoordinatedRunner, JobSupervisor, SupervisedRunner, Supervision
from samza_dagster.runtime.result import JobResult


def _chooser(streams: dict[str, dict[str, object]], *, nested: bool) -> dict[str, object]:
    chooser = {"bootstrap": {"streams": streams}}
    return {"system-consumers": {"chooser": chooser}} if nested else {"chooser": chooser}


def _result() -> JobResult:
    held = {"caught_up": True, "time_to_head_s": 0.2, "messages_behind": 0}  # a real-time stream held to its head
    c0 = ContainerSummary(
        "0",
        ContainerStatus.SHUTDOWN,
        messages_per_stream={"log.profiles": 40, "log.clicks": 5},
        elapsed_s=3.0,
        metrics=_chooser(
            {"log.profiles": {"caught_up": True, "time_to_head_s": 1.5, "messages_behind": 0}, "log.clicks": held},
            nested=True,
        ),
    )
    c1 = ContainerSummary(
        "1",
        ContainerStatus.COMPLETED,
        messages_per_stream={"log.profiles": 2},
        elapsed_s=2.0,
        metrics=_chooser(
            {"log.profiles": {"caught_up": False, "time_to_head_s": None, "messages_behind": 7}}, nested=False
        ),
    )
    earlier = ContainerSummary("0", ContainerStatus.SHUTDOWN, messages_per_stream={"log.clicks": 100})
    return JobResult("j", "thread", summaries=[c0, c1], elapsed_s=4.25, earlier_summaries=[earlier])


def test_job_report_reads_the_result_and_the_supervision_and_names_its_metadata_as_before() -> None:
    outcome = Supervision(stopped_by="terminated from Dagster", model_changes=[(2, ["task.commit.ms"])])
    report = JobReport.of(
        _result(),
        outcome,
        runner="thread",
        runner_start=RunnerStart("started by this run", spark_startup_s=1.23456),
        bootstrap_streams={"log.profiles"},
        wall_s=99.0,
    )
    # only the configured bootstrap stream; reached its head only if every container did; the slowest time;
    # what is behind summed
    assert report.bootstrap == {
        "log.profiles": BootstrapOutcome(caught_up=False, time_to_head_s=1.5, messages_behind=7)
    }
    assert report.messages_processed == 147  # the earlier container run's 100 count too
    md = report.metadata()
    assert md["job_status"] == "completed,shutdown"
    assert md["job_elapsed_s"] == dg.MetadataValue.float(4.25)  # the result's time, not the op's wall time
    assert md["messages_processed_per_stream"] == dg.MetadataValue.json({"log.profiles": 42, "log.clicks": 105})
    assert md["runner"] == "thread" and md["spark_session"] == "started by this run"
    assert md["spark_startup_s"] == dg.MetadataValue.float(1.235)
    assert md["stopped_by"] == "terminated from Dagster"
    assert md["job_model_changes"] == dg.MetadataValue.json([{"version": 2, "changed": ["task.commit.ms"]}])
    assert md["bootstrap"] == dg.MetadataValue.json(
        {"log.profiles": {"caught_up": False, "time_to_head_s": 1.5, "messages_behind": 7}}
    )
    assert "process_envelopes" not in md  # the containers reported no registries
    assert report.line("j") == "job j completed,shutdown in 4.25 s: 147 messages processed (terminated from Dagster)"
    quiet = JobReport.of(
        _result(), Supervision(), runner="thread", runner_start=RunnerStart(), bootstrap_streams=set(), wall_s=1.0
    ).metadata()
    assert not {"stopped_by", "job_model_changes", "bootstrap", "spark_session", "spark_startup_s"} & quiet.keys()


def test_a_bootstrap_stream_one_container_says_nothing_of_has_an_unknown_backlog() -> None:
    outcome = BootstrapOutcome().merged({"caught_up": True, "time_to_head_s": 0.5, "messages_behind": 3})
    assert outcome == BootstrapOutcome(True, 0.5, 3)
    unknown = outcome.merged({"caught_up": True})
    assert unknown == BootstrapOutcome(True, 0.5, None)
    assert unknown.metadata() == {
        "bootstrap_reached_head": True,
        "bootstrap_time_to_head_s": dg.MetadataValue.float(0.5),
    }
    assert BootstrapOutcome().line("j", "log.p") == (
        "job j: bootstrap stream log.p reached its head (it was at head when the job started)"
    )
    assert unknown.merged({"caught_up": False}).line("j", "log.p") == (
        "job j: bootstrap stream log.p did not reach its head (? messages behind)"
    )


def test_resend_summary_reads_each_shape_the_spark_writer_returns() -> None:
    at_least_once = ResendSummary.from_summary(
        {"system": "log", "stream": "b", "already_written": False, "total": 3, "partitions": {0: 2, 1: 1}}
    )
    assert at_least_once == ResendSummary(SentRecords(3, {0: 2, 1: 1}))
    assert at_least_once.written_at is None
    earlier = ResendSummary.from_summary(
        {
            "system": "log",
            "stream": "b",
            "total": 0,
            "partitions": {},
            "already_written": True,
            "write_id": "backfill/j-1/log.b/2024-01-02",
            "written": {"total": 600, "partitions": {0: 600}},
            "written_at_ms": 1_700_000_000_000,
        }
    )
    assert earlier.already_written and earlier.sent.total == 0
    assert earlier.written == SentRecords(600, {0: 600})
    assert earlier.written_at is not None and earlier.written_at.isoformat() == "2023-11-14T22:13:20+00:00"
    # committed by another launch while this one ran: its own counts and the committed write's
    concurrent = ResendSummary.from_summary(
        {
            "system": "log",
            "stream": "b",
            "already_written": True,
            "total": 5,
            "partitions": {"0": 5},  # the writer's JSON report names partitions as strings
            "write_id": "w",
            "written": {"total": 5, "partitions": {"0": 5}},
            "written_at_ms": 1,
        }
    )
    assert concurrent.sent == SentRecords(5, {0: 5}) and concurrent.written == SentRecords(5, {0: 5})


class _Coordinator:
    """Serves JobModel version 1 until the supervisor has read it, then version 2."""

    def __init__(self) -> None:
        self.read = threading.Event()
        self.version = 1

    @property
    def job_model(self) -> SimpleNamespace:
        self.read.set()
        config = {"task.commit.ms": "1000" if self.version == 1 else "2000", "job.name": "j"}
        return SimpleNamespace(version=self.version, config=config)


class _Runner:
    def __init__(self, coordinator: _Coordinator | None) -> None:
        self._serving = coordinator
        if coordinator is not None:
            self.coordinator = coordinator
        self.stopped = False

    def run(self) -> JobResult:
        if self._serving is not None:  # reconfigured once the supervisor has seen the first model
            assert self._serving.read.wait(30)
            self._serving.version = 2
        return JobResult("j", "test")

    def stop(self) -> None:
        self.stopped = True


def _supervise(runner: _Runner) -> Supervision:
    context = SimpleNamespace(
        log=logging.getLogger("test"), instance=dg.DagsterInstance.ephemeral(), run=SimpleNamespace(run_id="r")
    )
    settings = DagsterSettings()
    return JobSupervisor(context, runner, "j", settings, lambda: ([], 0), lambda _s: None).run()  # type: ignore[arg-type]


def test_the_supervisor_reports_the_job_models_of_a_runner_with_a_coordinator() -> None:
    runner = _Runner(_Coordinator())
    assert isinstance(runner, SupervisedRunner) and isinstance(runner, CoordinatedRunner)
    outcome = _supervise(runner)
    assert outcome.result is not None and outcome.error is None
    assert outcome.model_changes == [(2, ["task.commit.ms"])]


def test_the_supervisor_runs_a_runner_without_a_coordinator() -> None:
    runner = _Runner(None)
    assert isinstance(runner, SupervisedRunner) and not isinstance(runner, CoordinatedRunner)
    outcome = _supervise(runner)
    assert outcome.result is not None and outcome.error is None and outcome.model_changes == []
