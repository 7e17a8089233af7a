"""BootstrappingChooser: hold every other stream back until the bootstrap streams reach head.

Samza's MessageChooser design (SAMZA-2), as Samza implemented it:

* ``register(ssp, offset)`` gives the offset of the first envelope the chooser will see for
  ``ssp``. Only *registered* partitions of the bootstrap streams can lag.
* At ``start()`` a bootstrap partition is caught up already when its registered offset is at or
  past its upcoming offset (a checkpoint at head), or when it is empty (no newest offset).
* ``choose()`` returns None until every bootstrap stream that still lags has at least one
  envelope *of a lagging partition* in the wrapped chooser. Paired with a wrapped chooser that
  ranks the bootstrap streams first (DefaultChooser gives them the top priority), this means
  nothing else is chosen while a bootstrap stream has messages that existed at start:
  SystemConsumers keeps the next envelope of every partition with buffered data in the chooser,
  so "no lagging envelope in the chooser" only means "not polled yet", and waiting is right.
* A partition is caught up once an envelope at or past its newest offset (as of the metadata
  given at construction), or its end-of-stream envelope, is chosen; a stream is caught up when
  all its lagging partitions are. Caught up is forever: later messages are ordinary traffic.

Offsets are compared with the system's ``SystemAdmin.offset_comparator`` when ``system_admins``
has one for the system, else as integers. When that comparator is known to be integer comparison
(the log, in-memory and Kafka systems', or an admin with ``integer_offsets = True``), the newest
offset is parsed once at ``start()`` and each chosen envelope of a lagging partition costs one
``int()`` and one integer comparison instead of a comparator call (same answers). The same chooser also provides the restart
guarantee for priorities (see DefaultChooser): any stream, not only a "bootstrap" one, can be
held to its start-time head this way.

Metrics (``metrics_snapshot()``): lagging partitions and messages behind per stream (integer
offsets only), and how long each stream took to reach head; one INFO log line per stream when
it is caught up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from samza_dagster.model import (
    END_OF_STREAM_OFFSET,
    IncomingMessageEnvelope,
    SystemStream,
    SystemStreamMetadata,
    SystemStreamPartition,
)
from samza_dagster.system.chooser.base import MessageChooser, check_chooser, supports_runs
from samza_dagster.system.errors import OffsetError
from samza_dagster.system.int_offsets import compare_int_offsets
from samza_dagster.system.protocols import SystemAdmin

log = logging.getLogger(__name__)


class _LaggingStream:
    """Bookkeeping of one bootstrap stream that has not reached head yet."""

    __slots__ = ("system_stream", "lagging_partitions", "in_chooser", "started_at", "caught_up_s")

    def __init__(self, system_stream: SystemStream) -> None:
        self.system_stream = system_stream
        self.lagging_partitions = 0
        #: Envelopes of *lagging* partitions of this stream now held by the wrapped chooser.
        self.in_chooser = 0
        self.started_at = 0.0
        self.caught_up_s: float | None = None


class _LaggingPartition:
    """One registered partition of a bootstrap stream that has not reached its start-time head.

    ``newest_int`` is the newest offset as an integer when the partition's offsets are known to
    order as integers (no SystemAdmin, or one whose comparator is integer comparison): the hot path
    then checks a chosen envelope with one ``int()`` and one integer comparison. Otherwise it is
    None and ``compare`` (the admin's ``offset_comparator``) decides.
    """

    __slots__ = ("stream", "newest", "newest_int", "compare", "last_offset")

    def __init__(
        self,
        stream: _LaggingStream,
        newest: str,
        newest_int: int | None,
        compare: Callable[[str, str], int] | None,
    ) -> None:
        self.stream = stream
        self.newest = newest
        self.newest_int = newest_int
        self.compare = compare
        self.last_offset: str | None = None


def _orders_as_integers(admin: SystemAdmin) -> bool:
    """True when ``admin.offset_comparator`` is integer comparison: an admin may say so itself with
    a boolean ``integer_offsets`` attribute; otherwise its comparator must be
    ``compare_int_offsets`` itself (the log, in-memory and Kafka admins use it as their
    ``offset_comparator``; a subclass overriding it is not mistaken for it)."""
    hint = getattr(admin, "integer_offsets", None)
    if isinstance(hint, bool):
        return hint
    comparator = getattr(admin, "offset_comparator", None)
    func = getattr(comparator, "__func__", comparator)
    return func is compare_int_offsets


def _int_offset(ssp: SystemStreamPartition, offset: str, what: str, admin: SystemAdmin | None = None) -> int:
    try:
        return int(offset)
    except (TypeError, ValueError):
        if admin is None:
            why = f"no SystemAdmin was given for system {ssp.system!r} to compare it"
        else:
            why = f"the SystemAdmin of system {ssp.system!r} ({type(admin).__name__}) compares offsets as integers"
        raise OffsetError(
            f"{what} offset {offset!r} of {ssp.system}.{ssp.stream} partition {ssp.partition} is not an "
            f"integer and {why}"
        ) from None


class BootstrappingChooser(MessageChooser):
    def __init__(
        self,
        wrapped: MessageChooser,
        bootstrap_stream_metadata: Mapping[SystemStream, SystemStreamMetadata],
        system_admins: Mapping[str, SystemAdmin] | None = None,
    ) -> None:
        check_chooser(wrapped, "BootstrappingChooser's wrapped chooser")
        self._wrapped = wrapped
        self._metadata = dict(bootstrap_stream_metadata)
        self._admins = dict(system_admins or {})
        self._registered: dict[SystemStreamPartition, str] = {}
        self._streams: dict[SystemStream, _LaggingStream] = {}
        self._partitions: dict[SystemStreamPartition, _LaggingPartition] = {}
        #: Lagging streams with no lagging envelope in the wrapped chooser; choose() waits while > 0.
        self._streams_without_envelope = 0
        self._caught_up: dict[SystemStream, float] = {}
        self._started = False
        self._wrapped_update = wrapped.update
        self._wrapped_choose = wrapped.choose
        #: the wrapped chooser when it offers runs (chooser/base.py); then this one offers them too
        self._wrapped_runs = wrapped if supports_runs(wrapped) else None
        self.run_length = self._run_length if self._wrapped_runs is not None else None
        self.take_run = self._take_run if self._wrapped_runs is not None else None

    # -- lifecycle -------------------------------------------------------------------------
    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self._registered[ssp] = offset
        self._wrapped.register(ssp, offset)

    def _compare(self, ssp: SystemStreamPartition) -> Callable[[str, str], int]:
        admin = self._admins.get(ssp.system)
        if admin is not None:
            return admin.offset_comparator

        def compare(a: str, b: str) -> int:
            x, y = _int_offset(ssp, a, "envelope"), _int_offset(ssp, b, "metadata")
            return (x > y) - (x < y)

        return compare

    def start(self) -> None:
        now = time.monotonic()
        # Key the lagging partitions by the very SSP objects registered (those the consumers put
        # in their envelopes): a dict hit is then an identity match, not a tuple comparison.
        registered_ssps = {ssp: ssp for ssp in self._registered}
        for system_stream, metadata in self._metadata.items():
            stream = _LaggingStream(system_stream)
            stream.started_at = now
            for partition, pm in metadata.partitions.items():
                ssp = SystemStreamPartition(system_stream.system, system_stream.stream, partition)
                offset = self._registered.get(ssp)
                if offset is None or pm.newest_offset is None:
                    continue  # not ours to read, or empty: nothing to bootstrap
                ssp = registered_ssps[ssp]
                compare = self._compare(ssp)
                if compare(offset, pm.upcoming_offset) >= 0:
                    continue  # the checkpoint is at head already
                newest = pm.newest_offset
                admin = self._admins.get(ssp.system)
                if admin is None:
                    lagging = _LaggingPartition(stream, newest, _int_offset(ssp, newest, "metadata"), None)
                elif _orders_as_integers(admin):
                    lagging = _LaggingPartition(stream, newest, _int_offset(ssp, newest, "metadata", admin), compare)
                else:
                    lagging = _LaggingPartition(stream, newest, None, compare)
                self._partitions[ssp] = lagging
                stream.lagging_partitions += 1
            if stream.lagging_partitions:
                self._streams[system_stream] = stream
                self._streams_without_envelope += 1
                log.info(
                    "bootstrapping %s: %d of %d partitions behind head",
                    system_stream,
                    stream.lagging_partitions,
                    len(metadata.partitions),
                )
            else:
                self._caught_up[system_stream] = 0.0
                log.info("bootstrap stream %s is at head at start", system_stream)
        self._started = True
        self._wrapped.start()

    def stop(self) -> None:
        self._wrapped.stop()

    # -- hot path ----------------------------------------------------------------------------
    def update(self, envelope: IncomingMessageEnvelope) -> None:
        self._wrapped_update(envelope)
        if self._partitions:
            lagging = self._partitions.get(envelope.ssp)
            if lagging is not None:
                stream = lagging.stream
                stream.in_chooser += 1
                if stream.in_chooser == 1:
                    self._streams_without_envelope -= 1

    def choose(self) -> IncomingMessageEnvelope | None:
        if self._streams_without_envelope:
            return None
        envelope = self._wrapped_choose()
        if envelope is not None and self._partitions:
            lagging = self._partitions.get(envelope.ssp)
            if lagging is not None:
                self._lagging_chosen(envelope, lagging)
        return envelope

    def _lagging_chosen(self, envelope: IncomingMessageEnvelope, lagging: _LaggingPartition) -> None:
        """Bookkeeping after an envelope of a lagging partition left the wrapped chooser."""
        stream = lagging.stream
        stream.in_chooser -= 1
        offset = envelope.offset
        newest_int = lagging.newest_int
        if newest_int is not None:
            try:
                past = int(offset) >= newest_int
            except (TypeError, ValueError):
                past = self._past_newest(envelope, lagging)
        else:
            past = self._past_newest(envelope, lagging)
        if past:
            self._partition_caught_up(envelope.ssp, lagging)
        else:
            lagging.last_offset = offset
            if stream.in_chooser == 0:
                self._streams_without_envelope += 1

    # -- runs (chooser/base.py): offered when the wrapped chooser offers them ----------------
    def _run_length(self, envelope: IncomingMessageEnvelope, available: int) -> int:
        assert self._wrapped_runs is not None  # offered only then
        return self._wrapped_runs.run_length(envelope, available)

    def _take_run(self, last: IncomingMessageEnvelope, count: int) -> None:
        """As if ``last`` had been updated and then chosen: the envelopes before it in the run
        leave the bookkeeping as they found it, and offsets only grow within a partition, so
        ``last`` alone decides whether the partition reached its head."""
        assert self._wrapped_runs is not None  # offered only then
        self._wrapped_runs.take_run(last, count)
        lagging = self._partitions.get(last.ssp)
        if lagging is not None:
            stream = lagging.stream
            stream.in_chooser += 1
            if stream.in_chooser == 1:
                self._streams_without_envelope -= 1
            self._lagging_chosen(last, lagging)

    def _past_newest(self, envelope: IncomingMessageEnvelope, lagging: _LaggingPartition) -> bool:
        """The check for an end-of-stream envelope, a non-integer offset, or a system whose
        offsets do not order as integers (its admin's comparator decides)."""
        offset = envelope.offset
        if offset == END_OF_STREAM_OFFSET:
            return True
        ssp = envelope.ssp
        if lagging.newest_int is not None:
            # Offsets of this system are integers; this one is not: a clear error, naming it.
            _int_offset(ssp, offset, "envelope", self._admins.get(ssp.system))
        assert lagging.compare is not None
        if offset == lagging.newest:
            return True
        try:
            return lagging.compare(offset, lagging.newest) >= 0
        except Exception as exc:
            raise OffsetError(
                f"envelope offset {offset!r} of {ssp.system}.{ssp.stream} partition {ssp.partition} cannot be "
                f"compared with the newest offset {lagging.newest!r} by the SystemAdmin of system "
                f"{ssp.system!r}: {type(exc).__name__}: {exc}"
            ) from exc

    # -- state changes (rare) ----------------------------------------------------------------
    def _partition_caught_up(self, ssp: SystemStreamPartition, lagging: _LaggingPartition) -> None:
        del self._partitions[ssp]
        stream = lagging.stream
        stream.lagging_partitions -= 1
        if stream.lagging_partitions == 0:
            elapsed = time.monotonic() - stream.started_at
            stream.caught_up_s = elapsed
            del self._streams[stream.system_stream]
            self._caught_up[stream.system_stream] = elapsed
            log.info("bootstrap stream %s caught up with its head in %.3f s", stream.system_stream, elapsed)
        elif stream.in_chooser == 0:
            self._streams_without_envelope += 1

    # -- introspection ---------------------------------------------------------------------
    @property
    def is_bootstrapping(self) -> bool:
        """True while some bootstrap stream is still behind its start-time head."""
        return bool(self._streams) or not self._started

    def lagging_partitions(self) -> dict[SystemStream, list[int]]:
        result: dict[SystemStream, list[int]] = {}
        for ssp in self._partitions:
            result.setdefault(SystemStream(ssp.system, ssp.stream), []).append(ssp.partition)
        return {ss: sorted(parts) for ss, parts in result.items()}

    def metrics_snapshot(self) -> dict[str, Any]:
        """Plain-dict snapshot: per stream, lagging partitions, messages behind head (when
        offsets are integers) and seconds taken to reach head (None while lagging)."""
        streams: dict[str, dict[str, Any]] = {}
        for system_stream in self._metadata:
            streams[str(system_stream)] = {
                "lagging_partitions": 0,
                "messages_behind": 0,
                "caught_up": system_stream in self._caught_up,
                "time_to_head_s": self._caught_up.get(system_stream),
            }
        for ssp, lagging in self._partitions.items():
            entry = streams[f"{ssp.system}.{ssp.stream}"]
            entry["lagging_partitions"] += 1
            entry["caught_up"] = False
            start = lagging.last_offset if lagging.last_offset is not None else self._registered.get(ssp)
            try:
                if start is None:
                    raise ValueError("no offset to count from")
                behind = int(lagging.newest) - int(start) + (0 if lagging.last_offset is not None else 1)
            except (TypeError, ValueError):
                entry["messages_behind"] = None
                continue
            if entry["messages_behind"] is not None:
                entry["messages_behind"] += max(behind, 0)
        return {"bootstrapping": self.is_bootstrapping, "streams": streams}
