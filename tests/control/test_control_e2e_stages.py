"""In-band control messages end to end on the log system: event-time windows fired by
watermarks reconciled over producer tasks, an application split into two jobs at its
partition_by, and a downstream restart between two upstream end-of-stream messages."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest

from samza_dagster.control import EndOfStreamMessage, IntermediateMessageSerde
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.runtime.thread_runner import ThreadJobRunner
from samza_dagster.serde import JsonSerde
from samza_dagster.system.factories import system_factory
from support.hl_harness import bounded, counter, create, produce, read_all, run, statuses, task_names
from support.waiting import wait_until
from tests.apps.harness import read_checkpoints
from tests.hl_apps import base

pytestmark = pytest.mark.timeout(120)


def _count_rows(cfg, stream: str) -> int:
    admin = system_factory(cfg, "log").get_admin("log", cfg)
    md = admin.get_system_stream_metadata([stream])[stream]
    return sum(int(pm.newest_offset) + 1 for pm in md.partitions.values() if pm.newest_offset is not None)


def test_event_time_windows_fire_once_after_watermark_and_count_late(tmp_path):
    cfg = base(tmp_path, "et", "EventTimeCountApp", **{"task.watermark.interval.ms": "50"})
    for s in ("A", "B"):
        create(cfg, s, 2)
    create(cfg, "panes", 2)
    # (stream, partition, key, event time): every input partition moves its event time
    batch1 = [
        ("A", 0, "x", 100),
        ("A", 0, "x", 1200),
        ("A", 1, "y", 300),
        ("A", 1, "y", 1250),
        ("B", 0, "x", 200),
        ("B", 0, "y", 1100),
        ("B", 1, "y", 150),
        ("B", 1, "x", 1300),
    ]
    batch2 = [("A", 0, "x", 500), ("A", 0, "x", 2100), ("A", 1, "y", 2200), ("B", 0, "y", 2300), ("B", 1, "x", 2400)]

    def write(batch):
        for s in ("A", "B"):
            rows = [(p, None, {"k": k, "t": t}) for (st, p, k, t) in batch if st == s]
            produce(cfg, s, rows, [t for (st, _p, _k, t) in batch if st == s])

    write(batch1)
    job = ThreadJobRunner(cfg)
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault("run", job.run()), daemon=True)
    runner.start()
    try:
        # window [0, 1000) closes once every partition's watermark passed 1000 (min is 1100)
        wait_until(lambda: _count_rows(cfg, "panes") >= 2)
        write(batch2)  # x@500 is now late: its pane has fired
        wait_until(lambda: _count_rows(cfg, "panes") >= 4)
        # a pane fired wrongly would be written while its message is processed: once every
        # message is, the graceful stop's commit flushes whatever was fired
        total = len(batch1) + len(batch2)
        wait_until(
            lambda: (
                sum(ti.metrics.envelopes_processed for c in job.containers for ti in list(c.tasks.values())) >= total
            ),
            what="every message processed",
        )
    finally:
        job.stop()
        runner.join(30)
    panes = sorted((k, tuple(v)) for k, v in read_all(cfg, "panes"))
    assert panes == [("x", (0, 1000, 2)), ("x", (1000, 2000, 2)), ("y", (0, 1000, 2)), ("y", (1000, 2000, 2))]
    assert result["run"].succeeded and statuses(result["run"]) == {"shutdown"}
    # the late message shows in the container summaries (TaskMetrics counters)
    assert counter(result["run"], "late_messages") == 1
    assert counter(result["run"], "late_messages.et-1-window-w") == 1


def _two_stage_config(tmp_path, **extra):
    cfg = bounded(
        base(tmp_path, "wc", "TwoStageCountApp", **{"job.intermediate.stream.partitions": "3", **extra}), "words"
    )
    return cfg


def _setup_words(cfg, n=300):
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    words = [f"w{i % 11}" for i in range(n)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)])
    return Counter(words)


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_split_jobs_run_one_after_the_other(tmp_path, runner):
    cfg = _two_stage_config(tmp_path, **{"job.factory.class": runner})
    expected = _setup_words(cfg)
    up = run(cfg.with_overrides({"app.stage": "0"}), runner)
    assert len(task_names(up)) == 4
    down = run(cfg.with_overrides({"app.stage": "stage-1"}), runner)
    assert statuses(up) == statuses(down) == {"completed"}
    assert len(task_names(down)) == 3  # one per intermediate partition
    got = read_all(cfg, "counts")
    assert dict(got) == dict(expected) and len(got) == len(expected)


def test_split_jobs_run_at_the_same_time(tmp_path):
    cfg = _two_stage_config(tmp_path)
    expected = _setup_words(cfg)
    # the downstream job starts first and waits for the upstream job's end-of-stream messages
    out = {}
    downstream = ThreadJobRunner(cfg.with_overrides({"app.stage": "1", "job.factory.class": "thread"}))
    down = threading.Thread(target=lambda: out.setdefault("down", downstream.run()))
    down.start()
    wait_until(
        lambda: downstream.containers and all(c.run_loop is not None for c in downstream.containers),
        what="the downstream job's containers running",
    )
    up = run(cfg.with_overrides({"app.stage": "0"}))
    down.join(60)
    assert out["down"].succeeded, out["down"].summary_line()
    assert statuses(up) == statuses(out["down"]) == {"completed"}
    assert dict(read_all(cfg, "counts")) == dict(expected)


def _upstream_writes(cfg, stream: str, words: list[str], producer_tasks: list[str]) -> None:
    """What upstream tasks of a 4-task job write: user messages, then each named task's
    end-of-stream to every partition."""
    serde = IntermediateMessageSerde(JsonSerde())
    producer = system_factory(cfg, "log").get_producer("log", cfg)
    producer.register("up")
    producer.start()
    ss = SystemStream("log", stream)
    for w in words:
        producer.send("up", OutgoingMessageEnvelope(ss, serde.to_bytes(1), json.dumps(w).encode()))
    for task in producer_tasks:
        for p in range(3):
            producer.send("up", OutgoingMessageEnvelope(ss, serde.to_bytes(EndOfStreamMessage(task, 4)), None, None, p))
    producer.flush("up")
    producer.stop()


def _processed_offsets(job: ThreadJobRunner) -> dict:
    """The offset each input partition of the running job's tasks was processed up to."""
    offsets: dict = {}
    for container in list(job.containers):
        for task in list(container.tasks.values()):
            offsets.update(task.last_processed)
    return offsets


