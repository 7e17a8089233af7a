"""DefaultChooser: priorities, bootstrapping and batching composed from config, as in Samza.

Composition (outermost first)::

    BootstrappingChooser            only when some stream must reach its start-time head first
      TieredPriorityChooser         only when more than one priority is in use
        per tier: BatchingChooser   only when task.consumer.batch.size > 1
          RoundRobinChooser         (or, for priority 0, the task.chooser.class factory's chooser)

Priorities come from ``systems.<s>.streams.<t>.samza.priority`` / ``streams.<id>.samza.priority``
(StreamConfig.priority), else the legacy ``task.chooser.priorities.<system>.<stream>``. A bootstrap
stream with no explicit priority gets one more than the highest configured priority (at least 1),
so it outranks everything, as in Samza; every other input gets 0. With none of these keys, the
result is a plain RoundRobinChooser behind one attribute lookup.

Batching sits *inside* each tier, not above the tiers as in Samza's code: Samza's MessageChooser design (SAMZA-2) asks for
affinity "in cases where all envelopes have the same priority", and a batch above the tiers would
let a low-priority partition keep the container for up to ``batch.size`` envelopes while a
higher-priority one waits. Here priority is never broken by a batch.

**Restart guarantee** (SAMZA-2: real-time=1, batch=0; "when a processor is stopped and started,
the real-time stream will be fully caught up to head before any batch messages are processed").
SAMZA-2 gets it from a change to SystemConsumers: never choose while a stream that has not
reached its start-time head has no envelope in the chooser. Here that rule is the
BootstrappingChooser's, so DefaultChooser applies it to every input whose priority is above the
lowest priority in use — bootstrap streams and real-time streams alike. While such a stream is
behind, ``choose`` waits for its next envelope rather than handing the pick to a lower tier, and
the tiers then pick it. Streams of the lowest tier are never held to their head: waiting for them
could only delay, never reorder. A stream that reaches head is ordinary traffic from then on.

Metadata (newest/upcoming offsets) of those streams comes from ``input_stream_metadata``; any
missing there is fetched with one batched ``get_system_stream_metadata`` call per system from
``system_admins``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.job_config import JobConfig
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.model import SystemStream, SystemStreamMetadata, SystemStreamPartition
from samza_dagster.system.chooser.base import (
    MessageChooser,
    chooser_from_factory,
    load_chooser_factory,
)
from samza_dagster.system.chooser.batching import BatchingChooser
from samza_dagster.system.chooser.bootstrapping import BootstrappingChooser
from samza_dagster.system.chooser.errors import ChooserError
from samza_dagster.system.chooser.round_robin import RoundRobinChooser
from samza_dagster.system.chooser.tiered_priority import TieredPriorityChooser
from samza_dagster.system.protocols import SystemAdmin

BATCH_SIZE_KEY = keys.TASK_CONSUMER_BATCH_SIZE.name
#: A bootstrap stream's tier batches this many envelopes of one partition per decision unless
#: ``task.consumer.batch.size`` is set (1 restores Samza's choose-one-at-a-time). A bootstrap
#: stream is read to its head before anything else, so nothing waits behind its batches; and
#: one decision per 250 envelopes instead of one per envelope is what lifted B5 (see
#: docs/benchmarks.md; 250 is also the log's fetch size). A deliberate difference from Samza,
#: whose default is 1 for every stream.
DEFAULT_BOOTSTRAP_BATCH_SIZE = 250


class DefaultChooser(MessageChooser):
    """The composed chooser. ``update``/``choose`` are the inner chooser's own bound methods,
    so wrapping costs nothing per envelope."""

    __slots__ = (
        "inner",
        "priorities",
        "bootstrap_streams",
        "held_to_head",
        "batch_sizes",
        "bootstrapper",
        "update",
        "choose",
        "run_length",
        "take_run",
        "fifo",
    )

    def __init__(
        self,
        inner: MessageChooser,
        *,
        priorities: dict[SystemStream, int] | None = None,
        bootstrap_streams: frozenset[SystemStream] = frozenset(),
        held_to_head: frozenset[SystemStream] = frozenset(),
        batch_sizes: dict[int, int] | None = None,
        bootstrapper: BootstrappingChooser | None = None,
    ) -> None:
        self.inner = inner
        self.priorities = dict(priorities or {})
        self.bootstrap_streams = bootstrap_streams
        self.held_to_head = held_to_head
        #: priority tier → envelopes of one partition per decision (1: no batching)
        self.batch_sizes = dict(batch_sizes or {})
        self.bootstrapper = bootstrapper
        self.update = inner.update  # type: ignore[method-assign]
        self.choose = inner.choose  # type: ignore[method-assign]
        # Runs (chooser/base.py) come from the batching tiers; None when the inner chooser has none.
        self.run_length = getattr(inner, "run_length", None)
        self.take_run = getattr(inner, "take_run", None)
        # Rounds (chooser/base.py) come from a plain round-robin chooser; None otherwise.
        self.fifo = getattr(inner, "fifo", None)

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self.inner.register(ssp, offset)

    def start(self) -> None:
        self.inner.start()

    def stop(self) -> None:
        self.inner.stop()

    def metrics_snapshot(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = {
            "priorities": {str(s): p for s, p in sorted(self.priorities.items())},
            "batch_size": {str(p): n for p, n in sorted(self.batch_sizes.items())},
        }
        if self.bootstrapper is not None:
            snapshot["bootstrap"] = self.bootstrapper.metrics_snapshot()
        return snapshot

    # ---------------------------------------------------------------------------------------
    @classmethod
    def from_config(
        cls,
        config: Config,
        input_stream_metadata: Mapping[SystemStream, SystemStreamMetadata] | None = None,
        system_admins: Mapping[str, SystemAdmin] | None = None,
        metrics: dict[str, Any] | None = None,
    ) -> DefaultChooser:
        """Build the chooser for a job's inputs: ``task.inputs`` plus every stream in
        ``input_stream_metadata``."""
        metadata = dict(input_stream_metadata or {})
        task_config = TaskConfig(config)
        stream_config = StreamConfig(config)
        inputs: list[SystemStream] = list(dict.fromkeys([*task_config.inputs, *metadata]))
        input_set = set(inputs)

        _check_bootstrap_flags(config, stream_config, input_set)
        bootstrap = frozenset(s for s in inputs if stream_config.is_bootstrap(s))

        legacy = task_config.legacy_priorities()
        explicit: dict[SystemStream, int] = {}
        for stream in inputs:
            priority = stream_config.priority(stream)
            if priority is None:
                priority = legacy.get(stream)
            if priority is not None:
                explicit[stream] = priority
        top = max([0, *explicit.values()]) + 1
        priorities: dict[SystemStream, int] = {}
        for stream in inputs:
            if stream in explicit:
                priorities[stream] = explicit[stream]
            elif stream in bootstrap:
                priorities[stream] = top
            else:
                priorities[stream] = 0

        batch_size = task_config.consumer_batch_size
        if batch_size < 1:
            raise ConfigError(f"config key {BATCH_SIZE_KEY!r} must be at least 1, got {batch_size}", key=BATCH_SIZE_KEY)
        # Unset, a tier holding a bootstrap stream batches anyway (see batch_size_of_tier)
        batch_size_set = config.get_str(BATCH_SIZE_KEY) is not None
        bootstrap_tiers = {priorities[s] for s in bootstrap}

        def batch_size_of_tier(priority: int) -> int:
            if batch_size_set or priority not in bootstrap_tiers:
                return batch_size
            return DEFAULT_BOOTSTRAP_BATCH_SIZE

        factory = load_chooser_factory(config)
        custom = chooser_from_factory(factory, config, metrics) if factory is not None else None

        def tier_chooser(priority: int) -> MessageChooser:
            base: MessageChooser = custom if (priority == 0 and custom is not None) else RoundRobinChooser()
            size = batch_size_of_tier(priority)
            return BatchingChooser(base, size) if size > 1 else base

        levels = sorted(set(priorities.values()) | {0})
        if len(levels) > 1:
            tiers = {p: tier_chooser(p) for p in levels}
            # Streams registered later without a known priority (none should be) rank as 0.
            inner: MessageChooser = TieredPriorityChooser(priorities, tiers, default=tiers[0])
        else:
            inner = tier_chooser(0)

        lowest = min(priorities.values(), default=0)
        held = frozenset(s for s, p in priorities.items() if s in bootstrap or p > lowest)
        bootstrapper = None
        if held:
            held_metadata = _metadata_for(held, metadata, system_admins)
            bootstrapper = BootstrappingChooser(inner, held_metadata, system_admins)
            inner = bootstrapper
        chooser = cls(
            inner,
            priorities=priorities,
            bootstrap_streams=bootstrap,
            held_to_head=held,
            batch_sizes={p: batch_size_of_tier(p) for p in levels},
            bootstrapper=bootstrapper,
        )
        if metrics is not None:
            metrics["chooser"] = chooser.metrics_snapshot
        return chooser


def _check_bootstrap_flags(config: Config, stream_config: StreamConfig, inputs: set[SystemStream]) -> None:
    """A stream flagged ``samza.bootstrap=true`` that the job does not read is a config mistake:
    the user expects it to be read first, and it would silently not be read at all."""
    default_system = JobConfig(config).default_system
    for key, value in config.items():
        if not key.endswith(".samza.bootstrap"):
            continue
        stream: SystemStream | None = None
        if key.startswith("systems.") and ".streams." in key:
            system, _, rest = key[len("systems.") :].partition(".streams.")
            stream = SystemStream(system, rest[: -len(".samza.bootstrap")])
        elif key.startswith("streams."):
            stream_id = key[len("streams.") : -len(".samza.bootstrap")]
            stream = stream_config.system_stream(stream_id, default_system)
        if stream is None:
            continue
        if not Config({key: value}).get_bool(key):
            continue
        if stream not in inputs:
            known = ", ".join(sorted(str(s) for s in inputs)) or "none"
            raise ConfigError(
                f"config key {key!r} marks {stream} as a bootstrap stream, but it is not an input of "
                f"this job (inputs: {known}); add it to task.inputs or remove the flag",
                key=key,
            )


def _metadata_for(
    streams: frozenset[SystemStream],
    known: Mapping[SystemStream, SystemStreamMetadata],
    system_admins: Mapping[str, SystemAdmin] | None,
) -> dict[SystemStream, SystemStreamMetadata]:
    """Metadata of ``streams``: from ``known``, the rest in one admin call per system."""
    result = {s: known[s] for s in streams if s in known}
    missing: dict[str, list[str]] = {}
    for s in sorted(streams - set(result)):
        missing.setdefault(s.system, []).append(s.stream)
    for system, names in missing.items():
        admin = (system_admins or {}).get(system)
        if admin is None:
            raise ChooserError(
                f"no metadata for stream(s) {', '.join(f'{system}.{n}' for n in names)} that must reach "
                f"their head before lower priorities run, and no SystemAdmin for system {system!r} to fetch it"
            )
        fetched = admin.get_system_stream_metadata(names)
        for name in names:
            if name not in fetched:
                raise ChooserError(f"SystemAdmin of system {system!r} returned no metadata for stream {name!r}")
            result[SystemStream(system, name)] = fetched[name]
    return result
