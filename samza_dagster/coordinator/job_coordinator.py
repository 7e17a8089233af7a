"""The JobCoordinator (Samza design): bootstraps config from the coordinator stream, builds the
JobModel, serves it over HTTP and keeps it current as the stream changes.

Version rules: any change of the job's config (from a resubmission or the coordinator stream
writer) rebuilds the model and bumps ``version`` — containers restart to pick up new config even
when the task assignment is unchanged. Container host assignments written by containers update
``previous_hosts`` without a version bump (a container announcing itself must not make every
container restart). Version numbering starts at 1 for each coordinator process.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.secrets import mask_config
from samza_dagster.coordinator.errors import CoordinatorNotStartedError
from samza_dagster.coordinator.http import TOKEN_KEY, CoordinatorHttpServer, ServedModel
from samza_dagster.coordinator.model.builder import JobModelBuild, build_job_model
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.coordinator.model.partition_counts import (
    FORCE_RESET_KEY,
    InputPartitionCountChangedError,
    check_input_partitions,
    record_input_partitions,
)
from samza_dagster.coordinator.serving import serve_in_thread, stop_serving
from samza_dagster.coordinator.stream.messages import SET_CHANGELOG, SET_INPUT_PARTITIONS, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamReader, CoordinatorStreamWriter, close_admin
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.coordinator.stream.submission import SubmissionResult, is_stateful, submit_job_config
from samza_dagster.metrics.config import metrics_config
from samza_dagster.model import SystemStream
from samza_dagster.startpoint.manager import StartpointManager, StoredStartpoints
from samza_dagster.system.protocols import SystemAdmin

log = logging.getLogger(__name__)

MONITOR_INTERVAL_KEY = keys.JOB_COORDINATOR_MONITOR_INTERVAL_MS.name
DEFAULT_MONITOR_INTERVAL_MS: int = keys.JOB_COORDINATOR_MONITOR_INTERVAL_MS.default
SOURCE = "job-coordinator"


class JobCoordinator:
    """``start()`` → the URL containers read their JobModel from; ``stop()`` when done.

    ``input_streams`` (stream → partition count) replaces the ``task.inputs`` lookup (the planner
    passes planned inputs, intermediate streams included); ``exclude`` names streams never grouped
    into tasks (side inputs). ``submit=False`` serves what the stream already holds (a restarted
    coordinator whose config was submitted elsewhere).
    """

    def __init__(
        self,
        config: Config,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        input_streams: Mapping[SystemStream, int] | None = None,
        exclude: Iterable[SystemStream] = (),
        force_reset: bool = False,
        submit: bool = True,
        admins: Mapping[str, SystemAdmin] | None = None,
    ) -> None:
        # the reset applies to this launch only: it is not part of the job's config
        self.force_reset = force_reset or config.get_bool(FORCE_RESET_KEY, False)
        if FORCE_RESET_KEY in config:
            config = Config({k: v for k, v in config.items() if k != FORCE_RESET_KEY})
        self.submitted_config = config
        self.host = host
        self.port = port
        self.input_streams = dict(input_streams) if input_streams is not None else None
        self.exclude = frozenset(exclude)
        self.submit = submit
        # Admins for input partition lookups, reused across rebuilds; those made here are closed at stop().
        self.admins: dict[str, SystemAdmin] = dict(admins or {})
        self._given_admins = frozenset(self.admins)
        interval_ms = config.get_int(MONITOR_INTERVAL_KEY, DEFAULT_MONITOR_INTERVAL_MS)
        self.monitor_interval_s = (
            interval_ms if interval_ms and interval_ms > 0 else DEFAULT_MONITOR_INTERVAL_MS
        ) / 1000
        self.submission: SubmissionResult | None = None
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._state = CoordinatorStreamState()
        self._cursor: str | None = None
        self._model: JobModel | None = None
        self._served: ServedModel | None = None
        self._failed_config: dict[str, str] | None = None
        self._reader: CoordinatorStreamReader | None = None
        self._writer: CoordinatorStreamWriter | None = None
        self._server: CoordinatorHttpServer | None = None
        self._metrics: Any = None  # a MetricsStreamFollower when the job has a prometheus reporter
        self._threads: list[threading.Thread] = []
        #: the thread serving ``_server`` (None before start and after stop)
        self._serving: threading.Thread | None = None
        self._stopping = threading.Event()
        self.url: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> str:
        """Submit the config, bootstrap from the stream, build the model, serve it. On failure
        everything opened so far is closed again and the error (naming the key or stream) raised."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> str:
        if self.submit:
            self.submission = submit_job_config(self.submitted_config, force_reset=self.force_reset)
        self._writer = CoordinatorStreamWriter(self.submitted_config, SOURCE)
        self._reader = CoordinatorStreamReader(self.submitted_config)
        messages, self._cursor = self._reader.read(None)
        self._state.apply_all(messages)
        # Bootstrapped config: the stream's contents (which now include the submission).
        self._rebuild(version=1, raise_errors=True)
        self._server = CoordinatorHttpServer(
            (self.host, self.port), self._current_served, self._token(), self._start_metrics()
        )
        bound_host, bound_port = self._server.server_address[:2]
        self.port = bound_port
        self.url = f"http://{_url_host(self.host, str(bound_host))}:{bound_port}"
        self._stopping.clear()
        self._serving = serve_in_thread(self._server, "job-coordinator-http")
        self._threads = [threading.Thread(target=self._monitor, name="job-coordinator-monitor", daemon=True)]
        for thread in self._threads:
            thread.start()
        log.info("job coordinator serving JobModel version %s at %s", self.job_model.version, self.url)
        return self.url

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            stop_serving(self._server, self._serving)
            self._serving = None
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads = []
        self._server = None
        if self._metrics is not None:
            self._metrics.stop()
            self._metrics = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for system in [s for s in self.admins if s not in self._given_admins]:
            close_admin(self.admins.pop(system))

    def __enter__(self) -> JobCoordinator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the model ---------------------------------------------------------------------------
    @property
    def job_model(self) -> JobModel:
        model = self._model
        if model is None:
            raise CoordinatorNotStartedError("the job coordinator has not started")
        return model

    @property
    def config(self) -> Config:
        return self.job_model.config

    def refresh(self) -> bool:
        """Catch up with the coordinator stream once; True if the served model changed."""
        with self._refresh_lock:
            return self._refresh()

    def _refresh(self) -> bool:
        assert self._reader is not None, "start() the coordinator first"
        messages, self._cursor = self._reader.read(self._cursor)
        if not messages:
            return False
        old_hosts = dict(self._state.host_assignments)
        self._state.apply_all(messages)
        model = self.job_model
        if self._state.config == dict(model.config):
            self._failed_config = None
        elif self._state.config != self._failed_config:  # a failed config was reported once already
            if self._rebuild(version=model.version + 1, raise_errors=False):
                return True
        if self._state.host_assignments != old_hosts:
            hosts = {cid: h for cid, h in self._state.host_assignments.items() if cid in model.containers}
            if hosts != model.previous_hosts:
                self._publish(dataclasses.replace(model, previous_hosts=hosts))
                return True
        return False

    def _rebuild(self, version: int, raise_errors: bool) -> bool:
        config = Config(self._state.config)
        try:
            build = self._build(config, version)
            if is_stateful(config):
                try:
                    check_input_partitions(self._state.input_partitions, build.input_partitions)
                except InputPartitionCountChangedError as exc:
                    if not (self.force_reset and version == 1):
                        raise
                    log.warning(
                        "force reset: %s -> %s partitions for %s; the task → changelog partition "
                        "assignments are forgotten",
                        exc.old,
                        exc.new,
                        exc.stream,
                    )
                    self._forget_changelog_assignments()
                    build = self._build(config, version)
        except Exception as exc:  # noqa: BLE001 - a bad reconfiguration must not kill a running job
            if raise_errors:
                raise
            self._failed_config = dict(self._state.config)
            log.error(
                "job coordinator keeps JobModel version %s: the changed config cannot be applied: %s",
                self.job_model.version,
                exc,
            )
            return False
        self._failed_config = None
        assert self._writer is not None
        messages = [
            CoordinatorStreamMessage.set_changelog(SOURCE, task, partition)
            for task, partition in sorted(build.new_changelog_partitions.items())
        ]
        if is_stateful(config):
            messages += record_input_partitions(SOURCE, self._state.input_partitions, build.input_partitions)
        if messages:
            self._writer.send(*messages)
            self._state.changelog.update(build.new_changelog_partitions)
            self._state.input_partitions.update(
                (m.key, m.input_partitions) for m in messages if m.type == SET_INPUT_PARTITIONS
            )
        self._fan_out_startpoints(build.model)
        self._publish(build.model)
        if version > 1:
            log.info("job coordinator rebuilt the JobModel: version %s", version)
        return True

    def _build(self, config: Config, version: int) -> JobModelBuild:
        return build_job_model(
            config,
            changelog_partitions=self._state.changelog,
            previous_hosts=self._state.host_assignments,
            input_streams=self.input_streams,
            exclude=self.exclude,
            version=version,
            admins=self.admins,
        )

    def _forget_changelog_assignments(self) -> None:
        assert self._writer is not None
        self._writer.send(
            *(CoordinatorStreamMessage.delete(SOURCE, SET_CHANGELOG, task) for task in sorted(self._state.changelog))
        )
        self._state.changelog.clear()

    def _fan_out_startpoints(self, model: JobModel) -> None:
        """Written startpoints go into the fan-outs of the tasks that read their partitions,
        before the model is served, so every container started on it finds its tasks' own."""
        stored = StoredStartpoints.from_state(self._state)
        if not stored.written and not stored.legacy:
            return
        tasks = {name: task.ssps for name, task in model.all_tasks().items()}
        StartpointManager(model.config, SOURCE, writer=self._writer).fan_out(tasks, self._state)

    def _publish(self, model: JobModel) -> None:
        served = ServedModel(
            version=model.version,
            model_json=json.dumps(model.to_dict(), separators=(",", ":")).encode("utf-8"),
            config_json=json.dumps(mask_config(model.config), separators=(",", ":")).encode("utf-8"),
        )
        with self._lock:
            self._model = model
            self._served = served

    def _current_served(self) -> ServedModel:
        with self._lock:
            served = self._served
        assert served is not None
        return served

    def _start_metrics(self) -> Callable[[], tuple[bytes, str]] | None:
        """With a prometheus reporter, follow its metrics stream from now on and serve every
        container's latest snapshot at ``/metrics``: one scrape target for the whole job, whatever
        runs the containers (threads, processes, Spark executors on other machines)."""
        prometheus = metrics_config(self.job_model.config).prometheus
        if prometheus is None or prometheus.stream is None:
            return None
        from samza_dagster.metrics.prometheus import CONTENT_TYPE, exposition
        from samza_dagster.metrics.stream_reader import MetricsStreamFollower

        config = self.job_model.config
        follower = self._metrics = MetricsStreamFollower(config, prometheus.stream)
        follower.start()
        # the job's systems, so <system>-<stream>-<partition> names split right where a name holds a '-'
        systems = {key.split(".")[1] for key in config if key.startswith("systems.") and key.count(".") >= 2}
        systems.add(JobConfig(config).default_system)
        return lambda: (exposition(follower.latest.snapshots, systems), CONTENT_TYPE)

    @property
    def metrics_snapshots(self) -> list[Any]:
        """The latest snapshot of every container and source, when a prometheus reporter is configured."""
        return self._metrics.latest.snapshots() if self._metrics is not None else []

    def _token(self) -> str | None:
        return self.submitted_config.get_str(TOKEN_KEY) or self.job_model.config.get_str(TOKEN_KEY) or None

    def _monitor(self) -> None:
        while not self._stopping.wait(self.monitor_interval_s):
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - keep serving the last good model; retry next interval
                log.exception("job coordinator could not catch up with the coordinator stream")


def _url_host(requested: str, bound: str) -> str:
    host = requested or bound
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return host
