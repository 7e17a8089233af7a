"""The job's checkpoints in a table's snapshot summaries, as Kafka Connect's Iceberg sink keeps its
offsets there.

Each table commit a container makes carries, for every task of the container, the checkpoint that
commit covers (the same JSON the checkpoint stream holds) under
``samza.checkpoint.<job.name>-<job.id>.<task name>``, plus ``samza.job`` and ``samza.container``.
The commit and the checkpoint it carries are one atomic step of the table: a reader sees both or
neither. At start, a container walks each table's snapshots from the newest back and takes, per
task, the newest checkpoint found — what the table holds for that task; where it is ahead of the
checkpoint stream's, the task's replay does not send the table those rows again
(container/table_replay.py), so a crash between the table commit and the checkpoint write neither
repeats the committed rows nor skips any. The same commit moves the
container's tag to its snapshot (:func:`checkpoint_tag`): snapshot expiry keeps tagged snapshots,
so the newest checkpoints survive any expiry policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyiceberg.table import Snapshot, Table

PREFIX = "samza.checkpoint."
#: the tag of a container's newest commit: ``samza-checkpoint-<job.name>-<job.id>-<container>``
TAG_PREFIX = "samza-checkpoint-"


def checkpoint_tag(job: str, container: str) -> str:
    """The tag each commit of ``container`` moves to its snapshot: expiry keeps tagged snapshots
    (Iceberg's own ``expire_snapshots``, in Spark too), so the snapshot holding the container's
    tasks' newest checkpoints stays however many snapshots other writers or maintenance add."""
    return f"{TAG_PREFIX}{job}-{container}"


def job_key(job: str) -> str:
    return f"{PREFIX}{job}."


def summary_properties(job: str, container: str, checkpoints: Mapping[str, bytes]) -> dict[str, str]:
    """The snapshot summary properties of one container commit (checkpoints in their JSON form:
    the system layer carries them without reading them)."""
    props = {"samza.job": job, "samza.container": container}
    prefix = job_key(job)
    for task, checkpoint in checkpoints.items():
        props[prefix + task] = checkpoint.decode("utf-8")
    return props


def table_checkpoints(table: Table, job: str, tasks: Iterable[str]) -> dict[str, bytes]:
    """Per task of ``tasks``, the newest checkpoint (JSON) ``table``'s snapshots carry (none: left out)."""
    wanted = set(tasks)
    prefix = job_key(job)
    found: dict[str, bytes] = {}
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0, reverse=True)
    for snapshot in snapshots:
        summary = snapshot.summary
        if summary is None or summary.get("samza.job") != job:
            continue
        for key, value in summary.additional_properties.items():
            if key.startswith(prefix):
                task = key[len(prefix) :]
                if task in wanted and task not in found:
                    found[task] = value.encode("utf-8")
        if len(found) == len(wanted):
            break
    return found


def newest_checkpoint_snapshot(table: Table) -> Snapshot | None:
    """The newest snapshot whose summary carries a job's checkpoints (a Spark or other writer's
    commits after it carry none)."""
    for snapshot in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0, reverse=True):
        if snapshot.summary is not None and snapshot.summary.get("samza.job") is not None:
            return snapshot
    return None
