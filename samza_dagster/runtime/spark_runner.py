"""The spark runner (``job.factory.class=spark``): every container of a job is one task of a Spark
barrier stage, so all containers run at once, and Spark's stage retry is the container restart.

Driver, in order: prepare the job (input streams, streams to create) → start the JobCoordinator
on an address executors reach (``job.coordinator.http.host``, 127.0.0.1 by default: local mode)
→ a small control endpoint (graceful stop) → ONE barrier stage,
``sc.parallelize(range(n), n).barrier().mapPartitions(container)`` → the summaries → a result.

Why the stage is followed by a shuffle: Spark 4 never retries a failed barrier *result* stage
("Could not recover from a failed barrier ResultStage" — measured here); a failed barrier
*shuffle-map* stage is resubmitted, all its tasks together, up to
``spark.stage.maxConsecutiveAttempts`` times (``spark.task.maxFailures`` does not apply — in
``local[N]`` it is 1 and the stage is still retried). So the containers' summaries go through a
one-partition shuffle, which makes the barrier stage a shuffle-map stage. The number of attempts
is ``job.container.retry.count`` + 1, set on the session when this runner creates it (the
setting is read when the SparkContext starts; a running session keeps its own, and the runner
says so in the log).

Stopping: a bounded job's stage ends when every container reached end-of-stream. An unbounded
job runs until :meth:`SparkJobRunner.stop` (Ctrl-C in the driver's main thread calls it): the
control endpoint answers ``stop``, containers finish in-flight work, commit and return; if they
have not within ``task.shutdown.ms``, the Spark job group is cancelled. A container that sees a
newer JobModel stops the same way with status ``new_job_model``, and the driver runs the stage
again — with the new model's container count.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.secrets import scrub, secrets_of
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.http import TOKEN_KEY
from samza_dagster.coordinator.serving import serve_in_thread, stop_serving
from samza_dagster.errors import SamzaError
from samza_dagster.runtime.result import JobResult
from samza_dagster.runtime.runner import JobRunner
from samza_dagster.runtime.spark_container import container_partition_fn, find_container_failure
from samza_dagster.spark.session import get_or_create_spark

log = logging.getLogger(__name__)

RETRY_KEY = keys.JOB_CONTAINER_RETRY_COUNT.name
DEFAULT_RETRY_COUNT: int = keys.JOB_CONTAINER_RETRY_COUNT.default
MAX_ATTEMPTS_SPARK_KEY = "spark.stage.maxConsecutiveAttempts"


@dataclass
class SparkJobResult(JobResult):
    """The runners' JobResult (runner ``spark``), one summary per container of the last stage
    run, plus the Spark session start-up time (0 when a session was running already)."""

    spark_startup_s: float = 0.0

    @property
    def stage_runs(self) -> int:
        return self.runs


class SparkJobError(SamzaError, RuntimeError):
    """The Spark job failed for a reason no container reported (e.g. not enough slots)."""


class FatalContainerError(SparkJobError):
    """A container reported an error no retry can fix; the driver cancelled the stage."""

    def __init__(self, container_id: str, error: str) -> None:
        super().__init__(f"container {container_id} failed: {error}")
        self.container_id = container_id
        self.error = error


# -- graceful stop ----------------------------------------------------------------------------
class _ControlServer:
    """The driver's small endpoint for its containers: ``GET /`` → ``{"stop": bool}`` (how the
    driver asks every container to stop gracefully; a Spark task kill would not let them commit)
    and ``POST /fatal`` (a container reports an error no retry can fix, so the driver cancels
    the stage instead of letting Spark retry it). With ``job.coordinator.http.token`` set, both
    need ``Authorization: Bearer <token>``, as the job coordinator's own service does."""

    def __init__(self, host: str, token: str | None = None) -> None:
        self.stop_requested = threading.Event()
        self.fatal: tuple[str, str] | None = None
        self.fatal_reported = threading.Event()
        control = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self._authorized():
                    self._reply(200, {"stop": control.stop_requested.is_set()})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if not self._authorized():
                    return
                if self.path.rstrip("/") != "/fatal":
                    self._reply(404, {"error": f"no {self.path}"})
                    return
                try:
                    report = json.loads(body)
                    control.fatal = (str(report["container"]), str(report["error"]))
                except (ValueError, KeyError, TypeError):
                    self._reply(400, {"error": 'expected {"container": ..., "error": ...}'})
                    return
                control.fatal_reported.set()
                self._reply(200, {"ok": True})

            def _authorized(self) -> bool:
                if not token or hmac.compare_digest(
                    self.headers.get("Authorization", "").encode(), f"Bearer {token}".encode()
                ):
                    return True
                self._reply(401, {"error": f"missing or wrong bearer token (set by {TOKEN_KEY})"})
                return False

            def _reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet polling
                pass

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        port = self._server.server_address[1]
        self.url = f"http://{host}:{port}/"
        self._thread = serve_in_thread(self._server, "spark-runner-control")

    def close(self) -> None:
        stop_serving(self._server, self._thread)


