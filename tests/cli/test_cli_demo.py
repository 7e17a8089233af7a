"""The command line: the demo command end to end (thread runner: fast; the spark runner is
covered by tests/jobs/test_demo.py), and exit status 2 on bad usage or config."""

from __future__ import annotations

import subprocess
import sys

from samza_dagster.cli import main


def test_demo_module_runs_every_application_and_prints_the_report(tmp_path):
    code = f"import sys; from jobs.demo import run_demo; sys.exit(run_demo({str(tmp_path)!r}, 1200, runner='thread'))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env={"COLUMNS": "160", **__import__("os").environ},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for title in ("user_classification", "currency_join", "ad_ctr", "pageview_pipeline", "clicks_lake"):
        assert title in out
    assert "transactions processed before currency_codes reached head" in out
    assert "dg dev" in out and "dagster dev" not in out
    # piped: each application's table as it ends (they came only at the end), and the progress
    # lines without rich's caller path (`main.py:108`)
    assert out.index("1. user_classification") < out.index("currency_join done in"), out
    assert out.index("4. pageview_pipeline") < out.index("clicks_lake done in"), out
    assert "main.py:" not in out, out


def test_demo_command_rejects_bad_usage_with_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "demo", "--size", "not-a-number"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2


def test_bad_config_exits_2_naming_the_key(tmp_path, capsys):
    path = tmp_path / "job.properties"
    path.write_text("job.name=j\n")
    assert main(["run", "--config-path", str(path), "--config", "no-equals"]) == 2
    assert "no-equals" in capsys.readouterr().err


def test_run_on_a_missing_input_stream_fails_naming_it_without_a_traceback(tmp_path):
    path = tmp_path / "job.properties"
    path.write_text(
        "job.name=j\njob.factory.class=thread\ntask.class=tests.apps.tasks:NoOpTask\n"
        f"task.inputs=log.nowhere\nsystems.log.log.path={tmp_path / 'log'}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "run", "--config-path", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2  # a job whose input does not exist is a config error
    # no partition count is known for it: it names the command that creates it
    assert "input stream log.nowhere does not exist" in proc.stderr
    assert "samza-dagster streams create log.nowhere --partitions N" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "log").exists() or not list((tmp_path / "log").iterdir())  # nothing created


def test_the_demo_is_found_through_its_entry_point():
    """The engine names no application: ``demo`` runs what the ``samza_dagster.demo`` entry point
    (pyproject.toml) names."""
    from jobs.demo import run_demo
    from samza_dagster.cli.commands import load_demo

    assert load_demo() is run_demo


def test_without_the_checkout_on_the_path_the_demo_is_a_usage_error(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "samza_dagster.cli", "demo", "--size", "10"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "the demo's applications (jobs/demo of the samza-dagster checkout) are not importable here" in proc.stderr
    assert "Traceback" not in proc.stderr
