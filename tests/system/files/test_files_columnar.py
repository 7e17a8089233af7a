"""The columnar path: a files input's Arrow batches handed whole to a batch task that takes
``batch_format = "arrow"`` or ``"pandas"``, sent on whole (``collector.send_table``) to a files
output or split into messages for the log; checkpoints at the batch's last row, a restart in the
middle resuming after it; the same task on a log input gets its messages as a table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from samza_dagster.config import Config
from samza_dagster.model import ColumnarEnvelope, SystemStreamPartition
from samza_dagster.runtime import run_job
from samza_dagster.system import SystemStream
from samza_dagster.system.files.consumer import FilesSystemConsumer
from samza_dagster.task.api import BatchStreamTask
from samza_dagster.task.batch_formats import columnar_format
from samza_dagster.task.errors import BatchFormatError
from support.hl_harness import read_all
from tests.apps.harness import create_stream, produce, read_checkpoints

ROWS_PER_FILE = 300
FETCH = 128


class ArrowCopy(BatchStreamTask):
    """Sends each batch on whole with a column added; records what it was given."""

    batch_format = "arrow"
    seen: list[tuple[str, int]] = []

    def init(self, context):
        self.out = SystemStream(context.config.get_str("test.output.system", "files"), "out")
        self.stop_after = context.config.get_int("test.shutdown.after.batches", 0)
        self.batches = 0

    def process_batch(self, table, collector, coordinator):
        ArrowCopy.seen.append((type(table).__name__, table.num_rows))
        collector.send_table(self.out, table.append_column("doubled", pa.compute.multiply(table["amount"], 2)))
        self.batches += 1
        if self.batches == self.stop_after:
            coordinator.shutdown(coordinator.ALL_TASKS_IN_CONTAINER)


class PandasCopy(BatchStreamTask):
    batch_format = "pandas"

    def init(self, context):
        self.out = SystemStream("files", "out")

    def process_batch(self, frame, collector, coordinator):
        assert isinstance(frame, pd.DataFrame), type(frame)
        collector.send_table(self.out, frame.assign(doubled=frame["amount"] * 2))


def _write_lake(root: Path, files: int = 3, id_type: pa.DataType | None = None) -> list[int]:
    ids: list[int] = []
    for n in range(files):
        rows = list(range(n * 1000, n * 1000 + ROWS_PER_FILE))
        ids.extend(rows)
        table = pa.table({"id": pa.array(rows, id_type), "amount": [i / 4 for i in rows]})
        path = root / "events" / f"part-0-{n}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, row_group_size=100)
    return ids


def _config(tmp_path: Path, task: str = "ArrowCopy", **extra: str) -> Config:
    return Config(
        {
            "job.name": "columnar",
            "job.factory.class": "thread",
            "systems.files.samza.factory": "files",
            "systems.files.files.root": str(tmp_path / "lake"),
            "systems.files.files.fetch.size": str(FETCH),
            "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.inputs": "files.events",
            "task.class": f"tests.system.files.test_files_columnar:{task}",
            **extra,
        }
    )


def _output(root: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(p) for p in sorted((root / "out").glob("*.parquet"))])


def test_the_files_consumer_delivers_a_partitions_rows_as_arrow_batches_with_their_offset_range(tmp_path):
    _write_lake(tmp_path / "lake", files=2)
    consumer = FilesSystemConsumer("files", _config(tmp_path))
    ssp = SystemStreamPartition("files", "events", 0)
    consumer.deliver_columnar([ssp])
    consumer.register(ssp, "part-0-0.parquet:250")  # a restart after the checkpoint at row 249
    consumer.start()
    envelopes = []
    while not (envelopes and envelopes[-1].is_end_of_stream):
        envelopes.extend(consumer.poll([ssp], 0).get(ssp, []))
    consumer.stop()
    batches = envelopes[:-1]
    assert all(type(e) is ColumnarEnvelope for e in batches)
    ranges = [(e.first_offset, e.offset, e.rows) for e in batches]
    assert ranges == [
        ("part-0-0.parquet:250", "part-0-0.parquet:299", 50),
        ("part-0-1.parquet:0", "part-0-1.parquet:127", 128),
        ("part-0-1.parquet:128", "part-0-1.parquet:255", 128),
        ("part-0-1.parquet:256", "part-0-1.parquet:299", 44),
    ]
    assert batches[0].message.column("id").to_pylist() == list(range(250, 300))


@pytest.mark.parametrize("task", ["ArrowCopy", "PandasCopy"])
def test_a_columnar_task_copies_files_to_files_whole_batches_and_checkpoints_the_last_row(tmp_path, task):
    ids = _write_lake(tmp_path / "lake")
    ArrowCopy.seen = []
    result = run_job(_config(tmp_path, task))
    assert result.succeeded, result.summary_line()
    out = _output(tmp_path / "lake")
    assert Counter(out["id"].to_pylist()) == Counter(ids)
    assert out["doubled"].to_pylist() == [a * 2 for a in out["amount"].to_pylist()]
    assert result.messages_processed == len(ids)  # rows, not batches
    if task == "ArrowCopy":  # tables of the files' batches (no row larger than the fetch)
        assert {kind for kind, _ in ArrowCopy.seen} == {"Table"}
        assert sum(rows for _, rows in ArrowCopy.seen) == len(ids)
    offsets = {ssp.partition: o for cp in read_checkpoints(_config(tmp_path)).values() for ssp, o in cp.offsets.items()}
    assert offsets == {0: f"part-0-2.parquet:{ROWS_PER_FILE - 1}"}


def test_a_columnar_job_stopped_in_the_middle_resumes_after_its_last_batch(tmp_path):
    ids = _write_lake(tmp_path / "lake")
    first = run_job(_config(tmp_path, **{"test.shutdown.after.batches": "2", "task.consumer.batch.size": "1"}))
    assert first.succeeded, first.summary_line()
    done = Counter(_output(tmp_path / "lake")["id"].to_pylist())
    assert 0 < sum(done.values()) < len(ids)
    checkpoint = next(iter(read_checkpoints(_config(tmp_path)).values()))
    (offset,) = checkpoint.offsets.values()
    assert offset == "part-0-0.parquet:255"  # mid-file: the last row of the second batch

    second = run_job(_config(tmp_path))
    assert second.succeeded, second.summary_line()
    assert Counter(_output(tmp_path / "lake")["id"].to_pylist()) == Counter(ids)  # nothing twice, nothing lost


def test_a_columnar_task_on_the_log_gets_its_messages_as_a_table_and_sends_rows_as_messages(tmp_path):
    config = _config(
        tmp_path,
        **{
            "task.inputs": "log.events",
            "systems.log.samza.msg.serde": "json",
            "streams.events.samza.bounded": "true",
            "test.output.system": "log",
        },
    )
    create_stream(config, "log", "events", 2)
    create_stream(config, "log", "out", 1)
    produce(
        config, "log", "events", [(i % 2, None, json.dumps({"id": i, "amount": i / 2}).encode()) for i in range(500)]
    )
    result = run_job(config)
    assert result.succeeded, result.summary_line()
    rows = [message for _, message in read_all(config, "out")]
    assert sorted(r["id"] for r in rows) == list(range(500))
    assert all(r["doubled"] == r["amount"] * 2 for r in rows)


class Misspelt(BatchStreamTask):
    batch_format = "arow"


def test_an_unknown_batch_format_is_refused_naming_the_task_class():
    with pytest.raises(BatchFormatError, match=r"Misspelt: batch_format 'arow' is not one of envelopes, arrow, pandas"):
        columnar_format(Misspelt())
