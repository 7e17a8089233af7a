"""The README's "Writing a job" section, run verbatim: its bash blocks, in order, in an empty
temporary directory, with the installed ``samza-dagster`` on PATH — so the README cannot drift
from the code. Also: a user's own ``jobs/wordcount/task.py`` is the one that runs, not the
example application of the same name in this repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(f"## {title}")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _bash_blocks(section: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def _env(tmp_path: Path) -> dict[str, str]:
    # this checkout on PYTHONPATH: its code is what runs (not another install's), and its own
    # ``jobs/`` package is on the path — a user's ``jobs/`` in the working directory must still win
    env = {k: v for k, v in os.environ.items() if k not in ("SAMZA_LOG_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(REPO)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)  # the README works in ~/wordsplit
    return env


def test_the_readme_job_section_runs_verbatim(tmp_path):
    blocks = _bash_blocks(_section("Writing a job"))
    assert len(blocks) >= 3, "the section lost its code blocks"
    script = "set -euo pipefail\n" + "\n".join(blocks)
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created stream log.words (2 partitions)" in done.stderr
    assert "job wordsplit on thread: 1 container completed, 2 messages" in done.stdout
    wordsplit, wordcount = done.stdout.split("job wordcount on thread:")
    tailed = [line.split("\t") for line in wordsplit.splitlines() if re.match(r"^\d+:\d+\t", line)]
    assert sorted(value for _, _, value in tailed) == sorted("the quick brown fox jumps over the lazy dog".split())
    # the batch example, run as the README runs it: its output `counts` created by `run`, and its
    # per-batch counts add up to each word's count in the sentences
    assert "created stream log.counts (2 partitions)" in done.stderr
    counted: dict[str, int] = {}
    for line in wordcount.splitlines():
        if re.match(r"^\d+:\d+\t", line):
            _, word, count = line.split("\t")
            counted[word] = counted.get(word, 0) + int(count)
    assert counted == {w: "the quick brown fox jumps over the lazy dog".split().count(w) for w in counted}
    assert sorted(counted) == sorted(set("the quick brown fox jumps over the lazy dog".split()))
    # everything it made is in its own directory (the streams under ./.samza-log): started from a
    # checkout, it leaves the checkout as it was
    assert (tmp_path / "wordsplit" / ".samza-log" / "words.db").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["wordsplit"]


@pytest.mark.parametrize("runner", ["thread", "process", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_users_own_jobs_package_is_not_shadowed_by_the_examples(tmp_path, runner):
    own = tmp_path / "jobs" / "wordcount"
    own.mkdir(parents=True)
    (tmp_path / "jobs" / "__init__.py").write_text("")
    (own / "__init__.py").write_text("")
    (own / "task.py").write_text(
        "from samza_dagster.system import OutgoingMessageEnvelope, SystemStream\n"
        "from samza_dagster.task import StreamTask\n\n"
        "class WordSplitTask(StreamTask):\n"
        "    def process(self, envelope, collector, coordinator):\n"
        "        collector.send(OutgoingMessageEnvelope(SystemStream('log', 'mine'), 'mine:' + envelope.message))\n"
    )
    (tmp_path / "job.properties").write_text(
        f"job.name=mine\njob.factory.class={runner}\ntask.class=jobs.wordcount.task:WordSplitTask\n"
        "task.inputs=log.sentences\nsystems.log.samza.msg.serde=string\nstreams.sentences.samza.bounded=true\n"
        "streams.sentences.partitions=1\nstreams.mine.partitions=1\n"
    )
    (tmp_path / "in.txt").write_text("hello\n")
    script = (
        "samza-dagster streams create log.sentences --partitions 1 && "
        "samza-dagster streams produce log.sentences --file in.txt && "
        "samza-dagster run --config-path job.properties && samza-dagster streams tail log.mine"
    )
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mine:hello" in done.stdout


def test_the_tours_reconfiguration_command_runs_verbatim(tmp_path):
    """The tour's coordinator-stream-writer line, copied from the README with only its log root
    filled in, run from the checkout as the tour is: it writes the change (exit 0)."""
    tour = _section("A tour")
    commands = [c for c in re.findall(r"`([^`]*samza-dagster coordinator-stream-writer[^`]*)`", tour)]
    assert len(commands) == 1, commands
    command = commands[0].replace("<its log root>", str(tmp_path / "log"))
    done = subprocess.run(
        ["bash", "-c", command], cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote set-config app.classifier.strategy=ip+language" in done.stdout
