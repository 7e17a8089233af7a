"""A restarted task replays into tables that already hold part of what it replays.

An output whose commits carry the job's checkpoints (an Iceberg table: system/iceberg/) commits
before the container writes its checkpoint stream (and, exactly-once, before the transaction that
holds the changelog writes and every other output). After a crash between the two, a table may
hold the rows of messages the checkpoint stream does not cover — and with several tables, each a
different number of them, as the crash fell between their commits. So a task restarts where its
checkpoint stream says (its stores restored there, its other outputs sent again in the new
transaction) and replays; every table whose newest checkpoint for the task is ahead of the
stream's (output_checkpoints.py) is *muted* while the task processes messages that checkpoint
covers: what the task sends to it then is not sent again. A table stops being muted for a
partition at the first message past its checkpoint there, and the replay ends when every table
is past in every partition.

Which messages a table covers is decided by offset, per partition: a message at or before the
table's checkpoint offset of its partition was processed before that commit. A columnar batch
that straddles such an offset is cut there (the system's admin: ``SplitsColumnar``) and processed
as two. What a task sends from ``window`` counts as covered by a table while the task has not yet
passed the table's checkpoint in any of its partitions (the window it replays covers messages the
table's commit followed). What it sends from ``on_end_of_stream`` always reaches every table: a
checkpoint records offsets, not whether the end of stream was processed before the commit, and a
row sent twice is the lesser harm than one never sent (as for every output of a job restarted
after its last commit: its end of stream comes again).

This needs to know which message each send came from: it holds for synchronous tasks processing
one message at a time (the inline run loop; a thread pool with ``task.max.concurrency=1``). An
asynchronous task, or several messages in flight per task, gets no replay — it restarts from the
checkpoint stream and may send a table's rows again (at-least-once; exactly-once refuses those
settings anyway).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cmp_to_key
from typing import Any

from samza_dagster.checkpoint.checkpoint import Checkpoint
from samza_dagster.errors import SamzaError
from samza_dagster.model import (
    ColumnarEnvelope,
    IncomingMessageEnvelope,
    OutgoingMessageEnvelope,
    SystemStream,
    SystemStreamPartition,
)
from samza_dagster.system.protocols import SplitsColumnar, SystemProducer

log = logging.getLogger(__name__)

#: compares two offsets of a system's partition (its admin's ``offset_comparator``)
OffsetCompare = Callable[[str, str, str], int]


class TableReplay:
    """One task's replay into the tables ahead of its checkpoint stream (module docstring)."""

    def __init__(
        self,
        task_name: str,
        tables: Mapping[SystemStream, Checkpoint],
        compare: OffsetCompare,
        admin_for: Callable[[str], Any],
    ) -> None:
        self.task_name = task_name
        self._compare = compare
        self._admin_for = admin_for
        #: per table, the checkpoint offsets of the partitions the task has not passed yet
        self._ahead: dict[SystemStream, dict[SystemStreamPartition, str]] = {
            ss: dict(cp.offsets) for ss, cp in tables.items() if cp.offsets
        }
        self._partitions = {ss: len(offsets) for ss, offsets in self._ahead.items()}
        #: the tables what the task sends now must not reach
        self.muted: frozenset[SystemStream] = frozenset()
        #: rows not sent again, per table
        self.skipped: dict[SystemStream, int] = {}

    @property
    def finished(self) -> bool:
        return not self._ahead

    @property
    def tables(self) -> list[SystemStream]:
        return sorted(self._ahead, key=str)

    def forget(self, ssps: set[SystemStreamPartition]) -> None:
        """The task starts these partitions elsewhere than its checkpoint (a startpoint, a reset
        offset): it reprocesses them on purpose, so no table is muted for them."""
        for ss in list(self._ahead):
            offsets = self._ahead[ss]
            for ssp in ssps & offsets.keys():
                del offsets[ssp]
            if not offsets:
                del self._ahead[ss]

    def at(self, ssp: SystemStreamPartition, offset: str) -> None:
        """The task is about to process the message at ``offset`` of ``ssp``: mute the tables
        that hold what it sends."""
        muted = []
        for ss in list(self._ahead):
            offsets = self._ahead[ss]
            held = offsets.get(ssp)
            if held is None:
                continue
            if self._compare(ssp.system, offset, held) <= 0:
                muted.append(ss)
            else:
                del offsets[ssp]
                if not offsets:
                    del self._ahead[ss]
                    log.info(
                        "task %r replayed past what table %s.%s held: %d rows not sent to it again",
                        self.task_name,
                        ss.system,
                        ss.stream,
                        self.skipped.get(ss, 0),
                    )
        self.muted = frozenset(muted)

    def in_window(self) -> None:
        """The task is about to run ``window``: mute the tables whose checkpoint it has not
        passed in any partition."""
        self.muted = frozenset(ss for ss, offsets in self._ahead.items() if len(offsets) == self._partitions[ss])

    def runs(self, run: Sequence[IncomingMessageEnvelope]) -> Iterator[list[IncomingMessageEnvelope]]:
        """``run`` (one partition's envelopes, in order) in pieces that mute the same tables, a
        columnar batch cut where a table's checkpoint falls inside it; ``muted`` is set for each
        piece as it is handed out."""
        pieces: list[tuple[frozenset[SystemStream], list[IncomingMessageEnvelope]]] = []
        for envelope in self._cut(run):
            self.at(envelope.ssp, envelope.offset)
            if pieces and pieces[-1][0] == self.muted:
                pieces[-1][1].append(envelope)
            else:
                pieces.append((self.muted, [envelope]))
        for muted, piece in pieces:
            self.muted = muted
            yield piece

    def _cut(self, run: Sequence[IncomingMessageEnvelope]) -> Iterator[IncomingMessageEnvelope]:
        for envelope in run:
            if type(envelope) is not ColumnarEnvelope:
                yield envelope
                continue
            yield from self._cut_batch(envelope)

    def _cut_batch(self, envelope: ColumnarEnvelope) -> Iterator[ColumnarEnvelope]:
        ssp = envelope.ssp
        compare = self._compare

        def order(a: str, b: str) -> int:
            return compare(ssp.system, a, b)

        inside = sorted(
            {
                held
                for offsets in self._ahead.values()
                if (held := offsets.get(ssp)) is not None
                and compare(ssp.system, envelope.first_offset, held) <= 0
                and compare(ssp.system, held, envelope.offset) < 0
            },
            key=cmp_to_key(order),
        )
        if not inside:
            yield envelope
            return
        admin = self._admin_for(ssp.system)
        if not isinstance(admin, SplitsColumnar):
            raise TableReplayError(
                f"task {self.task_name!r}: a table holds rows of part of the batch {envelope!r}, and system "
                f"{ssp.system!r} cannot cut its batches; restarting would send those rows again"
            )
        rest = envelope
        for held in inside:
            head, rest = admin.split_columnar(rest, held)
            yield head
        yield rest

    def producers(self, producers: Mapping[str, SystemProducer]) -> dict[str, SystemProducer]:
        """``producers``, those of the systems of muted tables behind a filter that drops what a
        muted table would receive."""
        systems = {ss.system for ss in self._ahead}
        return {
            system: ReplayFilter(producer, self) if system in systems else producer
            for system, producer in producers.items()
        }


class TableReplayError(SamzaError):
    """A replay that cannot keep a table's rows once."""


class ReplayFilter:
    """A producer in front of a table system's: what a muted table receives is dropped (and
    counted); everything else goes through."""

    def __init__(self, producer: SystemProducer, replay: TableReplay) -> None:
        self._producer = producer
        self._replay = replay

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        replay = self._replay
        if replay.muted and envelope.system_stream in replay.muted:
            replay.skipped[envelope.system_stream] = replay.skipped.get(envelope.system_stream, 0) + 1
            return
        self._producer.send(source, envelope)

    def send_table(self, source: str, system_stream: SystemStream, table: Any) -> None:
        replay = self._replay
        if replay.muted and system_stream in replay.muted:
            rows = table.num_rows if hasattr(table, "num_rows") else len(table)
            replay.skipped[system_stream] = replay.skipped.get(system_stream, 0) + rows
            return
        self._producer.send_table(source, system_stream, table)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._producer, name)
