"""The ExecutionPlan: Samza's execution-planner design's Listing 1 and 2 planned end to end, the JSON (roles, counts,
stages, lineage), StreamSpecs, graph traversal, admin lookups on the real log system, and
plan_from_config for high- and low-level jobs."""

from __future__ import annotations

import json

import pytest

from samza_dagster.application import StreamApplication, SystemDescriptor, TableDescriptor
from samza_dagster.config import Config, ConfigError
from samza_dagster.planner import (
    ExecutionPlanner,
    PlanningError,
    plan_from_config,
    stream_partitions_from_admins,
    traverse,
)
from samza_dagster.system import StreamSpec, system_factory

BASE_CONFIG = {"job.name": "job", "systems.kafka.samza.factory": "kafka"}
PB = "job-1-partition_by-"


def key(m):
    return m


def pair(a, b):
    return (a, b)


class Listing1(StreamApplication):
    """Seed 002, Listing 1: S1 filtered, joined with S2, sent to S3."""

    system = "kafka"

    def describe(self, app):
        k = SystemDescriptor(self.system)
        s1 = app.get_input_stream(k.input("S1")).filter(bool)
        s2 = app.get_input_stream(k.input("S2"))
        s3 = app.get_output_stream(k.output("S3"))
        s1.join(s2, pair, key=key, other_key=key, ttl_ms=60_000, op_id="j").send_to(s3)


class Listing2(StreamApplication):
    """Seed 002, Listing 2: S1 re-partitioned into table T, which S2 joins; output S3."""

    system = "kafka"

    def describe(self, app):
        k = SystemDescriptor(self.system)
        s1 = app.get_input_stream(k.input("S1"))
        s1_prime = s1.partition_by(key, op_id="p1")
        t = app.get_table(TableDescriptor("T"))
        s1_prime.send_to(t)
        s2 = app.get_input_stream(k.input("S2"))
        s3 = app.get_output_stream(k.output("S3"))
        s2.join(t, pair, key=key, op_id="tj").send_to(s3)


class Listing2OnLog(Listing2):
    system = "log"


def test_listing1_plan_json_round_trips_with_roles_and_counts():
    plan = ExecutionPlanner(BASE_CONFIG, {"S1": 8, "S2": 8, "S3": 4}).plan(Listing1())
    data = json.loads(plan.to_json())
    assert data["schema_version"] == 1
    assert data["application"] == {
        "api": "high-level",
        "app_class": "tests.planner.test_planner_plan:Listing1",
        "job_id": "1",
        "job_name": "job",
        "task_class": None,
    }
    streams = data["streams"]
    assert {sid: (s["role"], s["partitions"]) for sid, s in streams.items()} == {
        "S1": ("input", 8),
        "S2": ("input", 8),
        "S3": ("output", 4),
    }
    assert streams["S3"]["upstream"] == ["S1", "S2"] and streams["S3"]["producers"] == ["job-1-send_to-1"]
    assert data["intermediate_streams"] == {}
    assert data["joins"] == [
        {"operator": "job-1-join-j", "partitions": 8, "streams": ["S1", "S2"], "table": None, "type": "join"}
    ]
    join = data["operators"]["job-1-join-j"]
    assert join["type"] == "join" and join["ttl_ms"] == 60_000
    assert join["inputs"] == ["job-1-filter-0", "job-1-input-S2"] and join["outputs"] == ["job-1-send_to-1"]
    assert {"from": "S1", "from_kind": "stream", "to": "job-1-input-S1", "to_kind": "operator"} in data["edges"]
    assert {"from": "job-1-send_to-1", "from_kind": "operator", "to": "S3", "to_kind": "stream"} in data["edges"]
    (job,) = data["jobs"]
    assert job["inputs"] == ["S1", "S2"] and job["outputs"] == ["S3"] and len(job["stages"]) == 1
    # stable: planning twice prints the same bytes
    again = ExecutionPlanner(BASE_CONFIG, {"S1": 8, "S2": 8, "S3": 4}).plan(Listing1())
    assert again.to_json() == plan.to_json()


