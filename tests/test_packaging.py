"""What ``pip install samza-dagster`` does to a user's Dagster project: the Dagster requirements are
ranges that keep the project's newer 1.13 patch release (exact pins downgraded it, and pip printed
an ERROR about the project's own pin); ``dg`` comes with the package (``dagster-dg-cli``, whose
releases move in lockstep with Dagster's, at the project's release)."""

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
    # Dagster's own packages pin dagster to their own release: each must be a range over the same
    # releases, so pip can take all of them at the project's release; nothing else may pin dagster
    family = {"dagster-dg-cli", "dagster-webserver", "dagster-graphql"}
    for requirement in core:
        if requirement.name in family:
            assert requirement.specifier == dagster[0].specifier, requirement
            continue
        if requirement.name == "dagster":
            continue
        for text in importlib.metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            if needed.name == "dagster" and needed.marker is None:
                assert not any(s.operator == "==" for s in needed.specifier), (requirement.name, text)


def test_dg_comes_with_the_package_so_dg_list_components_finds_the_component():
    import subprocess
    import sys
    from pathlib import Path

    core = {Requirement(text).name for text in PROJECT["dependencies"]}
    assert "dagster-dg-cli" in core
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "dg"), "list", "components"], capture_output=True, text=True, timeout=300
    )
    assert "samza_dagster.orchestration.SamzaJobComponent" in listed.stdout, listed.stdout + listed.stderr


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
    # the newest release the index has dg for too: a project cannot have dg at a release without it
    dg = subprocess.run([*pip, "index", "versions", "dagster-dg-cli"], capture_output=True, text=True, timeout=120)
    assert dg.returncode == 0, dg.stderr
    with_dg = {Version(v) for v in re.search(r"Available versions: (.*)", dg.stdout).group(1).split(", ")}
    newest = max(v for v in available if (v.major, v.minor) == (installed.major, installed.minor) and v in with_dg)
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
