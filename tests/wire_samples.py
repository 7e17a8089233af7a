"""Fixed model objects whose JSON tests/test_wire_formats.py pins (tests/golden/*.json)."""

from __future__ import annotations

from typing import Any

from samza_dagster.config import Config
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.model import SystemStream
from samza_dagster.planner import ExecutionPlanner

PLAN_CONFIG = Config(
    {
        "job.name": "golden",
        "job.id": "1",
        "job.default.system": "log",
        "systems.log.samza.factory": "log",
        "streams.S1.samza.bootstrap": "true",
        "streams.S2.samza.bounded": "true",
    }
)


def samples() -> dict[str, Any]:
    from tests.hl_apps.apps import SideInputJoinApp, StreamStreamJoinApp, StreamTableJoinApp, TwoStageCountApp

    plans = {
        "stream_stream_join": ExecutionPlanner(PLAN_CONFIG, {"S1": 8, "S2": 8, "S3": 4}).plan(StreamStreamJoinApp()),
        "stream_table_join": ExecutionPlanner(PLAN_CONFIG, {"S1": 3, "S2": 2, "S3": 2}).plan(StreamTableJoinApp()),
        "two_stage_count": ExecutionPlanner(
            PLAN_CONFIG.with_overrides({"job.intermediate.stream.partitions": "3"}), {"words": 4, "counts": 3}
        ).plan(TwoStageCountApp()),
        "side_input_join": ExecutionPlanner(PLAN_CONFIG, {"views": 2, "profiles": 2, "enriched": 2}).plan(
            SideInputJoinApp()
        ),
    }
    model_config = Config(
        {
            "job.name": "golden",
            "job.container.count": "2",
            "stores.s.factory": "inmemory",
            "systems.log.consumer.password": "hunter2",
        }
    )
    model = build_job_model(
        model_config,
        changelog_partitions={"Partition 1": 0},
        previous_hosts={"0": "host-a"},
        input_streams={SystemStream("log", "a"): 3, SystemStream("log", "b"): 2},
        version=4,
    ).model
    summary = ContainerSummary(
        "1",
        ContainerStatus.COMPLETED,
        {"log.a": 5},
        {"Partition 0": {"log.a[0]": "4"}},
        1.23456,
        None,
        {"container": {"chooses": 5}},
    )
    return {"plans": plans, "job_model": model, "summary": summary}
