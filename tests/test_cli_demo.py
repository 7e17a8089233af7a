"""The command line: the demo end to end, and exit status 2 on bad usage or config."""

from __future__ import annotations

import subprocess
import sys

from samza_dagster.cli import main
from samza_dagster.demo.main import produce_and_consume


def test_demo_reads_back_exactly_what_it_wrote(tmp_path):
    report = produce_and_consume(tmp_path, 3000)
    assert report["read"] == report["written"] == 3000
    assert sum(report["per_partition"].values()) == 3000
    assert report["countries_read"] == report["countries_written"]
    # newest offsets are dense from 0 in every partition
    assert all(int(report["offsets"][p]) == n - 1 for p, n in report["per_partition"].items())


def test_demo_command_exits_zero_and_prints_a_summary(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "demo", "--size", "2000", "--root", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "2,000" in proc.stdout and "match what was written" in proc.stdout


def test_bad_config_exits_2_naming_the_key(tmp_path, capsys):
    path = tmp_path / "job.properties"
    path.write_text("job.name=j\n")
    assert main(["run", "--config-path", str(path), "--config", "no-equals"]) == 2
    assert "no-equals" in capsys.readouterr().err
