"""Bad input to the command line, as a table: each case's exit status (2 for usage and config,
1 for what the world refused), that the message is short (no trace), and that it names the bad
value. Run as a user runs it: the console script in a fresh directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import REPO

BIN = Path(sys.executable).parent / "samza-dagster"

GOOD_JOB = (
    "job.name=j\njob.factory.class=thread\ntask.class=tests.apps.tasks:NoOpTask\ntask.inputs=log.sentences\n"
    "streams.sentences.partitions=1\nstreams.sentences.samza.bounded=true\n"
)

STRAY_TASK = (
    "from samza_dagster.system import OutgoingMessageEnvelope, SystemStream\n"
    "from samza_dagster.task import StreamTask\n\n"
    "class StrayTask(StreamTask):\n"
    "    def process(self, envelope, collector, coordinator):\n"
    "        collector.send(OutgoingMessageEnvelope(SystemStream('log', 'nowhere'), envelope.message))\n"
)

#: (id, files to write, argv, exit status, text the message must contain)
CASES = [
    ("negative size", {}, ["demo", "--size", "-5"], 2, "--size: must be 1 or more, got -5"),
    ("size not a number", {}, ["demo", "--size", "many"], 2, "--size: must be a whole number, got 'many'"),
    ("unknown command", {}, ["launch"], 2, "invalid choice: 'launch'"),
    ("missing config file", {}, ["run", "--config-path", "nope.properties"], 2, "no such file: nope.properties"),
    (
        "override without =",
        {"job.properties": GOOD_JOB},
        ["run", "--config-path", "job.properties", "--config", "task.commit.ms"],
        2,
        "--config expects key=value, got 'task.commit.ms'",
    ),
    (
        "inline comment in properties",
        {"job.properties": GOOD_JOB + "task.commit.ms=500   # twice a second\n"},
        ["run", "--config-path", "job.properties"],
        2,
        "'task.commit.ms' must be an integer, got '500   # twice a second' (.properties has no inline comments",
    ),
    (
        "unknown runner",
        {"job.properties": GOOD_JOB.replace("thread", "threads")},
        ["run", "--config-path", "job.properties"],
        2,
        "got 'threads'",
    ),
    (
        "task class that does not import",
        {"job.properties": GOOD_JOB.replace("tests.apps.tasks:NoOpTask", "nowhere:Task")},
        ["run", "--config-path", "job.properties"],
        2,
        "cannot import module 'nowhere'",
    ),
    (
        "missing input, no-create-streams",
        {"job.properties": GOOD_JOB},
        ["run", "--config-path", "job.properties", "--no-create-streams"],
        2,
        "input stream log.sentences does not exist (config key 'task.inputs'): create it first: "
        "samza-dagster streams create log.sentences",
    ),
    (
        "misspelt stream key: the job would never end",
        {"job.properties": GOOD_JOB + "streams.sentences.samza.bouned=true\n"},
        ["run", "--config-path", "job.properties"],
        2,
        "did you mean 'streams.sentences.samza.bounded'?",
    ),
    ("demo root that is a file", {"taken": "x"}, ["demo", "--root", "taken"], 2, "--root: not a directory: taken"),
    (
        "a system nobody configured",
        {},
        ["streams", "create", "kafka.orders", "--partitions", "2"],
        2,
        "system 'kafka' is not configured",
    ),
    (
        "host that does not resolve",
        {"job.properties": GOOD_JOB},
        ["job-coordinator", "--config-path", "job.properties", "--host", "no-such-host.invalid"],
        2,
        "cannot resolve host 'no-such-host.invalid'",
    ),
    (
        "partitions zero",
        {},
        ["streams", "create", "log.x", "--partitions", "0"],
        2,
        "--partitions: must be 1 or more, got 0",
    ),
    (
        "describe a missing stream",
        {},
        ["streams", "describe", "log.nope"],
        1,
        "stream 'nope' does not exist on system 'log'",
    ),
    ("bad stream name", {}, ["streams", "describe", "log."], 2, "expected [SYSTEM.]STREAM"),
    (
        "produce a file that is not there",
        {},
        ["streams", "produce", "log.x", "--file", "in.txt"],
        2,
        "no such file: in.txt",
    ),
    (
        "port out of range",
        {"job.properties": GOOD_JOB},
        ["job-coordinator", "--config-path", "job.properties", "--port", "70000"],
        2,
        "--port: must be between 0 and 65535, got 70000",
    ),
    (
        "misspelt serde, found before anything runs",
        {"job.properties": GOOD_JOB + "systems.log.samza.msg.serde=jsno\n"},
        ["run", "--config-path", "job.properties"],
        2,
        "config key 'systems.log.samza.msg.serde' names unknown serde 'jsno'",
    ),
    (
        "bad typed value of a stream",
        {"job.properties": GOOD_JOB + "streams.sentences.samza.reset.offset=sometimes\n"},
        ["run", "--config-path", "job.properties"],
        2,
        "'streams.sentences.samza.reset.offset' must be true or false",
    ),
    (
        "set-config without value",
        {"job.properties": GOOD_JOB},
        [
            "coordinator-stream-writer",
            "--config-path",
            "job.properties",
            "--type",
            "set-config",
            "--key",
            "task.commit.ms",
        ],
        2,
        "needs --value",
    ),
]


@pytest.mark.parametrize(("files", "argv", "status", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_short_message_with_the_right_exit_status(tmp_path, files, argv, status, needle):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    done = subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stderr
    assert needle in done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and "incubator modules" not in line]
    assert len(lines) <= 3, done.stderr
    assert "created stream" not in done.stderr  # a bad job creates nothing


def test_produce_checks_every_line_before_sending_any(tmp_path):
    env = {**os.environ}
    env.pop("SAMZA_LOG_PATH", None)
    (tmp_path / "job.properties").write_text("job.name=j\nsystems.log.samza.msg.serde=json\n")
    (tmp_path / "in.jsonl").write_text('{"a": 1}\n{"a": 2\n')

    def run(*argv):
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)

    assert run("streams", "create", "log.events", "--partitions", "1").returncode == 0
    bad = run("streams", "produce", "log.events", "--file", "in.jsonl", "--config-path", "job.properties")
    assert bad.returncode == 2 and "in.jsonl line 2: not a JSON value" in bad.stderr
    described = run("streams", "describe", "log.events")
    assert "0       -         0" in described.stdout.replace("  ", "  ")  # nothing was sent


def test_a_failed_job_is_exit_1_and_a_short_message_naming_the_stream(tmp_path):
    """A job that fails while running (its task writes to a stream that does not exist) is a job
    failure, not a usage error: exit 1, the failure on stderr in a few lines, no trace."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    (tmp_path / "stray.py").write_text(STRAY_TASK)
    (tmp_path / "job.properties").write_text(GOOD_JOB.replace("tests.apps.tasks:NoOpTask", "stray:StrayTask"))
    (tmp_path / "in.txt").write_text("a\n")

    def run(*argv):
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    assert run("streams", "create", "log.sentences", "--partitions", "1").returncode == 0
    assert run("streams", "produce", "log.sentences", "--file", "in.txt").returncode == 0
    done = run("run", "--config-path", "job.properties")
    assert done.returncode == 1, done.stderr
    assert "stream 'nowhere' does not exist on system 'log'" in done.stderr
    assert "samza-dagster streams create log.nowhere" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert len([line for line in done.stderr.splitlines() if line.strip()]) <= 3, done.stderr
    # the full trace is in the run's log file, which the message names
    log_file = Path(done.stderr.split("the run's log, with the full trace: ")[1].split(")")[0])
    assert "Traceback" in log_file.read_text() and "StreamNotFoundError" in log_file.read_text()


