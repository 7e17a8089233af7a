"""The operator runtime on the log system, run through ``samza_dagster.runtime.run_job``: seed
002's Listings 1 and 2, a bounded two-stage application that ends by itself through in-band
end-of-stream (thread and process runners), session windows, a side-input table, and the
descriptor-serde rule."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.planner import plan_from_config
from samza_dagster.system.factories import system_factory
from samza_dagster.system.partitioner import partition_for_key
from support.hl_harness import bounded, counter, create, produce, read_all, run, statuses, task_names
from tests.hl_apps import base

pytestmark = pytest.mark.timeout(120)


def test_listing1_stream_stream_join_after_filter(tmp_path):
    cfg = bounded(base(tmp_path, "l1", "StreamStreamJoinApp"), "S1", "S2")
    create(cfg, "S1", 2)
    create(cfg, "S2", 2)
    create(cfg, "S3", 2)
    # profiles first on S2, page views on S1 (co-partitioned by user: partition = user % 2)
    produce(cfg, "S2", [(u % 2, None, {"user": u, "name": f"n{u}"}) for u in range(6)])
    produce(
        cfg, "S1", [(u % 2, None, {"user": u, "page": f"p{u}-{i}", "ok": i != 1}) for u in range(6) for i in range(3)]
    )
    result = run(cfg)
    assert statuses(result) == {"completed"}
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "S3"))
    # the filter drops i == 1; every surviving view joins its user's profile
    assert got == sorted((u, f"p{u}-{i}", f"n{u}") for u in range(6) for i in (0, 2))


def kafka_partition(key, partitions: int) -> int:
    return partition_for_key(json.dumps(key).encode(), partitions)


def test_listing2_partition_by_into_table_joined_with_stream(tmp_path):
    cfg = bounded(base(tmp_path, "l2", "StreamTableJoinApp"), "S1", "S2")
    create(cfg, "S1", 3)  # not co-partitioned with S2: partition_by re-partitions it into 2
    create(cfg, "S2", 2)
    create(cfg, "S3", 2)
    assert plan_from_config(cfg).intermediate_streams == {"l2-1-partition_by-p1": 2}
    produce(cfg, "S1", [(u % 3, None, {"user": u, "name": f"n{u}"}) for u in range(8)])
    assert statuses(run(cfg)) == {"completed"}
    # the table is filled; now page views joined against it (a second run resumes from checkpoints)
    produce(cfg, "S2", [(kafka_partition(u, 2), u, {"user": u, "page": f"v{u}"}) for u in range(8)])
    assert statuses(run(cfg)) == {"completed"}
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "S3"))
    assert got == [(u, f"v{u}", f"n{u}") for u in range(8)]


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_two_stage_bounded_count_terminates_with_exact_counts(tmp_path, runner):
    """input (4 partitions) → partition_by into 3 → keyed window counts → output: the job ends
    by itself (bounded input, in-band end-of-stream on the intermediate stream) and every
    window fires exactly once, at end-of-stream."""
    cfg = bounded(
        base(
            tmp_path,
            "wc",
            "TwoStageCountApp",
            **{
                "job.intermediate.stream.partitions": "3",
                "job.container.count": "2",
                # configured serdes everywhere: the descriptors' win on words/counts, and the
                # intermediate stream's framed bytes are never passed through a configured serde
                "systems.log.samza.msg.serde": "json",
                "systems.log.samza.key.serde": "json",
                "streams.wc-1-partition_by-by-word.samza.msg.serde": "json",
            },
        ),
        "words",
    )
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    assert plan_from_config(cfg).intermediate_streams == {"wc-1-partition_by-by-word": 3}
    words = [f"w{i % 7}" for i in range(200)]
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(words)])
    result = run(cfg, runner)
    assert result.runner == runner and len(result.summaries) == 2
    assert statuses(result) == {"completed"}
    # group-by-partition over the 4 input + 3 intermediate partitions: 4 tasks
    assert task_names(result) == {f"Partition {p}" for p in range(4)}
    got = read_all(cfg, "counts")
    assert dict(got) == dict(Counter(words))
    assert len(got) == 7  # each window fired exactly once
    # beside the words, the intermediate stream carried the control messages: at least one
    # end-of-stream per upstream task per partition (watermarks too, as the log stamps times)
    control = sum(t["control_messages"] for s in result.summaries for t in s.metrics["tasks"].values())
    assert control >= 4 * 3
    assert result.messages_per_stream["log.wc-1-partition_by-by-word"] == len(words) + control


def test_session_windows_per_key_in_event_time(tmp_path):
    cfg = bounded(
        base(
            tmp_path,
            "sess",
            "SessionCountApp",
            **{"job.intermediate.stream.partitions": "2", "task.watermark.interval.ms": "50"},
        ),
        "clicks",
    )
    create(cfg, "clicks", 2)
    create(cfg, "sessions", 2)
    # each user's clicks in one input partition, in time order; gap 1000 ms
    clicks = {
        "a": (0, [0, 500, 900, 5000, 5200]),  # sessions [0, 1900) x3 and [5000, 6200) x2
        "b": (1, [100, 3000, 3999, 4998]),  # [100, 1100) x1 and [3000, 5998) x3
        "c": (1, [7000]),  # with c@6500 below: [6500, 8000) x2 in whichever order they arrive
    }
    rows, times = [], []
    for user, (p, ts) in clicks.items():
        for t in ts:
            rows.append((p, None, {"user": user, "t": t}))
            times.append(t)
    rows.append((0, None, {"user": "c", "t": 6500}))  # user c from the other input partition too
    times.append(6500)
    produce(cfg, "clicks", rows, times)
    result = run(cfg)
    got = sorted((k, tuple(v)) for k, v in read_all(cfg, "sessions"))
    assert got == [
        ("a", (0, 1900, 3)),
        ("a", (5000, 6200, 2)),
        ("b", (100, 1100, 1)),
        ("b", (3000, 5998, 3)),
        ("c", (6500, 8000, 2)),
    ]
    assert counter(result, "late_messages") == 0
    assert counter(result, "late_messages.sess-1-window-sessions") == 0


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_side_input_table_joined_with_stream(tmp_path, runner):
    cfg = bounded(base(tmp_path, "side", "SideInputJoinApp"), "views")
    cfg = cfg.with_overrides({"systems.log.streams.profiles.samza.msg.serde": "json"})
    for s in ("views", "profiles", "enriched"):
        create(cfg, s, 2)
    # profiles co-partitioned with views (user % 2); user 1 renamed, user 4 deleted, 5 never known
    profiles = [{"user": u, "name": f"n{u}"} for u in range(5)] + [{"user": 1, "name": "renamed"}, {"user": 4}]
    produce(cfg, "profiles", [(p["user"] % 2, None, p) for p in profiles])
    produce(cfg, "views", [(u % 2, None, {"user": u, "page": f"v{u}"}) for u in range(6)])
    result = run(cfg, runner)
    assert statuses(result) == {"completed"}
    got = sorted((k, v["page"], v["name"]) for k, v in read_all(cfg, "enriched"))
    assert got == [(0, "v0", "n0"), (1, "v1", "renamed"), (2, "v2", "n2"), (3, "v3", "n3")]
    # the side input is no task input: only the views partitions were grouped into tasks
    assert set(result.messages_per_stream) == {"log.views"}


def test_tasks_without_a_side_input_partition_run_with_an_empty_table(tmp_path):
    """clicks has 3 partitions, the side input 2: task Partition 2 reads only clicks and must
    start (no side-input partition 2 to load) instead of failing."""
    cfg = bounded(base(tmp_path, "side3", "SideInputBesideWiderStreamApp"), "views", "clicks")
    cfg = cfg.with_overrides({"systems.log.streams.profiles.samza.msg.serde": "json"})
    for s, n in (("views", 2), ("profiles", 2), ("enriched", 2), ("clicks", 3), ("clicks_out", 3)):
        create(cfg, s, n)
    produce(cfg, "profiles", [(u % 2, None, {"user": u, "name": f"n{u}"}) for u in range(4)])
    produce(cfg, "views", [(u % 2, None, {"user": u, "page": f"v{u}"}) for u in range(4)])
    produce(cfg, "clicks", [(u % 3, None, {"user": u}) for u in range(6)])
    result = run(cfg)
    assert statuses(result) == {"completed"}
    assert task_names(result) == {"Partition 0", "Partition 1", "Partition 2"}
    assert sorted(k for k, _ in read_all(cfg, "enriched")) == [0, 1, 2, 3]
    assert sorted(k for k, _ in read_all(cfg, "clicks_out")) == [0, 1, 2, 3, 4, 5]


def test_descriptor_serdes_win_over_configured_ones(tmp_path):
    """Configured JSON serdes for the whole system; the descriptors give UpperSerde for the
    messages. Only the descriptor's serde touches a message (a second JSON pass would fail on
    the raw text input, and would quote the output); the key, with no descriptor serde, gets
    the configured JSON serde."""
    cfg = bounded(
        base(
            tmp_path,
            "serde",
            "DescriptorSerdeApp",
            **{
                "systems.log.samza.msg.serde": "json",
                "systems.log.samza.key.serde": "json",
                "streams.shout.samza.msg.serde": "json",  # stream-id keyed: blanked as well
            },
        ),
        "text",
    )
    create(cfg, "text", 1)
    create(cfg, "shout", 1)
    producer = system_factory(cfg, "log").get_producer("log", cfg)
    producer.register("t")
    producer.start()
    for word in ("hello", "samza"):
        producer.send("t", OutgoingMessageEnvelope(SystemStream("log", "text"), word.encode(), None, None, 0))
    producer.flush("t")
    producer.stop()
    run(cfg)
    got = sorted(read_all(cfg, "shout", decode=False))
    assert got == [(b'{"len":5}', b"HELLO!"), (b'{"len":5}', b"SAMZA!")]


def test_operator_task_outside_a_container_is_a_clear_error():
    from samza_dagster.config import Config
    from samza_dagster.metrics.registry import MetricsRegistry
    from samza_dagster.operators import OperatorError, OperatorTask
    from samza_dagster.task.context import TaskContext

    # a user's TaskContext: no JobModel, producers or TaskInstance hooks for the operator runtime
    context = TaskContext("Partition 0", frozenset(), Config({}), "0", {}, MetricsRegistry("test"))
    with pytest.raises(OperatorError, match="'Partition 0'.*SamzaContainer"):
        OperatorTask(None, "Partition 0", None).init(context)
