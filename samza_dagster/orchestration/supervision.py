"""Watching a running Samza job from its Dagster op.

The job runs in a worker thread (``runner.run()``); the op's thread — the one Dagster delivers a
terminate to — stays free and, until the job ends:

* **stops it gracefully** when the run is terminated: Dagster interrupts the op's thread
  (``KeyboardInterrupt`` / ``DagsterExecutionInterruptedError``) or, where the launcher cannot
  interrupt it, marks the run CANCELING, which is polled. Either way ``runner.stop()`` asks every
  container to finish in-flight work, flush its stores and producers and commit, and the op
  waits for that: the run then materializes the final offsets like any other, and is tagged
  ``samza/stopped-by``. On the in-process executor (every ``<app>_job``) the step and the run
  succeed — the job stopped as asked, everything processed committed — with no ERROR event;
* **reports reconfiguration**: when the job coordinator serves a new JobModel (a change on the
  coordinator stream), the keys that changed are logged with the model version;
* **logs progress** — at ``dagster.progress.interval.ms``, doubling while nothing moves, up to
  ``dagster.progress.max.interval.ms``;
* **materializes live** — every ``dagster.materialization.interval.ms`` an AssetMaterialization
  per written stream (messages written, throughput, lag per input) and an observation per input.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import dagster as dg

from samza_dagster.coordinator.errors import CoordinatorNotStartedError
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.orchestration.settings import DagsterSettings
from samza_dagster.runtime.result import JobResult

#: how often the op's thread wakes up to look at the run (cancel requests, new job models)
TICK_S = 0.5
CANCEL_POLL_S = 1.0
INTERRUPTS: tuple[type[BaseException], ...] = (KeyboardInterrupt, dg.DagsterExecutionInterruptedError)
#: the run tag saying why a job stopped before its end (``terminated from Dagster``)
STOPPED_BY_TAG = "samza/stopped-by"


def next_progress_interval(interval: float, moved: bool, settings: DagsterSettings) -> float:
    """Back to the first interval while the job makes progress; doubling, up to the maximum,
    while it does not (an idle streaming job logs less and less, never stops logging)."""
    if moved:
        return settings.progress_interval_s
    return min(interval * 2, settings.progress_max_interval_s)


def _plain_sigint() -> Callable[[], None]:
    """While the job runs, SIGINT — how Dagster terminates a step on Unix — only raises
    KeyboardInterrupt in this thread. A SparkContext created in this thread installs a handler
    that first cancels every Spark job, which would kill the containers before they commit."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    return restore


@runtime_checkable
class SupervisedRunner(Protocol):
    """What the supervisor needs of a runner (every ``JobRunner``, or what a test's runner
    factory makes): run the job to its end in the worker thread, and be asked from the op's
    thread to stop it gracefully."""

    def run(self) -> JobResult: ...

    def stop(self) -> None: ...


class ServesJobModels(Protocol):
    """A job coordinator as the supervisor reads it: the JobModel it serves now (raising
    ``CoordinatorNotStartedError`` before it has one)."""

    @property
    def job_model(self) -> JobModel: ...


@runtime_checkable
class CoordinatedRunner(Protocol):
    """A runner with a job coordinator (every ``JobRunner``; None until it started one): the
    supervisor logs the JobModels it moves to. A runner without one is still supervised, its
    reconfigurations not reported."""

    coordinator: ServesJobModels | None


@dataclass
class Supervision:
    """What happened while the job ran."""

    result: JobResult | None = None
    error: BaseException | None = None
    #: "terminated from Dagster" when the run was stopped, else None
    stopped_by: str | None = None
    #: (model version, changed keys) of every JobModel the job moved to while it ran
    model_changes: list[tuple[int, list[str]]] = field(default_factory=list)