def test_listing2_plan_gives_the_intermediate_stream_the_joined_input_count():
    plan = ExecutionPlanner(BASE_CONFIG, {"S1": 32, "S2": 16, "S3": 4}).plan(Listing2())
    data = json.loads(plan.to_json())
    inter = PB + "p1"
    assert data["intermediate_streams"] == {inter: 16}
    s = data["streams"][inter]
    assert (s["role"], s["partitions"], s["system"], s["physical_name"]) == ("intermediate", 16, "log", inter)
    assert s["producers"] == [inter] and s["consumers"] == ["job-1-input-" + inter]
    assert data["tables"]["T"]["written_by"] == ["job-1-send_to-0"]
    assert data["tables"]["T"]["joined_by"] == ["job-1-join-tj"]
    assert data["tables"]["T"]["upstream"] == [inter]
    assert data["joins"][0]["streams"] == ["S2", inter] and data["joins"][0]["type"] == "stream_table_join"
    assert data["streams"]["S3"]["upstream"] == sorted(["S2", inter])
    assert data["streams"]["S3"]["producers"] == ["job-1-send_to-1"]
    assert [spec for spec in plan.stream_specs()] == [StreamSpec(inter, inter, "log", 16)]


def test_listing2_rejects_nothing_but_checks_s2_against_the_table_source():
    # S1' is intermediate, so it follows S2 whatever S1 has; only two inputs could conflict.
    plan = ExecutionPlanner(BASE_CONFIG, {"S1": 3, "S2": 5}).plan(Listing2())
    assert plan.intermediate_streams == {PB + "p1": 5}


def test_stages_split_the_job_at_partition_by():
    class TwoStages(StreamApplication):
        def describe(self, app):
            k = SystemDescriptor("kafka")
            s = app.get_input_stream(k.input("IN")).map(str, op_id="m").partition_by(key, op_id="p")
            s.filter(bool, op_id="f").send_to(app.get_output_stream(k.output("OUT")))

    plan = ExecutionPlanner(BASE_CONFIG, {"IN": 2, "OUT": 2}).plan(TwoStages())
    (job,) = plan.to_dict()["jobs"]
    first, second = job["stages"]
    assert first == {
        "id": "stage-0",
        "inputs": ["IN"],
        "side_inputs": [],
        "outputs": [],
        "intermediate_outputs": [PB + "p"],
        "tables": [],
        "operators": ["job-1-input-IN", "job-1-map-m", PB + "p"],
    }
    assert second["inputs"] == [PB + "p"] and second["outputs"] == ["OUT"]
    assert second["operators"] == ["job-1-filter-f", "job-1-input-" + PB + "p", "job-1-send_to-0"]
    assert plan.operators["job-1-filter-f"].stage == "stage-1"


def test_bootstrap_and_priority_come_from_config():
    config = {
        **BASE_CONFIG,
        "streams.S1.samza.bootstrap": "true",
        "systems.kafka.streams.S2.samza.priority": "5",
    }
    plan = ExecutionPlanner(config, {"S1": 8, "S2": 8, "S3": 1}).plan(Listing1())
    s1, s2, s3 = (plan.streams[s] for s in ("S1", "S2", "S3"))
    assert (s1.role, s1.bootstrap, s1.priority) == ("bootstrap", True, 6)
    assert sorted(s1.roles) == ["bootstrap", "input"]
    assert (s2.role, s2.priority) == ("input", 5)
    assert s3.priority is None


def test_side_input_streams_appear_with_their_table():
    class SideInputs(StreamApplication):
        def describe(self, app):
            k = SystemDescriptor("kafka")
            t = app.get_table(TableDescriptor("profiles", side_inputs=[k.input("PROFILES")]))
            app.get_input_stream(k.input("S")).join(t, pair, key=key, op_id="tj").send_to(
                app.get_output_stream(k.output("O"))
            )

    data = json.loads(ExecutionPlanner(BASE_CONFIG, {"PROFILES": 4, "S": 4, "O": 1}).plan(SideInputs()).to_json())
    assert data["streams"]["PROFILES"]["role"] == "side-input" and data["streams"]["PROFILES"]["tables"] == ["profiles"]
    assert data["tables"]["profiles"]["side_inputs"] == ["PROFILES"]
    assert data["streams"]["O"]["upstream"] == ["PROFILES", "S"]
    assert {"from": "PROFILES", "from_kind": "stream", "to": "profiles", "to_kind": "table"} in data["edges"]
    assert data["jobs"][0]["stages"][0]["side_inputs"] == ["PROFILES"]


def test_a_join_feeding_its_own_table_plans_without_looping():
    class Enrich(StreamApplication):
        def describe(self, app):
            k = SystemDescriptor("kafka")
            t = app.get_table(TableDescriptor("t"))
            app.get_input_stream(k.input("S")).join(t, pair, key=key, op_id="tj").send_to(t)

    plan = ExecutionPlanner(BASE_CONFIG, {"S": 4}).plan(Enrich())
    assert [j.operator for j in plan.joins] == ["job-1-join-tj"]