def test_downstream_restart_between_upstream_end_of_stream_messages(tmp_path):
    cfg = _two_stage_config(tmp_path)
    create(cfg, "words", 4)  # the upstream job's input: the whole application is planned
    create(cfg, "counts", 3)
    stage1 = cfg.with_overrides({"app.stage": "1"})
    stream = "wc-1-partition_by-by-word"
    create(cfg, stream, 3)
    first = [f"w{i % 5}" for i in range(40)]
    second = [f"w{i % 3}" for i in range(30)]
    _upstream_writes(cfg, stream, first, ["Partition 0", "Partition 1"])
    heads = {
        SystemStreamPartition("log", stream, p): m.newest_offset
        for p, m in system_factory(cfg, "log")
        .get_admin("log", cfg)
        .get_system_stream_metadata([stream])[stream]
        .partitions.items()
    }
    job = ThreadJobRunner(stage1.with_overrides({"job.factory.class": "thread"}))
    out: dict = {}
    runner = threading.Thread(target=lambda: out.setdefault("run", job.run()))
    runner.start()
    try:
        # stopped once everything upstream wrote so far (both end-of-stream messages included)
        # is processed, so the stop's commit is what the next run must remember
        wait_until(
            lambda: heads.items() <= _processed_offsets(job).items(), what="the first run to process what was written"
        )
    finally:
        job.stop()
        runner.join(60)
    run1 = out["run"]
    assert statuses(run1) == {"shutdown"}  # still waiting for 2 producers
    assert read_all(cfg, "counts") == []
    _upstream_writes(cfg, stream, second, ["Partition 2", "Partition 3"])
    run2 = run(stage1)  # ends only if the first two were remembered
    assert statuses(run2) == {"completed"}
    assert dict(read_all(cfg, "counts")) == dict(Counter(first + second))


def _raw_partition(cfg, stream: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value bytes) of every message of the partition: control messages undecoded."""
    consumer = system_factory(cfg, "log").get_consumer("log", cfg)
    ssp = SystemStreamPartition("log", stream, partition)
    consumer.register(ssp, "0")
    consumer.start()
    out: list[tuple[int, bytes]] = []
    try:
        while envelopes := consumer.poll([ssp], 0).get(ssp, []):
            out += [(int(e.offset), e.message) for e in envelopes if not e.is_end_of_stream]
    finally:
        consumer.stop()
    return out


def test_an_upstream_task_sends_end_of_stream_last_and_the_downstream_reads_every_message(tmp_path):
    """Samza sends a producer task's end-of-stream last: after it, nothing more of that task on the
    intermediate stream (a watermark published by the timer after the end used to follow it, and
    stayed unread — the downstream had already ended that partition)."""
    cfg = bounded(base(tmp_path, "eos", "EventTimeCountApp", **{"task.watermark.interval.ms": "10"}), "A", "B")
    for s in ("A", "B"):
        create(cfg, s, 2)
    create(cfg, "panes", 2)
    for s in ("A", "B"):
        rows = [(p, None, {"k": f"k{i % 3}", "t": 100 * i}) for i in range(40) for p in (0, 1)]
        produce(cfg, s, rows, [t for (_p, _k, t) in ((p, i, 100 * i) for i in range(40) for p in (0, 1))])
    result = run(cfg)
    assert result.succeeded and statuses(result) == {"completed"}
    intermediate = "eos-1-partition_by-by-k"
    serde = IntermediateMessageSerde(JsonSerde())
    reader = system_factory(cfg, "log").get_admin("log", cfg)
    metadata = reader.get_system_stream_metadata([intermediate])[intermediate]
    reader.stop()
    for partition in metadata.partitions:
        ended: set[str] = set()
        for offset, value in _raw_partition(cfg, intermediate, partition):
            message = serde.from_bytes(value)
            task = getattr(message, "task_name", None)
            assert task not in ended, f"partition {partition} offset {offset}: {message} after its task's end-of-stream"
            if isinstance(message, EndOfStreamMessage):
                ended.add(task)
        assert ended == {"Partition 0", "Partition 1"}, (partition, ended)
    # the downstream job's checkpoints cover every message of the intermediate stream
    checkpoints = read_checkpoints(cfg)
    covered = {
        ssp.partition: int(o)
        for c in checkpoints.values()
        for ssp, o in c.offsets.items()
        if ssp.stream == intermediate
    }
    assert covered == {p: int(m.newest_offset) for p, m in metadata.partitions.items()}
