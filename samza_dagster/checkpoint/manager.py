"""CheckpointManager: writes and reads task checkpoints in the job's checkpoint stream.

Stream ``__samza_checkpoint_ver_1_for_<job.name>_<job.id>`` (``_`` → ``-`` inside the two
parts) on ``task.checkpoint.system`` (default: the job's default system), one partition, in
Samza 1.8's form (``serde.py``): each commit writes a CheckpointV1 and a CheckpointV2 per task
under ``KafkaCheckpointLogKey`` keys, as Samza does by default. Reading takes Samza's forms and
this engine's earlier one (keyed by task name); the last message for a task wins.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from samza_dagster.checkpoint.checkpoint import Checkpoint, CheckpointError
from samza_dagster.checkpoint.serde import decode_checkpoint_message, encode_checkpoint_messages
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.errors import ReadTimeoutError
from samza_dagster.model import OutgoingMessageEnvelope, StreamSpec, SystemStream, SystemStreamPartition
from samza_dagster.system.positions import position_reached
from samza_dagster.system.protocols import ReportsLastStableOffsets

SOURCE = "__checkpoint"


def checkpoint_stream_name(job_name: str, job_id: str) -> str:
    return f"__samza_checkpoint_ver_1_for_{job_name.replace('_', '-')}_{job_id.replace('_', '-')}"


def checkpoint_system(config: Config) -> str:
    return TaskConfig(config).checkpoint_system or JobConfig(config).default_system


class CheckpointManager:
    def __init__(self, config: Config, admin, producer, consumer_factory, owns_producer: bool = True) -> None:
        job = JobConfig(config)
        self.system = checkpoint_system(config)
        self.stream = checkpoint_stream_name(job.name, job.id)
        self.ssp = SystemStreamPartition(self.system, self.stream, 0)
        self._system_stream = SystemStream(self.system, self.stream)
        #: the grouper the checkpoint keys name (Samza refuses a checkpoint of another grouper)
        self._grouper = job.grouper
        self._admin = admin
        self._producer = producer
        self._consumer_factory = consumer_factory
        #: False when the producer is the container's (exactly-once: the checkpoints are written
        #: by the container's transaction), which starts and stops it
        self._owns_producer = owns_producer
        self._started = False

    def start(self) -> None:
        """Create the stream if missing and register with the producer."""
        try:
            self._admin.create_stream(
                StreamSpec(self.stream, self.stream, self.system, 1, {"cleanup.policy": "compact"})
            )
        except Exception:  # noqa: BLE001 - it exists; read_all reports a real problem
            pass
        self._producer.register(SOURCE)
        if not self._started and self._owns_producer:
            self._producer.start()
            self._started = True

    def read_last(self, *, committed_so_far: bool = False) -> dict[str, Checkpoint]:
        """The last checkpoint of every task in the stream (read from oldest to newest now).

        A container restoring its own checkpoints reads to the stream's end, waiting for a
        transaction still open in it (another container's, about to commit). An observer — the
        progress display, a Dagster observation — passes ``committed_so_far`` and reads only to
        the last stable offset: a crashed container's open transaction holds the end until the
        container's next instance fences it (or the broker's transaction timeout, a minute or
        more), and an observer that starts before that instance must never wait for it."""
        metadata = self._admin.get_system_stream_metadata([self.stream])[self.stream]
        pm = metadata.partitions.get(0)
        if pm is None or pm.newest_offset is None:
            return {}
        newest, upcoming = int(pm.newest_offset), int(pm.upcoming_offset)
        if committed_so_far and isinstance(self._admin, ReportsLastStableOffsets):
            upcoming = min(upcoming, int(self._admin.last_stable_offsets([self.ssp])[self.ssp]))
            if upcoming <= int(pm.oldest_offset):
                return {}
            newest = min(newest, upcoming - 1)
        raw: dict[str, Checkpoint] = {}
        consumer = self._consumer_factory()
        consumer.register(self.ssp, pm.oldest_offset)
        consumer.start()
        try:
            deadline = time.monotonic() + 300
            done = False
            while not done:
                if time.monotonic() > deadline:
                    raise ReadTimeoutError(f"reading checkpoint stream {self.system}.{self.stream} timed out")
                envelopes = consumer.poll([self.ssp], 0.1).get(self.ssp)
                if not envelopes:
                    # the newest offset may hold no message: an exactly-once job's commit marker (Kafka)
                    done = position_reached(consumer, self.ssp, upcoming)
                    continue
                for env in envelopes:
                    if env.is_end_of_stream:
                        done = True
                        break
                    message = decode_checkpoint_message(env.key, env.message, env.offset, self._grouper)
                    if message.checkpoint is None:
                        raw.pop(message.task_name, None)
                    else:
                        raw[message.task_name] = message.checkpoint
                    if int(env.offset) >= newest:
                        done = True
                        break
        finally:
            consumer.stop()
        return raw

    def write(self, task_name: str, checkpoint: Checkpoint) -> None:
        self.write_all({task_name: checkpoint})

    def write_all(self, checkpoints: Mapping[str, Checkpoint]) -> None:
        """One message per task (the task's own checkpoint, as in Samza), sent together and made
        durable by one flush: a container commit of many tasks is one batch on the checkpoint
        system (on the log, one transaction per ``log.batch.size`` checkpoints)."""
        send, ss = self._producer.send, self._system_stream
        for task_name, checkpoint in checkpoints.items():
            for key, value in encode_checkpoint_messages(task_name, checkpoint, self._grouper):
                send(SOURCE, OutgoingMessageEnvelope(ss, value, key, None, 0))
        self._producer.flush(SOURCE)

    def stop(self) -> None:
        if self._started:
            self._producer.stop()
            self._started = False


__all__ = ["CheckpointError", "CheckpointManager", "checkpoint_stream_name", "checkpoint_system"]
