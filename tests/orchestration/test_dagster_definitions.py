"""The repo's code location loads: ``dagster definitions validate -w workspace.yaml`` and ``dg
check defs`` (the repo is a dg project) pass, with the shared resources bound, every example
application loaded from its SamzaJobComponent, and wordcount's assets, job, sensors and
reprocessing backfill present."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg

from samza_dagster.orchestration import default_resources
from tests import REPO

APPLICATIONS = {"wordcount", "user_classification", "currency_join", "ad_ctr", "pageview_pipeline", "clicks_lake"}


def _run_in_repo(tmp_path: Path, *command: str) -> str:
    """A Dagster command of this venv in the checkout, with a fresh DAGSTER_HOME; its output."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "SAMZA_LOG_PATH": str(tmp_path / "log")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / command[0]), *command[1:]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "is not loaded" not in out
    return out


def test_workspace_validates(tmp_path):
    out = _run_in_repo(tmp_path, "dagster", "definitions", "validate", "-w", "workspace.yaml")
    assert "All code locations passed validation" in out


def test_dg_check_defs_passes(tmp_path):
    out = _run_in_repo(tmp_path, "dg", "check", "defs")
    assert "All component YAML validated successfully" in out and "All definitions loaded successfully" in out


def test_definitions_bind_the_resources_and_wordcount():
    import definitions

    defs = definitions.defs
    assert {"samza_systems", "kafka_admin", "spark", "coordinator_stream"} <= set(defs.resources)
    assert {dg.AssetKey(["wordcount", "sentences"]), dg.AssetKey(["wordcount", "words"])} <= set(
        defs.resolve_asset_graph().get_all_asset_keys()
    )
    assert defs.resolve_job_def("wordcount_job") is not None
    # every example application is listed and loads (none is a failing plan placeholder)
    keys = defs.resolve_asset_graph().get_all_asset_keys()
    assert not [k for k in keys if k.path[-1] == "execution_plan"]
    assert {k.path[0] for k in keys} == APPLICATIONS
    # the reprocessing backfill: daily partitions, its job and its (stopped) daily schedule
    assert defs.resolve_job_def("wordcount_reprocess_sentences_replay").partitions_def is not None
    assert defs.resolve_schedule_def("wordcount_reprocess_sentences_replay_schedule") is not None
    # backfill assets have the application's owners; a description counts partitions in English
    for name in ("reprocess_sentences_replay", "words"):
        spec = defs.resolve_assets_def(dg.AssetKey(["wordcount", name])).specs_by_key[dg.AssetKey(["wordcount", name])]
        assert spec.owners == ["team:streaming"], name
    ad = dg.AssetKey(["ad_ctr", "ad_ctr_stats"])
    assert "(1 partition)" in defs.resolve_assets_def(ad).specs_by_key[ad].description
    assert {"wordcount_coordinator_stream_sensor", "wordcount_stream_observation_sensor"} <= {
        s.name for s in defs.sensors
    }
    # input streams are observed out of the box (the UI's promise); reconfiguration launches are opt-in
    sensors = {s.name: s for s in defs.sensors}
    for app in APPLICATIONS:
        assert sensors[f"{app}_stream_observation_sensor"].default_status == dg.DefaultSensorStatus.RUNNING, app
    assert sensors["wordcount_coordinator_stream_sensor"].default_status == dg.DefaultSensorStatus.STOPPED


def test_the_code_location_binds_the_example_deployments_resources_from_resources(monkeypatch, tmp_path):
    """``resources/`` holds the deployment's resource instances; both code-location entry points
    bind them, and they are the components' own (so the definitions merge), read from the
    environment when used."""
    import definitions
    import resources
    from jobs.definitions import defs as dg_defs

    for location in (definitions.defs, dg_defs()):
        assert {key: location.resources[key] for key in resources.RESOURCES} == resources.RESOURCES
    assert resources.RESOURCES == default_resources()
    monkeypatch.setenv("SAMZA_LOG_PATH", str(tmp_path / "log"))
    assert resources.RESOURCES["samza_systems"].resolved_log_path() == str(tmp_path / "log")
