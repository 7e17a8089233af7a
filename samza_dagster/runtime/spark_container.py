"""The executor side of the spark runner: one Spark barrier task is one SamzaContainer.

The function :func:`container_partition_fn` returns is shipped (pickled by cloudpickle) to the
executors and run by ``rdd.barrier().mapPartitions(...)``. Everything it needs arrives in the
closure — the coordinator URL, the runner's control URL, the driver's secret values — because an
executor shares nothing with the driver but the network.

A container that fails raises :class:`ContainerFailedError`, whose text carries a marker the driver
finds again inside the Py4J/Spark exception, so the job's failure names the container and the
container's own error instead of a JVM stack trace. Raising (rather than returning a failed
summary) is what makes Spark's barrier-stage retry restart the containers. An error no retry
can fix (:func:`is_unretriable`: bad config, a missing stream, a serde that does not fit) is
first reported to the driver's control endpoint, which cancels the stage at once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from samza_dagster.application.errors import ApplicationError
from samza_dagster.config.errors import ConfigError
from samza_dagster.coordinator.client import URL_ENV, JobModelWatcher, fetch_job_model, write_container_host
from samza_dagster.coordinator.http import TOKEN_KEY
from samza_dagster.errors import SamzaError
from samza_dagster.planner.errors import PlanningError
from samza_dagster.runtime.common import new_container, unmask, watch_interval_s
from samza_dagster.serde.serdes import SerdeError
from samza_dagster.system.errors import StreamNotFoundError

log = logging.getLogger(__name__)

#: "SAMZA_CONTAINER_FAILED[<container id>]: <error>" — one line, found by :data:`FAILURE_PATTERN`.
FAILURE_MARKER = "SAMZA_CONTAINER_FAILED"
FAILURE_PATTERN = re.compile(FAILURE_MARKER + r"\[([^\]]*)\]: ([^\n]*)")
STOP_POLL_INTERVAL_S = 0.25
#: how long a container that reported an unretriable error waits for the driver's cancel
FATAL_CANCEL_GRACE_S = 5.0


class ContainerFailedError(SamzaError, RuntimeError):
    """A container of a spark-runner job failed; the text is marker + container id + error."""

    def __init__(self, container_id: str, error: str) -> None:
        one_line = " | ".join(part.strip() for part in str(error).splitlines() if part.strip())
        super().__init__(f"{FAILURE_MARKER}[{container_id}]: {one_line}")
        self.container_id = container_id
        self.error = one_line


def find_container_failure(text: str) -> tuple[str, str] | None:
    """(container id, error) of the last container failure mentioned in ``text`` (a Spark
    exception's message, which nests the Python traceback), or None."""
    found = FAILURE_PATTERN.findall(text or "")
    if not found:
        return None
    cid, error = found[-1]
    return cid, error.strip()


def is_unretriable(exc: BaseException) -> bool:
    """An error in ``exc``'s cause chain that a restart would meet again: bad config, a stream
    that does not exist, a serde that does not fit the data, an application that cannot be
    planned. (A task's own error, a lost connection, a killed worker: retried.)"""
    unretriable = (ConfigError, StreamNotFoundError, SerdeError, PlanningError, ApplicationError)
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return False
        if isinstance(seen, unretriable):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _control_request(url: str, token: str | None, body: bytes | None = None) -> urllib.request.Request:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")


def _report_fatal(control_url: str, token: str | None, container_id: str, error: str) -> bool:
    """Tell the driver; False when it could not be told (then Spark's retries end the job)."""
    body = json.dumps({"container": container_id, "error": error}).encode()
    try:
        with urllib.request.urlopen(_control_request(control_url.rstrip("/") + "/fatal", token, body), timeout=5.0):
            return True
    except Exception as exc:  # noqa: BLE001 - then Spark's retry ends the job, only later
        log.warning("container %s: could not report its fatal error to the driver: %s", container_id, exc)
        return False


def _poll_stop(control_url: str, token: str | None, stop: Callable[[], None], done: threading.Event) -> None:
    """Asks the driver's control endpoint whether to stop; a stop turns into a graceful
    container stop (finish in-flight work, commit, exit)."""
    while not done.wait(STOP_POLL_INTERVAL_S):
        try:
            with urllib.request.urlopen(_control_request(control_url, token), timeout=2.0) as response:
                if json.loads(response.read()).get("stop"):
                    stop()
                    return
        except Exception:  # noqa: BLE001 - a driver gone for good ends the job through Spark
            continue


def run_container(
    container_id: str,
    coordinator_url: str,
    control_url: str | None,
    secrets: dict[str, str],
) -> dict[str, Any]:
    """Run container ``container_id`` to its end; returns its summary as a dict. Raises
    :class:`ContainerFailedError` when it fails (at start-up or while running)."""
    os.environ[URL_ENV] = coordinator_url
    token = secrets.get(TOKEN_KEY) or None
    container: Any = None
    watcher: Any = None
    done = threading.Event()
    try:
        model = unmask(fetch_job_model(coordinator_url, token=token), secrets)
        config = model.config
        watcher = JobModelWatcher(coordinator_url, model.version, watch_interval_s(config), token=token).start()
        container = new_container(container_id, model, watcher)
        if control_url:
            threading.Thread(
                target=_poll_stop,
                args=(control_url, token, container.stop, done),
                name="spark-container-stop",
                daemon=True,
            ).start()
        _announce_host(config, container_id)
        summary = container.run()
    except BaseException as exc:  # noqa: BLE001 - re-raised with the container's coordinates
        summary = getattr(container, "summary", None)
        error = summary.error if summary is not None and summary.error else f"{type(exc).__name__}: {exc}"
        if control_url and is_unretriable(exc) and _report_fatal(control_url, token, container_id, error):
            # the driver cancels the stage on the report; failing the task before that lands
            # would have Spark resubmit the stage first, so give the cancel a moment to arrive
            time.sleep(FATAL_CANCEL_GRACE_S)
        raise ContainerFailedError(container_id, error) from exc
    finally:
        done.set()
        if watcher is not None:
            watcher.stop()
    return summary.to_dict()


def _announce_host(config: Any, container_id: str) -> None:
    """Host affinity (Samza design): tell the coordinator stream where this container runs. Best
    effort — a job does not fail because its locality hint could not be written."""
    try:
        write_container_host(config, container_id)
    except Exception as exc:  # noqa: BLE001
        log.warning("container %s: could not record its host: %s", container_id, exc)


def container_partition_fn(
    coordinator_url: str, control_url: str | None, secrets: dict[str, str]
) -> Callable[[Iterable[int]], Iterator[str]]:
    """The function for ``rdd.barrier().mapPartitions``: its partition id is the container id;
    yields the container's summary as JSON (plain strings cross the Python/JVM boundary safely)."""

    def run_partition(_: Iterable[int]) -> Iterator[str]:
        # pyspark (and its JVM gateway) loads only where Spark runs
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        container_id = str(context.partitionId())
        started = time.monotonic()
        summary = run_container(container_id, coordinator_url, control_url, secrets)
        summary.setdefault("elapsed_s", round(time.monotonic() - started, 3))
        yield json.dumps(summary, default=str)

    return run_partition
