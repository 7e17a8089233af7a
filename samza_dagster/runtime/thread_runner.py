"""``job.factory.class=thread``: every container of the job as a thread of this process.

The JobCoordinator serves the JobModel over HTTP (as for every runner) and the containers
fetch it from there. A failed container stops the others gracefully; the job fails naming it.
When a newer JobModel is served every container stops, commits, and all are started again on
the new model (up to ``job.max.model.restarts`` times).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.runtime.common import (
    DEFAULT_MAX_RESTARTS,
    MAX_RESTARTS_KEY,
    new_container,
    prepare_job,
    secrets_of,
    unmask,
    watch_interval_s,
)
from samza_dagster.runtime.result import JobResult

log = logging.getLogger(__name__)


class ThreadJobRunner:
    def __init__(self, config: Config, *, host: str = "127.0.0.1") -> None:
        self.config = config
        self.host = host
        self.stop_event = threading.Event()
        self.containers: list[Any] = []
        self.coordinator: Any = None

    def _token(self) -> str | None:
        """The coordinator's bearer token, if the job configures one."""
        from samza_dagster.coordinator.http import TOKEN_KEY

        return self.config.get_str(TOKEN_KEY) or None

    def stop(self) -> None:
        """Graceful stop of every container (any thread)."""
        self.stop_event.set()
        for c in list(self.containers):
            c.stop()

    def run(self) -> JobResult:
        from samza_dagster.coordinator.client import JobModelWatcher, fetch_job_model
        from samza_dagster.coordinator.job_coordinator import JobCoordinator

        started = time.monotonic()
        result = JobResult(JobConfig(self.config).name, "thread")
        prepared = prepare_job(self.config)
        self.coordinator = JobCoordinator(
            prepared.config, host=self.host, input_streams=prepared.input_streams, exclude=prepared.exclude
        )
        url = self.coordinator.start()
        secrets = secrets_of(self.config)
        max_restarts = self.config.get_int(MAX_RESTARTS_KEY, DEFAULT_MAX_RESTARTS) or DEFAULT_MAX_RESTARTS
        try:
            while True:
                model = unmask(fetch_job_model(url, token=self._token()), secrets)
                result.model_version = model.version
                result.runs += 1
                watcher = JobModelWatcher(url, model.version, watch_interval_s(model.config),
                                          token=self._token()).start()
                try:
                    result.record_run(self._run_containers(model, watcher))
                finally:
                    watcher.stop()
                result._set_failure()
                again = any(s.status is ContainerStatus.NEW_JOB_MODEL for s in result.summaries)
                if result.error is not None or not again or self.stop_event.is_set():
                    break
                if result.runs > max_restarts:
                    result.error = f"the JobModel changed more than {max_restarts} times ({MAX_RESTARTS_KEY})"
                    break
                log.info("job %s: new JobModel; starting the containers again", result.job_name)
                self.coordinator.refresh()
        finally:
            self.coordinator.stop()
        result.elapsed_s = time.monotonic() - started
        log.info("%s", result.summary_line())
        return result

    def _run_containers(self, model: Any, watcher: Any) -> list[ContainerSummary]:
        ids = sorted(model.containers, key=lambda c: (len(c), c))
        errors: dict[str, BaseException] = {}
        summaries: dict[str, ContainerSummary] = {}
        self.containers = []
        for cid in ids:
            try:
                self.containers.append(new_container(cid, model, watcher))
            except BaseException as exc:  # noqa: BLE001 - reported as that container's failure
                errors[cid] = exc
                summaries[cid] = ContainerSummary(cid, ContainerStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        if self.stop_event.is_set():
            for c in self.containers:
                c.stop()

        def run_one(container: Any) -> None:
            try:
                container.run()
            except BaseException as exc:  # noqa: BLE001 - in the summary; stop the others
                errors[container.container_id] = exc
                for other in self.containers:
                    if other is not container:
                        other.stop()

        threads = [
            threading.Thread(target=run_one, args=(c,), name=f"samza-container-{c.container_id}", daemon=True)
            for c in self.containers
        ]
        if errors:  # a container could not be built: run none
            threads = []
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in self.containers:
            if c.summary is not None:
                summaries[c.container_id] = c.summary
            elif c.container_id in errors:
                exc = errors[c.container_id]
                summaries[c.container_id] = ContainerSummary(
                    c.container_id, ContainerStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
                )
        return [summaries[cid] for cid in ids if cid in summaries]


def run_thread_job(config: Config, **kwargs: Any) -> JobResult:
    return ThreadJobRunner(config, **kwargs).run()
