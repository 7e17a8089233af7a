"""``job.processing.guarantee=exactly-once``: what a container needs for it, checked before
anything starts, and the guard on systems outside the job's transactions.

A container commits as one transaction of its checkpoint system's producer (the embedded log's,
samza_dagster/system/log/transactions.py, or Kafka's: system/kafka/): the outputs,
changelog writes and control messages its tasks sent since the last commit, and every task's
checkpoint, become readable together (``read_committed``) or are removed. That holds when

* the checkpoint system can run transactions (its factory's ``supports_transactions``: the
  embedded log, Kafka) and every stream the job writes is on that system (changelogs, the dead-letter stream
  and any output: a message to another system could not be taken back, so sending one fails) — or on a
  system whose commits carry the job's checkpoints (its factory's ``commits_with_checkpoints``: Iceberg
  tables, committed before the transaction; after a crash between the two a task restarts from the
  checkpoint stream — its stores exact there — and replays without sending a table what it already
  holds: container/table_replay.py);
* every task of the container is quiet at each commit, so that no output is in the transaction
  without the offset of the input that caused it: the inline run loop (one thread, synchronous
  tasks, ``task.max.concurrency=1``) guarantees that. An asynchronous task, a thread pool or
  several messages in flight per task could commit outputs of messages still being processed
  (Kafka Streams commits all tasks of a thread together for the same reason).

Anything else is a ConfigError naming the key, before the job starts.
"""

from __future__ import annotations

from samza_dagster.checkpoint import checkpoint_system
from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.container.dead_letter import DLQ_KEY, dead_letter_stream
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.storage import store_specs
from samza_dagster.system.factories import system_factory
from samza_dagster.system.protocols import TransactionalSystemFactory

GUARANTEE_KEY = keys.JOB_PROCESSING_GUARANTEE.name


def transactional_id(config: Config, container_id: str) -> str:
    """The container's transactional producer id: stable across restarts of the same container,
    so a restarted container fences the one it replaces."""
    job = JobConfig(config)
    return f"{job.name}-{job.id}-{container_id}"


def _problem(key: str, detail: str) -> ConfigError:
    return ConfigError(f"config key {GUARANTEE_KEY!r}=exactly-once: {detail} (config key {key!r})", key=key)


def check_exactly_once(config: Config, task_is_async: bool | None = None) -> None:
    """Raise the ConfigError of the first setting that breaks exactly-once (module docstring);
    nothing when the job is at-least-once."""
    job = JobConfig(config)
    if not job.exactly_once:
        return
    system = checkpoint_system(config)
    factory_key = keys.SYSTEM_FACTORY.key(system=system)
    factory = system_factory(config, system)
    if not isinstance(factory, TransactionalSystemFactory) or not factory.supports_transactions(system, config):
        name = (config.get_str(factory_key) or "log").strip()
        raise _problem(
            factory_key,
            f"the checkpoint system {system!r} is {name!r}, which cannot run the job's transactions; "
            "exactly-once needs the checkpoint system and every output on the embedded log (log) or on Kafka",
        )
    for spec in store_specs(config, job.default_system):
        if spec.changelog is not None and spec.changelog.system != system:
            raise _problem(
                keys.STORE_CHANGELOG.key(store=spec.name),
                f"store {spec.name!r} logs to system {spec.changelog.system!r}, not to the checkpoint system "
                f"{system!r} whose transactions cover the job's writes",
            )
    dlq = dead_letter_stream(config)
    if dlq is not None and dlq.system != system:
        raise _problem(
            DLQ_KEY, f"the dead-letter stream {dlq.system}.{dlq.stream} is not on the checkpoint system {system!r}"
        )
    if job.thread_pool_size > 1:
        raise _problem(
            keys.JOB_CONTAINER_THREAD_POOL_SIZE.name,
            f"a thread pool of {job.thread_pool_size} runs tasks while others commit, so a commit could take in "
            "outputs of messages still in flight; use 0 or 1",
        )
    task = TaskConfig(config)
    if task.max_concurrency > 1:
        raise _problem(
            keys.TASK_MAX_CONCURRENCY.name,
            f"{task.max_concurrency} messages in flight per task could put outputs of unfinished messages in a "
            "commit; use 1",
        )
    if task_is_async:
        raise _problem(
            keys.TASK_CLASS.name,
            "an AsyncStreamTask completes messages on other threads, so its commits (its own or the "
            "container's) could take in outputs of messages still in flight; use a StreamTask",
        )


class NonTransactionalProducer:
    """Stands for the producer of a system outside the job's transactions: sending to it fails,
    naming the stream and the key (everything else a container does with producers still works)."""

    def __init__(self, system: str, transactional_system: str, producer: object) -> None:
        self.system = system
        self._transactional_system = transactional_system
        self._producer = producer

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        ss = envelope.system_stream
        raise ConfigError(
            f"config key {GUARANTEE_KEY!r}=exactly-once: task {source!r} sent a message to {ss.system}.{ss.stream}, "
            f"but only system {self._transactional_system!r} (the checkpoint system) takes part in the job's "
            "transactions; a message to another system could not be taken back after a crash",
            key=GUARANTEE_KEY,
        )

    def __getattr__(self, name: str) -> object:
        return getattr(self._producer, name)
