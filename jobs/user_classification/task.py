"""UserClassifierTask: "please classify user" → "user belongs to country X".

Both input streams carry the same request; which one it came from is the message's SLA. The
output records it with the latency (now − the request's log timestamp, i.e. when it was written
to its stream) and the processing time, which is all the report needs to split latencies by
stream and to tell which real-time requests were served while the batch flood was pending.
"""

from __future__ import annotations

import time
from typing import Any

from jobs.user_classification.classifier import check_strategy, classify
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import InitableTask, StreamTask

REALTIME = "user_signups"


class UserClassifierTask(StreamTask, InitableTask):
    def init(self, context: Any) -> None:
        config = context.config
        self.strategy = check_strategy(config.get_str("app.classifier.strategy", "ip"))
        self.output = SystemStream("log", config.get_str("user_classification.output.stream", "user_country"))
        # the ranking model's cost per request, simulated (CPU busy, not sleep): it is what makes
        # a flood of batch requests take long enough to compete with real-time traffic
        self.cost_s = (config.get_int("app.classifier.model.cost.us", 0) or 0) / 1e6

    def process(self, envelope: Any, collector: Any, coordinator: Any) -> None:
        user = envelope.message
        if self.cost_s:
            until = time.perf_counter() + self.cost_s
            while time.perf_counter() < until:
                pass
        now_ms = time.time() * 1000.0
        written = envelope.event_time
        out = {
            "user_id": user["user_id"],
            "country": classify(user, self.strategy),
            "strategy": self.strategy,
            "source": "realtime" if envelope.ssp.stream == REALTIME else "batch",
            "processed_ms": round(now_ms, 3),
            "latency_ms": round(now_ms - written, 3) if written is not None else None,
        }
        collector.send(OutgoingMessageEnvelope(self.output, out, key=user["user_id"]))