# -- graph traversal ------------------------------------------------------------------------------
def test_traverse_visits_in_recursive_pre_order_each_vertex_once():
    graph = {"a": ["b", "c"], "b": ["d"], "c": ["d", "e"], "d": [], "e": ["a"]}  # diamond + cycle
    seen: list[str] = []
    traverse("a", seen.append, lambda v: graph[v])
    assert seen == ["a", "b", "d", "c", "e"]


def test_traverse_handles_a_chain_deeper_than_the_recursion_limit():
    nodes = [object() for _ in range(20_000)]
    nxt = {id(n): [nodes[i + 1]] if i + 1 < len(nodes) else [] for i, n in enumerate(nodes)}
    count = [0]
    traverse(nodes[0], lambda _v: count.__setitem__(0, count[0] + 1), lambda v: nxt[id(v)])
    assert count[0] == 20_000


def test_planning_a_thousand_deep_application_does_not_recurse():
    class Deep(StreamApplication):
        def describe(self, app):
            k = SystemDescriptor("kafka")
            s = app.get_input_stream(k.input("S1"))
            for _ in range(3000):
                s = s.map(str)
            s.join(app.get_input_stream(k.input("S2")), pair, key=key, other_key=key, ttl_ms=1).sink(print)

    with pytest.raises(PlanningError, match="'S1' has 2, 'S2' has 3"):
        ExecutionPlanner(BASE_CONFIG, {"S1": 2, "S2": 3}).plan(Deep())


# -- admins and plan_from_config on the real embedded log system ----------------------------------
def log_config(tmp_path, **extra) -> Config:
    return Config(
        {"job.name": "job", "systems.log.samza.factory": "log", "systems.log.log.path": str(tmp_path), **extra}
    )


def create_streams(config: Config, counts: dict[str, int]) -> None:
    admin = system_factory(config, "log").get_admin("log", config)
    for name, count in counts.items():
        admin.create_stream(StreamSpec(name, name, "log", count))
    getattr(admin, "stop", lambda: None)()


def test_stream_partitions_from_admins_reads_the_log_system(tmp_path):
    config = log_config(tmp_path)
    create_streams(config, {"S1": 3, "S2": 6})
    counts = stream_partitions_from_admins(config, Listing2OnLog())
    assert counts == {"S1": 3, "S2": 6}  # S3 does not exist yet: left out, not an error


def test_plan_from_config_loads_app_class(tmp_path):
    config = log_config(tmp_path, **{"app.class": "tests.planner.test_planner_plan:Listing2OnLog"})
    create_streams(config, {"S1": 3, "S2": 6, "S3": 2})
    plan = plan_from_config(config)
    assert plan.intermediate_streams == {PB + "p1": 6}
    assert plan.streams["S3"].partitions == 2 and plan.app_class == "tests.planner.test_planner_plan:Listing2OnLog"


def test_plan_from_config_names_a_missing_input(tmp_path):
    config = log_config(tmp_path, **{"app.class": "tests.planner.test_planner_plan:Listing2OnLog"})
    create_streams(config, {"S1": 3})
    with pytest.raises(PlanningError, match=r"input stream 'S2' \(log.S2\) has no partition count"):
        plan_from_config(config)


def test_plan_from_config_for_a_low_level_task(tmp_path):
    config = log_config(
        tmp_path,
        **{
            "task.class": "some.module:Task",
            "task.inputs": "log.orders,log.users",
            "systems.log.streams.users.samza.bootstrap": "true",
        },
    )
    create_streams(config, {"orders": 4, "users": 2})
    data = json.loads(plan_from_config(config).to_json())
    assert data["application"]["api"] == "low-level" and data["application"]["task_class"] == "some.module:Task"
    assert data["operators"] == {} and data["intermediate_streams"] == {}
    assert {sid: (s["role"], s["partitions"], s["priority"]) for sid, s in data["streams"].items()} == {
        "orders": ("input", 4, 0),
        "users": ("bootstrap", 2, 1),
    }
    assert data["jobs"][0]["inputs"] == ["orders", "users"]


def test_plan_from_config_errors_name_the_key(tmp_path):
    with pytest.raises(ConfigError) as info:
        plan_from_config(log_config(tmp_path))
    assert info.value.key == "app.class"
    with pytest.raises(ConfigError, match="app.class.*cannot import module 'no_such_module'"):
        plan_from_config(log_config(tmp_path, **{"app.class": "no_such_module:App"}))
    with pytest.raises(ConfigError, match="'app.class': builtins:dict is not a StreamApplication"):
        plan_from_config(log_config(tmp_path, **{"app.class": "builtins:dict"}))
    with pytest.raises(ConfigError, match="task.inputs"):
        plan_from_config(log_config(tmp_path, **{"task.class": "m:T"}))