class JobSupervisor:
    """Runs ``runner`` in a worker thread and watches it from the calling (op) thread.

    ``progress()`` returns the progress line's parts and a number that grows while messages
    flow (the backoff resets when it changes); ``materialize()`` emits the live events."""

    def __init__(
        self,
        context: dg.AssetExecutionContext,
        runner: SupervisedRunner,
        job_name: str,
        settings: DagsterSettings,
        progress: Callable[[], tuple[list[str], int]],
        materialize: Callable[[float], None],
    ) -> None:
        self.context = context
        self.runner = runner
        self.job_name = job_name
        self.settings = settings
        self.progress = progress
        self.materialize = materialize
        self.outcome = Supervision()
        self._model: tuple[int, dict[str, str]] | None = None
        # Set by the worker when the job has ended. The op's thread waits on this event rather
        # than joining the thread: a KeyboardInterrupt inside Thread.join() can leave the thread
        # marked as stopped while it still runs (CPython 3.11), and then the op would report a
        # job that is still committing as ended.
        self._finished = threading.Event()

    def run(self) -> Supervision:
        worker = threading.Thread(target=self._run_job, name=f"samza-job-{self.job_name}", daemon=True)
        started = time.monotonic()
        restore = _plain_sigint()
        try:
            worker.start()
            try:
                self._watch(started)
            except INTERRUPTS:
                self._stop("terminated from Dagster")
            self._wait_after_stop()
        finally:
            restore()
        worker.join()
        self._check_model()
        return self.outcome

    # -- the worker thread ------------------------------------------------------------------------
    def _run_job(self) -> None:
        try:
            self.outcome.result = self.runner.run()
        except BaseException as exc:  # noqa: BLE001 - reported by the op's thread
            self.outcome.error = exc
        finally:
            self._finished.set()

    # -- the op's thread ----------------------------------------------------------------------------
    def _watch(self, started: float) -> None:
        # progress is looked at every progress interval and logged when it moved; an idle job's
        # line comes at a doubling interval, but traffic after an idle spell is said at the next
        # look, not when the long interval ends
        every = self.settings.progress_interval_s
        interval = every
        next_look = started + every
        last_logged = started
        next_cancel_poll = started + CANCEL_POLL_S
        mat_every = self.settings.materialization_interval_s
        last_mat = started
        last_mark: int | None = None
        last_moved = started
        while not self._finished.wait(TICK_S):
            now = time.monotonic()
            self._check_model()
            if now >= next_cancel_poll and self.outcome.stopped_by is None:
                next_cancel_poll = now + CANCEL_POLL_S
                if self._cancel_requested():
                    self._stop("terminated from Dagster")
            if now >= next_look:
                next_look = now + every
                parts, mark = self.progress()
                moved = mark != last_mark
                last_mark = mark
                if moved:
                    last_moved = now
                if moved or now - last_logged >= interval:
                    idle = "" if moved else f" (nothing new for {now - last_moved:.0f} s)"
                    self.context.log.info(
                        f"job {self.job_name}: running for {now - started:.0f} s; {'; '.join(parts)}{idle}"
                    )
                    interval = next_progress_interval(interval, moved, self.settings)
                    last_logged = now
            if mat_every > 0 and now - last_mat >= mat_every:
                self.materialize(now - last_mat)
                last_mat = now

    def _wait_after_stop(self) -> None:
        """Wait for the job to end; further interrupts while it drains and commits change nothing."""
        while not self._finished.is_set():
            try:
                self._finished.wait(TICK_S)
            except INTERRUPTS:
                self.context.log.info(f"job {self.job_name}: still stopping (committing); waiting for it to end")

    def _stop(self, why: str) -> None:
        if self.outcome.stopped_by is not None:
            return
        self.outcome.stopped_by = why
        self.context.log.info(
            f"job {self.job_name}: {why}; stopping gracefully (in-flight work finishes, stores and producers "
            "flush, checkpoints are written)"
        )
        self.runner.stop()
        self._tag_run(why)

    def _tag_run(self, why: str) -> None:
        """``samza/stopped-by`` on the run: the runs list tells a terminated streaming run (which
        ends successfully) from one that ended by itself."""
        try:
            self.context.instance.add_run_tags(self.context.run.run_id, {STOPPED_BY_TAG: why})
        except Exception as exc:  # noqa: BLE001 - a tag must not keep the job from stopping
            self.context.log.warning(f"job {self.job_name}: could not tag the run {STOPPED_BY_TAG}: {exc}")

    def _cancel_requested(self) -> bool:
        run = self.context.instance.get_run_by_id(self.context.run.run_id)
        return run is not None and run.status in (dg.DagsterRunStatus.CANCELING, dg.DagsterRunStatus.CANCELED)

    def _check_model(self) -> None:
        coordinator = self.runner.coordinator if isinstance(self.runner, CoordinatedRunner) else None
        if coordinator is None:
            return
        try:
            model = coordinator.job_model
        except CoordinatorNotStartedError:
            return
        config = dict(model.config)
        if self._model is None:
            self._model = (model.version, config)
            return
        version, old = self._model
        if model.version == version:
            return
        changed = sorted(k for k in old.keys() | config.keys() if old.get(k) != config.get(k))
        self._model = (model.version, config)
        self.outcome.model_changes.append((model.version, changed))
        self.context.log.info(
            f"job {self.job_name}: applying JobModel version {model.version} from the coordinator stream "
            f"(changed: {', '.join(changed) or 'task assignment only'}); the containers restart on it"
        )
