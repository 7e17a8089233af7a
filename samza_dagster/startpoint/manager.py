"""StartpointManager, as Apache Samza 1.8's ``org.apache.samza.startpoint.StartpointManager`` keeps
startpoints: in the metadata store on the job's coordinator stream, so a startpoint set by Samza's
tooling applies here and one set by ``samza-dagster startpoint`` applies in Samza (checked with
Samza's own ``StartpointManager`` in tests/samza_interop).

Two namespaces (the coordinator stream key's type), values unwrapped — the startpoint's own JSON
as Samza's ``StartpointObjectMapper`` writes it, no message envelope:

* ``samza-startpoint-v1``: startpoints as written. Key ``<system>.<stream>.<partition>``, or
  ``<system>.<stream>.<partition>.<task name>`` for one task's own; value
  ``{"@type":"StartpointOldest","creationTimestamp":..}`` (see :mod:`.startpoint`).
* ``samza-startpoint-v1-fan-out``: one ``StartpointFanOutPerTask`` per task, key the task name,
  value ``{"timestamp":<ms>,"fanOuts":{"<system>.<stream>.<partition>":{<startpoint>},..}}``.

Life of a startpoint, as in Samza:

1. a user (``samza-dagster startpoint set``, or Samza's ``StartpointManager.writeStartpoint``)
   writes one per input partition;
2. the job coordinator, when it builds a JobModel, *fans it out*: for every task that reads the
   partition, the newer of the partition's startpoint and the task's own goes into the task's
   fan-out, then both are deleted — so every task that reads a broadcast partition gets it;
3. a container starts each such partition at the startpoint instead of the checkpoint;
4. once that task's first checkpoint after the start is written, the partition leaves the task's
   fan-out (the fan-out is deleted when empty). A crash before then leaves it in place, so the next
   start applies it again.

Where the engine differs from Samza (docs/decisions.md): a fan-out is merged into the task's
pending one (Samza replaces it, dropping a partition not yet committed); a partition-level
startpoint no task reads is kept with a WARNING (Samza keeps it silently); a startpoint written
more than 12 hours ago still applies (Samza's reader ignores it as stale).

The engine's earlier ``set-startpoint`` messages (values naming the partition, ``startpoint`` the
engine's own JSON) are still read; the job coordinator's fan-out migrates them — partition-level
ones fanned out like Samza's, fanned-out ones moved into the tasks' fan-outs — and deletes them,
with an INFO line saying how many.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from samza_dagster.config.config import Config
from samza_dagster.coordinator.stream.messages import (
    SET_STARTPOINT,
    STARTPOINT_FAN_OUT_NAMESPACE,
    STARTPOINT_NAMESPACE,
    CoordinatorStreamMessage,
)
from samza_dagster.coordinator.stream.reader_writer import CoordinatorStreamWriter, read_coordinator_stream
from samza_dagster.coordinator.stream.state import CoordinatorStreamState
from samza_dagster.model import SystemStreamPartition
from samza_dagster.startpoint.startpoint import (
    Startpoint,
    StartpointError,
    StartpointKey,
    parse_ssp_key,
    parse_store_key,
    ssp_key,
)

log = logging.getLogger(__name__)

SOURCE = "startpoint-manager"
NAMESPACE = STARTPOINT_NAMESPACE
FAN_OUT_NAMESPACE = STARTPOINT_FAN_OUT_NAMESPACE
_COMPACT = (",", ":")
#: malformed startpoints already warned about in this process: the coordinator stream is
#: folded again at every start, fan-out and commit, and one warning is enough
_warned: set[tuple[str, str, str]] = set()


def _warn_once(what: str, key: str, value: object, exc: Exception) -> None:
    seen = (what, key, f"{value!r}: {exc}")
    if seen not in _warned:
        _warned.add(seen)
        log.warning("skipping %s %r on the coordinator stream: %s", what, key, exc)


def startpoint_message(key: StartpointKey, startpoint: Startpoint) -> CoordinatorStreamMessage:
    """A startpoint as written (Samza's ``StartpointManager.writeStartpoint``)."""
    return CoordinatorStreamMessage.unwrapped(NAMESPACE, key.store_key(), startpoint.to_json().encode("utf-8"))


def encode_fan_out(timestamp: int, fan_outs: Mapping[SystemStreamPartition, Startpoint]) -> bytes:
    """Samza's ``StartpointFanOutPerTask``: ``{"timestamp":<ms>,"fanOuts":{"<ssp>":{..}}}``."""
    body = {"timestamp": timestamp, "fanOuts": {ssp_key(ssp): sp.to_dict() for ssp, sp in sorted(fan_outs.items())}}
    return json.dumps(body, separators=_COMPACT, ensure_ascii=False).encode("utf-8")


def decode_fan_out(raw: bytes) -> dict[SystemStreamPartition, Startpoint]:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise StartpointError(f"fan-out is not JSON ({exc})") from None
    fan_outs = body.get("fanOuts") if isinstance(body, dict) else None
    if not isinstance(fan_outs, dict):
        raise StartpointError(f'fan-out has no "fanOuts" object: {raw[:200]!r}')
    return {parse_ssp_key(str(k)): Startpoint.from_dict(v) for k, v in fan_outs.items()}


@dataclass
class StoredStartpoints:
    """The startpoints a folded coordinator stream holds, in each form."""

    #: Samza's read-write namespace: store key → startpoint (an unreadable one is left out)
    written: dict[str, Startpoint] = field(default_factory=dict)
    #: Samza's fan-out namespace: task → partition → startpoint
    fan_outs: dict[str, dict[SystemStreamPartition, Startpoint]] = field(default_factory=dict)
    #: the engine's earlier ``set-startpoint`` messages
    legacy: dict[StartpointKey, Startpoint] = field(default_factory=dict)

    @classmethod
    def from_state(cls, state: CoordinatorStreamState) -> StoredStartpoints:
        """Every readable startpoint; one that does not parse is skipped with a WARNING naming its
        key, once per process (the stream is shared; one bad writer must not stop a job)."""
        found = cls()
        for (msg_type, key), message in state.other.items():
            if msg_type == NAMESPACE:
                try:
                    found.written[key] = Startpoint.from_json(message.raw or b"")
                except StartpointError as exc:
                    _warn_once(NAMESPACE, key, message.raw, exc)
            elif msg_type == FAN_OUT_NAMESPACE:
                try:
                    found.fan_outs[key] = decode_fan_out(message.raw or b"")
                except StartpointError as exc:
                    _warn_once(FAN_OUT_NAMESPACE, key, message.raw, exc)
            elif msg_type == SET_STARTPOINT:
                try:
                    sp_key = StartpointKey.from_values(message.values)
                    raw = message.values.get("startpoint")
                    if raw is None:
                        raise StartpointError('no "startpoint" in values')
                    found.legacy[sp_key] = (
                        Startpoint.from_dict(raw) if isinstance(raw, dict) else Startpoint.from_json(str(raw))
                    )
                except StartpointError as exc:
                    _warn_once(SET_STARTPOINT, key, message.values, exc)
        return found

    def all(self, streams: Iterable[tuple[str, str]] = ()) -> dict[StartpointKey, Startpoint]:
        """One map of every startpoint. ``streams`` ((system, stream) pairs, e.g. the job's inputs)
        split the written keys where a dot makes them ambiguous (:func:`parse_store_key`)."""
        hints = list(streams)
        result: dict[StartpointKey, Startpoint] = {}
        for key, startpoint in self.written.items():
            try:
                result[parse_store_key(key, hints)] = startpoint
            except StartpointError as exc:
                _warn_once(NAMESPACE, key, startpoint, exc)
        for task, fan_outs in self.fan_outs.items():
            for ssp, startpoint in fan_outs.items():
                result[StartpointKey(ssp, task, fanned_out=True)] = startpoint
        for earlier, startpoint in self.legacy.items():
            result.setdefault(earlier, startpoint)
        return result

    def task_fan_out(self, task: str) -> dict[SystemStreamPartition, Startpoint]:
        """What a task's container applies: its fan-out (and the engine's earlier fanned-out
        messages of the task not migrated yet)."""
        result = {key.ssp: sp for key, sp in self.legacy.items() if key.fanned_out and key.task_name == task}
        result.update(self.fan_outs.get(task, {}))
        return result


def startpoints_in_state(
    state: CoordinatorStreamState, streams: Iterable[tuple[str, str]] = ()
) -> dict[StartpointKey, Startpoint]:
    """Every startpoint a folded coordinator stream holds, in any form."""
    return StoredStartpoints.from_state(state).all(streams)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


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
        """Samza's ``writeStartpoint``: for every task reading ``ssp``, or ``task_name``'s own."""
        self._send(startpoint_message(StartpointKey(ssp, task_name), startpoint))

    def delete_startpoint(self, ssp: SystemStreamPartition, task_name: str | None = None) -> None:
        self.delete_keys([StartpointKey(ssp, task_name)])

    def delete_keys(self, keys: Iterable[StartpointKey], stored: StoredStartpoints | None = None) -> None:
        """Delete startpoints, in whichever form each is kept: a written one's key, a partition
        of a task's fan-out (the fan-out rewritten without it, deleted when empty, as Samza's
        ``removeFanOutForTaskSSPs``), an earlier ``set-startpoint`` message."""
        keys = list(keys)
        if not keys:
            return
        stored = self.stored() if stored is None else stored
        messages: list[CoordinatorStreamMessage] = []
        removed: dict[str, set[SystemStreamPartition]] = {}
        for key in keys:
            if key.fanned_out:
                assert key.task_name is not None
                removed.setdefault(key.task_name, set()).add(key.ssp)
            elif key.store_key() in stored.written:
                messages.append(CoordinatorStreamMessage.delete(self.source, NAMESPACE, key.store_key()))
            if key in stored.legacy:
                messages.append(CoordinatorStreamMessage.delete(self.source, SET_STARTPOINT, key.coordinator_key()))
        for task, ssps in sorted(removed.items()):
            current = stored.fan_outs.get(task)
            if current is None or not ssps & set(current):
                continue
            left = {ssp: sp for ssp, sp in current.items() if ssp not in ssps}
            if left:
                messages.append(
                    CoordinatorStreamMessage.unwrapped(FAN_OUT_NAMESPACE, task, encode_fan_out(_now_ms(), left))
                )
            else:
                messages.append(CoordinatorStreamMessage.delete(self.source, FAN_OUT_NAMESPACE, task))
        self._send(*messages)

    # -- reading -----------------------------------------------------------------------------
    def stored(self) -> StoredStartpoints:
        """Every startpoint on the stream, by form (none when the stream does not exist yet)."""
        return StoredStartpoints.from_state(read_coordinator_stream(self.config))

    def read_all(self, streams: Iterable[tuple[str, str]] = ()) -> dict[StartpointKey, Startpoint]:
        """Every startpoint on the stream, written and fanned out (see :meth:`StoredStartpoints.all`)."""
        return self.stored().all(streams)

    def read_startpoint(self, ssp: SystemStreamPartition, task_name: str | None = None) -> Startpoint | None:
        """Samza's ``readStartpoint``: the written startpoint of ``ssp`` (and ``task_name``)."""
        stored = self.stored()
        key = StartpointKey(ssp, task_name)
        found = stored.written.get(key.store_key())
        return found if found is not None else stored.legacy.get(key)

    def task_startpoints(self, task_names: Iterable[str]) -> dict[str, dict[SystemStreamPartition, Startpoint]]:
        """The fanned-out startpoints of ``task_names`` (what a container applies; Samza's
        ``getFanOutForTask``)."""
        stored = self.stored()
        result: dict[str, dict[SystemStreamPartition, Startpoint]] = {}
        for task in task_names:
            fan_out = stored.task_fan_out(task)
            if fan_out:
                result[task] = fan_out
        return result

    def remove_task_startpoints(self, task_name: str, ssps: Iterable[SystemStreamPartition]) -> None:
        """Samza's ``removeFanOutForTaskSSPs``."""
        self.delete_keys(StartpointKey(ssp, task_name, fanned_out=True) for ssp in sorted(ssps))

    # -- fan-out -----------------------------------------------------------------------------
    def fan_out(
        self,
        tasks: Mapping[str, Iterable[SystemStreamPartition]],
        state: CoordinatorStreamState | None = None,
    ) -> dict[str, dict[SystemStreamPartition, Startpoint]]:
        """Samza's ``fanOut``: for every task of ``tasks`` (task name → its partitions) and each of
        its partitions, the newer of the partition's written startpoint and the task's own goes
        into the task's fan-out (the task's own on a tie); then both are deleted. ``state``: the
        folded coordinator stream (else it is read); the messages written are applied to it.

        A partition-level startpoint no task reads is left in place with a WARNING (the job may
        read it again after a reconfiguration; nothing is dropped silently). The engine's earlier
        ``set-startpoint`` messages are migrated here. Returns the startpoints fanned out now."""
        folded = read_coordinator_stream(self.config) if state is None else state
        stored = StoredStartpoints.from_state(folded)
        legacy_written = {k: sp for k, sp in stored.legacy.items() if not k.fanned_out}
        fan_outs: dict[str, dict[SystemStreamPartition, Startpoint]] = {}
        doomed: set[StartpointKey] = set()
        read: set[SystemStreamPartition] = set()
        for task, ssps in sorted(tasks.items()):
            for ssp in sorted(set(ssps)):
                read.add(ssp)
                for_partition = self._written(stored, legacy_written, StartpointKey(ssp), doomed)
                own = self._written(stored, legacy_written, StartpointKey(ssp, task), doomed)
                chosen = for_partition if own is None else own
                if for_partition is not None and own is not None:
                    chosen = for_partition if for_partition.creation_timestamp > own.creation_timestamp else own
                if chosen is not None:
                    fan_outs.setdefault(task, {})[ssp] = chosen
        for key, startpoint in sorted(stored.all().items()):
            if key.task_name is None and not key.fanned_out and key.ssp not in read:
                log.warning(
                    "startpoint %s for %s is not applied: no task of this job reads that partition",
                    startpoint.describe(),
                    key,
                )
        migrated = {k: sp for k, sp in stored.legacy.items() if k.fanned_out}
        messages: list[CoordinatorStreamMessage] = []
        now = _now_ms()
        for task in sorted(set(fan_outs) | {k.task_name for k in migrated if k.task_name is not None}):
            # the task's pending fan-out (and earlier fanned-out messages) kept, the new one wins
            merged = {k.ssp: sp for k, sp in migrated.items() if k.task_name == task}
            merged.update(stored.fan_outs.get(task, {}))
            merged.update(fan_outs.get(task, {}))
            if merged != stored.fan_outs.get(task):
                messages.append(
                    CoordinatorStreamMessage.unwrapped(FAN_OUT_NAMESPACE, task, encode_fan_out(now, merged))
                )
        # fan-outs first: a crash between the two leaves both, and the next fan-out rewrites the same
        for key in sorted(doomed | set(migrated)):
            if not key.fanned_out and key.store_key() in stored.written:
                messages.append(CoordinatorStreamMessage.delete(self.source, NAMESPACE, key.store_key()))
            if key in stored.legacy:
                messages.append(CoordinatorStreamMessage.delete(self.source, SET_STARTPOINT, key.coordinator_key()))
        self._send(*messages)
        for message in messages:
            folded.apply(message)
        moved = sum(1 for k in doomed if k in stored.legacy) + len(migrated)
        if moved:
            log.info(
                "migrated %d startpoint(s) from the engine's earlier set-startpoint messages to Samza's "
                "%s namespaces (docs/decisions.md, 'Samza on the wire')",
                moved,
                NAMESPACE,
            )
        if fan_outs:
            log.info("fanned out startpoints to %d task(s)", len(fan_outs))
        return fan_outs

    @staticmethod
    def _written(
        stored: StoredStartpoints,
        legacy: Mapping[StartpointKey, Startpoint],
        key: StartpointKey,
        doomed: set[StartpointKey],
    ) -> Startpoint | None:
        """The written startpoint of ``key`` (Samza's form, else the earlier one), marked for
        deletion; looked up by its exact key, as Samza does (never parsed)."""
        found = stored.written.get(key.store_key())
        earlier = legacy.get(key)
        if found is not None or earlier is not None:
            doomed.add(key)
        if found is None or (earlier is not None and earlier.creation_timestamp > found.creation_timestamp):
            return earlier
        return found

    def close(self) -> None:
        if self._writer is not None and self._owns_writer:
            self._writer.close()
            self._writer = None

    def __enter__(self) -> StartpointManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
