"""What the ``job-coordinator`` CLI command runs: a JobCoordinator serving until stopped. (The
``coordinator-stream-writer`` command runs ``coordinator.stream.writer_tool``.)"""

from __future__ import annotations

import signal
import sys
import threading

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.coordinator.http import check_bind
from samza_dagster.coordinator.job_coordinator import JobCoordinator


def run_job_coordinator(config: Config, host: str | None = None, port: int | None = None) -> None:
    """Run a JobCoordinator until SIGINT or SIGTERM; prints its URL (a line ``SAMZA_COORDINATOR_URL=<url>``
    that scripts can eval) once it serves. ``host``/``port``: the command line's, over
    ``job.coordinator.http.host``/``.port``."""
    done = threading.Event()
    previous = {}

    def _stop(signum: int, frame: object) -> None:
        done.set()

    host = host or keys.JOB_COORDINATOR_HTTP_HOST.get(config)
    check_bind(
        host, keys.JOB_COORDINATOR_HTTP_TOKEN.get(config), where=f"--host / {keys.JOB_COORDINATOR_HTTP_HOST.name}"
    )
    if port is None:
        port = keys.JOB_COORDINATOR_HTTP_PORT.get(config)
    coordinator = JobCoordinator(config, host=host, port=port)
    url = coordinator.start()
    try:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, _stop)
        print(f"SAMZA_COORDINATOR_URL={url}", flush=True)
        print(
            f"job coordinator serving JobModel version {coordinator.job_model.version} at {url}",
            file=sys.stderr,
            flush=True,
        )
        while not done.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        coordinator.stop()
