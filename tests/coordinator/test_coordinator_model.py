"""Groupers, container assignment, changelog partition stability and set-once checks (pure)."""

from __future__ import annotations

import pytest

from samza_dagster.config import Config, ConfigError
from samza_dagster.coordinator.model.builder import build_job_model
from samza_dagster.coordinator.model.groupers import (
    assign_changelog_partitions,
    group_by_partition,
    group_by_system_stream_partition,
    group_tasks_into_containers,
)
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.coordinator.stream.submission import SetOnceConfigChangeError, check_set_once, plan_submission
from samza_dagster.model import SystemStream
from samza_dagster.model import SystemStreamPartition as SSP

ORDERS = SystemStream("kafka", "orders")
CLICKS = SystemStream("kafka", "clicks")


def test_group_by_partition_puts_partition_n_of_every_stream_in_one_task() -> None:
    groups = group_by_partition([SSP("kafka", "orders", 0), SSP("kafka", "orders", 1), SSP("kafka", "clicks", 0)])
    assert groups == {
        "Partition 0": frozenset({SSP("kafka", "orders", 0), SSP("kafka", "clicks", 0)}),
        "Partition 1": frozenset({SSP("kafka", "orders", 1)}),
    }


def test_group_by_ssp_names_tasks_as_samza() -> None:
    groups = group_by_system_stream_partition([SSP("kafka", "orders", 2)])
    assert groups == {"SystemStreamPartition [kafka, orders, 2]": frozenset({SSP("kafka", "orders", 2)})}


def test_tasks_spread_round_robin_over_sorted_names() -> None:
    names = [f"Partition {i}" for i in range(11)]
    containers = group_tasks_into_containers(reversed(names), 3)
    assert containers == {
        "0": ["Partition 0", "Partition 3", "Partition 6", "Partition 9"],
        "1": ["Partition 1", "Partition 4", "Partition 7", "Partition 10"],
        "2": ["Partition 2", "Partition 5", "Partition 8"],
    }


def test_more_containers_than_tasks_names_the_key() -> None:
    with pytest.raises(ConfigError, match="job.container.count is 3 but the job has only 2 tasks"):
        group_tasks_into_containers(["Partition 0", "Partition 1"], 3)


def test_changelog_partitions_are_kept_and_new_tasks_get_the_next_free() -> None:
    first = assign_changelog_partitions([f"Partition {i}" for i in range(3)], {})
    assert first == {"Partition 0": 0, "Partition 1": 1, "Partition 2": 2}
    # Input grew to 5 partitions; an old task once had partition 5 (never reused).
    second = assign_changelog_partitions([f"Partition {i}" for i in range(5)], {**first, "Partition 9": 5})
    assert second == {"Partition 0": 0, "Partition 1": 1, "Partition 2": 2, "Partition 3": 6, "Partition 4": 7}


def _config(**extra: str) -> Config:
    return Config({"job.name": "j", "task.inputs": "kafka.orders,kafka.clicks", **extra})


def test_build_job_model_with_explicit_inputs_and_exclusion() -> None:
    side = SystemStream("kafka", "rates")
    build = build_job_model(
        _config(**{"job.container.count": "2"}),
        input_streams={ORDERS: 4, CLICKS: 2, side: 1},
        exclude={side},
    )
    model = build.model
    assert sorted(model.containers) == ["0", "1"]
    tasks = model.all_tasks()
    assert sorted(tasks) == [f"Partition {i}" for i in range(4)]
    assert tasks["Partition 1"].ssps == frozenset({SSP("kafka", "orders", 1), SSP("kafka", "clicks", 1)})
    assert all(ssp.stream != "rates" for t in tasks.values() for ssp in t.ssps)
    assert set(model.containers["0"].tasks) == {"Partition 0", "Partition 2"}
    assert build.new_changelog_partitions == {f"Partition {i}": i for i in range(4)}
    assert JobModel.from_dict(model.to_dict()).all_tasks() == tasks


