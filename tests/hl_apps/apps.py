"""High-level applications used by the operator-runtime tests (importable by app.class)."""

from __future__ import annotations

from samza_dagster.application import KV, StreamApplication, SystemDescriptor, TableDescriptor, Windows
from samza_dagster.serde import JsonSerde


def _count(_message, acc):
    return acc + 1


class StreamStreamJoinApp(StreamApplication):
    """Seed 002 Listing 1: S1 filtered, joined with S2 on the user id, sent to S3."""

    def describe(self, app):
        log = SystemDescriptor("log")
        s1 = app.get_input_stream(log.input("S1", serde=JsonSerde()))
        s2 = app.get_input_stream(log.input("S2", serde=JsonSerde()))
        s3 = app.get_output_stream(log.output("S3", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            s1.filter(lambda m: m["ok"])
            .join(s2, lambda a, b: KV(a["user"], {"page": a["page"], "name": b["name"]}),
                  key=lambda m: m["user"], other_key=lambda m: m["user"], ttl_ms=600_000, op_id="j1")
            .send_to(s3)
        )


class StreamTableJoinApp(StreamApplication):
    """Seed 002 Listing 2: S1 partitioned by key into table T, S2 joined with T, sent to S3."""

    def describe(self, app):
        log = SystemDescriptor("log")
        s1 = app.get_input_stream(log.input("S1", serde=JsonSerde()))
        s2 = app.get_input_stream(log.input("S2", serde=JsonSerde()))
        s3 = app.get_output_stream(log.output("S3", serde=JsonSerde(), key_serde=JsonSerde()))
        t = app.get_table(TableDescriptor("T"))
        s1.partition_by(key=lambda m: m["user"], value=lambda m: m["name"], op_id="p1").send_to(t)
        s2.join(t, lambda m, name: None if name is None else KV(m["user"], {"page": m["page"], "name": name}),
                key=lambda m: m["user"], op_id="tj").send_to(s3)


class TwoStageCountApp(StreamApplication):
    """input (4 partitions) → partition_by word (into 3) → keyed window count → output."""

    def describe(self, app):
        log = SystemDescriptor("log")
        words = app.get_input_stream(log.input("words", serde=JsonSerde()))
        counts = app.get_output_stream(log.output("counts", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            words.partition_by(key=lambda w: w, value=lambda w: 1, op_id="by-word")
            .window(Windows.keyed_tumbling(lambda kv: kv.key, 3_600_000, 0, _count), op_id="count")
            .map(lambda pane: KV(pane.key, pane.value))
            .send_to(counts)
        )


class EventTimeCountApp(StreamApplication):
    """Two streams merged, re-partitioned by key, counted in 1 s event-time tumbling windows."""

    def describe(self, app):
        log = SystemDescriptor("log")
        a = app.get_input_stream(log.input("A", serde=JsonSerde()))
        b = app.get_input_stream(log.input("B", serde=JsonSerde()))
        out = app.get_output_stream(log.output("panes", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            a.merge(b)
            .partition_by(key=lambda m: m["k"], op_id="by-k")
            .window(Windows.keyed_tumbling(lambda kv: kv.key, 1000, 0, _count, time="event"), op_id="w")
            .map(lambda p: KV(p.key, [p.start_ms, p.end_ms, p.value]))
            .send_to(out)
        )
