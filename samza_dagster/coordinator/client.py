"""The container's side of the job coordinator: fetch the JobModel over HTTP, announce the
container's host on the coordinator stream, and notice when a newer JobModel is served."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import urllib.error
import urllib.request

from samza_dagster.config.config import Config
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.coordinator.stream.messages import CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter
from samza_dagster.errors import SamzaError

log = logging.getLogger(__name__)

URL_ENV = "SAMZA_COORDINATOR_URL"
TOKEN_ENV = "SAMZA_COORDINATOR_TOKEN"
DEFAULT_RETRIES = 5
DEFAULT_BACKOFF_S = 0.2
DEFAULT_TIMEOUT_S = 5.0
MAX_BACKOFF_S = 5.0


class CoordinatorUnreachableError(SamzaError, ConnectionError):
    """The job coordinator did not answer within the retry budget; names the URL."""

    def __init__(self, url: str, attempts: int, elapsed_s: float, cause: BaseException | None) -> None:
        super().__init__(
            f"job coordinator at {url} unreachable after {attempts} attempts over {elapsed_s:.1f} s: {cause}"
        )
        self.url = url
        self.attempts = attempts


class CoordinatorRequestError(SamzaError, RuntimeError):
    """The job coordinator answered with an error that retrying will not fix (401, 404...)."""

    def __init__(self, url: str, status: int, body: str) -> None:
        super().__init__(f"job coordinator at {url} answered {status}: {body}")
        self.url = url
        self.status = status


def _resolve_url(url: str | None) -> str:
    resolved = url or os.environ.get(URL_ENV)
    if not resolved:
        raise CoordinatorUnreachableError(f"${URL_ENV} (not set)", 0, 0.0, ValueError("no coordinator URL given"))
    return resolved.rstrip("/")


def _get_json(url: str, token: str | None, retries: int, backoff_s: float, timeout_s: float) -> dict:
    """GET with retries on connection errors and 5xx; exponential backoff, capped."""
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    started = time.monotonic()
    attempts = 0
    last_error: BaseException | None = None
    delay = backoff_s
    while attempts <= retries:
        attempts += 1
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")[:500]
            if exc.code < 500:
                raise CoordinatorRequestError(url, exc.code, body) from None
            last_error = exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last_error = exc
        if attempts <= retries:
            time.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)
    raise CoordinatorUnreachableError(url, attempts, time.monotonic() - started, last_error)


def fetch_job_model(
    url: str | None = None,
    *,
    token: str | None = None,
    retries: int = DEFAULT_RETRIES,
    backoff_s: float = DEFAULT_BACKOFF_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> JobModel:
    """The JobModel the coordinator at ``url`` (default ``$SAMZA_COORDINATOR_URL``) serves.

    Retries ``retries`` times, sleeping ``backoff_s`` doubling each time, then raises
    :class:`CoordinatorUnreachableError` naming the URL. The token defaults to
    ``$SAMZA_COORDINATOR_TOKEN``. Secrets in the served config are masked, so a container reads
    secret values from its own config.
    """
    base = _resolve_url(url)
    return JobModel.from_dict(_get_json(base + "/", token, retries, backoff_s, timeout_s))


def poll_version(
    url: str | None = None,
    *,
    token: str | None = None,
    retries: int = 0,
    backoff_s: float = DEFAULT_BACKOFF_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> int:
    """The version of the JobModel currently served (one small request to ``/healthz``)."""
    base = _resolve_url(url)
    return int(_get_json(base + "/healthz", token, retries, backoff_s, timeout_s)["version"])


def write_container_host(config: Config, container_id: str, hostname: str | None = None) -> None:
    """Record on the coordinator stream that ``container_id`` runs on ``hostname`` (default: this
    machine), so the next JobModel reports it in ``previous_hosts`` (host affinity)."""
    message = CoordinatorStreamMessage.set_container_host_assignment(
        f"SamzaContainer-{container_id}", str(container_id), hostname or socket.gethostname()
    )
    with CoordinatorStreamWriter(config, message.source) as writer:
        writer.send(message)


class JobModelWatcher:
    """Notices a JobModel newer than the one a container runs.

    Either call :meth:`check` (does at most one request per ``interval_s``; never raises for an
    unreachable coordinator — it logs and answers False), or :meth:`start` a background thread and
    read :attr:`new_version_available`, a plain attribute read cheap enough for the run loop.
    """

    def __init__(
        self, url: str | None, current_version: int, interval_s: float = 5.0, *, token: str | None = None
    ) -> None:
        self.url = _resolve_url(url)
        self.current_version = current_version
        self.interval_s = interval_s
        self.token = token
        self.latest_version = current_version
        self.new_version_available = False
        self._last_check = float("-inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self, *, force: bool = False) -> bool:
        now = time.monotonic()
        if not force and now - self._last_check < self.interval_s:
            return self.new_version_available
        self._last_check = now
        try:
            version = poll_version(self.url, token=self.token)
        except (CoordinatorUnreachableError, CoordinatorRequestError) as exc:
            log.warning("could not check the JobModel version: %s", exc)
            return self.new_version_available
        self.latest_version = max(self.latest_version, version)
        if version > self.current_version:
            self.new_version_available = True
        return self.new_version_available

    def start(self) -> JobModelWatcher:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="job-model-watcher", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self.check(force=True):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + DEFAULT_TIMEOUT_S)
            self._thread = None
