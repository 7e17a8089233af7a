"""MessageChooser and its implementations: which input envelope the container processes next."""

from samza_dagster.system.chooser.base import (
    CHOOSER_CLASS_KEY,
    MessageChooser,
    MessageChooserFactory,
    is_message_chooser,
    load_chooser_factory,
)
from samza_dagster.system.chooser.batching import BatchingChooser
from samza_dagster.system.chooser.bootstrapping import BootstrappingChooser
from samza_dagster.system.chooser.default import DefaultChooser
from samza_dagster.system.chooser.round_robin import RoundRobinChooser, RoundRobinChooserFactory
from samza_dagster.system.chooser.tiered_priority import TieredPriorityChooser
from samza_dagster.system.chooser.time_aligned import TimeAlignedChooser, TimeAlignedChooserFactory

__all__ = [
    "CHOOSER_CLASS_KEY",
    "BatchingChooser",
    "BootstrappingChooser",
    "DefaultChooser",
    "MessageChooser",
    "MessageChooserFactory",
    "RoundRobinChooser",
    "RoundRobinChooserFactory",
    "TieredPriorityChooser",
    "TimeAlignedChooser",
    "TimeAlignedChooserFactory",
    "is_message_chooser",
    "load_chooser_factory",
]