# -- the runner -------------------------------------------------------------------------------
class SparkJobRunner(JobRunner):
    """Runs one job on Spark. ``run()`` blocks until the job ends; ``stop()`` from any thread."""

    runner_name = "spark"

    def __init__(self, config: Config, *, spark: Any = None) -> None:
        super().__init__(config)
        self.container_count = JobConfig(config).container_count
        retry = config.get_int(RETRY_KEY, DEFAULT_RETRY_COUNT)
        if retry is None or retry < 0:
            raise ConfigError(f"{RETRY_KEY} must be 0 or more, got {retry}", key=RETRY_KEY)
        self.max_attempts = retry + 1
        self.shutdown_s = TaskConfig(config).shutdown_ms / 1000
        self._spark = spark
        self._group: str | None = None
        self._sc: Any = None
        self._control: _ControlServer | None = None

    @property
    def stage_runs(self) -> int:
        """Stage runs so far (readable from other threads while ``run()`` blocks)."""
        return self.runs

    # -- session ------------------------------------------------------------------------------
    def spark_settings(self) -> Config:
        """The session's config: the job's ``spark.*`` keys, ``local[container count]`` unless
        ``spark.master`` is set, and the stage attempts from ``job.container.retry.count``."""
        overrides: dict[str, str] = {MAX_ATTEMPTS_SPARK_KEY: str(self.max_attempts)}
        if not self.config.get_str("spark.master"):
            overrides["spark.master"] = f"local[{self.container_count}]"
        return self.config.with_overrides(
            {k: v for k, v in overrides.items() if k == "spark.master" or k not in self.config}
        )

    def session(self) -> tuple[Any, float]:
        if self._spark is not None:
            return self._spark, 0.0

        started = time.monotonic()
        spark = get_or_create_spark(self.spark_settings())
        return spark, time.monotonic() - started

    def _check_session(self, sc: Any, containers: int) -> None:
        attempts = sc.getConf().get(MAX_ATTEMPTS_SPARK_KEY, "4")
        if attempts != str(self.max_attempts):
            log.warning(
                "job %s: the running Spark session retries a barrier stage %s times (%s); %s=%d asks "
                "for %d attempts — it applies when the runner starts the session",
                self.job_name,
                attempts,
                MAX_ATTEMPTS_SPARK_KEY,
                RETRY_KEY,
                self.max_attempts - 1,
                self.max_attempts,
            )
        master = sc.master or ""
        if master.startswith("local"):
            slots = sc.defaultParallelism
            if containers > slots:
                key = keys.JOB_CONTAINER_COUNT.name
                raise ConfigError(
                    f"{key}={containers} needs {containers} concurrent Spark tasks (a barrier "
                    f"stage runs all containers at once) but spark.master={master} has {slots} slots",
                    key=key,
                )

    # -- running ------------------------------------------------------------------------------
    def _stop_containers(self) -> None:
        """Nothing to do here: the stage's watch loop (:meth:`_run_stage`) sees the request, asks
        the containers through the control endpoint and cancels the Spark job group if they have
        not stopped within ``task.shutdown.ms``."""

    def _new_result(self) -> SparkJobResult:
        return SparkJobResult(self.job_name, self.runner_name)

    def _open(self, result: JobResult, url: str) -> None:
        assert isinstance(result, SparkJobResult)
        spark, result.spark_startup_s = self.session()
        self._sc = spark.sparkContext
        self._control = _ControlServer(self.host, token=self._token())

    def _close(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None

    def _run_containers(self, model: Any, url: str, result: JobResult) -> list[ContainerSummary] | None:
        assert self._control is not None
        containers = len(model.containers)
        self._check_session(self._sc, containers)
        fn = container_partition_fn(url, self._control.url, secrets_of(self.config))
        outcome = self._run_stage(self._sc, containers, fn, self._control)
        if isinstance(outcome, BaseException):
            self._fail(result, outcome)
            return None
        return sorted((ContainerSummary.from_dict(json.loads(s)) for s in outcome), key=lambda s: int(s.container_id))

    def _run_stage(self, sc: Any, containers: int, fn: Any, control: _ControlServer) -> list[str] | BaseException:
        """Runs the barrier stage in a helper thread (the driver's main thread stays free for
        Ctrl-C) and returns the JSON summaries, or the exception the Spark job ended with."""
        group = self._group = f"samza-{self.job_name}-{uuid.uuid4().hex[:8]}"
        box: dict[str, Any] = {}

        def collect() -> None:
            try:
                # job groups are thread-local: set it in the thread that submits the job
                sc.setJobGroup(group, f"samza job {self.job_name}: {containers} containers", interruptOnCancel=True)
                rdd = sc.parallelize(range(containers), containers).barrier().mapPartitions(fn)
                # a shuffle after the barrier stage makes it a retriable shuffle-map stage
                box["value"] = rdd.map(lambda s: (0, s)).partitionBy(1).values().collect()
            except BaseException as exc:  # noqa: BLE001 - handed to the driver thread
                box["error"] = exc

        worker = threading.Thread(target=collect, name=f"spark-runner-{self.job_name}", daemon=True)
        worker.start()
        stop_seen_at: float | None = None
        while worker.is_alive():
            worker.join(0.2)
            if control.fatal_reported.is_set():
                # a retry cannot fix it (bad config, a missing stream, a serde that does not fit):
                # end the job now instead of letting Spark rerun the stage
                cid, error = control.fatal or ("?", "unknown")
                sc.cancelJobGroup(group)
                worker.join(30)
                return FatalContainerError(cid, error)
            if self._stop.is_set():
                if stop_seen_at is None:
                    stop_seen_at = time.monotonic()
                    control.stop_requested.set()
                elif time.monotonic() - stop_seen_at > self.shutdown_s:
                    log.warning("job %s: containers did not stop within task.shutdown.ms; cancelling", self.job_name)
                    sc.cancelJobGroup(group)
                    worker.join(30)
                    return SparkJobError("stopped: the Spark job was cancelled after task.shutdown.ms")
        return box["error"] if "error" in box else box.get("value", [])

    def _fail(self, result: JobResult, exc: BaseException) -> None:
        text = str(exc)
        found = (exc.container_id, exc.error) if isinstance(exc, FatalContainerError) else find_container_failure(text)
        if found is not None:
            cid, error = found
            result.failed_container = cid
            result.error = f"container {cid} failed: {error}"
            result.summaries = [ContainerSummary(cid, ContainerStatus.FAILED, error=error)]
        elif self._stop.is_set():
            result.error = "stopped: the Spark job was cancelled after task.shutdown.ms"
        else:
            first = next((line for line in text.splitlines() if "Exception" in line or "Error" in line), text[:500])
            result.error = f"the Spark job failed: {first.strip()}"
        # the error quotes the container's exception, which may quote a config value
        result.error = scrub(result.error, secrets_of(self.config))
        for summary in result.summaries:
            if summary.error:
                summary.error = scrub(summary.error, secrets_of(self.config))
        log.error("job %s: %s", self.job_name, result.error)

    def _abort(self, name: str) -> None:
        """A second stop signal cancels the Spark job group: Spark kills the containers' tasks
        (PySpark's own handler would have cancelled every job at the first)."""
        if self._sc is None or self._group is None:
            super()._abort(name)
            return
        log.warning(
            "job %s: %s again: cancelling the Spark job group without the final commit. %s",
            self.job_name,
            name,
            self._uncommitted(),
        )
        self._sc.cancelJobGroup(self._group)


def run_spark_job(config: Config | Mapping[str, str], *, spark: Any = None) -> SparkJobResult:
    """Run the job ``config`` describes on Spark until it ends (bounded) or is stopped."""
    cfg = config if isinstance(config, Config) else Config(config)
    result = SparkJobRunner(cfg, spark=spark).run()
    assert isinstance(result, SparkJobResult)  # the runner's _new_result makes one
    return result
