"""``map_batches`` on a files input: the operator is handed the Arrow batches the files system read
(the file's own types — an int32 column stays int32, which rows turned back into a table would
make int64), its result goes whole to a files output (the schema as the function made it) and row
by row to the operators that take messages; a job stopped in the middle checkpoints the last row
of its last batch and resumes after it, nothing twice, nothing lost; the job ends by itself."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from samza_dagster.application import StreamApplication, SystemDescriptor
from samza_dagster.config import Config
from samza_dagster.runtime import run_job
from tests.apps.harness import read_checkpoints
from tests.system.files.test_files_columnar import FETCH, _output, _write_lake

pytestmark = pytest.mark.timeout(120)

#: what each map_batches call was given: (its type, the type of its ``id`` column, its rows)
SEEN: list[tuple[str, str, int]] = []


def _doubled(batch):
    """pandas or pyarrow: the batch with a ``doubled`` column (and what it was given, recorded)."""
    if isinstance(batch, pa.Table):
        SEEN.append(("Table", str(batch.schema.field("id").type), batch.num_rows))
        return batch.append_column("doubled", pa.compute.multiply(batch["amount"], 2))
    SEEN.append((type(batch).__name__, str(batch["id"].dtype), len(batch)))
    return batch.assign(doubled=batch["amount"] * 2)


class _StopAfter:
    """A sink that asks the container to shut down once it has seen ``test.stop.after.rows`` rows."""

    def __init__(self, rows: int) -> None:
        self.rows, self.seen = rows, 0

    def __call__(self, message, collector, coordinator) -> None:
        self.seen += 1
        if self.seen == self.rows:
            coordinator.shutdown(coordinator.ALL_TASKS_IN_CONTAINER)


class FilesBatchApp(StreamApplication):
    """files.events → map_batches → files.out (whole tables), and → a sink (one message per row)."""

    def describe(self, app):
        files = SystemDescriptor("files")
        doubled = app.get_input_stream(files.input("events")).map_batches(
            _doubled, batch_format=app.config.get_str("test.batch.format"), op_id="double"
        )
        doubled.send_to(app.get_output_stream(files.output("out")))
        doubled.sink(_StopAfter(app.config.get_int("test.stop.after.rows", 0)))


def _config(tmp_path: Path, batch_format: str = "pyarrow", **extra: str) -> Config:
    return Config(
        {
            "job.name": "columnar-hl",
            "job.factory.class": "thread",
            "app.class": "tests.operators.test_operators_batches_columnar:FilesBatchApp",
            "test.batch.format": batch_format,
            "systems.files.samza.factory": "files",
            "systems.files.files.root": str(tmp_path / "lake"),
            "systems.files.files.fetch.size": str(FETCH),
            "systems.files.partitioner.defaultPartitioner.groupPattern": "part-[id]-.*",
            "job.default.system": "log",
            "systems.log.samza.factory": "log",
            "systems.log.log.path": str(tmp_path / "log"),
            "task.commit.ms": "60000",
            **extra,
        }
    )


@pytest.mark.parametrize(
    ("batch_format", "kind", "id_type"), [("pyarrow", "Table", "int32"), ("pandas", "DataFrame", "int32")]
)
def test_map_batches_takes_a_files_inputs_arrow_batches_and_writes_its_result_whole(
    tmp_path, batch_format, kind, id_type
):
    ids = _write_lake(tmp_path / "lake", id_type=pa.int32())
    SEEN.clear()
    result = run_job(_config(tmp_path, batch_format))
    assert result.succeeded, result.summary_line()  # a bounded input: the job ended by itself
    assert result.messages_processed == len(ids)  # rows, not batches
    # the files' batches as read: their schema (int32, not the int64 of rows made into a table), at
    # most the fetch size each
    assert {(k, t) for k, t, _ in SEEN} == {(kind, id_type)}
    assert sum(rows for _, _, rows in SEEN) == len(ids) and max(rows for _, _, rows in SEEN) <= FETCH
    out = _output(tmp_path / "lake")
    assert out.schema.field("id").type == pa.int32()  # written whole, as the function made it
    assert Counter(out["id"].to_pylist()) == Counter(ids)
    assert out["doubled"].to_pylist() == [a * 2 for a in out["amount"].to_pylist()]


def test_a_map_batches_job_on_files_stopped_in_the_middle_resumes_after_its_last_batch(tmp_path):
    ids = _write_lake(tmp_path / "lake", id_type=pa.int32())
    first = run_job(_config(tmp_path, **{"test.stop.after.rows": str(2 * FETCH), "task.consumer.batch.size": "1"}))
    assert first.succeeded, first.summary_line()
    done = Counter(_output(tmp_path / "lake")["id"].to_pylist())
    assert sum(done.values()) == 2 * FETCH
    (checkpoint,) = read_checkpoints(_config(tmp_path)).values()
    assert list(checkpoint.offsets.values()) == [f"part-0-0.parquet:{2 * FETCH - 1}"]  # the second batch's last row

    second = run_job(_config(tmp_path))
    assert second.succeeded, second.summary_line()
    assert Counter(_output(tmp_path / "lake")["id"].to_pylist()) == Counter(ids)  # nothing twice, nothing lost
