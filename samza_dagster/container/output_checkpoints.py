"""Checkpoints that outputs hold: where a restarted container resumes when an output is ahead of
the checkpoint stream.

An output whose commits carry the job's checkpoints (an Iceberg table: system/iceberg/) commits
before the container writes its checkpoint stream, so after a crash between the two the table
holds a checkpoint the stream does not. At start, every such producer is asked for the newest
checkpoint it holds per task (``last_checkpoints``), and a task whose held checkpoint is ahead of
its stream checkpoint — at or past it in every partition it has, past it in at least one, as the
partitions' admins compare offsets — resumes from the held one: the rows the table committed are
not sent again, and nothing after them is skipped. Before the first commit of the table is
written (``commit_checkpoints``), nothing else in this module runs on the commit path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from samza_dagster.checkpoint.checkpoint import Checkpoint
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


def newest_checkpoints(
    last: Mapping[str, Checkpoint],
    producers: Iterable[Any],
    tasks: Iterable[str],
    admin_for: Callable[[str], Any],
) -> dict[str, Checkpoint]:
    """``last`` (the checkpoint stream's), each task's replaced by the newest an output holds when that is ahead."""
    result = dict(last)
    names = list(tasks)
    for producer in producers:
        if not isinstance(producer, CheckpointCarryingProducer):
            continue
        for task, found in producer.last_checkpoints(names).items():
            for where, raw in found:
                checkpoint = Checkpoint.from_bytes(raw, task, f"the checkpoint {where} holds")
                if ahead(checkpoint, result.get(task), admin_for):
                    log.info(
                        "task %r resumes from the checkpoint its output %s holds (%s), ahead of the checkpoint stream",
                        task,
                        where,
                        {str(ssp): o for ssp, o in checkpoint.offsets.items()},
                    )
                    result[task] = checkpoint
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
