"""Exactly-once, idempotent writes of the ``samza`` data source (option ``transactionalId``).

Spark's model of a write is a driver-side commit of the tasks' commit messages; on the embedded
log that is a two-phase commit (samza_dagster/system/log/two_phase.py):

1. **Driver, before the tasks** (:meth:`SparkWriteTransaction.begin`): the write's id (the
   *idempotence key*, e.g. ``backfill/<job>/<batch stream>/<day>``) is looked up in the ledger of
   the state stream (``__samza_spark_writes`` on the written system). Whatever an earlier launch
   of the same write left is finished first: a commit point without markers rolls forward,
   prepared task transactions that never committed are removed, and every earlier task producer
   of the write is fenced. If the ledger has the id, the write happened: nothing is written again.
2. **Each task** writes its rows with a transactional producer whose id is
   ``<write id>/<Spark partition>.<attempt>`` and *prepares* its transaction: its messages are in
   the stream but open — invisible to ``read_committed`` readers — and the prepared transaction
   travels to the driver in the task's commit message.
3. **Driver commit**: one SQLite transaction in the state file commits every task's prepared
   transaction and records the id in the ledger, so the whole write becomes readable at once; then
   the markers, and what failed task attempts left is removed. **Driver abort** removes it all.

A kill anywhere is covered: before the commit point nothing is readable and the re-launch
removes it and writes again; after it the write is in the ledger and the re-launch (rolling the
markers forward) writes nothing. Only the embedded log runs this protocol (its producers'
``prepare_transaction``); another system is a ConfigError naming its factory key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import StreamSpec
from samza_dagster.system.factories import system_factory
from samza_dagster.system.log.factory import LogSystemFactory
from samza_dagster.system.log.two_phase import LedgerRecord, PreparedTransaction, TransactionCoordinator

#: the stream (one partition, no messages) whose file holds the Spark writes' transaction state and ledger
STATE_STREAM = "__samza_spark_writes"


def check_transactional_system(config: Config, system: str, asked_by: str) -> None:
    """ConfigError naming ``systems.<system>.samza.factory`` unless ``system`` is the embedded log
    (``asked_by`` names what asked for exactly-once: an option or a config key)."""
    if isinstance(system_factory(config, system), LogSystemFactory):
        return
    key = keys.SYSTEM_FACTORY.key(system=system)
    factory = (config.get_str(key) or "log").strip()
    raise ConfigError(
        f"{asked_by} asks for an exactly-once write to system {system!r}, whose factory is {factory!r} "
        f"(config key {key!r}); exactly-once Spark writes run on the embedded log (log) only — write "
        "at-least-once to this system, or put the stream on the log",
        key=key,
    )


class SparkWriteTransaction:
    """One idempotent write's transaction protocol (module docstring). Picklable: it holds the
    config and names only, and every call opens the state file for as long as it needs it."""

    def __init__(
        self,
        config: Config,
        system: str,
        write_id: str,
        state_stream: str = STATE_STREAM,
        asked_by: str = 'samza data source option "transactionalId"',
    ) -> None:
        if not write_id.strip():
            raise ConfigError(f"{asked_by} must not be empty", key="transactionalId")
        check_transactional_system(config, system, asked_by)
        self.config = config
        self.system = system
        self.write_id = write_id
        self.state_stream = state_stream

    @property
    def prefix(self) -> str:
        """Every task producer of this write has an id starting so (and no other write's does)."""
        return f"{self.write_id}/"

    def task_producer_id(self, partition: int, attempt: int) -> str:
        return f"{self.prefix}{partition}.{attempt}"

    def begin(self) -> LedgerRecord | None:
        """Before the tasks run: settle what an earlier launch left, fence its producers; the
        ledger record if the write was committed already (then nothing may be written)."""
        self._ensure_state_stream()
        with self._coordinator() as coordinator:
            coordinator.recover(self.prefix)
            return coordinator.committed([self.write_id]).get(self.write_id)

    def commit(self, prepared: Sequence[PreparedTransaction], summary: Mapping[str, Any]) -> LedgerRecord | None:
        """Commit every task's prepared transaction and record the write in the ledger; then make
        it readable and remove what failed attempts left. Returns None, or — when the write had
        been committed meanwhile by another launch — that launch's record (ours is removed)."""
        with self._coordinator() as coordinator:
            done = coordinator.commit(prepared, {self.write_id: summary})
            coordinator.recover(self.prefix)  # markers (or, if not done, removal) for every task attempt
            return None if done else coordinator.committed([self.write_id]).get(self.write_id)

    def abort(self) -> int:
        """Remove everything the write's tasks wrote (nothing of it was readable)."""
        with self._coordinator() as coordinator:
            return coordinator.recover(self.prefix)

    def _coordinator(self) -> TransactionCoordinator:
        return TransactionCoordinator(self.system, self.config, self.state_stream)

    def _ensure_state_stream(self) -> None:
        admin = LogSystemFactory().get_admin(self.system, self.config)
        try:
            admin.create_stream(StreamSpec(self.state_stream, self.state_stream, self.system, 1))
        finally:
            admin.stop()
