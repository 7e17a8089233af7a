"""SamzaContainer: builds everything one container needs from its JobModel and runs the
RunLoop until the tasks end, ask to stop, the container is stopped, or a task fails.

Start-up order (each step needs the one before): system admins → input metadata → the
checkpoint stream (read back) → stores (changelogs validated, restored) → task instances
(``init`` after restore, so a task sees its state) → starting offsets (a startpoint, else the
checkpoint, else ``samza.offset.default``; ``samza.reset.offset`` ignores the checkpoint; a
checkpoint before the oldest offset resets by ``samza.offset.default``: offset_reset.py) →
SystemConsumers and chooser → RunLoop.

Commit order for a task (RunLoop guarantees nothing is in flight): snapshot offsets
processed → flush stores → flush every producer for the task's source (its output and its
changelog writes become durable) → look up changelog offsets → write the checkpoint. So a
checkpoint never covers output or state that is not durable.

Exactly-once (``job.processing.guarantee``, exactly_once.py): the same steps inside one transaction
of the checkpoint system's producer — the flush writes outputs and changelog as open messages, the
checkpoints are written by the commit point, and only then does anything become readable to
``read_committed`` readers; every commit covers every task of the container. Tasks whose commits fall due together
take each step together (``_commit``): one producer flush, one changelog-offset lookup per system,
one checkpoint flush for all of them, so a commit's cost does not grow per task by more than the
task's own bookkeeping.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from functools import partial
from typing import Any, Protocol

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.checkpoint.manager import CheckpointManager
from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.system_config import StreamConfig, SystemConfig
from samza_dagster.container.assembly import ContainerPlan, side_inputs_manager
from samza_dagster.container.dead_letter import DeadLetterSender, ensure_dead_letter_stream
from samza_dagster.container.exactly_once import NonTransactionalProducer, check_exactly_once, transactional_id
from samza_dagster.container.gc_threshold import hold_gc_threshold
from samza_dagster.container.gil import hold_switch_interval
from samza_dagster.container.metrics import ContainerMetrics
from samza_dagster.container.offset_reset import admin_cleanup_policy, reset_out_of_range
from samza_dagster.container.output_checkpoints import commit_outputs, tables_ahead
from samza_dagster.container.process_setting import SettingLease
from samza_dagster.container.reporting import ContainerReporting
from samza_dagster.container.run_loop import RunLoop, RunLoopStatus
from samza_dagster.container.run_loop_config import RunLoopConfig
from samza_dagster.container.side_inputs import SideInputsManager
from samza_dagster.container.summary import ContainerStatus, ContainerSummary
from samza_dagster.container.table_replay import TableReplay
from samza_dagster.container.task_instance import TaskInstance
from samza_dagster.coordinator.model.job_model import JobModel
from samza_dagster.model import SystemStream, SystemStreamMetadata, SystemStreamPartition
from samza_dagster.startpoint.container import ContainerStartpoints
from samza_dagster.storage import TaskStores, prepare_changelogs, restore_stores, state_base_dir
from samza_dagster.system.chooser import DefaultChooser
from samza_dagster.system.chooser.base import MessageChooser, chooser_from_factory, load_chooser_factory
from samza_dagster.system.consumers import FetchThreshold, SystemConsumers
from samza_dagster.system.factories import stop_admin
from samza_dagster.system.factories import system_factory as default_system_factory
from samza_dagster.system.protocols import (
    CheckpointCommittingSystemFactory,
    DeliversColumnar,
    EmitsBadRows,
    ReportsMetrics,
    SpacesCommits,
    SystemAdmin,
    SystemConsumer,
    SystemFactory,
    SystemProducer,
)
from samza_dagster.system.ssp_metadata import ssp_metadata
from samza_dagster.task.api import DEFAULT_BATCH_TASK_RUN
from samza_dagster.task.coordinator import ContainerRequests
from samza_dagster.task.factory import TaskFactory

log = logging.getLogger(__name__)

#: a commit that lasts this long is a stall (a commit takes milliseconds when its systems answer);
#: reported in the log, the progress display and the ``commit-waiting-ms`` gauge from then on
STALL_AFTER_S = 5.0


class JobModelNotice(Protocol):
    """What the container reads of a job-model watcher (``coordinator.client.JobModelWatcher``):
    a flag its own thread sets once the coordinator serves a newer JobModel."""

    new_version_available: bool


class SamzaContainer:
    """One container of a job: the tasks its JobModel assigns to ``container_id``, their stores,
    consumers, producers and RunLoop. ``run()`` starts them in the order of the module docstring,
    runs the loop until every task ends, one asks to stop, ``stop_event`` is set or a newer
    JobModel arrives, shuts down and returns the ``ContainerSummary`` (on failure it raises, the
    summary kept in ``self.summary``); the commit of several tasks is ``_commit``. Build it through a runner (``runtime/``), which
    fetches the JobModel from the job coordinator."""

    def __init__(
        self,
        container_id: str,
        job_model: JobModel,
        *,
        task_factory: TaskFactory | None = None,
        stop_event: threading.Event | None = None,
        system_factory: Callable[[Config, str], SystemFactory] = default_system_factory,
        job_model_watcher: JobModelNotice | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        container_id = str(container_id)
        if container_id not in job_model.containers:
            known = ", ".join(sorted(job_model.containers)) or "none"
            raise ConfigError(f"container {container_id!r} is not in the JobModel (containers: {known})")
        self.container_id = container_id
        self.job_model = job_model
        self.config = job_model.config
        self.container_model = job_model.containers[container_id]
        self.task_factory = task_factory
        self.stop_event = stop_event or threading.Event()
        self._system_factory = system_factory
        self._watcher = job_model_watcher
        #: the run loop's clock for windows, commits and timeouts (tests pass one they move)
        self._clock = clock
        self.metrics = ContainerMetrics(container_id)
        #: the container's MetricsRegistry and the reporters of ``metrics.reporters``
        self.reporting = ContainerReporting(self.config, container_id)
        self.requests = ContainerRequests()
        self.tasks: dict[str, TaskInstance] = {}
        self.summary: ContainerSummary | None = None
        self.restored: dict[str, int] = {}
        self.run_loop: RunLoop | None = None
        self._factories: dict[str, SystemFactory] = {}
        self.admins: dict[str, SystemAdmin] = {}
        #: SystemProducers — and, exactly-once, the checkpoint system's transactional one and the
        #: NonTransactionalProducer wrappers (exactly_once.py), outside that protocol: not typed yet
        self.producers: dict[str, Any] = {}
        self._consumers_by_system: dict[str, SystemConsumer] = {}
        self.consumers: SystemConsumers | None = None
        self.checkpoints: CheckpointManager | None = None
        self._changelog_ssps: dict[str, dict[str, SystemStreamPartition]] = {}
        #: every task's stores, opened before the task instances exist: closed at shutdown by
        #: their TaskInstance, or here when start-up failed before it was built (a RocksDB store
        #: left open keeps its lock, and the next start in this process could not open it)
        self._task_stores: dict[str, TaskStores] = {}
        self.side_inputs: SideInputsManager | None = None
        self.side_inputs_restored: dict[str, int] = {}
        self._started_producers: list[SystemProducer] = []
        #: the systems' own counters, read for the summary (a snapshot callable per client)
        self._consumer_metrics: dict[str, Callable[[], Any]] = {}
        self.startpoints: ContainerStartpoints | None = None
        self._exactly_once = False
        #: exactly-once: the checkpoint system's producer, which runs the container's transactions
        self._transactions: Any = None
        #: what each commit of an output that carries checkpoints (an Iceberg table) appended
        self.table_commits: list[Any] = []
        #: set when run() ends, so the monitor thread stops asking the run loop to stop
        self._finished = False
        #: the interpreter-wide settings this container holds while it runs (process_setting.py)
        self._settings: list[SettingLease[Any]] = []
        #: the monitor's view of the run loop: its last mark (_loop_mark), when that last changed
        #: (0.0: the loop has not started), and when the stall it logged began (None: none)
        self._loop_seen: tuple[int, int, float] = (0, 0, 0.0)
        self._loop_moved_at = 0.0
        self._stall_began: float | None = None
        #: while run() shuts the container down: since when, and the step it is at (a stop can
        #: wait on a system too — aborting a transaction while no broker answers)
        self._stopping_since: float | None = None
        self._stopping_step = ""

    # -- public --------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask for a graceful stop (finish in-flight, commit, return SHUTDOWN); any thread."""
        self.stop_event.set()
        if self.run_loop is not None:
            self.run_loop.request_stop()

    @property
    def last_checkpoints(self) -> dict[str, Checkpoint]:
        """Each task's last checkpoint (its TaskInstance's: read back at start, then its commits')."""
        return {name: ti.last_checkpoint for name, ti in self.tasks.items() if ti.last_checkpoint is not None}

    def positions(self) -> dict[SystemStreamPartition, str]:
        """The last offset processed of every partition of every task, as the run loop recorded
        it (not yet committed, maybe): read from another thread, for progress shown to a person."""
        out: dict[SystemStreamPartition, str] = {}
        for ti in list(self.tasks.values()):
            out.update(list(ti.last_processed.items()))
        return out

    def uncommitted(self) -> dict[str, dict[SystemStreamPartition, tuple[str | None, str]]]:
        """Per task, the partitions processed past their last checkpoint: ``ssp -> (checkpointed
        offset or None, last processed offset)``. Read from another thread, for a person
        (what an exit now would leave to be processed again), not for correctness."""
        result: dict[str, dict[SystemStreamPartition, tuple[str | None, str]]] = {}
        for name, ti in list(self.tasks.items()):
            checkpoint = ti.last_checkpoint
            committed = checkpoint.offsets if checkpoint is not None else {}
            for ssp, offset in list(ti.last_processed.items()):
                if committed.get(ssp) != offset:
                    result.setdefault(name, {})[ssp] = (committed.get(ssp), offset)
        return result

    def run(self) -> ContainerSummary:
        """Run to the end. Returns the summary; on failure the summary (status FAILED) is kept
        in ``self.summary`` and the error is raised."""
        started = time.monotonic()
        self.metrics.started_at = started
        status = ContainerStatus.FAILED
        error: BaseException | None = None
        monitor: threading.Thread | None = None
        try:
            self._start()
            self.metrics.start_s = time.monotonic() - started
            assert self.run_loop is not None
            self._loop_moved_at = time.monotonic()
            monitor = threading.Thread(target=self._monitor, name=f"container-{self.container_id}-monitor", daemon=True)
            monitor.start()
            result = self.run_loop.run()
            if self.side_inputs is not None and self.side_inputs.error is not None:
                raise self.side_inputs.error
            if result == RunLoopStatus.COMPLETED:
                status = ContainerStatus.COMPLETED
            elif self._watcher is not None and self._watcher.new_version_available:
                status = ContainerStatus.NEW_JOB_MODEL
            else:
                status = ContainerStatus.SHUTDOWN
        except BaseException as exc:  # noqa: BLE001 - any failure is the container's result (summary, status)
            error = exc
            status = ContainerStatus.FAILED
            # said now: a shutdown can itself wait on the system that failed (aborting a transaction
            # while no broker answers), and the cause would otherwise be seen only after it
            log.warning("container %s failed: %s: %s; shutting down", self.container_id, type(exc).__name__, exc)
        finally:
            self._finished = True
            self.stop_event.set()
            if monitor is not None:
                monitor.join(timeout=2)
            if error is None:
                self._stall_ended()  # the run loop went on and ended before the monitor looked again
            stopping = time.monotonic()
            shutdown_error = self._shutdown(clean=error is None)
            if error is None and shutdown_error is not None:
                error, status = shutdown_error, ContainerStatus.FAILED
            self.summary = self._summarize(status, time.monotonic() - started, error, stopping)
            for lease in self._settings:  # the process's own switch interval and GC threshold back
                lease.release()  # when no other container of it runs (process_setting.py)
            self._settings.clear()
            log.info("%s", self.summary.one_line())
        if error is not None:
            # the summary carries one line; the trace goes to the log (a run's log file, --verbose)
            log.info("container %s failed", self.container_id, exc_info=error)
            raise error
        return self.summary

    # -- start-up ------------------------------------------------------------------------------
    def _factory(self, system: str) -> SystemFactory:
        factory = self._factories.get(system)
        if factory is None:
            factory = self._factories[system] = self._system_factory(self.config, system)
        return factory

    def _admin(self, system: str) -> SystemAdmin:
        admin = self.admins.get(system)
        if admin is None:
            admin = self.admins[system] = self._factory(system).get_admin(system, self.config)
        return admin

    def _new_consumer(self, system: str, config: Config | None = None) -> SystemConsumer:
        return self._factory(system).get_consumer(system, config or self.config)

    def _start(self) -> None:
        """Assemble the container in Samza's order, one named step each: producers, input
        metadata, checkpoints, stores (restored from changelogs), side inputs (read to their
        head), task instances (initialised), consumers from the starting offsets, the run loop."""
        # the interpreter-wide settings, held while this container runs (released in ``run``)
        self._settings.append(hold_switch_interval(self.config))
        self._settings.append(hold_gc_threshold(self.config))
        plan = ContainerPlan.of(self.config, self.container_model, self.task_factory)
        self._exactly_once = plan.job.exactly_once
        check_exactly_once(self.config)
        self._start_producers(plan)
        metadata = self._input_metadata(plan)
        last = self._start_checkpoints(plan)
        # an output whose commits carry checkpoints (Iceberg) may be ahead of the stream after a crash
        ahead = tables_ahead(last, self.producers.values(), self.container_model.tasks, self._admin)
        self._open_stores(plan, last)
        self.side_inputs = side_inputs_manager(
            self.config, self.container_model, self._task_stores, plan, self._admin, self._new_consumer
        )
        self.side_inputs_restored = self.side_inputs.bootstrap()
        self._create_tasks(plan, last, ahead)
        starting = self._starting_offsets(plan.input_ssps, metadata, last)
        # startpoints (read from the coordinator stream) win over checkpoints
        self.startpoints = ContainerStartpoints(self.config, self.container_id)
        elsewhere = self.startpoints.apply(self.container_model.tasks, self._admin, metadata)
        for name in self.startpoints.applied:  # its first commit checkpoints the startpoint's position
            self.tasks[name].request_checkpoint()
        for ti in self.tasks.values():  # a task's own choice (TaskContext.set_start_offset) wins
            elsewhere.update(ti.context.start_offsets)
        starting.update(elsewhere)
        for ti in self.tasks.values():  # reprocessed on purpose: every table gets those rows again
            ti.forget_replay(set(elsewhere) | self._reset_ssps(ti))
        consumers = self._start_consumers(plan, metadata, starting)
        run_loop = self.run_loop = self._create_run_loop(plan, consumers)
        self.reporting.start(self.tasks, self.consumers, self.metrics, self._new_metrics_admin, self.restored, starting)
        self.side_inputs.start()
        if self.stop_event.is_set():
            run_loop.request_stop()

    def _new_metrics_admin(self, system: str) -> SystemAdmin:
        """An admin for the metrics' lag lookups: its own, used on the reporter's thread."""
        return self._factory(system).get_admin(system, self.config)

    def _start_producers(self, plan: ContainerPlan) -> None:
        """One producer per system, every task registered as a source."""
        for system in sorted(plan.systems):
            producer = self._factory(system).get_producer(system, self.config)
            for name in self.container_model.tasks:
                producer.register(name)
            self.producers[system] = producer
            if isinstance(producer, ReportsMetrics):  # its own counters (the Kafka one's librdkafka totals)
                self._consumer_metrics[f"producer-{system}"] = producer.metrics_snapshot
        for producer in self.producers.values():
            producer.start()
            self._started_producers.append(producer)
        if self._exactly_once:  # only the checkpoint system's producer runs the transactions
            for system, producer in self.producers.items():
                factory = self._factory(system)
                if isinstance(factory, CheckpointCommittingSystemFactory) and factory.commits_with_checkpoints(
                    system, self.config
                ):
                    continue  # its commits carry the checkpoints (Iceberg): exactly-once on its own
                if system != plan.checkpoint_system:
                    self.producers[system] = NonTransactionalProducer(system, plan.checkpoint_system, producer)

    def _input_metadata(self, plan: ContainerPlan) -> dict[SystemStream, SystemStreamMetadata]:
        """Offsets of every input stream (starting offsets, the bootstrap chooser), one batched
        call per system."""
        metadata: dict[SystemStream, SystemStreamMetadata] = {}
        for system in plan.input_systems:
            streams = sorted({ssp.stream for ssp in plan.input_ssps if ssp.system == system})
            for name, md in self._admin(system).get_system_stream_metadata(streams).items():
                metadata[SystemStream(system, name)] = md
        return metadata

    def _start_checkpoints(self, plan: ContainerPlan) -> dict[str, Checkpoint]:
        """Start the checkpoint manager; the last checkpoint of every task. Exactly-once: the
        checkpoints go through the container's transactional producer (they are part of each
        commit), whose transactions are initialised here — fencing an older instance of this
        container and settling what it left open — before anything is read back."""
        system = plan.checkpoint_system
        if self._exactly_once:
            producer = self.producers[system]
            self.checkpoints = CheckpointManager(
                self.config,
                self._admin(system),
                producer,
                lambda: self._new_consumer(system),
                owns_producer=False,
            )
            self.checkpoints.start()
            producer.init_transactions(transactional_id(self.config, self.container_id), self.checkpoints.stream)
            self._transactions = producer
        else:
            self.checkpoints = CheckpointManager(
                self.config,
                self._admin(system),
                self._factory(system).get_producer(system, self.config),
                lambda: self._new_consumer(system),
            )
            self.checkpoints.start()
        return self.checkpoints.read_last()

    def _open_stores(self, plan: ContainerPlan, last: dict[str, Checkpoint]) -> None:
        """Each task's stores, restored from their changelogs to the task's checkpoint."""
        if not plan.store_specs:
            return
        job = plan.job
        prepare_changelogs(
            plan.store_specs, {s: self._admin(s) for s in plan.systems}, self.job_model.max_change_log_stream_partitions
        )
        base = state_base_dir(self.config, job.default_system) / f"{job.name}-{job.id}"
        task_stores = self._task_stores
        for name, tm in self.container_model.tasks.items():
            task_stores[name] = TaskStores(
                name, tm.changelog_partition, plan.store_specs, plan.serdes, base, self.producers
            )
            self._changelog_ssps[name] = task_stores[name].changelog_ssps()
        self.restored = restore_stores(list(task_stores.values()), self.admins, self._new_consumer, last)
        for stores in task_stores.values():
            stores.refuse_pickled_state()

    def _create_tasks(
        self, plan: ContainerPlan, last: dict[str, Checkpoint], ahead: dict[str, dict[SystemStream, Checkpoint]]
    ) -> None:
        """A TaskInstance per task of the container model — replaying into the tables ``ahead`` of
        its checkpoint (table_replay.py) — then every task's ``init``."""
        dead_letter = None
        dlq = plan.dead_letter_stream
        if dlq is not None:
            ensure_dead_letter_stream(self._admin(dlq.system), dlq)
            dead_letter = DeadLetterSender(self.producers[dlq.system], dlq)
        for name, tm in sorted(self.container_model.tasks.items()):
            ti = TaskInstance(
                name,
                plan.task_factory.create_task(name),
                tm.ssps,
                config=self.config,
                container_id=self.container_id,
                producers=self.producers,
                serdes=plan.serdes,
                container_requests=self.requests,
                stores=self._task_stores.get(name),
                changelog_partition=tm.changelog_partition,
                drop_deserialization_errors=plan.task.drop_deserialization_errors,
                dead_letter=dead_letter,
                job_model=self.job_model,
                last_checkpoint=last.get(name),
                replay=self._table_replay(name, ahead.get(name), plan),
            )
            self.tasks[name] = ti
        if self._exactly_once:
            check_exactly_once(self.config, task_is_async=any(ti.is_async for ti in self.tasks.values()))
        for ti in self.tasks.values():
            ti.init()

    def _table_replay(
        self, task: str, tables: dict[SystemStream, Checkpoint] | None, plan: ContainerPlan
    ) -> TableReplay | None:
        if not tables:
            return None
        if plan.task.max_concurrency > 1:  # which message a send came from is unknown: at-least-once
            log.warning(
                "task %r: tables %s hold rows it replays; with %s=%d it may send them again",
                task,
                ", ".join(f"{ss.system}.{ss.stream}" for ss in tables),
                keys.TASK_MAX_CONCURRENCY.name,
                plan.task.max_concurrency,
            )
            return None
        return TableReplay(task, tables, self._compare_offsets, self._admin)

    def _compare_offsets(self, system: str, a: str, b: str) -> int:
        return self._admin(system).offset_comparator(a, b)

    def _reset_ssps(self, ti: TaskInstance) -> set[SystemStreamPartition]:
        """``ti``'s partitions of streams whose offsets are reset at start (not read from the checkpoint)."""
        streams = StreamConfig(self.config)
        return {ssp for ssp in ti.ssps if streams.is_reset_offset(SystemStream(ssp.system, ssp.stream))}

    def _start_consumers(
        self,
        plan: ContainerPlan,
        metadata: dict[SystemStream, SystemStreamMetadata],
        starting: dict[SystemStreamPartition, str],
    ) -> SystemConsumers:
        """SystemConsumers over one consumer per input system, with the chooser, started."""
        input_config = self._input_config(plan)
        for system in plan.input_systems:
            consumer = self._consumers_by_system[system] = self._new_consumer(system, input_config)
            if isinstance(consumer, ReportsMetrics):  # its own counters (the Kafka one's parking, librdkafka's fetches)
                self._consumer_metrics[f"consumer-{system}"] = consumer.metrics_snapshot
        kwargs: dict[str, Any] = {}
        buffer = keys.CONTAINER_BUFFER_CAPACITY.get(input_config)
        if buffer:
            kwargs["buffer_capacity_per_ssp"] = buffer
        systems = SystemConfig(input_config)
        thresholds = {s: FetchThreshold(*systems.fetch_threshold(s)) for s in plan.input_systems}
        # kept before it starts: a failed start is stopped at shutdown
        consumers = self.consumers = SystemConsumers(
            self._chooser(metadata, input_config),
            self._consumers_by_system,
            metrics=self._consumer_metrics,
            fetch_thresholds=thresholds,
            **kwargs,
        )
        self._prepare_consumers()
        for ssp in sorted(plan.input_ssps):
            consumers.register(ssp, starting[ssp])
        consumers.start()
        return consumers

    def _prepare_consumers(self) -> None:
        """The partitions of tasks that take columnar batches arrive as Arrow batches from the
        consumers that can read columns (the files system): no Python object per row. Those of
        consumers that hand on rows they cannot parse are decoded with their check, so such a row
        is a bad message like any other (fails, dropped, or dead-lettered)."""
        for ti in self.tasks.values():
            for ssp in ti.ssps:
                consumer = self._consumers_by_system.get(ssp.system)
                if isinstance(consumer, DeliversColumnar) and ti.takes_columns(ssp):
                    consumer.deliver_columnar([ssp])
                    ti.columnar_ssps.add(ssp)
                if isinstance(consumer, EmitsBadRows) and not ti.decodes(ssp):
                    ti.set_stream_decoder(ssp.system_stream, consumer.bad_row_decoder())

    def _create_run_loop(self, plan: ContainerPlan, consumers: SystemConsumers) -> RunLoop:
        return RunLoop(
            self.tasks,
            consumers,
            commit=self._commit,
            requests=self.requests,
            config=self._run_loop_config(),
            metrics=self.metrics,
            clock=self._clock,
        )

    def _run_loop_config(self) -> RunLoopConfig:
        """``task.commit.ms``, raised to the shortest interval a producer's commits allow (an
        Iceberg table's: every commit is a snapshot, and one per 100 ms is no table to read)."""
        config = RunLoopConfig.from_config(self.config)
        floors = {
            system: p.min_commit_interval_s for system, p in self.producers.items() if isinstance(p, SpacesCommits)
        }
        system, floor = max(floors.items(), key=lambda item: item[1], default=(None, 0.0))
        if config.commit_s is None or floor <= config.commit_s:
            return config
        log.info(
            "container %s: timed commits every %.1f s, not task.commit.ms's %.1f s: each commits a table of "
            "system %r (systems.%s.iceberg.commit.interval.ms)",
            self.container_id,
            floor,
            config.commit_s,
            system,
            system,
        )
        return dataclasses.replace(config, commit_s=floor)

    def _input_config(self, plan: ContainerPlan) -> Config:
        """The config the input consumers, their buffers and the chooser are built with. A batch
        task's batches are the chooser's runs, and a run holds at most what the partition's buffer
        holds, which one poll fills: so where the user set none of them, a batch task's job takes
        runs of ``DEFAULT_BATCH_TASK_RUN`` envelopes, buffers twice that per partition, and a log
        system fetches a run per poll (per-batch costs such as a DataFrame's construction are
        then spread over thousands of messages, not the log's 250 a poll)."""
        config = self.config
        if not any(ti.is_batch for ti in self.tasks.values()):
            return config
        overrides: dict[str, object] = {}
        run = DEFAULT_BATCH_TASK_RUN
        if config.get_str(keys.TASK_CONSUMER_BATCH_SIZE.name) is None:
            overrides[keys.TASK_CONSUMER_BATCH_SIZE.name] = run
        else:
            run = keys.TASK_CONSUMER_BATCH_SIZE.get(config)
        if config.get_str(keys.CONTAINER_BUFFER_CAPACITY.name) is None:
            overrides[keys.CONTAINER_BUFFER_CAPACITY.name] = 2 * run
        for system in plan.input_systems:
            fetch = keys.LOG_FETCH_SIZE.key(system=system)
            if keys.SYSTEM_FACTORY.get(config, system=system) == "log" and config.get_str(fetch) is None:
                overrides[fetch] = max(run, keys.LOG_FETCH_SIZE.default)
        return config.with_overrides(overrides)

    def _chooser(self, metadata: dict[SystemStream, SystemStreamMetadata], config: Config) -> MessageChooser:
        factory = load_chooser_factory(config)
        if factory is not None:
            return chooser_from_factory(factory, config, None)
        return DefaultChooser.from_config(config, metadata, self.admins)

    def _starting_offsets(
        self,
        ssps: AbstractSet[SystemStreamPartition],
        metadata: dict[SystemStream, SystemStreamMetadata],
        last: dict[str, Checkpoint],
    ) -> dict[SystemStreamPartition, str]:
        streams = StreamConfig(self.config)
        checkpointed: dict[SystemStreamPartition, str] = {}
        for name, tm in self.container_model.tasks.items():
            cp = last.get(name)
            if cp is None:
                continue
            for ssp in tm.ssps:
                if ssp in cp.offsets:
                    checkpointed[ssp] = cp.offsets[ssp]
        reset_cache: dict[SystemStream, bool] = {}
        resume: dict[str, dict[SystemStreamPartition, str]] = {}
        result: dict[SystemStreamPartition, str] = {}
        for ssp in ssps:
            ss = SystemStream(ssp.system, ssp.stream)
            if ss not in reset_cache:
                reset_cache[ss] = streams.is_reset_offset(ss)
            if ssp in checkpointed and not reset_cache[ss]:
                resume.setdefault(ssp.system, {})[ssp] = checkpointed[ssp]
                continue
            md = metadata.get(ss)
            pm = md.partitions.get(ssp.partition) if md is not None else None
            if pm is None:
                raise ConfigError(
                    f"input {ssp.system}.{ssp.stream} has no partition {ssp.partition} ({keys.TASK_INPUTS.name})",
                    key=keys.TASK_INPUTS.name,
                )
            result[ssp] = pm.upcoming_offset if streams.offset_default(ss) == "upcoming" else pm.oldest_offset
        after: dict[SystemStreamPartition, str] = {}
        for system, offsets in resume.items():
            after.update(self._admin(system).get_offsets_after(offsets))
        result.update(
            reset_out_of_range(
                after,
                metadata,
                lambda s: self._admin(s).offset_comparator,
                streams,
                lambda ss: admin_cleanup_policy(self._admin(ss.system), ss.stream),
            )
        )
        return result

    # -- commit --------------------------------------------------------------------------------
    def _commit(self, tasks: Sequence[TaskInstance]) -> None:
        """Commit ``tasks`` together (the run loop hands over every task whose commit is due at
        once): each task still gets its own checkpoint, as in Samza, but every step that talks
        to a system is one call for the whole batch — the producers flushed once, the changelog
        offsets looked up in one call per system, the checkpoints written in one flush — so a
        commit of 1,024 tasks costs about what a commit of one does, plus the per-task
        bookkeeping."""
        if self._exactly_once:
            # one transaction holds every task's outputs since the last commit, so every task's
            # offsets go with it (inline mode: none has anything in flight)
            tasks = list(self.tasks.values())
        fill = self.startpoints.fill_checkpoint if self.startpoints is not None else None
        batch: list[tuple[TaskInstance, dict[SystemStreamPartition, str]]] = []
        for ti in tasks:
            offsets = ti.begin_commit(fill)
            if offsets is not None:
                batch.append((ti, offsets))
        if not batch:
            if self._transactions is not None and self._transactions.has_open_transaction():
                self._commit_transaction()  # e.g. the restore's trimming writes: they restore committed state
            return
        names = [ti.task_name for ti, _ in batch]
        self.metrics.commit_started_at = time.monotonic()
        try:
            checkpoints = self._commit_batch(batch, names)
        finally:
            self._commit_ended()
        for ti, _ in batch:
            checkpoint = checkpoints[ti.task_name]
            ti.committed(checkpoint)
            if self.startpoints is not None:
                self.startpoints.committed(ti.task_name, checkpoint.offsets, set(ti.last_processed))
            if log.isEnabledFor(logging.DEBUG):
                log.debug("committed %s: %s %s", ti.task_name, checkpoint.offsets, ti.metrics.snapshot())

    def _commit_batch(
        self, batch: list[tuple[TaskInstance, dict[SystemStreamPartition, str]]], names: list[str]
    ) -> dict[str, Checkpoint]:
        """The steps of a commit that talk to systems, each named in ``metrics.commit_step``
        (what a stalled commit waits for: :meth:`stall`)."""
        if self.side_inputs is not None:
            self.metrics.commit_step = "flushing the side-input stores"
            self.side_inputs.flush(names)
        self._flush_producers(names)
        self.metrics.commit_step = "looking up the changelogs' offsets"
        changelog_offsets = self._changelog_offsets(names)
        checkpoints = {
            ti.task_name: ti.checkpoint(offsets, changelog_offsets.get(ti.task_name, {})) for ti, offsets in batch
        }
        # outputs whose commits carry the checkpoints (Iceberg tables) commit first: a crash before the
        # checkpoint stream is written is repaired at start from what they hold (output_checkpoints.py)
        self.metrics.commit_step = "committing the table outputs"
        self.table_commits.extend(commit_outputs(self.producers.values(), self.container_id, checkpoints))
        assert self.checkpoints is not None
        self.metrics.commit_step = "writing the checkpoints"
        self.checkpoints.write_all(checkpoints)
        if self._transactions is not None:
            self.metrics.commit_step = "committing the transaction"
            self._commit_transaction()
        return checkpoints

    def _commit_ended(self) -> None:
        self.metrics.commit_started_at = 0.0

    def stall(self) -> str | None:
        """What the container waits for, once it has waited :data:`STALL_AFTER_S` or longer (None
        otherwise); any thread (the progress display, the log). Brokers that do not answer stall
        a job at its commit — the producers cannot flush, a transaction cannot commit — named by
        the commit's step; or elsewhere in its run loop (a send waiting for metadata, a consumer's
        poll), seen as a loop that has neither processed, polled empty nor committed since."""
        now = time.monotonic()
        if self._finished:
            since = self._stopping_since
            if since is not None and now - since >= STALL_AFTER_S:
                return f"container {self.container_id}: stopping, waiting {now - since:.0f} s ({self._stopping_step})"
            return None
        waited = self.metrics.commit_waiting_s(now)
        if waited >= STALL_AFTER_S:
            return f"container {self.container_id}: commit waiting {waited:.0f} s ({self.metrics.commit_step})"
        frozen = now - self._loop_moved_at if self._loop_moved_at else 0.0
        if frozen >= STALL_AFTER_S:
            return f"container {self.container_id}: run loop waiting {frozen:.0f} s (processing or polling the inputs)"
        return None

    def _loop_mark(self) -> tuple[int, int, float]:
        """What moves while the run loop runs: empty polls (every ``poll_timeout``), messages
        processed, commits begun and ended."""
        processed = sum(ti.metrics.envelopes_processed for ti in list(self.tasks.values()))
        return self.metrics.null_chooses, processed, self.metrics.commit_started_at

    def _report_stall(self) -> None:
        """The monitor thread: note whether the run loop moved, and log a stall once as it
        begins and once as it ends."""
        now = time.monotonic()
        mark = self._loop_mark()
        if mark != self._loop_seen:
            self._loop_seen, self._loop_moved_at = mark, now
        stall = self.stall()
        if stall is not None and self._stall_began is None:
            self._stall_began = now - STALL_AFTER_S
            log.warning("%s: a system does not answer; the job waits for it", stall)
        elif stall is None:
            self._stall_ended()

    def _stall_ended(self) -> None:
        began, self._stall_began = self._stall_began, None
        if began is not None:
            log.warning("container %s: waited %.0f s; the job goes on", self.container_id, time.monotonic() - began)

    def _commit_transaction(self) -> None:
        """Exactly-once: the commit point. A failure aborts what the transaction wrote (a fenced
        producer's was already removed by its successor) and fails the container."""
        assert self._transactions is not None
        try:
            self._transactions.commit_transaction()
        except BaseException:
            try:
                self._transactions.abort_transaction()
            except Exception as exc:  # noqa: BLE001 - the commit's error is the one to report
                log.warning("container %s: aborting the failed transaction failed too: %s", self.container_id, exc)
            raise

    def _flush_producers(self, sources: list[str]) -> None:
        """Make every task's output and changelog writes durable: one flush per producer when its
        flush covers all of its sources (every producer of the built-in systems: one client
        serves every source, as in Samza), else one per source."""
        for system, producer in self.producers.items():
            self.metrics.commit_step = f"flushing the producer of system {system!r}"
            if getattr(producer, "flush_covers_all_sources", False):
                producer.flush(sources[0])
            else:
                for source in sources:
                    producer.flush(source)

    def _changelog_offsets(self, tasks: list[str]) -> dict[str, dict[str, tuple[SystemStreamPartition, str | None]]]:
        """task → store → (changelog partition, its newest offset): one lookup for every task."""
        wanted = {name: cl for name in tasks if (cl := self._changelog_ssps.get(name))}
        if not wanted:
            return {}
        newest = ssp_metadata(self._admin, {ssp for cl in wanted.values() for ssp in cl.values()})
        result: dict[str, dict[str, tuple[SystemStreamPartition, str | None]]] = {}
        for name, cl in wanted.items():
            result[name] = {}
            for store, ssp in cl.items():
                pm = newest.get(ssp)
                result[name][store] = (ssp, pm.newest_offset if pm is not None else None)
        return result

    # -- shutdown ------------------------------------------------------------------------------
    def _monitor(self) -> None:
        """Turns a stop event or a newer JobModel into a graceful stop of the run loop."""
        while not self._finished:
            if self.stop_event.wait(0.1):
                break
            self._report_stall()
            if self._watcher is not None and self._watcher.new_version_available:
                break
            if self.side_inputs is not None and self.side_inputs.error is not None:
                break  # run() raises it once the run loop has stopped
        if self.run_loop is not None and not self._finished:
            self.run_loop.request_stop()

    def _shutdown(self, clean: bool) -> BaseException | None:
        first: BaseException | None = None
        self._stopping_since = time.monotonic()

        def attempt(fn: Callable[[], Any], step: str = "closing") -> None:
            nonlocal first
            self._stopping_step = step
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - keep shutting down the rest
                if first is None:
                    first = exc
                log.warning("container %s: error during shutdown: %s", self.container_id, exc)

        # first: the last snapshot holds the final counts
        attempt(self.reporting.stop, "sending the last metrics snapshot")
        if self.consumers is not None:
            attempt(self.consumers.stop, "stopping the consumers")
        if self.side_inputs is not None:
            attempt(self.side_inputs.stop)
            attempt(self.side_inputs.flush)
        for ti in self.tasks.values():
            attempt(ti.close)
        for name, stores in self._task_stores.items():
            if name not in self.tasks:
                attempt(stores.close)
        systems = {id(producer): system for system, producer in self.producers.items()}
        for producer in self._started_producers:
            system = systems.get(id(producer))
            attempt(producer.stop, f"stopping the producer of system {system!r}" if system else "stopping a producer")
        if self.checkpoints is not None:
            attempt(self.checkpoints.stop, "stopping the checkpoint stream's producer")
        if self.startpoints is not None:
            attempt(self.startpoints.close)
        for admin in self.admins.values():
            attempt(partial(stop_admin, admin))
        self._stopping_since = None
        return first if clean else None

    def _summarize(
        self, status: ContainerStatus, elapsed: float, error: BaseException | None, stopping: float
    ) -> ContainerSummary:
        per_stream: dict[str, int] = {}
        final: dict[str, dict[str, str]] = {}
        task_metrics: dict[str, Any] = {}
        for name, ti in self.tasks.items():
            for ssp, n in ti.metrics.processed.items():
                key = f"{ssp.system}.{ssp.stream}"
                per_stream[key] = per_stream.get(key, 0) + n
            cp = ti.last_checkpoint
            offsets = dict(cp.offsets) if cp is not None else {}
            final[name] = {f"{s.system}.{s.stream}[{s.partition}]": o for s, o in sorted(offsets.items())}
            task_metrics[name] = ti.metrics.snapshot()
        self.metrics.shutdown_s = time.monotonic() - stopping
        metrics: dict[str, Any] = {"container": self.metrics.snapshot(), "tasks": task_metrics}
        for name, value in self._consumer_metrics.items():
            try:
                metrics[name] = value() if callable(value) else value
            except Exception:  # noqa: BLE001 - informational
                pass
        metrics["lag"] = self.reporting.final_lag
        # the registries' values at the stop (Samza's groups and names), whatever reporters run:
        # what Dagster's final materialization and lag check read
        metrics["registry"] = self.reporting.final
        if self.table_commits:  # Iceberg tables: commits, rows appended, the last snapshot (Dagster's materializations)
            tables: dict[str, dict[str, int]] = {}
            for commit in self.table_commits:
                seen = tables.setdefault(commit.table, {"commits": 0, "rows": 0, "data_files": 0})
                seen["commits"] += 1
                seen["rows"] += commit.rows
                seen["data_files"] += commit.data_files
                seen["last_snapshot_id"] = commit.snapshot_id
            metrics["table_commits"] = tables
        if self.side_inputs is not None and self.side_inputs.stores:
            metrics["side_inputs"] = {
                "bootstrapped": dict(self.side_inputs_restored),
                "applied": self.side_inputs.applied_counts(),
            }
        return ContainerSummary(
            self.container_id,
            status,
            per_stream,
            final,
            elapsed,
            None if error is None else f"{type(error).__name__}: {error}",
            metrics,
        )