def test_a_misspelt_key_is_refused_and_tail_suggests_the_stream_meant(tmp_path):
    """``task.clas`` (a typo of ``task.class``) is a config error naming the key meant, unless
    ``job.config.misspelled.keys=warn`` relaxes it to one WARNING; ``streams tail log.word``
    names ``log.words`` instead of creating the misspelt stream."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)

    def run(*argv):
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    assert run("streams", "create", "log.words", "--partitions", "1").returncode == 0
    tail = run("streams", "tail", "log.word")
    assert (
        tail.returncode == 1 and "stream 'word' does not exist on system 'log': did you mean log.words?" in tail.stderr
    )
    assert sorted(p.name for p in (tmp_path / ".samza-log").iterdir() if "word" in p.name) == ["words.db"]

    (tmp_path / "job.properties").write_text(GOOD_JOB + "task.clas=tests.apps.tasks:NoOpTask\n")
    assert run("streams", "create", "log.sentences", "--partitions", "1").returncode == 0
    refused = run("run", "--config-path", "job.properties")
    assert refused.returncode == 2, refused.stderr
    assert "config error: config key 'task.clas'" in refused.stderr and "did you mean 'task.class'?" in refused.stderr
    assert "job.config.misspelled.keys=warn" in refused.stderr

    done = run("run", "--config-path", "job.properties", "--config", "job.config.misspelled.keys=warn")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "'task.clas'" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0] and "did you mean 'task.class'?" in warnings[0], done.stderr


def test_a_missing_input_is_a_config_error_that_creates_nothing(tmp_path):
    """A job whose input does not exist reads nothing: exit 2 before any stream is created, with
    the existing stream it most likely meant, or the command that creates it."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SAMZA_LOG_PATH", None)
    job = GOOD_JOB + "streams.words.partitions=1\n"  # an output the job would create
    (tmp_path / "job.properties").write_text(job)

    def run(*argv):
        return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    nothing = run("run", "--config-path", "job.properties")
    assert nothing.returncode == 2, nothing.stderr
    assert "config error: input stream log.sentences does not exist (config key 'task.inputs')" in nothing.stderr
    assert "samza-dagster streams create log.sentences --partitions 1" in nothing.stderr
    assert not (tmp_path / ".samza-log").exists() or not list((tmp_path / ".samza-log").iterdir())

    assert run("streams", "create", "log.sentences", "--partitions", "1").returncode == 0
    typo = run("run", "--config-path", "job.properties", "--config", "task.inputs=log.sentence")
    assert typo.returncode == 2, typo.stderr
    assert "input stream log.sentence does not exist" in typo.stderr and "did you mean log.sentences?" in typo.stderr
    assert "Traceback" not in typo.stderr and "created stream" not in typo.stderr
    assert sorted(p.name for p in (tmp_path / ".samza-log").iterdir()) == ["sentences.db"]  # no words.db
