"""Checkpoints that outputs hold: which tables are ahead of a restarted task's checkpoint stream.

An output whose commits carry the job's checkpoints (an Iceberg table: system/iceberg/) commits
before the container writes its checkpoint stream, so after a crash between the two the table
holds a checkpoint the stream does not — with several tables, each its own, as the crash fell
between their commits. At start, every such producer is asked for the newest checkpoint it holds
per task (``last_checkpoints``); a table whose checkpoint is ahead of the task's stream checkpoint
— at or past it in every partition it has, past it in at least one, as the partitions' admins
compare offsets — already holds what the task will replay up to there, and the task's
:class:`~samza_dagster.container.table_replay.TableReplay` keeps it from receiving that again.
The task itself resumes from its checkpoint stream: its stores, changelog and other outputs are
where that checkpoint says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.model import SystemStream
from samza_dagster.system.protocols import CheckpointCarryingProducer

log = logging.getLogger(__name__)


def ahead(candidate: Checkpoint, current: Checkpoint | None, admin_for: Callable[[str], Any]) -> bool:
    """``candidate`` covers at least what ``current`` does in every partition, and more in one."""
    if current is None:
        return bool(candidate.offsets)
    further = False
    for ssp, offset in candidate.offsets.items():
        theirs = current.offsets.get(ssp)
        if theirs is None:
            further = True
            continue
        order = admin_for(ssp.system).offset_comparator(offset, theirs)
        if order < 0:
            return False
        further = further or order > 0
    return further and set(current.offsets) <= set(candidate.offsets)


def tables_ahead(
    last: Mapping[str, Checkpoint],
    producers: Iterable[Any],
    tasks: Iterable[str],
    admin_for: Callable[[str], Any],
) -> dict[str, dict[SystemStream, Checkpoint]]:
    """Per task, the tables holding a checkpoint ahead of ``last`` (the checkpoint stream's), with it."""
    result: dict[str, dict[SystemStream, Checkpoint]] = {}
    names = list(tasks)
    for producer in producers:
        if not isinstance(producer, CheckpointCarryingProducer):
            continue
        for task, held in producer.last_checkpoints(names).items():
            for table, raw in held.items():
                checkpoint = Checkpoint.from_bytes(raw, task, f"the checkpoint {table.system}.{table.stream} holds")
                if ahead(checkpoint, last.get(task), admin_for):
                    log.info(
                        "task %r: table %s.%s holds its messages up to %s, ahead of its checkpoint stream: "
                        "what the task replays up to there is not sent to the table again",
                        task,
                        table.system,
                        table.stream,
                        {str(ssp): o for ssp, o in checkpoint.offsets.items()},
                    )
                    result.setdefault(task, {})[table] = checkpoint
    return result


def commit_outputs(producers: Iterable[Any], container_id: str, checkpoints: Mapping[str, Checkpoint]) -> list[Any]:
    """Every output that commits with the checkpoints commits now; what each committed."""
    made: list[Any] = []
    encoded: dict[str, bytes] | None = None
    for producer in producers:
        if isinstance(producer, CheckpointCarryingProducer):
            if encoded is None:
                encoded = {task: checkpoint.to_bytes() for task, checkpoint in checkpoints.items()}
            made.extend(producer.commit_checkpoints(container_id, encoded))
    return made
