"""A container's side of startpoints: its tasks' (fanned-out) startpoints are read at start,
resolved to offsets that win over the checkpoint, and deleted once each task's first checkpoint
after the start is written — so a crash before that commit applies them again, and a restart
after it resumes from the checkpoint.

The first checkpoint must cover the startpoint even for a partition the task read nothing from
yet, or a restart would go back to the old checkpoint. For integer offsets (every system here)
the position "everything before offset X is done" is checkpointed as ``X - 1``, the same form a
processed message leaves. For other offsets a startpoint stays until a message of its partition
is processed and committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.coordinator.model.job_model import TaskModel
from samza_dagster.model import SystemStream, SystemStreamMetadata, SystemStreamPartition
from samza_dagster.startpoint.manager import StartpointManager
from samza_dagster.startpoint.resolver import resolve_startpoints
from samza_dagster.startpoint.startpoint import Startpoint

log = logging.getLogger(__name__)


def _before(offset: str) -> str | None:
    """The checkpoint form of "start at ``offset``" for integer offsets; None for others."""
    try:
        return str(int(offset) - 1)
    except ValueError:
        return None


class ContainerStartpoints:
    """The startpoints of one container's tasks, from :meth:`apply` at start to the commits
    that cover them (:meth:`fill_checkpoint`, :meth:`committed`)."""

    def __init__(self, config: Config, container_id: str) -> None:
        self._manager = StartpointManager(config, source=f"SamzaContainer-{container_id}")
        #: task → partition → the startpoint applied (until the task's commit covers it)
        self.applied: dict[str, dict[SystemStreamPartition, Startpoint]] = {}
        #: task → partition → the offset to checkpoint for it while nothing was processed
        self._positions: dict[str, dict[SystemStreamPartition, str]] = {}

    def apply(
        self,
        models: Mapping[str, TaskModel],
        admin_for: Callable[[str], Any],
        metadata: Mapping[SystemStream, SystemStreamMetadata],
    ) -> dict[SystemStreamPartition, str]:
        """Load the startpoints of ``models``' tasks and resolve them: the starting offsets that
        replace the checkpoint's. The tasks with one (``applied``) must checkpoint at their first
        commit even when nothing was read: the container asks their TaskInstances to."""
        self.load(models)
        return self.starting_offsets(admin_for, metadata)

    def load(self, tasks: Mapping[str, TaskModel]) -> None:
        for task, startpoints in self._manager.task_startpoints(tasks).items():
            own = tasks[task].ssps
            for ssp, startpoint in startpoints.items():
                if ssp in own:
                    self.applied.setdefault(task, {})[ssp] = startpoint
                else:  # the model moved the partition elsewhere since the fan-out
                    log.warning(
                        "startpoint %s of task %r for %s ignored: the task no longer reads it",
                        startpoint.describe(),
                        task,
                        ssp,
                    )

    def starting_offsets(
        self, admin_for: Callable[[str], Any], metadata: Mapping[SystemStream, SystemStreamMetadata]
    ) -> dict[SystemStreamPartition, str]:
        """The offsets the startpoints resolve to, per partition. A partition two tasks of this
        container read with different startpoints starts at the earlier (each task still
        checkpoints its own)."""
        result: dict[SystemStreamPartition, str] = {}
        for task, startpoints in sorted(self.applied.items()):
            offsets = resolve_startpoints(startpoints, admin_for, metadata)
            for ssp, offset in offsets.items():
                log.info(
                    "task %r starts %s at offset %s (startpoint %s, ahead of its checkpoint)",
                    task,
                    ssp,
                    offset,
                    startpoints[ssp].describe(),
                )
                before = _before(offset)
                if before is not None:
                    self._positions.setdefault(task, {})[ssp] = before
                if ssp not in result or admin_for(ssp.system).offset_comparator(offset, result[ssp]) < 0:
                    result[ssp] = offset
        return result

    def pending(self, task: str) -> bool:
        return bool(self.applied.get(task))

    def fill_checkpoint(self, task: str, offsets: dict[SystemStreamPartition, str]) -> None:
        """A startpoint's partition nothing was processed from yet: checkpoint "before the
        startpoint" (processed offsets, already in ``offsets``, win)."""
        if self.pending(task):
            for ssp, offset in self._positions.get(task, {}).items():
                offsets.setdefault(ssp, offset)

    def committed(
        self, task: str, checkpointed: Mapping[SystemStreamPartition, str], processed: set[SystemStreamPartition]
    ) -> None:
        """After ``task`` wrote a checkpoint: delete the startpoints it covers."""
        applied = self.applied.get(task)
        if not applied:
            return
        positions = self._positions.get(task, {})
        covered = [ssp for ssp in applied if ssp in processed or (ssp in positions and ssp in checkpointed)]
        if not covered:
            return
        self._manager.remove_task_startpoints(task, covered)
        for ssp in covered:
            applied.pop(ssp, None)
            self._positions.get(task, {}).pop(ssp, None)
        log.info(
            "task %r committed past its startpoints for %s; removed them", task, ", ".join(map(str, sorted(covered)))
        )

    def close(self) -> None:
        self._manager.close()
