"""The smaller command-line edges, as a user meets them: ``--verbose`` after the subcommand,
``streams produce --key-field`` with string serdes, and ``streams tail`` of a partition an open
transaction holds (a killed exactly-once job's) — it prints what is readable and says where and
why it stops, instead of waiting 30 s and failing with nothing printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from samza_dagster.config import Config
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.log import LogSystemFactory

BIN = Path(sys.executable).parent / "samza-dagster"


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SAMZA_LOG_PATH": str(tmp_path / "log")}
    return subprocess.run([str(BIN), *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_verbose_is_taken_after_the_subcommand_too(tmp_path):
    done = _cli(tmp_path, "streams", "describe", "log.nope", "--verbose")
    assert done.returncode == 1, done.stderr  # the command ran (the stream is missing), not a usage error
    assert "Traceback" in done.stderr  # --verbose prints the trace
    again = _cli(tmp_path, "plan", "--config-path", "nope.properties", "-v")
    assert again.returncode == 2 and "no such file: nope.properties" in again.stderr


def test_produce_with_a_key_field_and_string_serdes_keeps_the_line_and_keys_by_the_field(tmp_path):
    (tmp_path / "clicks.jsonl").write_text('{"user": 42, "page": "a"}\n{"user": "bob", "page": "b"}\n')
    (tmp_path / "job.properties").write_text(
        "job.name=clicks\nsystems.log.samza.msg.serde=string\nsystems.log.samza.key.serde=string\n"
    )
    assert _cli(tmp_path, "streams", "create", "log.clicks", "--partitions", "1").returncode == 0
    produced = _cli(
        tmp_path, "streams", "produce", "log.clicks", "--file", "clicks.jsonl", "--key-field", "user",
        "--config-path", "job.properties",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    tail = _cli(tmp_path, "streams", "tail", "log.clicks", "--config-path", "job.properties")
    assert tail.stdout.splitlines() == ['0:0\t42\t{"user": 42, "page": "a"}', '0:1\tbob\t{"user": "bob", "page": "b"}']
    # a key the serde cannot take is a usage error naming the line, the field and the serde
    refused = _cli(
        tmp_path, "streams", "produce", "log.clicks", "--file", "clicks.jsonl", "--key-field", "user",
        "--config", "systems.log.samza.key.serde=integer",
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert "clicks.jsonl line 2: the key from field 'user' does not fit the stream's serde" in refused.stderr
    assert "unexpected" not in refused.stderr


def test_tail_of_a_partition_an_open_transaction_holds_prints_what_is_readable_and_says_why(tmp_path):
    config = Config({"systems.log.log.path": str(tmp_path / "log"), "systems.log.log.linger.ms": "0"})
    admin = LogSystemFactory().get_admin("log", config)
    admin.create_stream(StreamSpec("words", "words", "log", 2))
    admin.create_stream(StreamSpec("state", "state", "log", 1, {"cleanup.policy": "compact"}))
    admin.stop()
    plain = LogSystemFactory().get_producer("log", config)
    plain.register("t")
    plain.start()
    # what a killed exactly-once container leaves: a transaction it never committed
    open_txn = LogSystemFactory().get_producer("log", config)
    open_txn.register("t")
    open_txn.start()
    open_txn.init_transactions("container-0", "state")
    try:
        for producer, value, partition in ((plain, "before", 0), (open_txn, "open", 0), (plain, "after", 0)):
            producer.send(
                "t", OutgoingMessageEnvelope(SystemStream("log", "words"), value.encode(), partition=partition)
            )
            producer.flush("t")
        plain.send("t", OutgoingMessageEnvelope(SystemStream("log", "words"), b"other", partition=1))
        plain.flush("t")
        tail = _cli(
            tmp_path, "streams", "tail", "log.words", "--config", "systems.log.consumer.isolation.level=read_committed"
        )
    finally:
        open_txn.stop()
        plain.stop()
    assert tail.returncode == 0, tail.stderr
    assert [line.split("\t")[::2] for line in tail.stdout.splitlines()] == [["0:0", "before"], ["1:0", "other"]]
    assert (
        "log.words partition 0: nothing readable from offset 1 (newest 2): an open transaction holds it" in tail.stderr
    )


def test_streams_delete_removes_a_stream_and_its_messages(tmp_path):
    """``streams delete`` on the embedded log: the stream and its messages are gone (it can be
    created again, empty); a stream that is not there is named with the one meant; a system
    that cannot delete says so."""
    env = {**os.environ}
    env.pop("SAMZA_LOG_PATH", None)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).parent / "samza-dagster"), *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    (tmp_path / "in.txt").write_text("a\nb\nc\n")
    assert run("streams", "create", "log.outptu", "--partitions", "2").returncode == 0
    assert run("streams", "create", "log.output", "--partitions", "1").returncode == 0
    assert run("streams", "produce", "log.outptu", "--file", "in.txt").returncode == 0
    deleted = run("streams", "delete", "log.outptu")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == "deleted log.outptu (2 partitions, 3 messages)"
    assert run("streams", "list").stdout.splitlines() == ["log.output  1 partition  0 messages"]
    assert sorted(p.name for p in (tmp_path / ".samza-log").iterdir()) == ["output.db"]

    again = run("streams", "delete", "log.outptu")
    assert again.returncode == 1 and "did you mean log.output?" in again.stderr, again.stderr
    assert run("streams", "create", "log.outptu", "--partitions", "1").returncode == 0
    assert "log.outptu: 1 partition" in run("streams", "describe", "log.outptu").stdout

    (tmp_path / "job.properties").write_text("systems.files.samza.factory=files\nsystems.files.files.root=data\n")
    (tmp_path / "data" / "trips").mkdir(parents=True)
    refused = run("streams", "delete", "files.trips", "--config-path", "job.properties")
    assert refused.returncode == 2 and "streams delete is for the embedded log" in refused.stderr, refused.stderr
    assert (tmp_path / "data" / "trips").is_dir()
