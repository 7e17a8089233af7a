"""Side inputs (Samza's SideInputsManager): stores filled from streams instead of by the task.

A store with ``stores.<store>.side.inputs = system.stream,...`` is written only from those
streams. Each task's copy of it is fed the partitions of the side-input streams with the task's
partition number (the planner makes a table's side inputs co-partitioned with the streams joined
with it). The container

1. **bootstraps** before any task is initialised: every side-input partition is read to the
   newest offset seen at that moment, so a task never sees a table older than what the stream
   held when it started;
2. **follows** the streams on a thread of its own for the container's life, so updates reach the
   tables the task reads within a poll interval (``docs/benchmarks.md``, side inputs);
3. keeps the offsets it applied **beside the store**, not in the checkpoint: a persistent store
   (RocksDB) resumes after the offset in ``<store dir>/side-input-offsets.json``, written after
   the store is flushed, at each commit and at shutdown. An in-memory store re-reads from the
   oldest offset at every start.

Each message goes through the store's side-inputs processor — ``process(envelope, store)``
returning the ``(key, value)`` entries to write (a None value deletes) — which is
``stores.<store>.side.inputs.processor.factory`` (``module:Class``; the class, or its
``get_side_inputs_processor(config)``), or the one the task factory supplies (the high-level
API's ``side_input_fn``), or the identity: the message's own key and value.

Side-input stores have no changelog (the streams are their changelog) and no write-back cache:
the following thread writes while the task reads, and only the raw store is safe for that.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.container.offset_reset import admin_cleanup_policy, out_of_range_start
from samza_dagster.errors import SamzaError
from samza_dagster.model import IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.serde.registry import SerdeRegistry, load_class
from samza_dagster.system.positions import position_reached

log = logging.getLogger(__name__)

PROCESSOR_KEY = keys.STORE_SIDE_INPUTS_PROCESSOR
OFFSETS_FILE = "side-input-offsets.json"
#: how long the following thread waits in one poll; bounds the delay of an update when idle
FOLLOW_POLL_S = 0.05
BOOTSTRAP_TIMEOUT_S = 600.0


class SideInputsProcessor(Protocol):
    def process(self, envelope: IncomingMessageEnvelope, store: Any) -> Iterable[tuple[Any, Any]]: ...


class SideInputError(SamzaError):
    """A side-input partition could not be read or applied; names the store and partition."""


class SideInputOffsetsError(SideInputError, ValueError):
    """The offsets kept beside a side-input store are malformed; names what is wrong (the caller
    adds the file: it warns and reads the side inputs again from the oldest offsets)."""


class IdentityProcessor:
    """The message's key and value, as they are."""

    def process(self, envelope: IncomingMessageEnvelope, store: Any) -> Iterable[tuple[Any, Any]]:
        return ((envelope.key, envelope.message),)


def processor_from_config(config: Config, store: str) -> SideInputsProcessor | None:
    key = PROCESSOR_KEY.key(store=store)
    path = config.get_str(key)
    if not path:
        return None
    cls = load_class(path, key)
    processor = cls.get_side_inputs_processor(config) if hasattr(cls, "get_side_inputs_processor") else cls()
    if not callable(getattr(processor, "process", None)):
        raise ConfigError(f"config key {key!r}: {path} gives no object with process(envelope, store)", key=key)
    return processor


def side_input_streams(config: Config, store: str, default_system: str) -> list[SystemStream]:
    key = keys.STORE_SIDE_INPUTS.key(store=store)
    streams = []
    for raw in config.get_list(key):
        system, sep, stream = raw.partition(".")
        if not sep:
            system, stream = default_system, raw
        if not system or not stream:
            raise ConfigError(f"config key {key!r}: expected system.stream, got {raw!r}", key=key)
        streams.append(SystemStream(system, stream))
    return streams


