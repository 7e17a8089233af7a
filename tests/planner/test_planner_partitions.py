"""ExecutionPlanner partition-count rules: every case of Samza's execution-planner design's table, Fig. 3-5, the default
and its cap, side inputs, a table joined with two streams, chains of groups."""

from __future__ import annotations

import pytest

from samza_dagster.application import StreamApplication, SystemDescriptor, TableDescriptor
from samza_dagster.config import ConfigError
from samza_dagster.planner import ExecutionPlanner, PlanningError

BASE_CONFIG = {"job.name": "job", "systems.kafka.samza.factory": "kafka"}


def key(m):
    return m


def pair(a, b):
    return (a, b)


class FnApp(StreamApplication):
    """An application whose describe is a function (one per test)."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def describe(self, app) -> None:
        self.fn(app)


K = SystemDescriptor("kafka")
PB = "job-1-partition_by-"


def plan(describe, partitions, **config):
    return ExecutionPlanner({**BASE_CONFIG, **config}, partitions).plan(FnApp(describe))


def stream_join(app, a, b, op_id="j"):
    return a.join(b, pair, key=key, other_key=key, ttl_ms=1000, op_id=op_id)


# -- Fig. 3: stream-stream join of inputs --------------------------------------------------------
def fig3(app):
    s1 = app.get_input_stream(K.input("S1"))
    s2 = app.get_input_stream(K.input("S2"))
    stream_join(app, s1.filter(bool), s2).send_to(app.get_output_stream(K.output("S3")))


def test_fig3_left_joined_inputs_with_equal_counts_are_accepted():
    p = plan(fig3, {"S1": 4, "S2": 4, "S3": 8})
    assert p.intermediate_streams == {}
    assert [(j.operator, sorted(j.streams), j.partitions) for j in p.joins] == [("job-1-join-j", ["S1", "S2"], 4)]


def test_fig3_right_joined_inputs_with_different_counts_are_rejected_naming_both():
    with pytest.raises(PlanningError) as info:
        plan(fig3, {"S1": 4, "S2": 8, "S3": 8})
    msg = str(info.value)
    assert "join 'job-1-join-j'" in msg and "'S1' has 4" in msg and "'S2' has 8" in msg
    assert info.value.streams == {"S1": 4, "S2": 8} and info.value.operator == "job-1-join-j"


# -- Fig. 4 and Fig. 5: intermediate streams joined with inputs -----------------------------------
def fig4(app):
    s1 = app.get_input_stream(K.input("S1"))
    s2p = app.get_input_stream(K.input("S2")).partition_by(key, op_id="p")
    stream_join(app, s1, s2p).send_to(app.get_output_stream(K.output("S3")))


def test_fig4_intermediate_stream_gets_the_count_of_the_input_it_is_joined_with():
    p = plan(fig4, {"S1": 16, "S2": 32, "S3": 64})
    assert p.intermediate_streams == {PB + "p": 16}


def fig5(app):
    s1 = app.get_input_stream(K.input("S1"))
    s4 = app.get_input_stream(K.input("S4"))
    s2p = app.get_input_stream(K.input("S2")).partition_by(key, op_id="p")
    out = app.get_output_stream(K.output("S3"))
    stream_join(app, s1, s2p, "j1").send_to(out)
    stream_join(app, s2p, s4, "j2").send_to(out)


def test_fig5_intermediate_joined_with_two_inputs_of_different_counts_is_rejected():
    with pytest.raises(PlanningError) as info:
        plan(fig5, {"S1": 16, "S2": 8, "S4": 32, "S3": 8})
    msg = str(info.value)
    assert "'job-1-join-j2'" in msg and "'S4' has 32" in msg
    assert f"intermediate '{PB}p' has 16 (from 'S1' through join 'job-1-join-j1')" in msg
    assert info.value.streams == {PB + "p": 16, "S4": 32}


def test_fig5_is_accepted_when_the_inputs_agree():
    p = plan(fig5, {"S1": 16, "S2": 8, "S4": 16, "S3": 8})
    assert p.intermediate_streams == {PB + "p": 16}


# -- rules 2 and 3: the default for intermediate streams not joined with an input -----------------
def lonely_intermediate(app):
    s = app.get_input_stream(K.input("S1")).partition_by(key, op_id="p")
    s.send_to(app.get_output_stream(K.output("OUT")))


def test_unjoined_intermediate_takes_job_intermediate_stream_partitions():
    p = plan(lonely_intermediate, {"S1": 4, "OUT": 8}, **{"job.intermediate.stream.partitions": "12"})
    assert p.intermediate_streams == {PB + "p": 12}


def test_unjoined_intermediate_defaults_to_max_of_inputs_and_outputs():
    p = plan(lonely_intermediate, {"S1": 4, "OUT": 8})
    assert p.intermediate_streams == {PB + "p": 8}


def test_inferred_default_is_capped_at_256():
    p = plan(lonely_intermediate, {"S1": 1000, "OUT": 8})
    assert p.intermediate_streams == {PB + "p": 256}


def test_bad_intermediate_partitions_config_names_the_key():
    with pytest.raises(ConfigError) as info:
        plan(lonely_intermediate, {"S1": 4, "OUT": 8}, **{"job.intermediate.stream.partitions": "0"})
    assert info.value.key == "job.intermediate.stream.partitions"


def test_join_of_two_intermediates_only_gets_the_default():
    def describe(app):
        a = app.get_input_stream(K.input("A")).partition_by(key, op_id="a")
        b = app.get_input_stream(K.input("B")).partition_by(key, op_id="b")
        stream_join(app, a, b).sink(print)

    p = plan(describe, {"A": 3, "B": 5}, **{"job.intermediate.stream.partitions": "7"})
    assert p.intermediate_streams == {PB + "a": 7, PB + "b": 7}


# -- Samza's execution-planner design's table: T filled from S1, joined with S2 -------------------------------------------
def table_app(s1_intermediate: bool, s2_intermediate: bool, then_join_s3: bool = False):
    def describe(app):
        t = app.get_table(TableDescriptor("T"))
        s1 = app.get_input_stream(K.input("S1"))
        if s1_intermediate:
            s1 = s1.partition_by(key, op_id="p1")
        s1.filter(bool).send_to(t)
        s2 = app.get_input_stream(K.input("S2"))
        if s2_intermediate:
            s2 = s2.partition_by(key, op_id="p2")
        joined = s2.join(t, pair, key=key, op_id="tj")
        if then_join_s3:
            joined = stream_join(app, joined, app.get_input_stream(K.input("S3")), "j3")
        joined.send_to(app.get_output_stream(K.output("OUT")))

    return describe


def test_table_case1_input_input_equal_counts_accepted():
    p = plan(table_app(False, False), {"S1": 6, "S2": 6, "OUT": 1})
    (join,) = p.joins
    assert (join.operator, join.table, sorted(join.streams)) == ("job-1-join-tj", "T", ["S1", "S2"])


def test_table_case1_input_input_mismatch_rejected():
    with pytest.raises(PlanningError, match=r"stream-table join 'job-1-join-tj' \(table 'T'\).*'S1' has 6.*'S2' has 3"):
        plan(table_app(False, False), {"S1": 6, "S2": 3, "OUT": 1})


def test_table_case2_input_fills_table_intermediate_joins_it():
    p = plan(table_app(False, True), {"S1": 6, "S2": 3, "OUT": 1})
    assert p.intermediate_streams == {PB + "p2": 6}


def test_table_case3_intermediate_fills_table_input_joins_it():
    p = plan(table_app(True, False), {"S1": 6, "S2": 3, "OUT": 1})
    assert p.intermediate_streams == {PB + "p1": 3}


def test_table_case4_two_intermediates_joined_later_with_an_input_take_its_count():
    p = plan(table_app(True, True, then_join_s3=True), {"S1": 6, "S2": 3, "S3": 9, "OUT": 1})
    assert p.intermediate_streams == {PB + "p1": 9, PB + "p2": 9}


def test_table_case4_without_the_input_falls_back_to_the_default():
    p = plan(table_app(True, True), {"S1": 6, "S2": 3, "OUT": 1})
    assert p.intermediate_streams == {PB + "p1": 6, PB + "p2": 6}  # max(6, 3, 1)


# -- side inputs ------------------------------------------------------------------------------------
def side_input_app(s2_intermediate: bool):
    def describe(app):
        t = app.get_table(TableDescriptor("T", side_inputs=[K.input("SI")]))
        s2 = app.get_input_stream(K.input("S2"))
        if s2_intermediate:
            s2 = s2.partition_by(key, op_id="p2")
        s2.join(t, pair, key=key, op_id="tj").send_to(app.get_output_stream(K.output("OUT")))

    return describe


def test_side_input_stream_must_agree_with_the_stream_joined_with_its_table():
    p = plan(side_input_app(False), {"SI": 8, "S2": 8, "OUT": 1})
    assert sorted(p.joins[0].streams) == ["S2", "SI"]
    assert p.streams["SI"].role == "side-input" and p.streams["SI"].tables == {"T"}
    with pytest.raises(PlanningError, match=r"'S2' has 4.*'SI' has 8|'SI' has 8.*'S2' has 4"):
        plan(side_input_app(False), {"SI": 8, "S2": 4, "OUT": 1})


def test_side_input_stream_fixes_the_count_of_an_intermediate_joined_with_its_table():
    p = plan(side_input_app(True), {"SI": 8, "S2": 4, "OUT": 1})
    assert p.intermediate_streams == {PB + "p2": 8}


def test_missing_side_input_partition_count_is_an_error():
    with pytest.raises(PlanningError, match="side-input stream 'SI'.*missing from stream_partitions"):
        plan(side_input_app(False), {"S2": 4, "OUT": 1})


# -- a table joined with two streams (Fig. 8) ------------------------------------------------------
def fig8(app):
    t = app.get_table(TableDescriptor("T"))
    app.get_input_stream(K.input("S1")).filter(bool).send_to(t)
    out = app.get_output_stream(K.output("OUT"))
    app.get_input_stream(K.input("S2")).join(t, pair, key=key, op_id="t2").send_to(out)
    app.get_input_stream(K.input("S3")).join(t, pair, key=key, op_id="t3").send_to(out)


def test_table_joined_with_two_streams_each_must_agree_with_its_source():
    p = plan(fig8, {"S1": 4, "S2": 4, "S3": 4, "OUT": 2})
    assert {j.operator: sorted(j.streams) for j in p.joins} == {
        "job-1-join-t2": ["S1", "S2"],
        "job-1-join-t3": ["S1", "S3"],
    }
    with pytest.raises(PlanningError) as info:
        plan(fig8, {"S1": 4, "S2": 4, "S3": 8, "OUT": 2})
    assert info.value.operator == "job-1-join-t3" and info.value.streams == {"S1": 4, "S3": 8}


# -- groups linked through intermediate streams ---------------------------------------------------
def test_assigning_one_intermediate_fixes_the_groups_it_shares_in_any_order():
    def describe(app):
        i1 = app.get_input_stream(K.input("A")).partition_by(key, op_id="i1")
        i2 = app.get_input_stream(K.input("B")).partition_by(key, op_id="i2")
        i3 = app.get_input_stream(K.input("C")).partition_by(key, op_id="i3")
        s1 = app.get_input_stream(K.input("S1"))
        # declared so that the all-intermediate groups come first
        stream_join(app, i2, i3, "j23").sink(print)
        stream_join(app, i1.map(str), i2.map(str), "j12").sink(print)
        stream_join(app, s1, i1, "j1").sink(print)

    p = plan(describe, {"A": 2, "B": 3, "C": 4, "S1": 11}, **{"job.intermediate.stream.partitions": "99"})
    assert p.intermediate_streams == {PB + "i1": 11, PB + "i2": 11, PB + "i3": 11}


def test_chain_of_five_hundred_linked_intermediates_is_settled():
    def describe(app):
        prev = app.get_input_stream(K.input("S1"))
        for i in range(500):
            inter = app.get_input_stream(K.input(f"X{i}")).partition_by(key, op_id=f"p{i}")
            stream_join(app, prev, inter, f"j{i}").sink(print)
            prev = inter

    p = plan(describe, {"S1": 5, **{f"X{i}": 1 for i in range(500)}})
    assert set(p.intermediate_streams.values()) == {5} and len(p.intermediate_streams) == 500


# -- bad input ----------------------------------------------------------------------------------------
def test_input_stream_missing_from_stream_partitions_is_named():
    with pytest.raises(PlanningError, match=r"input stream 'S2' \(kafka.S2\) has no partition count"):
        plan(fig3, {"S1": 4, "S3": 8})


def test_declared_partitions_must_match_the_actual_count():
    def describe(app):
        app.get_input_stream(K.input("S1", partitions=4)).sink(print)

    with pytest.raises(PlanningError, match="'S1' is declared with 4 partitions but kafka.S1 has 8"):
        plan(describe, {"S1": 8})
    assert plan(describe, {}).streams["S1"].partitions == 4


def test_output_with_unknown_count_is_planned_as_unknown():
    p = plan(fig3, {"S1": 4, "S2": 4})
    assert p.streams["S3"].partitions is None


def test_bad_partition_count_in_stream_partitions_is_named():
    with pytest.raises(PlanningError, match="stream 'S1': partition count must be a positive integer"):
        ExecutionPlanner(BASE_CONFIG, {"S1": 0})
