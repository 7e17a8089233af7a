"""samza-dagster in a user's own Dagster project, from outside this checkout: a new dg project in
a temporary directory (the files ``create-dagster project`` writes), its own virtualenv, then the
commands of the README's "In your own Dagster project" section run verbatim — install
samza-dagster from the checkout, list and scaffold the component, ``dg check defs``, the
instance (``DAGSTER_HOME`` with the one-live-run guard), write input, ``dg launch`` — and the
output asset is materialized with its metadata in the project's Dagster instance; ``dg dev``
started afterwards in the same shell shows that run and materialization.

The project's virtualenv sees this venv's packages (Dagster, PySpark, ...) through a ``.pth``
file, as a user's environment already has them, so the README's ``pip install`` builds and
installs samza-dagster itself from the checkout (not the editable install of this venv).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import site
import socket
import subprocess
import sys
import urllib.request
from importlib import metadata
from pathlib import Path

import dagster as dg

from support.waiting import wait_until
from tests import REPO

PYPROJECT = """\
[project]
name = "my_streams"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["dagster"]

[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "my_streams"
registry_modules = ["my_streams.components.*"]
"""

DEFINITIONS = """\
from pathlib import Path

from dagster import definitions, load_from_defs_folder


@definitions
def defs():
    return load_from_defs_folder(path_within_project=Path(__file__).parent.parent.parent)
"""


def readme_commands() -> str:
    """The bash block of the README's "In your own Dagster project" section that works in the
    project (the one before it makes the project with create-dagster: new_project writes those
    files here, with no download)."""
    text = (REPO / "README.md").read_text()
    section = text.split("## In your own Dagster project", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```bash\n(.*?)```", section, re.S) if 'pip install "$SAMZA_DAGSTER"' in b]
    return block


def new_project(root: Path) -> dict[str, str]:
    """A dg project as create-dagster makes it, its virtualenv, the project installed in it;
    returns the environment of a shell with that virtualenv active."""
    package = root / "src" / "my_streams"
    (package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    (purelib,) = venv.glob("lib/python*/site-packages")
    (purelib / "_dagster_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _console_scripts(venv, ("dagster", "dagster-webserver", "dagster-dg-cli"))
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SAMZA_LOG_PATH", "PYTHONHOME")}
    env.update(
        VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:{env['PATH']}", DAGSTER_HOME=str(home), SAMZA_DAGSTER=str(REPO)
    )
    subprocess.run(["pip", "install", "-q", "-e", "."], cwd=root, env=env, check=True, timeout=300, capture_output=True)
    return env


def _console_scripts(venv: Path, dists: tuple[str, ...]) -> None:
    """The commands (``dg``, ``dagster``) of the packages the environment sees through the .pth,
    run by its own interpreter — what pip writes when it installs them."""
    python = venv / "bin" / "python"
    for dist in dists:
        for ep in metadata.distribution(dist).entry_points.select(group="console_scripts"):
            module, _, attr = ep.value.partition(":")
            script = venv / "bin" / ep.name
            script.write_text(
                f"#!{python}\nimport sys\nfrom {module} import {attr.split('.')[0]}\n"
                f"if __name__ == '__main__':\n    sys.exit({attr}())\n"
            )
            script.chmod(0o755)


def test_readme_commands_in_a_new_dagster_project(tmp_path):
    root = tmp_path / "my-streams"
    root.mkdir()
    env = new_project(root)
    script = "set -euo pipefail\n" + readme_commands()
    done = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    # the package came from the checkout into the project's own environment
    where = subprocess.run(
        ["python", "-c", "import samza_dagster; print(samza_dagster.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(root / ".venv")), where
    assert "samza_dagster.orchestration.SamzaJobComponent" in out  # dg list components
    assert "All definitions loaded successfully" in out  # dg check defs
    component = root / "src" / "my_streams" / "defs" / "clicks"
    assert "type: samza_dagster.orchestration.SamzaJobComponent" in (component / "defs.yaml").read_text()

    # the scaffolded task imports what the README's own task does
    assert (
        "from samza_dagster.system import OutgoingMessageEnvelope, SystemStream" in (component / "task.py").read_text()
    )
    # the README's DAGSTER_HOME: one instance for dg launch and dg dev, with the one-live-run guard
    home = root / ".dagster"
    assert "tag_concurrency_limits" in (home / "dagster.yaml").read_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        assert run.status is dg.DagsterRunStatus.SUCCESS
        event = instance.get_latest_materialization_event(dg.AssetKey(["clicks", "output"]))
        assert event is not None and event.run_id == run.run_id
        metadata = event.asset_materialization.metadata
        assert metadata["messages_written"].value == 3
        assert metadata["job_status"].value == "completed"
        assert metadata["messages_processed"].value == 3

    # `dg dev` afterwards, in the same shell: the UI shows the run and the materialization
    shell = {**env, "SAMZA_LOG_PATH": str(root / ".samza-log"), "DAGSTER_HOME": str(home)}
    with _dg_dev(root, shell) as base:
        runs = _graphql(base, "query { runsOrError { ... on Runs { results { runId status } } } }")
        assert runs["runsOrError"]["results"] == [{"runId": run.run_id, "status": "SUCCESS"}]
        asset = _graphql(
            base,
            'query { assetOrError(assetKey: {path: ["clicks", "output"]}) { ... on Asset {'
            " assetMaterializations(limit: 1) { runId } } } }",
        )
        assert asset["assetOrError"]["assetMaterializations"] == [{"runId": run.run_id}]


@contextlib.contextmanager
def _dg_dev(root: Path, env: dict[str, str]):
    """``dg dev`` of the project in its own process group, stopped with a signal to the group."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(root / "dg-dev.log", "wb")
    proc = subprocess.Popen(
        ["dg", "dev", "--host", "127.0.0.1", "--port", str(port)],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _serves(base, proc), 120, what="dg dev to serve")
        wait_until(lambda: _location_loaded(base), 120, what="the project's code location to load")
        yield base
    finally:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def _serves(base: str, proc: subprocess.Popen) -> bool:
    assert proc.poll() is None, f"dg dev exited with {proc.returncode}"
    try:
        with urllib.request.urlopen(f"{base}/server_info", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _location_loaded(base: str) -> bool:
    entries = _graphql(
        base,
        "query { workspaceOrError { ... on Workspace { locationEntries { locationOrLoadError { __typename } } } } }",
    )["workspaceOrError"]["locationEntries"]
    return bool(entries) and all(e["locationOrLoadError"] for e in entries)


def _graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert not answer.get("errors"), answer["errors"]
    return answer["data"]
