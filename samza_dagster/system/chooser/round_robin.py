"""RoundRobinChooser: envelopes in the order they became available.

With at most one outstanding envelope per partition, a FIFO of updates *is* round-robin: a
partition whose envelope was just chosen gets its next one appended behind every partition
that was already waiting.

That FIFO is offered to the engine as ``fifo`` (*rounds*, chooser/base.py): knowing the order
is the order of updates, SystemConsumers hands the run loop whole rounds of picks at once. A
subclass that picks otherwise (overrides ``choose``) offers none.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.model import IncomingMessageEnvelope
from samza_dagster.system.chooser.base import MessageChooser, MessageChooserFactory


class RoundRobinChooser(MessageChooser):
    __slots__ = ("_queue", "update", "_popleft", "fifo")

    def __init__(self) -> None:
        self._queue: deque[IncomingMessageEnvelope] = deque()
        # Bound methods stored once: update is then a direct C call, with no Python frame.
        self.update = self._queue.append  # type: ignore[method-assign,assignment]  # deque.append for the method
        self._popleft = self._queue.popleft
        #: the picks in order (rounds, chooser/base.py); None when a subclass chooses otherwise
        self.fifo: deque[IncomingMessageEnvelope] | None = (
            self._queue if type(self).choose is RoundRobinChooser.choose else None
        )

    def choose(self) -> IncomingMessageEnvelope | None:
        if self._queue:
            return self._popleft()
        return None

    def __len__(self) -> int:
        return len(self._queue)


class RoundRobinChooserFactory(MessageChooserFactory):
    """``task.chooser.class=samza_dagster.system.chooser:RoundRobinChooserFactory``."""

    def get_chooser(self, config: Config, metrics: dict[str, Any] | None = None) -> MessageChooser:
        return RoundRobinChooser()
