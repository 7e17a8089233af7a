"""``job.factory.class=process``: one OS process per container.

The runner starts the JobCoordinator, then ``python -m samza_dagster.runtime.container_main``
per container with ``SAMZA_COORDINATOR_URL`` and ``SAMZA_CONTAINER_ID``; each process fetches
its JobModel over HTTP. The runner reports each container's exit (status and summary); when the
containers stop for a newer JobModel it starts them again on it, as every runner does
(:mod:`samza_dagster.runtime.runner`). ``stop()`` (and so the first Ctrl-C or SIGTERM of the
runner's process) sends SIGTERM, which each container turns into a graceful stop; a second
signal kills the container processes and exits. A container whose runner process is gone (killed
with SIGKILL) stops gracefully by itself (container_main.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.config.secrets import scrub, secrets_of
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.client import TOKEN_ENV, URL_ENV
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime.container_main import (
    CONTAINER_ID_ENV,
    PARENT_PID_ENV,
    PROGRESS_PATH_ENV,
    SUMMARY_PATH_ENV,
    read_positions,
    read_stall,
)
from samza_dagster.runtime.interrupts import STOP_SIGNALS
from samza_dagster.runtime.result import JobResult
from samza_dagster.runtime.runner import JobRunner


class ProcessJobRunner(JobRunner):
    runner_name = "process"

    def __init__(self, config: Config, *, host: str | None = None, python: str | None = None) -> None:
        super().__init__(config, host=host)
        self.python = python or sys.executable
        self.processes: dict[str, subprocess.Popen] = {}
        self._workdir: Path | None = None
        #: what the containers reported processing, kept over container runs (offsets are)
        self._positions: dict[SystemStreamPartition, str] = {}

    def live_positions(self) -> dict[SystemStreamPartition, str]:
        workdir = self._workdir
        if workdir is not None:
            for path in workdir.glob("progress-*.json"):
                self._positions.update(read_positions(str(path)))
        return dict(self._positions)

    def live_stalls(self) -> list[str]:
        workdir = self._workdir
        if workdir is None:
            return []
        return [stall for path in sorted(workdir.glob("progress-*.json")) if (stall := read_stall(str(path)))]

    def _stop_containers(self) -> None:
        for p in list(self.processes.values()):
            if p.poll() is None:
                p.terminate()

    def _abort(self, name: str) -> None:
        for p in list(self.processes.values()):
            if p.poll() is None:
                p.kill()
        super()._abort(name)

    def _open(self, result: JobResult, url: str) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="samza-process-runner-"))

    def _close(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)  # the containers' summary files, read already
            self._workdir = None

    def _run_containers(self, model: Any, url: str, result: JobResult) -> list[ContainerSummary]:
        assert self._workdir is not None
        secrets = secrets_of(self.config)
        paths = {cid: self._workdir / f"run-{result.runs}-container-{cid}.json" for cid in model.containers}
        self.processes = {
            cid: self._launch(cid, url, paths[cid], secrets)
            for cid in sorted(model.containers, key=lambda c: (len(c), c))
        }
        if self.stop_requested:
            self._stop_containers()
        stderr: dict[str, str] = {}
        readers = [
            threading.Thread(target=lambda c=cid, p=proc: stderr.__setitem__(c, p.stderr.read()), daemon=True)
            for cid, proc in self.processes.items()
        ]
        for t in readers:
            t.start()
        for proc in self.processes.values():
            proc.wait()
        for t in readers:
            t.join(5)
        summaries = []
        for cid, proc in self.processes.items():
            # a container's stderr or error may quote a config value: never hand a secret on
            text = scrub(stderr.get(cid, ""), secrets)
            summary = self._summary(cid, proc.returncode, paths[cid], text)
            if summary.error:
                summary.error = scrub(summary.error, secrets)
            summaries.append(summary)
        return summaries

    def _launch(self, cid: str, url: str, summary_path: Path, secrets: dict[str, str]) -> subprocess.Popen:
        env = dict(os.environ)
        env[URL_ENV] = url
        env[CONTAINER_ID_ENV] = cid
        env[SUMMARY_PATH_ENV] = str(summary_path)
        env[PROGRESS_PATH_ENV] = str(summary_path.parent / f"progress-{cid}.json")
        env[PARENT_PID_ENV] = str(os.getpid())
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in [root, os.getcwd(), env.get("PYTHONPATH", "")] if p)
        token = self._token()
        if token:
            env[TOKEN_ENV] = token
        # a session of its own: a terminal's Ctrl-C (SIGINT to the whole foreground process
        # group) reaches the runner alone, which stops each container with one SIGTERM; were the
        # containers in the group too, that SIGTERM would be their second signal and end them at
        # once, without the final commit
        #
        # The stop signals are blocked while the process is made, so it starts with them blocked
        # (a signal mask survives fork and exec): a SIGTERM that reaches it while it is still
        # starting — importing, fetching its job model — waits until its handler is installed
        # (container_main unblocks them then) instead of killing it without a summary or commit.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            proc = subprocess.Popen(
                [self.python, "-m", "samza_dagster.runtime.container_main"],
                env=env,
                stdin=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(secrets))
        proc.stdin.close()
        return proc

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
