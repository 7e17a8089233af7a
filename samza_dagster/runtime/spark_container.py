"""The executor side of the spark runner: one Spark barrier task is one SamzaContainer.

The function :func:`container_partition_fn` returns is shipped (pickled by cloudpickle) to the
executors and run by ``rdd.barrier().mapPartitions(...)``. Everything it needs arrives in the
closure — the coordinator URL, the runner's control URL, the driver's secret values — because an
executor shares nothing with the driver but the network.

A container that fails raises :class:`ContainerFailedError`, whose text carries a marker the driver
finds again inside the Py4J/Spark exception, so the job's failure names the container and the
container's own error instead of a JVM stack trace. Raising (rather than returning a failed
summary) is what makes Spark's barrier-stage retry restart the containers.
"""

from __future__ import annotations

from samza_dagster.errors import SamzaError
import json
import logging
import os
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

#: "SAMZA_CONTAINER_FAILED[<container id>]: <error>" — one line, found by :data:`FAILURE_PATTERN`.
FAILURE_MARKER = "SAMZA_CONTAINER_FAILED"
FAILURE_PATTERN = re.compile(FAILURE_MARKER + r"\[([^\]]*)\]: ([^\n]*)")
STOP_POLL_INTERVAL_S = 0.25


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


def _poll_stop(control_url: str, stop: Callable[[], None], done: threading.Event) -> None:
    """Asks the driver's control endpoint whether to stop; a stop turns into a graceful
    container stop (finish in-flight work, commit, exit)."""
    while not done.wait(STOP_POLL_INTERVAL_S):
        try:
            with urllib.request.urlopen(control_url, timeout=2.0) as response:
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
    from samza_dagster.coordinator.client import URL_ENV, JobModelWatcher, fetch_job_model
    from samza_dagster.runtime.common import new_container, unmask, watch_interval_s

    os.environ[URL_ENV] = coordinator_url
    container: Any = None
    watcher: Any = None
    done = threading.Event()
    try:
        model = unmask(fetch_job_model(coordinator_url), secrets)
        config = model.config
        watcher = JobModelWatcher(coordinator_url, model.version, watch_interval_s(config)).start()
        container = new_container(container_id, model, watcher)
        if control_url:
            threading.Thread(
                target=_poll_stop, args=(control_url, container.stop, done), name="spark-container-stop", daemon=True
            ).start()
        _announce_host(config, container_id)
        summary = container.run()
    except BaseException as exc:  # noqa: BLE001 - re-raised with the container's coordinates
        summary = getattr(container, "summary", None)
        error = summary.error if summary is not None and summary.error else f"{type(exc).__name__}: {exc}"
        raise ContainerFailedError(container_id, error) from exc
    finally:
        done.set()
        if watcher is not None:
            watcher.stop()
    return summary.to_dict()


def _announce_host(config: Any, container_id: str) -> None:
    """Host affinity (Samza design): tell the coordinator stream where this container runs. Best
    effort — a job does not fail because its locality hint could not be written."""
    from samza_dagster.coordinator.client import write_container_host

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
        from pyspark import BarrierTaskContext

        context = BarrierTaskContext.get()
        container_id = str(context.partitionId())
        started = time.monotonic()
        summary = run_container(container_id, coordinator_url, control_url, secrets)
        summary.setdefault("elapsed_s", round(time.monotonic() - started, 3))
        yield json.dumps(summary, default=str)

    return run_partition
