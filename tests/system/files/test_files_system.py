"""The files system (Samza's HDFS system over any file system): a bounded job over a directory
of Parquet files grouped into partitions, restarted in the middle, started at a startpoint;
JSON lines and CSV; bad files and rows named by file and row; Parquet output."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from samza_dagster.config import Config
from samza_dagster.model import SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.runtime.startpoints import set_startpoints
from samza_dagster.startpoint.startpoint import StartpointSpecific
from samza_dagster.system import OutgoingMessageEnvelope, SystemStream
from samza_dagster.system.files import FilesSystemAdmin
from samza_dagster.system.files import producer as files_producer
from samza_dagster.system.files.offsets import compare_file_offsets
from samza_dagster.system.files.partitions import group_id
from samza_dagster.task.api import StreamTask
from tests.apps.harness import read_checkpoints

ROWS_PER_FILE = 250
# three partitions of two or three files each: part-<p>-<n>.parquet
FILES = {0: 3, 1: 2, 2: 3}


class CopyThenStop(StreamTask):
    """Copies each row to files.out; after ``test.shutdown.after`` rows asks the container to stop."""

    def init(self, context):
        self.limit = context.config.get_int("test.shutdown.after", 0)
        self.count = 0
        self.out = SystemStream("files", "out")

    def process(self, envelope, collector, coordinator):
        collector.send(OutgoingMessageEnvelope(self.out, {**envelope.message, "offset": envelope.offset}))
        self.count += 1
        if self.count == self.limit:
            coordinator.shutdown(coordinator.ALL_TASKS_IN_CONTAINER)


def _write_lake(root: Path) -> list[int]:
    ids = []
    for p, count in FILES.items():
        for n in range(count):
            first = (p * 10 + n) * 1000
            rows = list(range(first, first + ROWS_PER_FILE))
            ids.extend(rows)
            table = pa.table({"id": rows, "name": [f"row-{i}" for i in rows], "amount": [i / 4 for i in rows]})
            path = root / "events" / f"part-{p}-{n}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, row_group_size=64)  # several row groups: skipping by footers
    (root / "events" / "_SUCCESS").write_text("")  # markers and hidden files are not data
    return ids


def _config(tmp_path: Path, **extra: str) -> Config:
    entries = {
        "job.name": "files-job",
        "job.factory.class": "thread",
        "job.container.count": "2",
        "systems.files.samza.factory": "files",
        "systems.files.files.root": str(tmp_path / "lake"),
        "systems.files.files.fetch.size": "100",
        "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
        "systems.log.samza.factory": "log",
        "systems.log.log.path": str(tmp_path / "log"),
        "task.inputs": "files.events",
        "task.class": "tests.system.files.test_files_system:CopyThenStop",
        "task.commit.ms": "20",
    }
    entries.update(extra)
    return Config(entries)


def _output_rows(root: Path) -> list[dict]:
    rows = []
    for path in sorted((root / "out").glob("*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def test_a_bounded_job_over_grouped_parquet_files_reads_every_row_once_and_ends(tmp_path):
    ids = _write_lake(tmp_path / "lake")
    config = _config(tmp_path)
    admin = FilesSystemAdmin("files", config)
    metadata = admin.get_system_stream_metadata(["events"])["events"]
    assert sorted(metadata.partitions) == [0, 1, 2]  # file groups, not files
    assert metadata.partitions[0].oldest_offset == "part-0-0.parquet:0"
    assert metadata.partitions[0].newest_offset == f"part-0-2.parquet:{ROWS_PER_FILE - 1}"
    assert metadata.partitions[1].upcoming_offset == f"part-1-1.parquet:{ROWS_PER_FILE}"

    result = run_job(config)  # no samza.bounded: a files stream ends by itself

    assert result.succeeded, result.summary_line()
    out = _output_rows(tmp_path / "lake")
    assert Counter(r["id"] for r in out) == Counter(ids)
    assert {r["name"] for r in out if r["id"] == 10_003} == {"row-10003"}  # typed values came through
    # each partition's rows in file order, then row order
    by_partition = [r for r in out if r["id"] // 10_000 == 1]
    assert [r["offset"] for r in by_partition][:2] == ["part-1-0.parquet:0", "part-1-0.parquet:1"]
    checkpoints = read_checkpoints(config)
    offsets = {ssp.partition: o for cp in checkpoints.values() for ssp, o in cp.offsets.items()}
    assert offsets == {p: f"part-{p}-{n - 1}.parquet:{ROWS_PER_FILE - 1}" for p, n in FILES.items()}


def test_a_restart_in_the_middle_resumes_after_the_checkpoint_and_a_startpoint_rewinds(tmp_path):
    ids = _write_lake(tmp_path / "lake")
    config = _config(tmp_path, **{"job.container.count": "1", "test.shutdown.after": "400"})
    first = run_job(config)  # stops after 400 rows, mid-file, and commits
    assert first.succeeded, first.summary_line()
    done = Counter(r["id"] for r in _output_rows(tmp_path / "lake"))
    assert 0 < sum(done.values()) < len(ids)

    second = run_job(_config(tmp_path, **{"job.container.count": "1"}))
    assert second.succeeded, second.summary_line()
    assert Counter(r["id"] for r in _output_rows(tmp_path / "lake")) == Counter(ids)  # nothing twice, nothing lost

    # a startpoint: partition 2 again from the middle of its second file
    set_startpoints(config, "files.events", StartpointSpecific("part-2-1.parquet:200"), partitions=[2])
    third = run_job(_config(tmp_path, **{"job.container.count": "1"}))
    assert third.succeeded, third.summary_line()
    again = Counter(r["id"] for r in _output_rows(tmp_path / "lake")) - Counter(ids)
    expected = list(range(21_000 + 200, 21_000 + ROWS_PER_FILE)) + list(range(22_000, 22_000 + ROWS_PER_FILE))
    assert again == Counter(expected)


def test_json_lines_and_csv_by_extension_and_by_config(tmp_path):
    lake = tmp_path / "lake"
    (lake / "events").mkdir(parents=True)
    (lake / "events" / "a.jsonl").write_text("".join(f'{{"id": {i}, "tag": "j"}}\n' for i in range(5)))
    (lake / "events" / "b.csv").write_text("id,tag\n" + "".join(f"{i},c\n" for i in range(100, 103)))
    (lake / "events" / "c.data").write_text('{"id": 900, "tag": "x"}\n')
    config = _config(
        tmp_path,
        **{
            "systems.files.partitioner.defaultPartitioner.groupPattern": "",
            "systems.files.partitioner.defaultPartitioner.blacklist": r".*\.data",
        },
    )
    assert run_job(config).succeeded
    assert sorted((r["id"], r["tag"]) for r in _output_rows(lake)) == [(i, "j") for i in range(5)] + [
        (i, "c") for i in range(100, 103)
    ]
    # the format by config: a file without a known extension
    for f in (lake / "events").iterdir():
        if f.suffix != ".data":
            f.unlink()
    for f in (lake / "out").iterdir():
        f.unlink()
    config = _config(
        tmp_path,
        **{
            "job.name": "by-config",
            "job.container.count": "1",
            "streams.events.samza.system": "files",
            "streams.events.files.format": "jsonl",
        },
    )
    assert run_job(config).succeeded
    assert [r["id"] for r in _output_rows(lake)] == [900]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        # a bad row is a bad message: its stream, partition and offset (file:row), and the keys that
        # drop it or send it to a dead-letter stream (test_files_bad_rows.py)
        (
            "bad.jsonl",
            '{"id": 1}\n{"id": 2}\n{"id": \n{"id": 4}\n',
            "stream files.events partition 0 offset bad.jsonl:2: file bad.jsonl row 2 does not parse",
        ),
        (
            "bad.csv",
            "id,tag\n1,a\n2,b\n3,c,extra\n",
            "stream files.events partition 0 offset bad.csv:2: file bad.csv row 2 does not parse: CSV parse error: Expected 2 columns",
        ),
        # a file that cannot be read at all, met as the job starts: named with its path (a config
        # error: the blacklist key leaves it out)
        ("bad.parquet", "PAR1 this is not parquet", "bad.parquet: not a Parquet file"),
        ("bad.txt", "whatever", "bad.txt: unknown format"),
    ],
)
def test_a_bad_file_or_row_fails_the_job_with_one_line_naming_file_and_row(tmp_path, name, content, expected):
    lake = tmp_path / "lake"
    (lake / "events").mkdir(parents=True)
    (lake / "events" / name).write_text(content)
    config = _config(
        tmp_path, **{"systems.files.partitioner.defaultPartitioner.groupPattern": "", "job.container.count": "1"}
    )
    error = _failure(config)
    assert "stream files.events" in error and name in error
    assert expected in error, error
    if name.endswith(("jsonl", "csv")):
        assert "task.dlq.stream" in error and "task.drop.deserialization.errors" in error
    assert len(error.splitlines()) == 1


def _failure(config: Config) -> str:
    """The job's failure: raised while it is set up (a text file is read whole for its row count
    when the job looks up its partitions), or reported by the container that read the file."""
    try:
        result = run_job(config)
    except Exception as exc:  # noqa: BLE001 - whichever layer meets the file first
        return str(exc)
    assert not result.succeeded
    return result.error or ""


def test_a_row_that_does_not_fit_the_output_schema_is_named(tmp_path):
    lake = tmp_path / "lake"
    (lake / "events").mkdir(parents=True)
    (lake / "events" / "mixed.jsonl").write_text('{"id": 1}\n{"id": 2}\n')
    config = _config(
        tmp_path,
        **{
            "systems.files.partitioner.defaultPartitioner.groupPattern": "",
            "job.container.count": "1",
            "task.class": "tests.system.files.test_files_system:ShapeShifter",
        },
    )
    error = _failure(config)
    assert "files stream files.out" in error and "'surprise'" in error, error


class ShapeShifter(StreamTask):
    """Sends a second row with a column the first did not have."""

    def process(self, envelope, collector, coordinator):
        row = dict(envelope.message)
        if row["id"] == 2:
            row["surprise"] = True
        collector.send(OutgoingMessageEnvelope(SystemStream("files", "out"), row))


def test_the_parquet_output_rolls_by_size_and_hides_files_until_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(files_producer, "_BATCH_ROWS", 100)  # a row group per 100 rows: the size grows within a commit
    _write_lake(tmp_path / "lake")
    config = _config(tmp_path, **{"systems.files.files.roll.bytes": "2000", "task.commit.ms": "60000"})
    assert run_job(config).succeeded
    files = sorted((tmp_path / "lake" / "out").iterdir())
    assert len(files) > len(FILES)  # rolled within a commit interval, not only at commits
    assert all(f.suffix == ".parquet" and not f.name.startswith(".") for f in files)


def test_offsets_order_by_file_then_row_and_groups_follow_samzas_pattern():
    assert compare_file_offsets("a.parquet:9", "a.parquet:10") < 0
    assert compare_file_offsets("a.parquet:10", "b.parquet:0") < 0
    assert compare_file_offsets("x:y.parquet:3", "x:y.parquet:3") == 0  # a path may hold ':'
    assert compare_file_offsets("END_OF_STREAM", "z.parquet:0") > 0
    assert group_id("run_2016-08-01-part-3.avro", r".*part-[id]\.avro") == "3"
    assert group_id("other.avro", r".*part-[id]\.avro") == "other.avro"
    assert SystemStreamPartition("files", "e", 0).partition == 0
