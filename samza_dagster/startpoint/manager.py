"""StartpointManager (Samza design): writes, reads, fans out and deletes startpoints on the job's
coordinator stream.

A ``set-startpoint`` message's key is the :class:`StartpointKey`'s ``<system>.<stream>.<partition>``
(``;<task name>`` appended for a task's own); its values name the partition again
(``system``, ``stream``, ``partition`` and ``taskName``: the key is only the compaction identity,
never parsed, because stream names may hold dots) and carry ``startpoint``, the startpoint's
compact JSON. A delete is the usual tombstone.

Life of a startpoint, as in Samza:

1. a user (``samza-dagster startpoint set``) writes one per input partition;
2. the job coordinator, when it builds a JobModel, *fans it out*: one task-level startpoint for
   each task that reads the partition (a task's own one, if any, wins), then deletes the
   partition-level one — so every task that reads a broadcast partition gets it, however many
   containers start at different times (where a task already has its own, the newer one wins);
3. a container starts each such partition at the startpoint instead of the checkpoint;
4. once that task's first checkpoint after the start is written, its task-level startpoints are
   deleted. A crash before then leaves them in place, so the next start applies them again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from samza_dagster.config.config import Config
from samza_dagster.coordinator.stream.messages import SET_STARTPOINT, CoordinatorStreamMessage
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter, read_coordinator_stream
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.model import SystemStreamPartition
from samza_dagster.startpoint.startpoint import Startpoint, StartpointError, StartpointKey

log = logging.getLogger(__name__)

SOURCE = "startpoint-manager"
#: malformed set-startpoint messages already warned about in this process: the coordinator
#: stream is folded again at every start, fan-out and commit, and one warning is enough
_warned: set[tuple[str, object, str]] = set()


def startpoint_message(source: str, key: StartpointKey, startpoint: Startpoint) -> CoordinatorStreamMessage:
    return CoordinatorStreamMessage.set_startpoint(
        source, key.coordinator_key(), {**key.to_values(), "startpoint": startpoint.to_json()}
    )


def startpoints_in_state(state: CoordinatorStreamState) -> dict[StartpointKey, Startpoint]:
    """Every startpoint a folded coordinator stream holds. One that does not parse is skipped
    with a WARNING naming its key, once per process (the stream is shared; one bad writer must
    not stop a job)."""
    found: dict[StartpointKey, Startpoint] = {}
    for (msg_type, coordinator_key), message in state.other.items():
        if msg_type != SET_STARTPOINT:
            continue
        try:
            key = StartpointKey.from_values(message.values)
            raw = message.values.get("startpoint")
            if raw is None:
                raise StartpointError('no "startpoint" in values')
            found[key] = Startpoint.from_dict(raw) if isinstance(raw, dict) else Startpoint.from_json(str(raw))
        except StartpointError as exc:
            seen = (coordinator_key, message.timestamp, str(exc))
            if seen not in _warned:
                _warned.add(seen)
                log.warning("skipping set-startpoint %r on the coordinator stream: %s", coordinator_key, exc)
    return found


class StartpointManager:
    """Startpoints of one job. Reads fold the whole coordinator stream (it is small and
    compacted); writes go through one writer, opened on first use and closed by :meth:`close`
    (or ``writer``, someone else's, which :meth:`close` leaves open)."""

    def __init__(self, config: Config, source: str = SOURCE, *, writer: CoordinatorStreamWriter | None = None) -> None:
        self.config = config
        self.source = source
        self._writer = writer
        self._owns_writer = writer is None

    # -- writing -----------------------------------------------------------------------------
    def _send(self, *messages: CoordinatorStreamMessage) -> None:
        if not messages:
            return
        if self._writer is None:
            self._writer = CoordinatorStreamWriter(self.config, self.source)
        self._writer.send(*messages)

    def write_startpoint(
        self, ssp: SystemStreamPartition, startpoint: Startpoint, task_name: str | None = None
    ) -> None:
        self._send(startpoint_message(self.source, StartpointKey(ssp, task_name), startpoint))

    def delete_startpoint(self, ssp: SystemStreamPartition, task_name: str | None = None) -> None:
        self.delete_keys([StartpointKey(ssp, task_name)])

    def delete_keys(self, keys: Iterable[StartpointKey]) -> None:
        self._send(*(CoordinatorStreamMessage.delete(self.source, SET_STARTPOINT, k.coordinator_key()) for k in keys))

    # -- reading -----------------------------------------------------------------------------
    def read_all(self) -> dict[StartpointKey, Startpoint]:
        """Every startpoint on the stream (none when the stream does not exist yet)."""
        return startpoints_in_state(read_coordinator_stream(self.config))

    def read_startpoint(self, ssp: SystemStreamPartition, task_name: str | None = None) -> Startpoint | None:
        return self.read_all().get(StartpointKey(ssp, task_name))

    def task_startpoints(self, task_names: Iterable[str]) -> dict[str, dict[SystemStreamPartition, Startpoint]]:
        """The fanned-out startpoints of ``task_names`` (what a container applies)."""
        wanted = set(task_names)
        result: dict[str, dict[SystemStreamPartition, Startpoint]] = {}
        for key, startpoint in self.read_all().items():
            if key.task_name in wanted:
                result.setdefault(key.task_name, {})[key.ssp] = startpoint
        return result

    def remove_task_startpoints(self, task_name: str, ssps: Iterable[SystemStreamPartition]) -> None:
        self.delete_keys(StartpointKey(ssp, task_name) for ssp in sorted(ssps))

    # -- fan-out -----------------------------------------------------------------------------
    def fan_out(
        self,
        tasks: Mapping[str, Iterable[SystemStreamPartition]],
        existing: Mapping[StartpointKey, Startpoint] | None = None,
    ) -> dict[str, dict[SystemStreamPartition, Startpoint]]:
        """Turn partition-level startpoints into task-level ones for every task of ``tasks``
        (task name → its partitions) that reads the partition, then delete the partition-level
        ones. Where a task has its own startpoint for the partition, the newer of the two wins. ``existing``: the startpoints already read (else the stream is read).

        A partition-level startpoint no task reads is left in place with a WARNING (the job
        may read it again after a reconfiguration; nothing is dropped silently). Returns the
        task-level startpoints written."""
        startpoints = dict(self.read_all() if existing is None else existing)
        readers: dict[SystemStreamPartition, list[str]] = {}
        for task, ssps in tasks.items():
            for ssp in ssps:
                readers.setdefault(ssp, []).append(task)
        written: dict[str, dict[SystemStreamPartition, Startpoint]] = {}
        messages: list[CoordinatorStreamMessage] = []
        fanned: list[StartpointKey] = []
        for key, startpoint in sorted(startpoints.items(), key=lambda kv: kv[0].coordinator_key()):
            if key.task_name is not None:
                continue
            tasks_reading = readers.get(key.ssp)
            if not tasks_reading:
                log.warning(
                    "startpoint %s for %s is not applied: no task of this job reads that partition",
                    startpoint.describe(),
                    key,
                )
                continue
            for task in sorted(tasks_reading):
                own = StartpointKey(key.ssp, task)
                mine = startpoints.get(own)
                # the newer one wins (as in Samza); on a tie the task's own
                if mine is not None and mine.creation_timestamp >= startpoint.creation_timestamp:
                    continue
                messages.append(startpoint_message(self.source, own, startpoint))
                written.setdefault(task, {})[key.ssp] = startpoint
            fanned.append(key)
        # task-level first: a crash between the two leaves both, and the next fan-out is a no-op
        self._send(*messages)
        self.delete_keys(fanned)
        if fanned:
            log.info("fanned out %d startpoint(s) to %d task(s)", len(fanned), len(written))
        return written

    def close(self) -> None:
        if self._writer is not None and self._owns_writer:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> StartpointManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
