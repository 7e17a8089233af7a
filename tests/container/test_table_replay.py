"""TableReplay alone: which tables a replayed message's sends may not reach, and a columnar batch
cut where a table's checkpoint falls inside it (the files system's real admin cuts it)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.config import Config
from samza_dagster.container.table_replay import TableReplay, TableReplayError
from samza_dagster.model import ColumnarEnvelope, IncomingMessageEnvelope, OutgoingMessageEnvelope, SystemStream
from samza_dagster.model import SystemStreamPartition as SSP
from samza_dagster.system.files.admin import FilesSystemAdmin
from samza_dagster.system.files.offsets import compare_file_offsets

A, B = SystemStream("ice", "a"), SystemStream("ice", "b")
LOG0, LOG1 = SSP("log", "in", 0), SSP("log", "in", 1)
FILES0 = SSP("files", "trips", 0)


def _compare(system: str, a: str, b: str) -> int:
    if system == "files":
        return compare_file_offsets(a, b)
    return (int(a) > int(b)) - (int(a) < int(b))


def _replay(tables: dict[SystemStream, dict], admin=None) -> TableReplay:
    return TableReplay(
        "Partition 0", {ss: Checkpoint(offsets) for ss, offsets in tables.items()}, _compare, lambda s: admin
    )


class _Recording:
    def __init__(self) -> None:
        self.sent: list[tuple[SystemStream, object]] = []

    def send(self, source, envelope):
        self.sent.append((envelope.system_stream, envelope.message))

    def send_table(self, source, system_stream, table):
        self.sent.append((system_stream, table.num_rows))


def test_a_message_at_or_before_a_tables_checkpoint_is_not_sent_to_it_again():
    replay = _replay({A: {LOG0: "5", LOG1: "2"}, B: {LOG0: "3"}})
    inner = _Recording()
    producer = replay.producers({"ice": inner, "log": _Recording()})["ice"]
    sent_at = {}
    for offset in ("3", "4", "5", "6"):
        replay.at(LOG0, offset)
        sent_at[offset] = replay.muted
        producer.send("Partition 0", OutgoingMessageEnvelope(A, offset))
        producer.send("Partition 0", OutgoingMessageEnvelope(B, offset))
    assert sent_at == {"3": {A, B}, "4": {A}, "5": {A}, "6": frozenset()}
    assert inner.sent == [(B, "4"), (B, "5"), (A, "6"), (B, "6")]
    assert replay.skipped == {A: 3, B: 1}
    assert not replay.finished  # A still holds partition 1 up to offset 2
    replay.at(LOG1, "3")
    assert replay.finished and replay.muted == frozenset()


def test_window_output_is_muted_until_the_task_passes_the_tables_checkpoint_in_a_partition():
    replay = _replay({A: {LOG0: "5", LOG1: "2"}})
    replay.in_window()
    assert replay.muted == {A}
    replay.at(LOG1, "3")
    replay.in_window()
    assert replay.muted == frozenset()


def test_partitions_started_elsewhere_are_forgotten():
    replay = _replay({A: {LOG0: "5", LOG1: "2"}, B: {LOG1: "9"}})
    replay.forget({LOG1})
    replay.at(LOG1, "1")
    assert replay.muted == frozenset()
    assert replay.tables == [A]


def _batch(first: int, rows: int) -> ColumnarEnvelope:
    batch = pa.record_batch({"id": list(range(first, first + rows))})
    return ColumnarEnvelope(FILES0, f"part-0.parquet:{first}", f"part-0.parquet:{first + rows - 1}", batch)


def test_a_batch_straddling_two_tables_checkpoints_is_cut_at_each(tmp_path):
    admin = FilesSystemAdmin("files", Config({"systems.files.files.root": str(tmp_path)}))
    replay = _replay({A: {FILES0: "part-0.parquet:12"}, B: {FILES0: "part-0.parquet:14"}}, admin)
    pieces = []
    for piece in replay.runs([_batch(0, 10), _batch(10, 10)]):
        pieces.append(([(e.first_offset, e.offset, e.message["id"].to_pylist()) for e in piece], replay.muted))
    assert pieces == [
        (
            [
                ("part-0.parquet:0", "part-0.parquet:9", list(range(10))),
                ("part-0.parquet:10", "part-0.parquet:12", [10, 11, 12]),
            ],
            {A, B},
        ),
        ([("part-0.parquet:13", "part-0.parquet:14", [13, 14])], {B}),
        ([("part-0.parquet:15", "part-0.parquet:19", [15, 16, 17, 18, 19])], frozenset()),
    ]
    assert replay.finished


def test_a_batch_a_system_cannot_cut_is_an_error_naming_task_and_batch():
    replay = _replay({A: {FILES0: "part-0.parquet:3"}}, admin=object())
    with pytest.raises(TableReplayError, match=r"'Partition 0'.*files.trips\[0\]@part-0.parquet:0..part-0.parquet:9"):
        list(replay.runs([_batch(0, 10)]))


def test_rows_one_by_one_are_grouped_into_pieces_muting_the_same_tables():
    replay = _replay({A: {LOG0: "1"}})
    run = [IncomingMessageEnvelope(LOG0, str(o), None, o) for o in range(4)]
    pieces = [([e.offset for e in piece], replay.muted) for piece in replay.runs(run)]
    assert pieces == [(["0", "1"], {A}), (["2", "3"], frozenset())]
