"""``map_batches`` on the log system through ``run_job``: batches of pandas DataFrames and Arrow
tables on both sides of an intermediate stream — the job ends by itself, every count is exact
and each batch map saw batches, not single messages — the operator in the plan, and the clear
errors of a bad batch function or format."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from samza_dagster.application import ApplicationError
from samza_dagster.planner import plan_from_config
from samza_dagster.runtime import run_job
from support.hl_harness import bounded, create, produce, read_all, run, statuses
from tests.hl_apps import base

pytestmark = pytest.mark.timeout(120)

WORDS = [f"w{i % 7}" if i % 3 else "ab" for i in range(3000)]


def _config(tmp_path, app: str, **extra: str):
    cfg = bounded(
        base(tmp_path, "bc", app, **{"job.intermediate.stream.partitions": "3", "job.container.count": "2", **extra}),
        "words",
    )
    create(cfg, "words", 4)
    create(cfg, "counts", 3)
    produce(cfg, "words", [(i % 4, None, w) for i, w in enumerate(WORDS)])
    return cfg


@pytest.mark.parametrize("runner", ["thread", "process"])
def test_batch_maps_before_and_after_an_intermediate_stream_give_exact_counts_and_end(tmp_path, runner):
    cfg = _config(tmp_path, "BatchTwoStageCountApp")
    result = run(cfg, runner)
    assert statuses(result) == {"completed"}
    # long words upper-cased (the pandas batch map), each counted twice (the pyarrow one)
    expected = {w.upper(): 2 * n for w, n in Counter(WORDS).items() if len(w) > 2}
    assert dict(read_all(cfg, "counts")) == expected
    # the intermediate stream carried end-of-stream and watermarks between the words
    control = sum(t["control_messages"] for s in result.summaries for t in s.metrics["tasks"].values())
    assert control >= 4 * 3
    # batches, not messages: far fewer process_batch calls than envelopes
    tasks = [t for s in result.summaries for t in s.metrics["tasks"].values()]
    envelopes = sum(t["envelopes_processed"] for t in tasks)
    assert envelopes >= len(WORDS) and 0 < sum(t["batch_count"] for t in tasks) < envelopes / 10


def test_the_plan_names_each_batch_map_and_its_format(tmp_path):
    cfg = _config(tmp_path, "BatchTwoStageCountApp")
    ops = json.loads(plan_from_config(cfg).to_json())["operators"]
    assert ops["bc-1-map_batches-long"]["type"] == "map_batches"
    assert ops["bc-1-map_batches-long"]["batch_format"] == "pandas"
    assert ops["bc-1-map_batches-long"]["function"] == "tests.hl_apps.apps:_long_words_upper"
    assert ops["bc-1-map_batches-double"]["batch_format"] == "pyarrow"
    assert ops["bc-1-map_batches-double"]["inputs"] == ["bc-1-input-bc-1-partition_by-by-word"]


def test_a_batch_function_returning_no_dataframe_fails_naming_the_operator_and_the_batch(tmp_path):
    cfg = _config(tmp_path, "BadBatchApp", **{"job.container.count": "1"})
    result = run_job(cfg.with_overrides({"job.factory.class": "thread"}))
    assert not result.succeeded
    text = result.summary_line() + " ".join(str(s.error) for s in result.summaries)
    assert "bc-1-map_batches-bad" in text and "returned list, not a pandas DataFrame" in text
    assert "log.words partition" in text  # the batch's coordinates


def test_an_unknown_batch_format_is_refused_when_the_application_is_described():
    from samza_dagster.application import StreamApplicationDescriptor, SystemDescriptor
    from samza_dagster.config import Config

    app = StreamApplicationDescriptor(Config({"job.name": "bf"}))
    words = app.get_input_stream(SystemDescriptor("log").input("words"))
    with pytest.raises(ApplicationError, match=r"'bf-1-map_batches-0'.*batch_format must be one of pandas, pyarrow"):
        words.map_batches(lambda f: f, batch_format="polars")


@pytest.mark.parametrize(("key", "value"), [("job.container.thread.pool.size", "4"), ("task.max.concurrency", "2")])
def test_a_batch_map_with_settings_off_the_inline_loop_is_refused_before_the_job_starts(tmp_path, key, value):
    from samza_dagster.config import ConfigError
    from samza_dagster.runtime.preflight import check_job_values

    with pytest.raises(ConfigError) as info:
        check_job_values(base(tmp_path, "bc", "BatchTwoStageCountApp", **{key: value}))
    assert info.value.key == key and "process_batch" in str(info.value)
    check_job_values(base(tmp_path, "tc", "TwoStageCountApp", **{key: value}))  # no batch map: allowed
