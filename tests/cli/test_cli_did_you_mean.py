"""A misspelt task class, module or serde name: the config error names the one meant, as a
misspelt key or input stream does. Run as a user runs it: the console script in a fresh
directory, the task module in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import REPO

BIN = Path(sys.executable).parent / "samza-dagster"

TASK = (
    "from samza_dagster.task import StreamTask\n\n"
    "class WordSplitTask(StreamTask):\n"
    "    def process(self, envelope, collector, coordinator):\n"
    "        pass\n"
)
JOB = (
    "job.name=j\njob.factory.class=thread\ntask.class=wordsplit:WordSplitTask\ntask.inputs=log.sentences\n"
    "streams.sentences.partitions=1\nstreams.sentences.samza.bounded=true\nsystems.log.samza.msg.serde=string\n"
)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "task.class=wordsplit:WordSplitTsk",
            "config key 'task.class': module 'wordsplit' has no attribute 'WordSplitTsk'; "
            "did you mean wordsplit:WordSplitTask?",
        ),
        (
            "task.class=wordspilt:WordSplitTask",
            "config key 'task.class': cannot import module 'wordspilt': No module named 'wordspilt'; "
            "did you mean wordsplit:WordSplitTask?",
        ),
        (
            "task.class=samza_dagster.tsk:StreamTask",
            "did you mean samza_dagster.task:StreamTask?",
        ),
        (
            "systems.log.samza.msg.serde=strng",
            "config key 'systems.log.samza.msg.serde' names unknown serde 'strng': did you mean 'string'?",
        ),
        (
            "serializers.registry.words.class=samza_dagster.serde:StringSerd",
            "config key 'serializers.registry.words.class': module 'samza_dagster.serde' has no attribute "
            "'StringSerd'; did you mean samza_dagster.serde:StringSerde?",
        ),
    ],
)
def test_a_misspelt_name_says_the_one_meant(tmp_path, override, expected):
    (tmp_path / "wordsplit.py").write_text(TASK)
    extra = ["--config", "systems.log.samza.msg.serde=words"] if override.startswith("serializers") else []
    (tmp_path / "job.properties").write_text(JOB)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    done = subprocess.run(
        [str(BIN), "run", "--config-path", "job.properties", "--config", override, *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_registered_serde_is_suggested_too(tmp_path):
    (tmp_path / "wordsplit.py").write_text(TASK)
    (tmp_path / "job.properties").write_text(
        JOB.replace("msg.serde=string", "msg.serde=wrods")
        + "serializers.registry.words.class=samza_dagster.serde:StringSerde\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    done = subprocess.run(
        [str(BIN), "run", "--config-path", "job.properties"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert "names unknown serde 'wrods': did you mean 'words'?" in done.stderr, done.stderr
