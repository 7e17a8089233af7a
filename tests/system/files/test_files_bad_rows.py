"""Bad rows of files inputs are bad messages like any other: with ``task.dlq.stream`` each goes to
the dead-letter stream (its file and row as the offset, its raw bytes, the cause) and the job reads
on past it; with ``task.drop.deserialization.errors`` it is counted and skipped; a restart resumes
after it and never dead-letters it twice. Rows in the second 1 MiB block of a file (after blocks
pyarrow read whole), in the first, a row of another type than those before it, a CSV row with a
column too many — per-row and columnar tasks alike."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from support.hl_harness import read_all
from tests.apps.harness import create_stream

ROWS = 5_000
PAD = "x" * 300  # rows of ~330 bytes: 5,000 rows span two of pyarrow's 1 MiB blocks
#: file → the rows that do not parse and how they are written
BAD = {
    "part-0-a.jsonl": {10: '{"id": 10, "amount": ', 4_000: '{"id": "not a number", "amount": 1.0, "pad": "x"}'},
    "part-0-b.csv": {2_500: "2500,1.0,x,one too many"},
}


def _write_lake(root: Path) -> set[int]:
    """Two files of one partition; the ids of the rows that parse."""
    directory = root / "events"
    directory.mkdir(parents=True)
    good: set[int] = set()
    for name, bad in BAD.items():
        base = 0 if name.endswith("jsonl") else 100_000
        lines = ["id,amount,pad"] if name.endswith("csv") else []
        for row in range(ROWS):
            if row in bad:
                lines.append(bad[row])
                continue
            good.add(base + row)
            row_id = base + row
            record = {"id": row_id, "amount": row_id / 4, "pad": PAD}
            lines.append(f"{row_id},{row_id / 4},{PAD}" if name.endswith("csv") else json.dumps(record))
        (directory / name).write_text("\n".join(lines) + "\n")
    return good


def _config(tmp_path: Path, task: str, **extra: str) -> Config:
    return Config(
        {
            "job.name": "bad-rows",
            "job.factory.class": "thread",
            "systems.files.samza.factory": "files",
            "systems.files.files.root": str(tmp_path / "lake"),
            "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "files.events",
            "task.class": task,
            "task.commit.ms": "20",
            **extra,
        }
    )


def _output_ids(root: Path) -> Counter:
    ids: Counter = Counter()
    for path in sorted((root / "out").glob("*.parquet")):
        ids.update(pq.read_table(path)["id"].to_pylist())
    return ids


TASKS = {
    "per-row": "tests.system.files.test_files_system:CopyThenStop",
    "columnar": "tests.system.files.test_files_columnar:ArrowCopy",
}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_bad_rows_go_to_the_dead_letter_stream_and_the_job_reads_on(tmp_path, task):
    good = _write_lake(tmp_path / "lake")
    config = _config(tmp_path, TASKS[task], **{"task.dlq.stream": "log.dlq"})
    create_stream(config, "log", "dlq", 1)
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert _output_ids(tmp_path / "lake") == Counter(good)  # every good row once, the bad ones not

    letters = [message for _, message in read_all(config, "dlq")]
    assert sorted(letter["offset"] for letter in letters) == sorted(
        f"{name}:{row}" for name, rows in BAD.items() for row in rows
    )
    by_offset = {letter["offset"]: letter for letter in letters}
    for name, rows in BAD.items():
        for row, text in rows.items():
            letter = by_offset[f"{name}:{row}"]
            assert base64.b64decode(letter["message"]).decode().rstrip("\n") == text
            assert f"file {name} row {row} does not parse" in letter["error"]
            assert (letter["system"], letter["stream"], letter["partition"]) == ("files", "events", 0)


def test_dropped_bad_rows_are_counted_and_a_restart_resumes_after_them(tmp_path):
    good = _write_lake(tmp_path / "lake")
    extra = {"task.drop.deserialization.errors": "true", "task.dlq.stream": "log.dlq"}
    create_stream(_config(tmp_path, TASKS["per-row"]), "log", "dlq", 1)
    # stops after 4,500 rows: past the first two bad rows, before the third
    first = run_job(_config(tmp_path, TASKS["per-row"], **extra, **{"test.shutdown.after": "4500"}))
    assert first.succeeded, first.summary_line()
    second = run_job(_config(tmp_path, TASKS["per-row"], **extra))
    assert second.succeeded, second.summary_line()
    assert _output_ids(tmp_path / "lake") == Counter(good)  # nothing twice, nothing lost
    letters = [message["offset"] for _, message in read_all(_config(tmp_path, ""), "dlq")]
    assert Counter(letters) == Counter(f"{name}:{row}" for name, rows in BAD.items() for row in rows)  # each once

    dropped = _config(
        tmp_path, TASKS["per-row"], **{"job.name": "dropping", "task.drop.deserialization.errors": "true"}
    )
    (tmp_path / "lake" / "out").rename(tmp_path / "out-before")
    result = run_job(dropped)
    assert result.succeeded, result.summary_line()
    assert _output_ids(tmp_path / "lake") == Counter(good)
    tasks = [task for s in result.summaries for task in s.metrics["tasks"].values()]
    assert sum(task["deserialization_errors_dropped"] for task in tasks) == 3
