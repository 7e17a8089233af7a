"""One container as an OS process: ``python -m samza_dagster.runtime.container_main``.

Environment: ``SAMZA_COORDINATOR_URL`` (where the JobModel is served), ``SAMZA_CONTAINER_ID``,
optionally ``SAMZA_COORDINATOR_TOKEN`` and ``SAMZA_SUMMARY_PATH`` (the summary is written there
as JSON). Secret config values, masked in the served model, arrive as a JSON object on stdin
(never in the environment or argv, which other users can read).

Exit status: 0 completed or shut down, 3 stopped for a newer JobModel, 1 failed, 2 bad config.
The first SIGTERM/SIGINT stops the container gracefully (finish in-flight work, commit, exit); a
second one exits at once with status 130, naming what was not committed. With
``SAMZA_PARENT_PID`` set (the process runner sets it), the container also stops gracefully when
that process is gone: a runner killed with SIGKILL leaves no container running on.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from functools import partial

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.client import JobModelWatcher, fetch_job_model
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime.common import new_container, unmask, watch_interval_s
from samza_dagster.runtime.interrupts import STOP_SIGNALS, describe_uncommitted, exit_now, install_stop_handlers
from samza_dagster.runtime.restarts import RestartingContainer

CONTAINER_ID_ENV = "SAMZA_CONTAINER_ID"
SUMMARY_PATH_ENV = "SAMZA_SUMMARY_PATH"
PARENT_PID_ENV = "SAMZA_PARENT_PID"
#: where the container keeps its last processed offsets for the runner's progress display
PROGRESS_PATH_ENV = "SAMZA_PROGRESS_PATH"
#: how often it rewrites them
PROGRESS_S = 1.0

log = logging.getLogger(__name__)
EXIT_BAD_CONFIG = 2
#: how often a container checks that its runner process is still there
PARENT_CHECK_S = 1.0


def _stop_when_parent_exits(container: RestartingContainer, parent_pid: int) -> None:
    """Stop ``container`` gracefully once this process is no longer ``parent_pid``'s child (the
    parent died and the process was re-parented)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            if container.stop_event.wait(PARENT_CHECK_S):
                return
        logging.getLogger(__name__).warning(
            "container %s: its runner process %d is gone; stopping gracefully", container.container_id, parent_pid
        )
        container.stop()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


#: beside the positions file: the container's stall (SamzaContainer.stall), empty when none
STALL_SUFFIX = ".stall"


def _report_positions(container: RestartingContainer, path: str) -> None:
    """Every PROGRESS_S, the container's last processed offsets to ``path`` and its stall to
    ``path`` + STALL_SUFFIX (each written whole and renamed into place, so the runner never reads
    half a file), until the container stops."""

    def write() -> None:
        tmp = f"{path}.tmp"
        while True:
            stopping = container.stop_event.wait(PROGRESS_S)
            try:
                positions = [[s.system, s.stream, s.partition, o] for s, o in container.positions().items()]
                with open(tmp, "w") as f:
                    json.dump(positions, f)
                os.replace(tmp, path)
                with open(tmp, "w") as f:  # the stall beside them ("" when none)
                    f.write(container.stall() or "")
                os.replace(tmp, path + STALL_SUFFIX)
            except OSError:  # progress is a courtesy: the runner falls back to checkpoints
                log.debug("container progress not written to %s", path, exc_info=True)
            if stopping:
                return

    threading.Thread(target=write, name="samza-container-progress", daemon=True).start()


def read_stall(path: str) -> str | None:
    """The stall :func:`_report_positions` wrote beside the positions at ``path``, if any."""
    try:
        with open(path + STALL_SUFFIX) as f:
            return f.read().strip() or None
    except OSError:
        return None


def read_positions(path: str) -> dict[SystemStreamPartition, str]:
    """What :func:`_report_positions` wrote (empty when nothing was written yet)."""
    try:
        with open(path) as f:
            return {SystemStreamPartition(s, t, int(p)): str(o) for s, t, p, o in json.load(f)}
    except (OSError, ValueError, TypeError):
        return {}


def main() -> int:
    logging.basicConfig(
        level=os.environ.get("SAMZA_LOG_LEVEL", "WARNING"),
        format="%(asctime)s %(levelname)s [container %(process)d] %(name)s: %(message)s",
    )

    container_id = os.environ.get(CONTAINER_ID_ENV)
    summary_path = os.environ.get(SUMMARY_PATH_ENV)
    secrets: dict[str, str] = {}
    if not sys.stdin.isatty():
        raw = sys.stdin.read()
        if raw.strip():
            secrets = json.loads(raw)
    container = None
    watcher = None
    status_code = 1
    summary = None
    try:
        if not container_id:
            raise ConfigError(f"environment variable {CONTAINER_ID_ENV} is not set")
        model = unmask(fetch_job_model(), secrets)
        watcher = JobModelWatcher(None, model.version, watch_interval_s(model.config)).start()
        container = RestartingContainer(
            partial(new_container, container_id, model, watcher), keys.JOB_CONTAINER_RETRY_COUNT.get(model.config)
        )
        running = container
        install_stop_handlers(
            lambda _name: running.stop(),
            lambda name: exit_now(
                f"container {container_id}: {name} again: exiting at once, without the final "
                f"commit. {describe_uncommitted([running])}"
            ),
        )
        # the process runner starts us with the stop signals blocked (process_runner.py): one
        # that came while we were starting is delivered now, to the handler
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        parent = os.environ.get(PARENT_PID_ENV)
        if parent:
            _stop_when_parent_exits(container, int(parent))
        progress = os.environ.get(PROGRESS_PATH_ENV)
        if progress:
            _report_positions(container, progress)
        summary = container.run()
        status_code = summary.status.exit_code
    except ConfigError as exc:
        summary = ContainerSummary(container_id or "?", ContainerStatus.FAILED, error=f"ConfigError: {exc}")
        status_code = EXIT_BAD_CONFIG
    except BaseException as exc:  # noqa: BLE001 - reported through the summary and exit status
        summary = getattr(container, "summary", None) or ContainerSummary(
            container_id or "?", ContainerStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
        )
        status_code = 1
    finally:
        if watcher is not None:
            watcher.stop()
    if summary_path and summary is not None:
        with open(summary_path, "w") as f:
            json.dump(summary.to_dict(), f)
    print(summary.one_line() if summary is not None else "no summary", file=sys.stderr)
    return status_code


if __name__ == "__main__":
    sys.exit(main())
