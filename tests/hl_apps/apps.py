"""High-level applications used by the operator-runtime tests (importable by app.class).

The system of their inputs and outputs is ``tests.app.system`` (default ``log``), so the same
applications run on Kafka."""

from __future__ import annotations

from samza_dagster.application import KV, StreamApplication, SystemDescriptor, TableDescriptor, Windows
from samza_dagster.serde import JsonSerde

SYSTEM_KEY = "tests.app.system"


def _count(_message, acc):
    return acc + 1


def _system(app) -> SystemDescriptor:
    return SystemDescriptor(app.config.get_str(SYSTEM_KEY) or "log")


class StreamStreamJoinApp(StreamApplication):
    """Seed 002 Listing 1: S1 filtered, joined with S2 on the user id, sent to S3."""

    def describe(self, app):
        log = _system(app)
        s1 = app.get_input_stream(log.input("S1", serde=JsonSerde()))
        s2 = app.get_input_stream(log.input("S2", serde=JsonSerde()))
        s3 = app.get_output_stream(log.output("S3", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            s1.filter(lambda m: m["ok"])
            .join(
                s2,
                lambda a, b: KV(a["user"], {"page": a["page"], "name": b["name"]}),
                key=lambda m: m["user"],
                other_key=lambda m: m["user"],
                ttl_ms=600_000,
                op_id="j1",
            )
            .send_to(s3)
        )


class StreamTableJoinApp(StreamApplication):
    """Seed 002 Listing 2: S1 partitioned by key into table T, S2 joined with T, sent to S3."""

    def describe(self, app):
        log = _system(app)
        s1 = app.get_input_stream(log.input("S1", serde=JsonSerde()))
        s2 = app.get_input_stream(log.input("S2", serde=JsonSerde()))
        s3 = app.get_output_stream(log.output("S3", serde=JsonSerde(), key_serde=JsonSerde()))
        t = app.get_table(TableDescriptor("T"))
        s1.partition_by(key=lambda m: m["user"], value=lambda m: m["name"], op_id="p1").send_to(t)
        s2.join(
            t,
            lambda m, name: None if name is None else KV(m["user"], {"page": m["page"], "name": name}),
            key=lambda m: m["user"],
            op_id="tj",
        ).send_to(s3)


class TwoStageCountApp(StreamApplication):
    """input (4 partitions) → partition_by word (into 3) → keyed window count → output."""

    def describe(self, app):
        log = _system(app)
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
        log = _system(app)
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


class SessionCountApp(StreamApplication):
    """Clicks re-partitioned by user, counted per event-time session (gap 1 s) of each user."""

    def describe(self, app):
        log = _system(app)
        clicks = app.get_input_stream(log.input("clicks", serde=JsonSerde()))
        out = app.get_output_stream(log.output("sessions", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            clicks.partition_by(key=lambda m: m["user"], op_id="by-user")
            .window(
                Windows.keyed_session(
                    lambda kv: kv.key, 1000, 0, _count, time="event", timestamp_fn=lambda kv: kv.value["t"]
                ),
                op_id="sessions",
            )
            .map(lambda p: KV(p.key, [p.start_ms, p.end_ms, p.value]))
            .send_to(out)
        )


def _profile_entries(kv):
    """side_input_fn: a profile message (unkeyed) → the table entry user → name; a profile
    without a name deletes the user's entry."""
    profile = kv.value
    return [KV(profile["user"], profile.get("name"))]


class SideInputJoinApp(StreamApplication):
    """Table ``profiles`` filled from the side-input stream ``profiles`` (through
    side_input_fn), joined with the page views; no partition_by, so a single stage."""

    def describe(self, app):
        log = _system(app)
        views = app.get_input_stream(log.input("views", serde=JsonSerde()))
        out = app.get_output_stream(log.output("enriched", serde=JsonSerde(), key_serde=JsonSerde()))
        table = app.get_table(TableDescriptor("profiles", side_inputs=["profiles"], side_input_fn=_profile_entries))
        views.join(
            table,
            lambda v, name: None if name is None else KV(v["user"], {"page": v["page"], "name": name}),
            key=lambda v: v["user"],
            op_id="enrich",
        ).send_to(out)


class SideInputBesideWiderStreamApp(SideInputJoinApp):
    """SideInputJoinApp plus an unrelated input ``clicks`` with more partitions than the side
    input: the job gets tasks whose partition the side input does not have."""

    def describe(self, app):
        super().describe(app)
        log = _system(app)
        clicks = app.get_input_stream(log.input("clicks", serde=JsonSerde()))
        clicks.map(lambda c: KV(c["user"], c)).send_to(
            app.get_output_stream(log.output("clicks_out", serde=JsonSerde(), key_serde=JsonSerde()))
        )


class UpperSerde:
    """A descriptor serde that is not JSON: UTF-8 text, upper-cased on the way out."""

    def to_bytes(self, obj):
        return str(obj).upper().encode()

    def from_bytes(self, data):
        return data.decode()


class DescriptorSerdeApp(StreamApplication):
    """Input and output with descriptor serdes while the config gives the system JSON serdes:
    the descriptor's must be the only ones applied (keys have no descriptor serde: the
    configured one applies to them)."""

    def describe(self, app):
        log = _system(app)
        words = app.get_input_stream(log.input("text", serde=UpperSerde()))
        out = app.get_output_stream(log.output("shout", serde=UpperSerde(), kv=True))
        words.map(lambda w: KV({"len": len(w)}, w + "!")).send_to(out)


def _long_words_upper(frame):
    """pandas: the words longer than two letters, upper-cased (a batch of strings in, strings out)."""
    words = frame["message"]
    return words[words.str.len() > 2].str.upper().to_frame("message")


def _doubled(table):
    """pyarrow: each KV's value doubled (a batch of KVs in, KVs out)."""
    import pyarrow.compute as pc

    return table.set_column(1, "value", pc.multiply(table.column("value"), 2))


def _sum_values(kv, acc):
    return acc + kv.value


class BatchTwoStageCountApp(StreamApplication):
    """words → map_batches (pandas) → partition_by word → map_batches (pyarrow, on KVs) → keyed
    window sum → counts: batches on both sides of an intermediate stream, whose control messages
    sit between its messages."""

    def describe(self, app):
        log = _system(app)
        words = app.get_input_stream(log.input("words", serde=JsonSerde()))
        counts = app.get_output_stream(log.output("counts", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            words.map_batches(_long_words_upper, op_id="long")
            .partition_by(key=lambda w: w, value=lambda w: 1, op_id="by-word")
            .map_batches(_doubled, batch_format="pyarrow", op_id="double")
            .window(Windows.keyed_tumbling(lambda kv: kv.key, 3_600_000, 0, _sum_values), op_id="sum")
            .map(lambda pane: KV(pane.key, pane.value))
            .send_to(counts)
        )


class BadBatchApp(StreamApplication):
    """A map_batches function that returns a list instead of a DataFrame."""

    def describe(self, app):
        log = _system(app)
        words = app.get_input_stream(log.input("words", serde=JsonSerde()))
        out = app.get_output_stream(log.output("counts", serde=JsonSerde()))
        words.map_batches(lambda frame: list(frame["message"]), op_id="bad").send_to(out)
