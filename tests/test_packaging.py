"""What ``pip install samza-dagster`` does to a user's Dagster project: the Dagster requirement is
a range that keeps the project's newer 1.13 patch release (an exact pin downgraded it, and pip
printed an ERROR about the project's own pin), and nothing installed with the package pins
Dagster to one release of its own; ``dg`` comes with the ``dg`` extra (the checkout's scripts)."""

from __future__ import annotations

import importlib.metadata
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from tests import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_dagster_is_a_range_that_keeps_a_projects_newer_patch_release():
    core = [Requirement(text) for text in PROJECT["dependencies"]]
    dagster = [r for r in core if r.name == "dagster"]
    assert len(dagster) == 1
    installed = Version(importlib.metadata.version("dagster"))
    newer = [Version(f"{installed.major}.{installed.minor}.{installed.micro + k}") for k in (1, 2, 20)]
    assert dagster[0].specifier.contains(installed)
    assert all(dagster[0].specifier.contains(v) for v in newer), dagster[0]
    # a core dependency that itself pins dagster to one release (dagster-dg-cli, dagster-webserver
    # do: their own) would pull the project's Dagster to that release, whatever our range says
    for requirement in core:
        if requirement.name == "dagster":
            continue
        for text in importlib.metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            if needed.name == "dagster" and needed.marker is None:
                assert not any(s.operator == "==" for s in needed.specifier), (requirement.name, text)


def test_dg_comes_with_the_dg_extra_and_the_checkouts_scripts_install_it():
    extra = [Requirement(text) for text in PROJECT["optional-dependencies"]["dg"]]
    assert {"dagster-dg-cli", "dagster-webserver"} <= {r.name for r in extra}
    installed = Version(importlib.metadata.version("dagster"))
    assert all(r.specifier.contains(installed) for r in extra)
    for script in ("demo", "test"):
        text = (REPO / "scripts" / script).read_text()
        setup = next(line for line in text.splitlines() if "setup-venv.sh" in line and line.startswith("source"))
        assert "dg" in setup.split('"')[-2].split(","), setup


def test_pip_installs_it_beside_the_newest_dagster_release_without_a_conflict(tmp_path):
    """The own-project walk's ``pip install "$SAMZA_DAGSTER"`` into a project on the newest
    Dagster 1.13 release on the index, resolved by pip itself (a dry run: nothing is installed)."""
    import json
    import re
    import subprocess
    import sys

    pip = [sys.executable, "-m", "pip"]
    listed = subprocess.run([*pip, "index", "versions", "dagster"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    installed = Version(importlib.metadata.version("dagster"))
    available = [Version(v) for v in re.search(r"Available versions: (.*)", listed.stdout).group(1).split(", ")]
    newest = max(v for v in available if (v.major, v.minor) == (installed.major, installed.minor))
    report = tmp_path / "report.json"
    done = subprocess.run(
        [*pip, "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
        + [f"dagster=={newest}", str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr[-3000:]
    chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert chosen["dagster"] == str(newest) and "samza-dagster" in chosen
