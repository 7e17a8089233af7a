"""End-of-stream and watermark reconciliation over upstream producer tasks (Samza design)."""

from __future__ import annotations

import json

import pytest

from samza_dagster.control import (
    WATERMARK_NOT_EXIST,
    ControlStateError,
    EndOfStreamMessage,
    EndOfStreamStates,
    WatermarkMessage,
    WatermarkStates,
)
from samza_dagster.system import SystemStream, SystemStreamPartition

INTER = SystemStream("log", "job-1-partition_by-p1")
INPUT = SystemStream("log", "clicks")
I0, I1 = (SystemStreamPartition(*INTER, p) for p in (0, 1))
C0, C1 = (SystemStreamPartition(*INPUT, p) for p in (0, 1))
SSPS = [I0, I1, C0, C1]
COUNTS = {INTER: 3}


def eos(task: str | None, count: int = 3) -> EndOfStreamMessage:
    return EndOfStreamMessage(task, count)


def wm(ts: int, task: str | None, count: int = 3) -> WatermarkMessage:
    return WatermarkMessage(ts, task, count)


# -- end of stream --------------------------------------------------------------------------


def test_intermediate_partition_ends_only_when_every_producer_task_sent_end_of_stream():
    states = EndOfStreamStates(SSPS, COUNTS)
    assert states.update(eos("Partition 2"), I0) is False
    assert states.update(eos("Partition 0"), I0) is False
    assert not states.is_end_of_stream_per_ssp(I0)
    assert states.update(eos("Partition 1"), I0) is True
    assert states.is_end_of_stream_per_ssp(I0)
    assert not states.is_end_of_stream(INTER)  # partition 1 still open


def test_duplicate_end_of_stream_from_one_task_counts_once():
    states = EndOfStreamStates(SSPS, COUNTS)
    for _ in range(5):
        assert states.update(eos("Partition 0"), I1) is False
    states.update(eos("Partition 1"), I1)
    assert not states.is_end_of_stream_per_ssp(I1)
    assert states.update(eos("Partition 2"), I1) is True
    assert states.update(eos("Partition 2"), I1) is False  # already ended: reported once


def test_input_stream_without_producer_count_ends_with_one_message_per_partition():
    states = EndOfStreamStates(SSPS, COUNTS)
    assert states.update(eos(None, 0), C0) is True
    assert not states.is_end_of_stream(INPUT)
    assert states.update(eos(None, 0), C1) is True
    assert states.is_end_of_stream(INPUT)
    assert not states.all_end_of_stream()


def test_all_end_of_stream_once_every_partition_of_every_stream_ended():
    states = EndOfStreamStates(SSPS, COUNTS)
    for ssp in (C0, C1):
        states.update(eos(None, 0), ssp)
    for task in ("c", "a", "b"):  # out of order across partitions and tasks
        states.update(eos(task), I1)
        states.update(eos(task), I0)
    assert states.is_end_of_stream(INTER) and states.is_end_of_stream(INPUT)
    assert states.all_end_of_stream()


def test_an_end_of_stream_without_a_task_name_ends_a_partition_that_producer_tasks_write():
    """Samza 1.8's aggregator task broadcasts one to the partitions other than the aggregate one
    (EndOfStreamStates: "from either the source or the aggregator task")."""
    states = EndOfStreamStates([I0, I1], COUNTS)
    states.update(eos("a"), I0)
    assert states.update(eos(None, 0), I0) is True
    assert states.is_end_of_stream_per_ssp(I0) and not states.is_end_of_stream(INTER)
    assert states.update(eos("b"), I0) is False  # ended once
    assert states.update(eos(None, 0), I1) is True
    assert states.is_end_of_stream(INTER)


def test_end_of_stream_errors_name_the_partition_and_counts():
    states = EndOfStreamStates([I0], COUNTS)
    with pytest.raises(ControlStateError, match="does not consume"):
        states.update(eos("a"), I1)
    with pytest.raises(ControlStateError, match="says 5 producer tasks, but this job expects 3"):
        states.update(eos("a", 5), I0)
    for task in "abc":
        states.update(EndOfStreamMessage(task, 3), I0)
    assert states.is_end_of_stream(INTER)


def test_more_producer_tasks_than_expected_is_an_error():
    states = WatermarkStates([I0], {INTER: 2})
    states.update(wm(1, "a", 2), I0)
    states.update(wm(1, "b", 2), I0)
    with pytest.raises(ControlStateError, match="all 2 expected producer tasks"):
        states.update(wm(1, "c", 2), I0)


def test_unknown_stream_is_not_at_its_end():
    assert not EndOfStreamStates(SSPS, COUNTS).is_end_of_stream(SystemStream("log", "other"))
    assert EndOfStreamStates([], {}).all_end_of_stream()


