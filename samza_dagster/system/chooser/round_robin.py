"""RoundRobinChooser: envelopes in the order they became available.

With at most one outstanding envelope per partition, a FIFO of updates *is* round-robin: a
partition whose envelope was just chosen gets its next one appended behind every partition
that was already waiting.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.model import IncomingMessageEnvelope
from samza_dagster.system.chooser.base import MessageChooser, MessageChooserFactory


class RoundRobinChooser(MessageChooser):
    __slots__ = ("_queue", "update", "_popleft")

    def __init__(self) -> None:
        self._queue: deque[IncomingMessageEnvelope] = deque()
        # Bound methods stored once: update is then a direct C call, with no Python frame.
        self.update = self._queue.append  # type: ignore[method-assign,assignment]  # deque.append for the method
        self._popleft = self._queue.popleft

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
