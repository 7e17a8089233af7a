"""The MessageChooser interface, its factory, and how a factory is loaded from config.

A chooser is told, through :meth:`MessageChooser.update`, about at most one outstanding
envelope per SystemStreamPartition (SystemConsumers keeps that promise), and
:meth:`MessageChooser.choose` picks which of them the container processes next. Because it
only ever sees one envelope per partition it orders partitions against each other; it can
never reorder messages within a partition.

Choosers compose (priority tiers over round-robin, batching over those, bootstrapping over
everything): any object with the five methods can be wrapped, so the base class below is a
convenience, not a requirement.

**Runs** (optional, engine-internal; not part of the five methods). A chooser that knows it
would pick the same partition several times in a row — BatchingChooser's affinity — may offer
``run_length(envelope, available)`` and ``take_run(last, count)``; wrappers pass them through.
Right after ``choose`` returned ``envelope``, ``run_length`` answers how many of that partition's
next envelopes (at most ``available``) the chooser would return from its next ``choose`` calls,
were each handed to ``update`` as soon as the previous one is chosen and nothing else updated in
between. SystemConsumers then hands those envelopes to the run loop as one run, without the
per-envelope ``update``/``choose``, and calls ``take_run`` with the last of them so the chooser's
bookkeeping ends where the one-at-a-time calls would have left it. The order of envelopes is
the one-at-a-time order with other partitions' arrivals seen after the run, which is a timing the
poller threads could have produced anyway. A chooser without the two methods never gets runs.

**Rounds** (optional, engine-internal, like runs). A chooser whose ``choose`` returns the envelopes
in exactly the order ``update`` gave them — RoundRobinChooser, whose state is that FIFO — may
expose the FIFO itself as ``fifo`` (a deque; wrappers pass it through). The one-at-a-time order is
then known in advance for as long as every partition in the FIFO has its next envelopes
buffered: the FIFO's envelopes, then each partition's next one in the same partition order, round
after round. SystemConsumers.choose_rounds hands the run loop many of those picks at once and
leaves the FIFO holding what the one-at-a-time calls would have left in it; again the only
difference is that other partitions' arrivals are seen after the rounds.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.task_config import TaskConfig
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.serde.registry import load_class
from samza_dagster.system.chooser.errors import NotAChooserError

CHOOSER_METHODS = ("register", "start", "stop", "update", "choose")
CHOOSER_CLASS_KEY = keys.TASK_CHOOSER_CLASS.name


class MessageChooser:
    """Base class of choosers: ``register``/``start``/``stop`` do nothing unless overridden.

    Call order, as in Samza: ``register`` for every partition, then ``start``, then any
    interleaving of ``update`` and ``choose`` (from one thread), then ``stop``.
    """

    __slots__ = ()

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        """``offset`` is the offset of the first envelope this chooser will see for ``ssp``."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def update(self, envelope: IncomingMessageEnvelope) -> None:
        raise NotImplementedError

    def choose(self) -> IncomingMessageEnvelope | None:
        raise NotImplementedError


class MessageChooserFactory:
    """Builds a chooser; named by ``task.chooser.class`` (module:Class)."""

    def get_chooser(self, config: Config, metrics: dict[str, Any] | None = None) -> MessageChooser:
        raise NotImplementedError


class RunChooser(Protocol):
    """A chooser that offers runs (the module doc)."""

    def run_length(self, envelope: IncomingMessageEnvelope, available: int) -> int: ...

    def take_run(self, last: IncomingMessageEnvelope, count: int) -> None: ...


def supports_runs(chooser: object) -> TypeGuard[RunChooser]:
    """True when ``chooser`` offers runs (``run_length`` and ``take_run``, see the module doc).
    Not an isinstance check against RunChooser: a wrapper holds None in their place when what it
    wraps offers none, so whether they are callable is what counts."""
    return callable(getattr(chooser, "run_length", None)) and callable(getattr(chooser, "take_run", None))


def is_message_chooser(obj: object) -> bool:
    """Duck-typed check: an object with the five chooser methods."""
    return all(callable(getattr(obj, name, None)) for name in CHOOSER_METHODS)


def check_chooser(obj: object, what: str) -> None:
    if not is_message_chooser(obj):
        missing = [name for name in CHOOSER_METHODS if not callable(getattr(obj, name, None))]
        raise NotAChooserError(f"{what} is not a MessageChooser ({type(obj).__name__} lacks {', '.join(missing)})")


def load_chooser_factory(config: Config) -> MessageChooserFactory | None:
    """The factory ``task.chooser.class`` names, or None when the key is not set.

    Raises ConfigError naming the key when the class cannot be imported, cannot be built
    without arguments, or is not a MessageChooserFactory (no callable ``get_chooser``).
    """

    path = TaskConfig(config).chooser_class or ""
    if not path:
        return None
    cls = load_class(path, CHOOSER_CLASS_KEY)
    if not isinstance(cls, type):
        raise ConfigError(f"config key {CHOOSER_CLASS_KEY!r}: {path} is not a class", key=CHOOSER_CLASS_KEY)
    if not callable(getattr(cls, "get_chooser", None)):
        raise ConfigError(
            f"config key {CHOOSER_CLASS_KEY!r}: {path} is not a MessageChooserFactory (no get_chooser method)",
            key=CHOOSER_CLASS_KEY,
        )
    try:
        return cls()
    except Exception as exc:
        raise ConfigError(
            f"config key {CHOOSER_CLASS_KEY!r}: cannot instantiate {path}: {exc}", key=CHOOSER_CLASS_KEY
        ) from exc


def chooser_from_factory(
    factory: MessageChooserFactory, config: Config, metrics: dict[str, Any] | None
) -> MessageChooser:
    """Call the factory and check that what it returned is a chooser (naming the key if not)."""
    chooser = factory.get_chooser(config, metrics)
    if not is_message_chooser(chooser):
        raise ConfigError(
            f"config key {CHOOSER_CLASS_KEY!r}: {type(factory).__name__}.get_chooser returned "
            f"{type(chooser).__name__}, which is not a MessageChooser (needs {', '.join(CHOOSER_METHODS)})",
            key=CHOOSER_CLASS_KEY,
        )
    return chooser