def test_end_of_stream_snapshot_restores_mid_way_through_json():
    states = EndOfStreamStates(SSPS, COUNTS)
    states.update(eos("a"), I0)
    states.update(eos("b"), I0)
    states.update(eos(None, 0), C1)
    snapshot = json.loads(json.dumps(states.to_dict()))
    assert snapshot["log.job-1-partition_by-p1"] == {
        "totalTasks": 3,
        "partitions": {"0": {"tasks": ["a", "b"], "endOfStream": False}, "1": {"tasks": [], "endOfStream": False}},
    }
    assert snapshot["log.clicks"]["partitions"]["1"] == {"tasks": [], "endOfStream": True}

    restored = EndOfStreamStates.from_dict(SSPS, COUNTS, snapshot)
    assert restored.is_end_of_stream_per_ssp(C1) and not restored.is_end_of_stream_per_ssp(C0)
    assert restored.update(eos("b"), I0) is False  # remembered
    assert restored.update(eos("c"), I0) is True
    restored.update(eos(None, 0), C0)
    for task in "abc":
        restored.update(eos(task), I1)
    assert restored.all_end_of_stream()


def test_restore_ignores_partitions_the_task_no_longer_owns_and_rejects_garbage():
    states = EndOfStreamStates([I0], COUNTS)
    states.restore({"log.clicks": {"totalTasks": 0, "partitions": {"0": {"tasks": [], "endOfStream": True}}}})
    assert not states.all_end_of_stream()
    with pytest.raises(ControlStateError, match="not '<system>.<stream>'"):
        states.restore({"nodot": {"partitions": {}}})
    with pytest.raises(ControlStateError, match="partition key 'x'"):
        states.restore({"log.s": {"partitions": {"x": {}}}})
    with pytest.raises(ControlStateError, match="tasks of"):
        states.restore({"log.job-1-partition_by-p1": {"partitions": {"0": {"tasks": "abc"}}}})


# -- watermarks ------------------------------------------------------------------------------


def test_watermark_is_min_over_producer_tasks_once_all_reported():
    states = WatermarkStates(SSPS, COUNTS)
    assert states.get_watermark_per_ssp(I0) == WATERMARK_NOT_EXIST
    assert states.update(wm(30, "c"), I0) is False
    assert states.update(wm(10, "a"), I0) is False  # partial: b has not reported
    assert states.get_watermark_per_ssp(I0) == WATERMARK_NOT_EXIST
    assert states.update(wm(20, "b"), I0) is True
    assert states.get_watermark_per_ssp(I0) == 10
    assert states.update(wm(25, "b"), I0) is False  # min still a's 10
    assert states.update(wm(40, "a"), I0) is True
    assert states.get_watermark_per_ssp(I0) == 25


def test_watermark_never_decreases():
    states = WatermarkStates([I0], COUNTS)
    for task in "abc":
        states.update(wm(100, task), I0)
    assert states.get_watermark_per_ssp(I0) == 100
    assert states.update(wm(50, "a"), I0) is False  # late, lower: ignored
    assert states.update(wm(100, "a"), I0) is False  # duplicate
    assert states.get_watermark_per_ssp(I0) == 100
    assert states.to_dict()["log.job-1-partition_by-p1"]["partitions"]["0"]["tasksToEventTime"]["a"] == 100


def test_stream_watermark_is_min_over_partitions_and_missing_until_all_have_one():
    states = WatermarkStates(SSPS, COUNTS)
    assert states.update(wm(500, None, 0), C0) is True
    assert states.get_watermark(INPUT) == WATERMARK_NOT_EXIST
    states.update(wm(300, None, 0), C1)
    assert states.get_watermark(INPUT) == 300
    assert states.update(wm(200, None, 0), C1) is False  # source watermarks only advance
    assert states.get_watermark(INPUT) == 300
    assert states.get_watermark(SystemStream("log", "unknown")) == WATERMARK_NOT_EXIST


def test_watermarks_out_of_order_across_partitions_and_tasks():
    states = WatermarkStates(SSPS, COUNTS)
    for ts, task, ssp in [(5, "b", I1), (7, "a", I0), (9, "c", I1), (1, "a", I1), (3, "b", I0), (8, "c", I0)]:
        states.update(wm(ts, task), ssp)
    assert states.get_watermark_per_ssp(I0) == 3
    assert states.get_watermark_per_ssp(I1) == 1
    assert states.get_watermark(INTER) == 1
    states.update(wm(6, "a", 3), I1)
    assert states.get_watermark(INTER) == 3


def test_watermark_errors():
    states = WatermarkStates([I0], COUNTS)
    with pytest.raises(ControlStateError, match="does not consume"):
        states.update(wm(1, "a"), C0)
    with pytest.raises(ControlStateError, match="says 4 producer tasks"):
        states.update(wm(1, "a", 4), I0)


def test_watermark_snapshot_restores_mid_way():
    states = WatermarkStates(SSPS, COUNTS)
    states.update(wm(10, "a"), I0)
    states.update(wm(20, "b"), I0)
    states.update(wm(70, None, 0), C0)
    snapshot = json.loads(json.dumps(states.to_dict()))
    assert snapshot["log.job-1-partition_by-p1"]["partitions"]["0"] == {
        "tasksToEventTime": {"a": 10, "b": 20},
        "watermark": WATERMARK_NOT_EXIST,
    }
    restored = WatermarkStates.from_dict(SSPS, COUNTS, snapshot)
    assert restored.get_watermark_per_ssp(C0) == 70
    assert restored.update(wm(15, "c"), I0) is True
    assert restored.get_watermark_per_ssp(I0) == 10
    assert restored.update(wm(5, "a"), I0) is False
    with pytest.raises(ControlStateError, match="tasksToEventTime"):
        restored.restore({"log.clicks": {"partitions": {"0": {"tasksToEventTime": {"a": "x"}}}}})