@dataclass
class SideInputStore:
    """One task's copy of a side-input store and the partitions that feed it."""

    task_name: str
    name: str
    store: Any  # the user-facing (serialized) store
    processor: SideInputsProcessor
    ssps: list[SystemStreamPartition]
    offsets_path: Path | None  # None: in-memory, nothing survives a restart
    applied: dict[SystemStreamPartition, str] = field(default_factory=dict)
    messages: int = 0

    def stored_offsets(
        self, check_offset: Callable[[SystemStreamPartition, str], object]
    ) -> dict[SystemStreamPartition, str]:
        """The offsets kept beside the store for its partitions. ``check_offset(ssp, offset)``
        raises ValueError or TypeError for a value that is not an offset of ``ssp``'s system.
        A file that is malformed in any way is one WARNING naming it and what was wrong, and
        no offsets at all: the store is read again from the oldest offsets, which rebuilds
        it (re-applying a message is harmless; resuming from a guess could skip one)."""
        if self.offsets_path is None or not self.offsets_path.exists():
            return {}
        try:
            return self._parse_offsets(self.offsets_path.read_text(), check_offset)
        except (OSError, ValueError, TypeError) as exc:
            log.warning(
                "side-input store %r of %s: ignoring %s: %s; reading its side inputs again from the oldest offsets",
                self.name,
                self.task_name,
                self.offsets_path,
                exc,
            )
            return {}

    def _parse_offsets(
        self, text: str, check_offset: Callable[[SystemStreamPartition, str], object]
    ) -> dict[SystemStreamPartition, str]:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise SideInputOffsetsError(f"not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise SideInputOffsetsError(
                f"expected a JSON object of partition -> offset, found a JSON {type(data).__name__}"
            )
        offsets: dict[SystemStreamPartition, str] = {}
        for ssp in self.ssps:
            key = _ssp_key(ssp)
            if key not in data:
                continue
            value = data[key]
            if not isinstance(value, str):
                raise SideInputOffsetsError(f"the offset of {key} is {json.dumps(value)}, not an offset string")
            try:
                check_offset(ssp, value)
            except (TypeError, ValueError) as exc:
                raise SideInputOffsetsError(
                    f"the offset of {key} is {value!r}, not an offset of system {ssp.system!r} ({exc})"
                ) from exc
            offsets[ssp] = value
        return offsets

    def write_offsets(self, offsets: dict[SystemStreamPartition, str]) -> None:
        if self.offsets_path is None or not offsets:
            return
        tmp = self.offsets_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({_ssp_key(s): o for s, o in sorted(offsets.items())}, sort_keys=True))
        os.replace(tmp, self.offsets_path)


def _ssp_key(ssp: SystemStreamPartition) -> str:
    return f"{ssp.system}.{ssp.stream}.{ssp.partition}"


