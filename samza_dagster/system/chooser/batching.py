"""BatchingChooser: stay on the partition chosen last, up to ``batch_size`` envelopes in a row.

The batching of Samza's MessageChooser design (SAMZA-2): once the wrapped chooser has picked partition X, X's next envelope is
held back from the wrapped chooser and returned directly by the next ``choose`` — up to
``batch_size`` consecutive envelopes from X — before the wrapped chooser's tie-breaking runs
again. Consecutive envelopes of one partition make for cheaper processing downstream (one
task's state hot in cache, fewer, larger replay-log writes).

It breaks a batch early when X has no next envelope available at ``choose`` time: waiting for
one would stall every other partition.
"""

from __future__ import annotations

from typing import Any

from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.chooser.base import MessageChooser, check_chooser
from samza_dagster.system.chooser.errors import ChooserError


class BatchingChooser(MessageChooser):
    __slots__ = ("_wrapped", "_batch_size", "_preferred", "_preferred_envelope", "_count", "batches_completed")

    def __init__(self, wrapped: MessageChooser, batch_size: int) -> None:
        check_chooser(wrapped, "BatchingChooser's wrapped chooser")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ChooserError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._wrapped = wrapped
        self._batch_size = batch_size
        self._preferred: SystemStreamPartition | None = None
        self._preferred_envelope: IncomingMessageEnvelope | None = None
        self._count = 0
        #: How many batches ran to ``batch_size`` (a metric).
        self.batches_completed = 0

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self._wrapped.register(ssp, offset)

    def start(self) -> None:
        self._wrapped.start()

    def stop(self) -> None:
        self._wrapped.stop()

    def update(self, envelope: IncomingMessageEnvelope) -> None:
        if envelope.ssp == self._preferred:
            self._preferred_envelope = envelope
        else:
            self._wrapped.update(envelope)

    def choose(self) -> IncomingMessageEnvelope | None:
        envelope = self._preferred_envelope
        if envelope is not None:
            self._preferred_envelope = None
            self._count += 1
            if self._count >= self._batch_size:
                self._preferred = None
                self.batches_completed += 1
            return envelope
        # The preferred partition has nothing available: the batch ends here.
        envelope = self._wrapped.choose()
        if envelope is not None:
            if self._batch_size > 1:
                self._preferred = envelope.ssp
                self._count = 1
            else:
                self._preferred = None
        else:
            self._preferred = None
        return envelope

    # -- runs (see chooser/base.py) ----------------------------------------------------------
    def run_length(self, envelope: IncomingMessageEnvelope, available: int) -> int:
        """Called right after ``choose`` returned ``envelope``: the rest of the batch, when the
        batch is still on its partition."""
        if envelope.ssp == self._preferred:
            return min(available, self._batch_size - self._count)
        return 0

    def take_run(self, last: IncomingMessageEnvelope, count: int) -> None:
        self._count += count
        if self._count >= self._batch_size:
            self._preferred = None
            self.batches_completed += 1

    def metrics_snapshot(self) -> dict[str, Any]:
        return {"batch_size": self._batch_size, "batches_completed": self.batches_completed}
