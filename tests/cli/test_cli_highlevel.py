"""``samza-dagster plan`` and ``samza-dagster run`` on a high-level application's .properties
file, as separate processes (the console script): the plan infers intermediate partition
counts; a bounded application runs to its end and exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from support.hl_harness import create, produce, read_all
from tests import REPO
from tests.hl_apps import base

pytestmark = pytest.mark.timeout(120)


def _cli() -> list[str]:
    script = Path(sys.executable).parent / "samza-dagster"
    return [str(script)] if script.exists() else [sys.executable, "-m", "samza_dagster.cli"]


def _write_properties(path: Path, entries: dict[str, str]) -> Path:
    path.write_text(
        "# a high-level application (written by the test)\n" + "".join(f"{k}={v}\n" for k, v in entries.items())
    )
    return path


def _invoke(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    return subprocess.run([*_cli(), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=100)


def test_plan_prints_json_with_inferred_intermediate_partitions(tmp_path):
    from samza_dagster.config import Config

    entries = base(tmp_path, "l2", "StreamTableJoinApp").to_dict()
    cfg = Config(entries)
    create(cfg, "S1", 3)
    create(cfg, "S2", 2)
    create(cfg, "S3", 2)
    props = _write_properties(tmp_path / "l2.properties", entries)
    proc = _invoke("plan", "--config-path", str(props))
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    # the partition_by feeds a table joined with S2 (2 partitions): the count comes from S2,
    # not from S1 (3) — nothing in the config names it
    assert plan["intermediate_streams"] == {"l2-1-partition_by-p1": 2}
    assert plan["application"]["app_class"] == "tests.hl_apps.apps:StreamTableJoinApp"
    # planning creates nothing: the intermediate stream does not exist yet
    assert sorted(f.name for f in (tmp_path / "log").glob("*.db")) == ["S1.db", "S2.db", "S3.db"]


def test_run_bounded_application_to_its_end(tmp_path):
    from samza_dagster.config import Config

    entries = {**base(tmp_path, "wc", "TwoStageCountApp").to_dict(), "streams.words.samza.bounded": "true"}
    cfg = Config(entries)
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    words = [f"w{i % 5}" for i in range(60)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)])
    props = _write_properties(tmp_path / "wc.properties", entries)

    plan = _invoke("plan", "--config-path", str(props))
    assert plan.returncode == 0, plan.stderr
    # inferred from the largest stream of the application: words has 4 partitions
    assert json.loads(plan.stdout)["intermediate_streams"] == {"wc-1-partition_by-by-word": 4}

    proc = _invoke("run", "--config-path", str(props), "--config", "job.container.count=2")
    assert proc.returncode == 0, proc.stderr
    assert "job wc on thread: 2 containers completed" in proc.stdout
    assert dict(read_all(cfg, "counts")) == dict(Counter(words))
    assert (tmp_path / "log" / "wc-1-partition_by-by-word.db").exists()  # run created it


def test_run_with_a_bad_stage_exits_2_naming_the_key(tmp_path):
    from samza_dagster.config import Config

    entries = {**base(tmp_path, "wc", "TwoStageCountApp").to_dict(), "app.stage": "stage-9"}
    create(Config(entries), "words", 4)
    create(Config(entries), "counts", 3)
    proc = _invoke("run", "--config-path", str(_write_properties(tmp_path / "bad.properties", entries)))
    assert proc.returncode == 2
    assert "app.stage" in proc.stderr and "stage-0" in proc.stderr
