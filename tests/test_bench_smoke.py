"""The benchmark runner cannot rot: run it end to end with tiny sizes (``--smoke``) into a temp
file, through the CLI entry point, and check every benchmark reported a verdict. The real
benchmarks never run in the test suite."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.kafka
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_runner_reports_every_benchmark_with_verdicts(tmp_path):
    out = tmp_path / "benchmarks.md"
    (out).write_text("<!-- bench:log-system -->\nkept section\n<!-- /bench:log-system -->\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from samza_dagster.cli import main; sys.exit(main())",
            "bench",
            "--smoke",
            "--output",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=580,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = out.read_text()
    for key in ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B12"):
        section = re.search(rf"<!-- bench:{key} -->(.*?)<!-- /bench:{key} -->", report, re.DOTALL)
        assert section, f"{key} missing from the report"
        assert f"python -m bench --only {key}" in section.group(1), f"{key} has no command"
        assert re.search(r"— \*\*(met|not met)\*\*", section.group(1)), f"{key} has no verdict"
        assert re.search(rf"^\| {key} \|", report, re.MULTILINE), f"{key} missing from the summary"
    assert "Load average" in report and "peak RSS" in report
    assert "(`RLIMIT_AS`), one run: completed" in report, "B1 has no bounded-memory run"
    assert "kept section" in report, "sections of the standalone benchmarks are kept"


def test_cli_bench_outside_the_repository_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from samza_dagster.cli import main; sys.exit(main())", "bench", "--smoke"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 2
    assert "repository root" in proc.stderr


@pytest.mark.timeout(120)
def test_producer_trace_times_the_head_and_its_seal_at_width(capsys):
    """``bench.log_producer_trace`` (B13's producer alone) reports the ratio and, per width, the
    statements that cost: runs at 4 partitions, the head and its seal at 1,024."""
    from bench import log_producer_trace

    log_producer_trace.main(["--messages", "40000", "--repetitions", "1", "--statements"])
    out = capsys.readouterr().out
    assert re.search(r"1,024 / 4 per run: \d\.\d\d", out), out
    narrow, wide = out.split("SQL statements at 1,024 partitions")
    assert "INSERT INTO messages (id" in narrow and "INSERT INTO head" not in narrow.split("SQL statements")[1]
    assert "INSERT INTO head" in wide and "DELETE FROM head" in wide  # 40,000 rows: a seal at 32,000
