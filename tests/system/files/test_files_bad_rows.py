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

import pyarrow as pa
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


# -- a whole file that cannot be read ------------------------------------------------------------
def _write_parquet_lake(root: Path) -> set[int]:
    """Partition 0: a good file, one whose second row group's page header is garbage (rows
    500..999 cannot be read), one whose footer is cut off (no row can be counted), a good one.
    The ids of the rows that can be read."""
    directory = root / "events"
    directory.mkdir(parents=True)
    readable: set[int] = set()
    for n, name in enumerate(["part-0-a.parquet", "part-0-b.parquet", "part-0-c.parquet", "part-0-d.parquet"]):
        ids = list(range(n * 1_000, (n + 1) * 1_000))
        path = directory / name
        pq.write_table(pa.table({"id": ids, "amount": [i / 4 for i in ids]}), path, row_group_size=500)
        data = bytearray(path.read_bytes())
        if name == "part-0-b.parquet":
            column = pq.ParquetFile(path).metadata.row_group(1).column(0)
            start = column.dictionary_page_offset or column.data_page_offset
            data[start : start + 40] = b"\xff" * 40
            readable.update(ids[:500])
        elif name == "part-0-c.parquet":
            data = data[: len(data) // 2]
        else:
            readable.update(ids)
        path.write_bytes(bytes(data))
    return readable


def test_an_unreadable_parquet_file_fails_the_job_in_one_line_naming_it_and_the_blacklist_key(tmp_path):
    _write_parquet_lake(tmp_path / "lake")
    (tmp_path / "lake" / "events" / "part-0-c.parquet").unlink()  # only the file that fails mid-read
    result = run_job(_config(tmp_path, TASKS["per-row"]))
    assert not result.succeeded
    error = str(result.error)
    assert "\n" not in error, error
    assert "files stream files.events partition 0: file part-0-b.parquet row 500 or after" in error, error
    assert "systems.files.partitioner.defaultPartitioner.blacklist=part-0-b.parquet" in error, error
    assert "task.dlq.stream" in error, error


@pytest.mark.parametrize("task", sorted(TASKS))
def test_unreadable_parquet_files_go_to_the_dead_letter_stream_once_and_the_job_reads_on(tmp_path, task):
    readable = _write_parquet_lake(tmp_path / "lake")
    config = _config(tmp_path, TASKS[task], **{"task.dlq.stream": "log.dlq"})
    create_stream(config, "log", "dlq", 1)
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    assert _output_ids(tmp_path / "lake") == Counter(readable)
    # the rest of the file that fails mid-read, and the whole file without a footer: one letter each
    letters = {letter["offset"]: letter for _, letter in read_all(config, "dlq")}
    assert sorted(letters) == ["part-0-b.parquet:999", "part-0-c.parquet:0"]
    assert "file part-0-b.parquet rows 500..999 cannot be read" in letters["part-0-b.parquet:999"]["error"]
    assert "file part-0-c.parquet rows 0..0 cannot be read" in letters["part-0-c.parquet:0"]["error"]

    again = run_job(config)  # resumes after the last file: nothing read twice, no letter twice
    assert again.succeeded, again.summary_line()
    assert len(read_all(config, "dlq")) == 2
    assert _output_ids(tmp_path / "lake") == Counter(readable)
