"""The benchmark pipeline, as an application and as a hand-written task."""

from __future__ import annotations

import json

from samza_dagster.application import KV, StreamApplication, SystemDescriptor
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.serde import JsonSerde


class PipelineApp(StreamApplication):
    """events → map → filter → partition_by user → join profiles (by user) → out."""

    def describe(self, app):
        log = SystemDescriptor("log")
        ev = app.get_input_stream(log.input("events", serde=JsonSerde()))
        pr = app.get_input_stream(log.input("profiles", serde=JsonSerde()))
        out = app.get_output_stream(log.output("out", serde=JsonSerde(), key_serde=JsonSerde()))
        (
            ev.map(lambda m: {"u": m["u"], "v": m["v"] * 2})
            .filter(lambda m: m["v"] % 3 != 0)
            .partition_by(key=lambda m: m["u"], op_id="byu")
            .join(
                pr,
                lambda kv, p: KV(kv.key, kv.value["v"] + p["n"]),
                key=lambda kv: kv.key,
                other_key=lambda p: p["u"],
                ttl_ms=3_600_000,
                op_id="j",
            )
            .send_to(out)
        )


class PipelineTask:
    """The same logic by hand: events re-partitioned through a plain intermediate stream,
    join state in the task's two KV stores (same store config as the application's)."""

    def init(self, context):
        self.left = context.get_store("left")
        self.right = context.get_store("right")
        self.mid = SystemStream("log", "handmid")
        self.out = SystemStream("log", "handout")

    def process(self, env, collector, coordinator):
        stream = env.ssp.stream
        if stream == "events":
            m = json.loads(env.message)
            m = {"u": m["u"], "v": m["v"] * 2}
            if m["v"] % 3 != 0:
                collector.send(OutgoingMessageEnvelope(self.mid, json.dumps(m).encode(), json.dumps(m["u"]).encode()))
        elif stream == "handmid":
            m = json.loads(env.message)
            self.left.put(m["u"], m)
            p = self.right.get(m["u"])
            if p is not None:
                collector.send(
                    OutgoingMessageEnvelope(self.out, json.dumps(m["v"] + p["n"]).encode(), json.dumps(m["u"]).encode())
                )
        else:
            p = json.loads(env.message)
            self.right.put(p["u"], p)
            m = self.left.get(p["u"])
            if m is not None:
                collector.send(
                    OutgoingMessageEnvelope(self.out, json.dumps(m["v"] + p["n"]).encode(), json.dumps(p["u"]).encode())
                )
