"""``job.factory.class=thread``: every container of the job as a thread of this process.

The JobCoordinator serves the JobModel over HTTP (as for every runner) and the containers
fetch it from there. A container that failed because a system lost what it had sent since its last
commit starts again from that commit (restarts.py); any other failed container stops the others
gracefully, and the job fails naming it.
When a newer JobModel is served every container stops, commits, and all are started again on
the new model (up to ``job.max.model.restarts`` times).
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.secrets import secrets_of
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.client import JobModelWatcher, fetch_job_model
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime.common import new_container, unmask, watch_interval_s
from samza_dagster.runtime.interrupts import describe_uncommitted
from samza_dagster.runtime.restarts import RestartingContainer
from samza_dagster.runtime.result import JobResult
from samza_dagster.runtime.runner import JobRunner

#: Each container runs on a thread named this plus its id (what a thread dump shows, and how a
#: test's fault hook tells a container's thread from the coordinator's).
CONTAINER_THREAD_PREFIX = "samza-container-"


class ThreadJobRunner(JobRunner):
    runner_name = "thread"

    def __init__(self, config: Config, *, host: str | None = None) -> None:
        super().__init__(config, host=host)
        self.containers: list[Any] = []
        self._secrets = secrets_of(config)

    def _stop_containers(self) -> None:
        for c in list(self.containers):
            c.stop()

    def _uncommitted(self) -> str:
        return describe_uncommitted(self.containers)

    def live_positions(self) -> dict[SystemStreamPartition, str]:
        out: dict[SystemStreamPartition, str] = {}
        for container in list(self.containers):
            out.update(container.positions())
        return out

    def live_stalls(self) -> list[str]:
        return [stall for container in list(self.containers) if (stall := container.stall()) is not None]

    def _job_model(self, url: str) -> Any:
        # the served model masks secrets; containers in this process get them back from here

        return unmask(fetch_job_model(url, token=self._token()), self._secrets)

    def _run_containers(self, model: Any, url: str, result: JobResult) -> list[ContainerSummary]:
        watcher = JobModelWatcher(url, model.version, watch_interval_s(model.config), token=self._token()).start()
        try:
            return self._run_threads(model, watcher)
        finally:
            watcher.stop()

    def _run_threads(self, model: Any, watcher: Any) -> list[ContainerSummary]:
        ids = sorted(model.containers, key=lambda c: (len(c), c))
        errors: dict[str, BaseException] = {}
        summaries: dict[str, ContainerSummary] = {}
        self.containers = []
        for cid in ids:
            try:
                build = partial(new_container, cid, model, watcher)
                self.containers.append(RestartingContainer(build, keys.JOB_CONTAINER_RETRY_COUNT.get(model.config)))
            except BaseException as exc:  # noqa: BLE001 - reported as that container's failure
                errors[cid] = exc
                summaries[cid] = ContainerSummary(cid, ContainerStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        if self.stop_requested:
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
            threading.Thread(target=run_one, args=(c,), name=f"{CONTAINER_THREAD_PREFIX}{c.container_id}", daemon=True)
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
                error = errors[c.container_id]
                summaries[c.container_id] = ContainerSummary(
                    c.container_id, ContainerStatus.FAILED, error=f"{type(error).__name__}: {error}"
                )
        return [summaries[cid] for cid in ids if cid in summaries]
