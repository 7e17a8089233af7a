"""``job.factory.class=process``: one OS process per container.

The runner starts the JobCoordinator, then ``python -m samza_dagster.runtime.container_main``
per container with ``SAMZA_COORDINATOR_URL`` and ``SAMZA_CONTAINER_ID``; each process fetches
its JobModel over HTTP. The runner restarts none: it reports each container's exit (status and
summary). ``stop()`` sends SIGTERM, which each container turns into a graceful stop.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.secrets import scrub
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.runtime.common import prepare_job, secrets_of
from samza_dagster.runtime.container_main import CONTAINER_ID_ENV, SUMMARY_PATH_ENV
from samza_dagster.runtime.result import JobResult

log = logging.getLogger(__name__)


class ProcessJobRunner:
    def __init__(self, config: Config, *, host: str = "127.0.0.1", python: str | None = None) -> None:
        self.config = config
        self.host = host
        self.python = python or sys.executable
        self.processes: dict[str, subprocess.Popen] = {}
        self._stopped = threading.Event()
        self.coordinator: Any = None

    def _token(self) -> str | None:
        """The coordinator's bearer token, if the job configures one."""
        from samza_dagster.coordinator.http import TOKEN_KEY

        return self.config.get_str(TOKEN_KEY) or None

    def stop(self) -> None:
        self._stopped.set()
        for p in list(self.processes.values()):
            if p.poll() is None:
                p.terminate()

    def run(self) -> JobResult:
        from samza_dagster.coordinator.client import TOKEN_ENV, URL_ENV
        from samza_dagster.coordinator.job_coordinator import JobCoordinator

        started = time.monotonic()
        result = JobResult(JobConfig(self.config).name, "process")
        prepared = prepare_job(self.config)
        coordinator = self.coordinator = JobCoordinator(
            prepared.config, host=self.host, input_streams=prepared.input_streams, exclude=prepared.exclude
        )
        url = coordinator.start()
        secrets = json.dumps(secrets_of(self.config))
        workdir = Path(tempfile.mkdtemp(prefix="samza-process-runner-"))
        try:
            model = coordinator.job_model
            result.model_version = model.version
            result.runs = 1
            token = self._token()
            paths: dict[str, Path] = {}
            root = str(Path(__file__).resolve().parents[2])
            for cid in sorted(model.containers, key=lambda c: (len(c), c)):
                env = dict(os.environ)
                env[URL_ENV] = url
                env[CONTAINER_ID_ENV] = cid
                env[SUMMARY_PATH_ENV] = str(paths.setdefault(cid, workdir / f"container-{cid}.json"))
                env["PYTHONPATH"] = os.pathsep.join(p for p in [root, os.getcwd(), env.get("PYTHONPATH", "")] if p)
                if token:
                    env[TOKEN_ENV] = token
                proc = subprocess.Popen(
                    [self.python, "-m", "samza_dagster.runtime.container_main"],
                    env=env, stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )
                assert proc.stdin is not None
                proc.stdin.write(secrets)
                proc.stdin.close()
                self.processes[cid] = proc
            if self._stopped.is_set():
                self.stop()
            stderr: dict[str, str] = {}
            readers = [
                threading.Thread(target=lambda c=cid, p=proc: stderr.__setitem__(c, p.stderr.read()), daemon=True)
                for cid, proc in self.processes.items()
            ]
            for t in readers:
                t.start()
            for cid, proc in self.processes.items():
                proc.wait()
            for t in readers:
                t.join(5)
            for cid, proc in self.processes.items():
                # a container's stderr or error may quote a config value: never hand a secret on
                text = scrub(stderr.get(cid, ""), secrets_of(self.config))
                summary = self._summary(cid, proc.returncode, paths[cid], text)
                if summary.error:
                    summary.error = scrub(summary.error, secrets_of(self.config))
                result.summaries.append(summary)
            result._set_failure()
        finally:
            coordinator.stop()
            shutil.rmtree(workdir, ignore_errors=True)  # the containers' summary files, read above
        result.elapsed_s = time.monotonic() - started
        log.info("%s", result.summary_line())
        return result

    @staticmethod
    def _summary(cid: str, code: int, path: Path, stderr: str) -> ContainerSummary:
        if path.exists():
            try:
                summary = ContainerSummary.from_dict(json.loads(path.read_text()))
                summary.metrics["exit_code"] = code
                return summary
            except (ValueError, KeyError):
                pass
        tail = " | ".join(line for line in stderr.strip().splitlines()[-5:])
        return ContainerSummary(
            cid, ContainerStatus.FAILED, error=f"container process exited with status {code} without a summary: {tail}"
        )


def run_process_job(config: Config, **kwargs: Any) -> JobResult:
    return ProcessJobRunner(config, **kwargs).run()
