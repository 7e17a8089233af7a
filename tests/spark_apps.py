"""Tasks for the spark-runner tests; they run inside Spark's Python workers, so they are importable
module-level classes configured only through the job's config."""

from __future__ import annotations

import os
import time

from samza_dagster.model import OutgoingMessageEnvelope, SystemStream
from samza_dagster.task import InitableTask, StreamTask


class CopyTask(StreamTask, InitableTask):
    """Copies every message to ``test.output.system``.``test.output.stream`` (key kept).

    Test hook: the container ``test.crash.container`` kills its own Python worker
    (``os._exit(1)``, no clean-up — as a crash would) after ``test.crash.after.messages``
    messages, once: it leaves the marker file ``test.crash.marker`` so the restarted container
    does not crash again. ``test.fail.message`` makes a message with that value raise (every
    attempt). ``test.delay.ms`` sleeps that long per message (a job that is still running when a
    test kills an executor). ``test.starts.file`` gets a line (the container id) per task start."""

    def init(self, context):
        cfg = context.config
        self.out = SystemStream(cfg.get_str("test.output.system", "log"), cfg.get_str("test.output.stream", "output"))
        crash = cfg.get_str("test.crash.container")
        marker = cfg.get_str("test.crash.marker")
        self.crash_after = -1
        if crash is not None and crash == str(context.container_id) and marker and not os.path.exists(marker):
            self.crash_after = cfg.get_int("test.crash.after.messages", 1)
            self.marker = marker
        fail = cfg.get_str("test.fail.message")
        self.fail_message = fail.encode() if fail is not None else None
        self.seen = 0
        self.delay_s = (cfg.get_int("test.delay.ms", 0) or 0) / 1000
        starts = cfg.get_str("test.starts.file")
        if starts:  # one line per task start (init): how often Spark ran the stage
            with open(starts, "a") as f:
                f.write(f"{context.container_id}\n")

    def process(self, envelope, collector, coordinator):
        if self.fail_message is not None and envelope.message == self.fail_message:
            raise ValueError(f"bad message {envelope.message!r} at offset {envelope.offset}")
        collector.send(OutgoingMessageEnvelope(self.out, envelope.message, key=envelope.key))
        if self.delay_s:
            time.sleep(self.delay_s)
        self.seen += 1
        if self.seen == self.crash_after:
            with open(self.marker, "w") as f:
                f.write(str(os.getpid()))
            os._exit(1)
