"""TieredPriorityChooser: a higher-priority stream's envelope always goes first.

Each priority has its own chooser (round-robin, batching, time-aligned...) deciding among the
streams of that tier; ``choose`` asks the tiers from the highest priority down and returns the
first envelope any tier gives. This is the QoS rule of Samza's MessageChooser design (SAMZA-2): real-time=1, batch=0 means a batch
message is processed only when no real-time message is available.
"""

from __future__ import annotations

from collections.abc import Callable

from samza_dagster.model import IncomingMessageEnvelope, SystemStream, SystemStreamPartition
from samza_dagster.system.chooser.base import MessageChooser, RunChooser, check_chooser, supports_runs
from samza_dagster.system.chooser.errors import ChooserError


class TieredPriorityChooser(MessageChooser):
    """``priorities``: stream → priority (higher first); ``choosers``: priority → chooser.

    A stream with no priority goes to ``default`` (asked after every tier), or ``update``
    raises naming the stream when there is no default.
    """

    __slots__ = (
        "_priorities",
        "_choosers",
        "_default",
        "_tiers",
        "_tier_chooses",
        "_by_ssp",
        "_runs_by_ssp",
        "run_length",
        "take_run",
    )

    def __init__(
        self,
        priorities: dict[SystemStream, int],
        choosers: dict[int, MessageChooser],
        default: MessageChooser | None = None,
    ) -> None:
        for priority in set(priorities.values()):
            if priority not in choosers:
                streams = sorted(str(s) for s, p in priorities.items() if p == priority)
                raise ChooserError(f"no chooser for priority {priority} (streams {', '.join(streams)})")
        for priority, chooser in choosers.items():
            check_chooser(chooser, f"chooser of priority {priority}")
        if default is not None:
            check_chooser(default, "default chooser")
        self._priorities = dict(priorities)
        self._choosers = dict(choosers)
        self._default = default
        # Highest priority first, the default last; each chooser once even if shared.
        tiers: list[MessageChooser] = []
        for priority in sorted(choosers, reverse=True):
            if not any(c is choosers[priority] for c in tiers):
                tiers.append(choosers[priority])
        if default is not None and not any(c is default for c in tiers):
            tiers.append(default)
        self._tiers = tuple(tiers)
        #: The tiers' bound ``choose`` methods, highest first: no attribute lookup per choose.
        self._tier_chooses = tuple(c.choose for c in tiers)
        # SSP → its tier chooser's bound ``update``, filled lazily: one dict hit per update, no
        # SystemStream built, no attribute lookup (a RoundRobinChooser's is deque.append itself).
        self._by_ssp: dict[SystemStreamPartition, Callable[[IncomingMessageEnvelope], None]] = {}
        # Runs (chooser/base.py) pass through to the tier of the run's partition: that tier was the
        # highest with an envelope when it chose, and no other partition is updated during a run.
        self._runs_by_ssp: dict[SystemStreamPartition, RunChooser | None] = {}
        runs = any(supports_runs(c) for c in tiers)
        self.run_length = self._tier_run_length if runs else None
        self.take_run = self._tier_take_run if runs else None

    def _chooser_for(self, ssp: SystemStreamPartition) -> MessageChooser:
        priority = self._priorities.get(SystemStream(ssp.system, ssp.stream))
        if priority is not None:
            chooser = self._choosers[priority]
        elif self._default is not None:
            chooser = self._default
        else:
            raise ChooserError(
                f"stream {ssp.system}.{ssp.stream} (partition {ssp.partition}) has no priority and "
                f"the TieredPriorityChooser has no default chooser"
            )
        self._by_ssp[ssp] = chooser.update
        self._runs_by_ssp[ssp] = chooser if supports_runs(chooser) else None
        return chooser

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self._chooser_for(ssp).register(ssp, offset)

    def start(self) -> None:
        for chooser in self._tiers:
            chooser.start()

    def stop(self) -> None:
        for chooser in self._tiers:
            chooser.stop()

    def update(self, envelope: IncomingMessageEnvelope) -> None:
        update = self._by_ssp.get(envelope.ssp)
        if update is None:
            update = self._chooser_for(envelope.ssp).update
        update(envelope)

    def choose(self) -> IncomingMessageEnvelope | None:
        for choose in self._tier_chooses:
            envelope = choose()
            if envelope is not None:
                return envelope
        return None

    def _tier_run_length(self, envelope: IncomingMessageEnvelope, available: int) -> int:
        tier = self._runs_by_ssp.get(envelope.ssp)
        return 0 if tier is None else tier.run_length(envelope, available)

    def _tier_take_run(self, last: IncomingMessageEnvelope, count: int) -> None:
        tier = self._runs_by_ssp[last.ssp]
        assert tier is not None, f"a run of {last.ssp} that its tier did not offer"
        tier.take_run(last, count)