class SideInputsManager:
    """Bootstraps and then follows the side inputs of one container's tasks (module docstring)."""

    def __init__(
        self,
        stores: list[SideInputStore],
        admin_for: Callable[[str], Any],
        consumer_for: Callable[[str], Any],
        serdes: SerdeRegistry,
    ) -> None:
        self.stores = stores
        self._admin_for = admin_for
        self._consumer_for = consumer_for
        self._serdes = serdes
        self._by_ssp: dict[SystemStreamPartition, list[SideInputStore]] = {}
        for s in stores:
            for ssp in s.ssps:
                self._by_ssp.setdefault(ssp, []).append(s)
        self._consumers: dict[str, Any] = {}
        self._decoders: dict[SystemStream, tuple[Any, Any]] = {}
        self._lock = threading.Lock()  # applying vs. taking a consistent offsets snapshot to flush
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def bootstrap(self) -> dict[str, int]:
        """Read every side-input partition to its newest offset now; messages applied per store."""
        if not self._by_ssp:
            return {}
        heads = {ssp: head for ssp, head in self._register().items() if head is not None}
        remaining = set(heads)
        deadline = time.monotonic() + BOOTSTRAP_TIMEOUT_S
        while remaining:
            if time.monotonic() > deadline:
                raise SideInputError(
                    f"side inputs {sorted(map(str, remaining))} not read to their newest offsets within {BOOTSTRAP_TIMEOUT_S:.0f}s"
                )
            for system, consumer in self._consumers.items():
                wanted = [ssp for ssp in remaining if ssp.system == system]
                if not wanted:
                    continue
                polled = consumer.poll(wanted, 0.1)
                for ssp, envelopes in polled.items():
                    self._apply(ssp, envelopes)
                    head = heads[ssp]
                    if any(e.is_end_of_stream for e in envelopes) or (
                        envelopes and int(envelopes[-1].offset) >= int(head)
                    ):
                        remaining.discard(ssp)
                for ssp in wanted:
                    # the newest offset may hold no message: a commit marker of an exactly-once writer (Kafka)
                    if not polled.get(ssp) and position_reached(consumer, ssp, int(heads[ssp]) + 1):
                        remaining.discard(ssp)
        return self.applied_counts()

    def applied_counts(self) -> dict[str, int]:
        """Messages applied so far in this container, per store name (all its tasks)."""
        counts: dict[str, int] = {}
        for s in self.stores:
            counts[s.name] = counts.get(s.name, 0) + s.messages
        return counts

    def start(self) -> None:
        """Follow the side inputs on a thread of their own until ``stop``."""
        if not self._by_ssp or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._follow, name="side-inputs", daemon=True)
        self._thread.start()

    def flush(self, task_names: Collection[str] | None = None) -> None:
        """Flush the stores (of the given tasks, or all), then record the offsets applied before
        the flush: a restart never resumes past what the store holds."""
        wanted = None if task_names is None else set(task_names)
        for s in self.stores:
            if wanted is not None and s.task_name not in wanted:
                continue
            with self._lock:
                offsets = dict(s.applied)
            s.store.flush()
            s.write_offsets(offsets)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        for consumer in self._consumers.values():
            consumer.stop()
        self._consumers.clear()

    # -- reading -------------------------------------------------------------------------------
    def _register(self) -> dict[SystemStreamPartition, str | None]:
        """Register every partition at its start (after the stored offset, else the oldest);
        returns the newest offset of each now (None when there is nothing to read)."""
        by_system: dict[str, set[str]] = {}
        for ssp in self._by_ssp:
            by_system.setdefault(ssp.system, set()).add(ssp.stream)

        def check_offset(ssp: SystemStreamPartition, offset: str) -> object:
            return self._admin_for(ssp.system).offset_comparator(offset, offset)

        for s in self.stores:
            s.applied.update(s.stored_offsets(check_offset))
        heads: dict[SystemStreamPartition, str | None] = {}
        for system, streams in by_system.items():
            admin = self._admin_for(system)
            metadata = admin.get_system_stream_metadata(sorted(streams))
            resume = admin.get_offsets_after(self._stored_positions(system, admin.offset_comparator))
            consumer = self._consumers[system] = self._consumer_for(system)
            for ssp in [s for s in self._by_ssp if s.system == system]:
                pm = metadata[ssp.stream].partitions[ssp.partition]
                start = resume.get(ssp, pm.oldest_offset)
                if ssp in resume:
                    # the store is a view of the stream: out of range, it is read again from
                    # what the stream holds (offset_reset.py)
                    reset = out_of_range_start(
                        ssp,
                        start,
                        pm,
                        admin.offset_comparator,
                        "oldest",
                        what=f"side-input store {self._store_names(ssp)}",
                        why="a side-input store is a view of the whole stream",
                        cleanup_policy=admin_cleanup_policy(admin, ssp.stream),
                    )
                    start = start if reset is None else reset
                consumer.register(ssp, start)
                done = pm.newest_offset is None or admin.offset_comparator(start, pm.upcoming_offset) >= 0
                heads[ssp] = None if done else pm.newest_offset
        for consumer in self._consumers.values():
            consumer.start()
        return heads

    def _store_names(self, ssp: SystemStreamPartition) -> str:
        """The stores (and tasks) ``ssp`` feeds, for messages."""
        return ", ".join(f"{t.name!r} of {t.task_name}" for t in self._by_ssp.get(ssp, []))

    def _stored_positions(self, system: str, compare: Callable[[str, str], int]) -> dict[SystemStreamPartition, str]:
        """Per partition of ``system``, where every store it feeds has got to: the earliest of
        their stored offsets (re-applying a message is harmless, skipping one is not); none
        when a store it feeds has no stored offset (it reads from the oldest)."""
        positions: dict[SystemStreamPartition, str] = {}
        for ssp, targets in self._by_ssp.items():
            if ssp.system != system:
                continue
            stored = [t.applied.get(ssp) for t in targets]
            offsets = [offset for offset in stored if offset is not None]
            if offsets and len(offsets) == len(stored):
                earliest = offsets[0]
                for offset in offsets[1:]:
                    if compare(offset, earliest) < 0:
                        earliest = offset
                positions[ssp] = earliest
        return positions

    def _follow(self) -> None:
        ssps_by_system: dict[str, list[SystemStreamPartition]] = {}
        for ssp in self._by_ssp:
            ssps_by_system.setdefault(ssp.system, []).append(ssp)
        per_consumer_s = FOLLOW_POLL_S / max(1, len(self._consumers))
        try:
            while not self._stop.is_set():
                for system, consumer in list(self._consumers.items()):
                    for ssp, envelopes in consumer.poll(ssps_by_system[system], per_consumer_s).items():
                        self._apply(ssp, envelopes)
        except BaseException as exc:  # noqa: BLE001 - reported by the container, which fails
            self.error = exc
            log.error("side inputs stopped: %s", exc)

    def _apply(self, ssp: SystemStreamPartition, envelopes: list[IncomingMessageEnvelope]) -> None:
        key_serde, msg_serde = self._decoders_of(ssp)
        targets = self._by_ssp[ssp]
        with self._lock:
            for env in envelopes:
                if env.is_end_of_stream:
                    continue
                key, message = env.key, env.message
                try:
                    if key_serde is not None and key is not None:
                        key = key_serde.from_bytes(key)
                    if msg_serde is not None and message is not None:
                        message = msg_serde.from_bytes(message)
                except Exception as exc:  # noqa: BLE001 - named with its coordinates below
                    raise SideInputError(f"side input {ssp} offset {env.offset}: cannot deserialize: {exc}") from exc
                decoded = IncomingMessageEnvelope(ssp, env.offset, key, message, env.size, env.event_time)
                for target in targets:
                    try:
                        for k, v in target.processor.process(decoded, target.store):
                            if v is None:
                                target.store.delete(k)
                            else:
                                target.store.put(k, v)
                    except Exception as exc:  # noqa: BLE001
                        raise SideInputError(
                            f"side-input store {target.name!r} of {target.task_name}: {ssp} offset {env.offset}: {exc}"
                        ) from exc
                    target.applied[ssp] = env.offset
                    target.messages += 1

    def _decoders_of(self, ssp: SystemStreamPartition) -> tuple[Any, Any]:
        ss = ssp.system_stream
        found = self._decoders.get(ss)
        if found is None:
            found = self._decoders[ss] = (self._serdes.key_serde(ss), self._serdes.msg_serde(ss))
        return found
