"""Where the job coordinator listens: ``job.coordinator.http.host`` on every runner (the
documented scrape set-up binds 0.0.0.0 so Prometheus on another machine reaches ``/metrics``),
and a bind other machines reach without ``job.coordinator.http.token`` refused before anything
starts — by ``run``, the ``job-coordinator`` command and the pre-flight everything shares.

Reaching the coordinator at 127.0.0.2 tells the two binds apart on any Linux machine: a server
bound to 127.0.0.1 is not listening there, one bound to 0.0.0.0 is."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from jobs.stream_helpers import create_streams, produce
from samza_dagster.config import Config, ConfigError
from samza_dagster.runtime import create_runner
from samza_dagster.runtime.preflight import check_job_config
from samza_dagster.system.errors import StreamNotFoundError
from support.waiting import wait_until
from tests import REPO
from tests.apps.harness import read_checkpoints

TOKEN = "s3cret"
BIN = Path(sys.executable).parent / "samza-dagster"


def _config(tmp_path: Path, runner: str, **extra: str) -> Config:
    return Config(
        {
            "job.name": f"bind-{runner}",
            "job.factory.class": runner,
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.class": "tests.apps.tasks:NoOpTask",
            "task.inputs": "log.input",
            "task.commit.ms": "100",
            **extra,
        }
    )


def _healthz(host: str, port: int) -> int:
    request = urllib.request.Request(f"http://{host}:{port}/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status


def _checkpointed(config: Config) -> bool:
    try:
        return bool(read_checkpoints(config))
    except StreamNotFoundError:  # not yet created by the container
        return False


@pytest.mark.parametrize("runner", ["thread", "process"])
@pytest.mark.parametrize("bind", ["0.0.0.0", "127.0.0.1"])
def test_every_runner_binds_the_configured_host(tmp_path, runner, bind):
    config = _config(tmp_path, runner, **{"job.coordinator.http.host": bind, "job.coordinator.http.token": TOKEN})
    create_streams(config, {"input": 1})
    produce(config, "input", [(None, b"x", None)])
    job = create_runner(config)
    box: dict = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", job.run()), daemon=True)
    worker.start()
    try:
        url = wait_until(lambda: job.coordinator is not None and job.coordinator.url, 120, what="the coordinator")
        # the containers run (their first commit is in): a stop now is a graceful one
        wait_until(lambda: _checkpointed(config), 120, what="the first checkpoint")
        port = urllib.parse.urlsplit(url).port
        assert port is not None
        assert _healthz("127.0.0.1", port) == 200
        if bind == "0.0.0.0":
            assert _healthz("127.0.0.2", port) == 200  # listening on every address
        else:
            with pytest.raises(urllib.error.URLError):
                _healthz("127.0.0.2", port)
    finally:
        job.stop()
        worker.join(120)
    assert box["result"].succeeded, box["result"].summary_line()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_a_bind_other_machines_reach_needs_a_token(tmp_path, host):
    config = _config(tmp_path, "thread", **{"job.coordinator.http.host": host})
    with pytest.raises(ConfigError) as refused:
        check_job_config(config)
    assert refused.value.key == "job.coordinator.http.host"
    assert repr(host) in str(refused.value) and "job.coordinator.http.token" in str(refused.value)
    check_job_config(config.with_overrides({"job.coordinator.http.token": TOKEN}))
    check_job_config(config.with_overrides({"job.coordinator.http.host": "localhost"}))


def test_run_and_job_coordinator_refuse_an_open_bind_without_a_token(tmp_path):
    properties = tmp_path / "job.properties"
    properties.write_text(
        "job.name=open\njob.factory.class=thread\ntask.class=tests.apps.tasks:NoOpTask\ntask.inputs=log.input\n"
        "job.coordinator.http.host=0.0.0.0\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    run = cli("run", "--config-path", str(properties))
    assert run.returncode == 2 and "'0.0.0.0'" in run.stderr and "job.coordinator.http.token" in run.stderr
    assert not (tmp_path / ".samza-log").exists()  # refused before anything was created
    served = cli("job-coordinator", "--config-path", str(properties), "--host", "::")
    assert served.returncode == 2 and "--host" in served.stderr and "job.coordinator.http.token" in served.stderr
