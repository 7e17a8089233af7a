"""JobRunner: what every runner does the same way, around how its containers run.

``run()`` prepares the job (a high-level application is planned first), starts the
JobCoordinator, and then runs the containers of the JobModel it serves — again and again while
they stop for a newer JobModel (a config change on the coordinator stream), up to
``job.max.model.restarts`` times. A run that fails, or a ``stop()``, ends the job. The result
keeps every run's summaries (``JobResult.record_run``).

A runner supplies only what differs: how one run of the containers starts, is awaited and
yields the summaries (:meth:`JobRunner._run_containers`), how ``stop()`` reaches running
containers (:meth:`JobRunner._stop_containers`), and optionally what it opens around the
whole job (:meth:`JobRunner._open` / :meth:`JobRunner._close`: the Spark session, its control
endpoint) and how it reads the model (:meth:`JobRunner._job_model`).

Run in the main thread, the first SIGINT or SIGTERM is a ``stop()`` and a second one ends the
process at once (:mod:`samza_dagster.runtime.interrupts`); a runner may say more precisely what
was not committed (:meth:`JobRunner._uncommitted`) or end its containers its own way
(:meth:`JobRunner._abort`).
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.http import TOKEN_KEY
from samza_dagster.coordinator.job_coordinator import JobCoordinator
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime.common import DEFAULT_MAX_RESTARTS, MAX_RESTARTS_KEY, prepare_job
from samza_dagster.runtime.interrupts import NOTICE, exit_now, install_stop_handlers
from samza_dagster.runtime.result import JobResult

log = logging.getLogger(__name__)


class JobRunner(ABC):
    """``run()`` blocks until the job ends; ``stop()`` (any thread) asks every container to
    finish in-flight work, commit and exit; ``coordinator`` is the JobCoordinator serving the
    job's model while ``run()`` runs (None before); ``runs`` counts container runs so far
    (readable from other threads)."""

    #: the ``job.factory.class`` name, reported in the result
    runner_name: ClassVar[str]

    def __init__(self, config: Config, *, host: str | None = None) -> None:
        self.config = config
        #: where the job coordinator listens: ``job.coordinator.http.host`` unless given
        self.host = host or keys.JOB_COORDINATOR_HTTP_HOST.get(config)
        self.job_name = JobConfig(config).name
        self.coordinator: Any = None
        self.runs = 0
        self._stop = threading.Event()
        #: the signal that stopped the job (``"SIGINT"``, ``"SIGTERM"``), if one did
        self.stopped_by: str | None = None

    # -- what every runner shares ----------------------------------------------------------------
    def stop(self) -> None:
        """Graceful stop of every container (any thread)."""
        self._stop.set()
        self._stop_containers()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def live_positions(self) -> dict[SystemStreamPartition, str] | None:
        """The last offset processed of every input partition the containers have processed so
        far, before it is committed — what a progress display counts (any thread). None when this
        runner cannot see its containers while they run (then progress moves at each commit)."""
        return None

    def live_stalls(self) -> list[str]:
        """What each stalled container's commit waits for (``SamzaContainer.stall``: a commit
        lasting seconds, brokers that do not answer), for a progress display (any thread). Empty
        when none is stalled, or when this runner cannot see its containers while they run."""
        return []

    def run(self) -> JobResult:
        started = time.monotonic()
        result = self._new_result()
        # from the start: a stop while the job is being prepared stops it as gracefully as later
        # (its containers start and stop at once, each with a summary)
        handlers = install_stop_handlers(self._on_stop_signal, self._abort)
        try:
            prepared = prepare_job(self.config)
            self.coordinator = JobCoordinator(
                prepared.config,
                host=self.host,
                port=keys.JOB_COORDINATOR_HTTP_PORT.get(self.config),
                input_streams=prepared.input_streams,
                exclude=prepared.exclude,
            )
            url = self.coordinator.start()
            try:
                self._open(result, url)
                handlers.reinstall()  # a SparkContext created in _open installs a SIGINT handler of its own
                try:
                    self._run_until_done(result, url)
                finally:
                    self._close()
            finally:
                self.coordinator.stop()
        finally:
            handlers()
        result.stopped_by = self.stopped_by
        result.elapsed_s = time.monotonic() - started
        log.info("%s", result.summary_line())
        return result

    def _run_until_done(self, result: JobResult, url: str) -> None:
        """The restart loop: one container run per JobModel the coordinator serves."""
        max_restarts = self.config.get_int(MAX_RESTARTS_KEY, DEFAULT_MAX_RESTARTS) or DEFAULT_MAX_RESTARTS
        while True:
            model = self._job_model(url)
            result.model_version = model.version
            result.runs += 1
            self.runs = result.runs
            summaries = self._run_containers(model, url, result)
            if summaries is None:  # the run failed as a whole; the runner put why in the result
                return
            result.record_run(summaries)
            result._set_failure()
            again = any(s.status is ContainerStatus.NEW_JOB_MODEL for s in result.summaries)
            if result.error is not None or not again or self._stop.is_set():
                return
            if result.runs > max_restarts:
                result.error = f"the JobModel changed more than {max_restarts} times ({MAX_RESTARTS_KEY})"
                return
            log.info("job %s: new JobModel; starting the containers again", self.job_name)
            self.coordinator.refresh()

    def stop_for_signal(self, name: str) -> None:
        """What a first stop signal does (also for one a caller caught before :meth:`run`)."""
        self._on_stop_signal(name)

    def _on_stop_signal(self, name: str) -> None:
        log.warning(
            "job %s: %s: stopping gracefully; in-flight work finishes and is committed "
            "(%s again exits at once, without the final commit)",
            self.job_name,
            name,
            name,
            extra={NOTICE: True},
        )
        self.stopped_by = name
        self.stop()

    def _abort(self, name: str) -> None:
        """A second stop signal: end the process now, saying what was not committed."""
        exit_now(f"job {self.job_name}: {name} again: exiting at once, without the final commit. {self._uncommitted()}")

    def _uncommitted(self) -> str:
        """What an exit now leaves uncommitted, for a person (runners that can see their
        containers say it per task)."""
        return (
            "Messages processed since each task's last checkpoint are not committed; the next start "
            "processes them again."
        )

    def _token(self) -> str | None:
        """The coordinator's bearer token, if the job configures one."""
        return self.config.get_str(TOKEN_KEY) or None

    # -- what a runner supplies ------------------------------------------------------------------
    def _new_result(self) -> JobResult:
        return JobResult(self.job_name, self.runner_name)

    def _open(self, result: JobResult, url: str) -> None:  # noqa: B027 - an optional hook, empty by default
        """Before the first run, with the coordinator serving at ``url``."""

    def _close(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """After the last run (also when it failed), before the coordinator stops."""

    def _job_model(self, url: str) -> Any:
        """The JobModel the next run starts on."""
        return self.coordinator.job_model

    @abstractmethod
    def _run_containers(self, model: Any, url: str, result: JobResult) -> list[ContainerSummary] | None:
        """Start every container of ``model``, wait for all to end, return their summaries in
        container order — or None when the run failed as a whole (having set ``result.error``)."""

    @abstractmethod
    def _stop_containers(self) -> None:
        """Ask the running containers to stop gracefully (any thread); ``stop_requested`` is
        already true, so containers started after this call must be stopped when they start."""