def test_changelog_partitions_stable_when_container_count_changes() -> None:
    inputs = {ORDERS: 4}
    first = build_job_model(_config(**{"job.container.count": "1"}), input_streams=inputs)
    second = build_job_model(
        _config(**{"job.container.count": "4"}),
        input_streams=inputs,
        changelog_partitions=first.new_changelog_partitions,
        version=2,
    )
    assert second.new_changelog_partitions == {}
    assert {n: t.changelog_partition for n, t in second.model.all_tasks().items()} == first.new_changelog_partitions
    assert len(second.model.containers) == 4


def test_ssp_grouper_from_config() -> None:
    build = build_job_model(
        _config(**{"job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"}),
        input_streams={ORDERS: 2, CLICKS: 1},
    )
    assert sorted(build.model.all_tasks()) == [
        "SystemStreamPartition [kafka, clicks, 0]",
        "SystemStreamPartition [kafka, orders, 0]",
        "SystemStreamPartition [kafka, orders, 1]",
    ]


STATEFUL = {"job.name": "j", "stores.counts.factory": "rocksdb", "stores.counts.changelog": "kafka.counts-log"}


def test_set_once_change_of_stateful_job_names_key_and_both_values() -> None:
    new = {**STATEFUL, "job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"}
    with pytest.raises(SetOnceConfigChangeError) as info:
        check_set_once(STATEFUL, new)
    text = str(info.value)
    assert "job.systemstreampartition.grouper.factory" in text
    assert "'group-by-partition'" in text and "'group-by-system-stream-partition'" in text
    assert info.value.key == "job.systemstreampartition.grouper.factory"


@pytest.mark.parametrize(
    ("key", "old", "new"),
    [("stores.counts.changelog", "kafka.counts-log", "kafka.other-log"), ("streams.orders.partitions", "4", "8")],
)
def test_other_set_once_keys(key: str, old: str, new: str) -> None:
    with pytest.raises(SetOnceConfigChangeError, match=f"{key!r}.*{old!r}.*{new!r}"):
        check_set_once({**STATEFUL, key: old}, {**STATEFUL, key: new})


def test_stateless_job_may_change_grouper_and_additions_are_not_changes() -> None:
    check_set_once(
        {"job.name": "j"},
        {"job.name": "j", "job.systemstreampartition.grouper.factory": "group-by-system-stream-partition"},
    )
    check_set_once(STATEFUL, {**STATEFUL, "stores.other.changelog": "kafka.other"})
    check_set_once(STATEFUL, {**STATEFUL, "job.systemstreampartition.grouper.factory": "group-by-partition"})


def test_plan_submission_writes_only_changes_and_deletes_removed_keys() -> None:
    state = CoordinatorStreamState(config={"job.name": "j", "a": "1", "gone": "x"}, changelog={"Partition 0": 0})
    messages, result = plan_submission(state, {"job.name": "j", "a": "2", "b": "3"})
    assert result.changed == {"a": "2", "b": "3"} and result.deleted == ["gone"]
    assert [(m.type, m.key, m.is_delete) for m in messages] == [
        ("set-config", "a", False),
        ("set-config", "b", False),
        ("set-config", "gone", True),
    ]
    assert plan_submission(state, dict(state.config))[0] == []


def test_force_reset_accepts_set_once_change_and_forgets_changelog_assignment() -> None:
    state = CoordinatorStreamState(config=dict(STATEFUL), changelog={"Partition 0": 0, "Partition 1": 1})
    new = {**STATEFUL, "stores.counts.changelog": "kafka.v2"}
    with pytest.raises(SetOnceConfigChangeError):
        plan_submission(state, new)
    messages, result = plan_submission(state, new, force_reset=True)
    assert result.changed == {"stores.counts.changelog": "kafka.v2"}
    assert result.reset_changelog == ["Partition 0", "Partition 1"]
    assert [(m.type, m.key, m.is_delete) for m in messages][-2:] == [
        ("set-changelog", "Partition 0", True),
        ("set-changelog", "Partition 1", True),
    ]
