"""A real Spark standalone cluster on 127.0.0.1 from the pip-installed pyspark (no download): one
master and one worker started with ``bin/spark-class``, as an operator would start them, and
stopped (with every executor they launched) when done. Used by tests/runtime/test_runner_spark_cluster.py;
the recipe is in docs/operations.md, "Running on a Spark standalone cluster"."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass
class SparkStandaloneCluster:
    master_url: str
    master_ui: str
    work_dir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def alive_workers(self) -> list[dict]:
        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as response:
            state = json.loads(response.read())
        return [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]

    def executor_pids(self) -> list[int]:
        """The executor JVMs the worker launched (``CoarseGrainedExecutorBackend``)."""
        found = subprocess.run(
            ["pgrep", "-f", "org.apache.spark.executor.CoarseGrainedExecutorBackend"], capture_output=True, text=True
        )
        return [int(pid) for pid in found.stdout.split()]

    def executors_launched(self) -> int:
        """Executors the worker has launched for all applications (one directory each)."""
        work = self.work_dir / "work"
        return sum(1 for app in work.iterdir() for _ in app.iterdir()) if work.exists() else 0

    def stop(self) -> None:
        for proc in self.processes:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for proc in self.processes:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(5)


def start_cluster(
    work_dir: Path, *, cores: int = 2, memory: str = "2g", timeout_s: float = 90.0, python_path: list[str] | None = None
) -> SparkStandaloneCluster:
    """Start a master and one worker; returns once the worker has registered (ALIVE)."""
    import pyspark

    work_dir.mkdir(parents=True, exist_ok=True)
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([*(python_path or []), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep),
        # the JVM ignores TMPDIR: the daemons' temporary files (native libraries) go to the cluster's dir
        "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={work_dir}",
    }
    cluster = SparkStandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", work_dir)
    commands = [
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        [
            "org.apache.spark.deploy.worker.Worker",
            cluster.master_url,
            "--host",
            "127.0.0.1",
            "--cores",
            str(cores),
            "--memory",
            memory,
            "--webui-port",
            str(worker_ui),
            "--work-dir",
            str(work_dir / "work"),
        ],
    ]
    try:
        for name, command in zip(("master", "worker"), commands, strict=True):
            log = open(work_dir / f"{name}.log", "wb")
            cluster.processes.append(
                subprocess.Popen(
                    [str(spark_class()), *command],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            if name == "master":
                _wait(lambda: _answers(cluster.master_ui), f"the master UI at {cluster.master_ui}", timeout_s, cluster)
        _wait(lambda: cluster.alive_workers(), "the worker to register with the master", timeout_s, cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/json/", timeout=2):
            return True
    except OSError:
        return False


def _wait(condition, what: str, timeout_s: float, cluster: SparkStandaloneCluster) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in cluster.processes:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"a Spark cluster process exited ({proc.returncode}) while waiting for {what}; "
                    f"see {cluster.work_dir}/*.log"
                )
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}; see {cluster.work_dir}/*.log")
