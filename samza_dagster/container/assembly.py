"""What a container is assembled from, read once from config: the ``ContainerPlan`` its start-up
steps share (``SamzaContainer._start``), and the side-inputs manager built from its stores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from samza_dagster.checkpoint import checkpoint_system
from samza_dagster.config.config import Config
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import SystemConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.container.dead_letter import dead_letter_stream
from samza_dagster.container.side_inputs import (
    OFFSETS_FILE,
    IdentityProcessor,
    SideInputsManager,
    SideInputStore,
    processor_from_config,
    side_input_streams,
)
from samza_dagster.coordinator.model.job_model import ContainerModel
from samza_dagster.model import SystemStream, SystemStreamPartition
from samza_dagster.serde.registry import SerdeRegistry
from samza_dagster.storage import StoreSpec, TaskStores, store_specs
from samza_dagster.task.factory import TaskFactory, task_factory_from_config


@dataclass(frozen=True)
class ContainerPlan:
    job: JobConfig
    task: TaskConfig
    serdes: SerdeRegistry
    task_factory: TaskFactory
    store_specs: list[StoreSpec]
    input_ssps: frozenset[SystemStreamPartition]
    input_systems: list[str]
    checkpoint_system: str
    dead_letter_stream: SystemStream | None
    #: every system the container produces to: configured, default, checkpoint, inputs,
    #: changelogs and the dead-letter stream's
    systems: frozenset[str]

    @classmethod
    def of(cls, config: Config, model: ContainerModel, task_factory: TaskFactory | None = None) -> ContainerPlan:
        job = JobConfig(config)
        specs = store_specs(config, job.default_system)
        input_ssps = frozenset(ssp for t in model.tasks.values() for ssp in t.ssps)
        input_systems = sorted({ssp.system for ssp in input_ssps})
        cp_system = checkpoint_system(config)
        dlq = dead_letter_stream(config)
        systems = set(SystemConfig(config).system_names()) | {job.default_system, cp_system, *input_systems}
        systems |= {s.changelog.system for s in specs if s.changelog is not None}
        if dlq is not None:
            systems.add(dlq.system)
        return cls(
            job,
            TaskConfig(config),
            SerdeRegistry(config),
            task_factory or task_factory_from_config(config),
            specs,
            input_ssps,
            input_systems,
            cp_system,
            dlq,
            frozenset(systems),
        )


def side_inputs_manager(
    config: Config,
    model: ContainerModel,
    task_stores: dict[str, TaskStores],
    plan: ContainerPlan,
    admin_for: Callable[[str], Any],
    consumer_for: Callable[[str], Any],
) -> SideInputsManager:
    """Each task's side-input stores, fed the side-input partitions with the task's partition
    number (container/side_inputs.py)."""
    supplied = getattr(plan.task_factory, "side_inputs_processor", None)
    stores: list[SideInputStore] = []
    for task_name, ts in sorted(task_stores.items()):
        partition = min((ssp.partition for ssp in model.tasks[task_name].ssps), default=0)
        for name in ts.specs:
            streams = side_input_streams(config, name, plan.job.default_system)
            if not streams:
                continue
            processor = processor_from_config(config, name) or (supplied(name) if supplied else None)
            ssps = []
            for ss in streams:
                count = admin_for(ss.system).get_system_stream_metadata([ss.stream])[ss.stream].partition_count
                if partition < count:  # else: a task for a wider input owns no partition of it
                    ssps.append(SystemStreamPartition(ss.system, ss.stream, partition))
            path = ts.paths.get(name)
            stores.append(
                SideInputStore(
                    task_name,
                    name,
                    ts.stores[name],
                    processor or IdentityProcessor(),
                    ssps,
                    None if path is None else path / OFFSETS_FILE,
                )
            )
    return SideInputsManager(stores, admin_for, consumer_for, plan.serdes)
