"""Two-phase commit on the embedded log: several transactional producers — each in its own
process, each writing its share of one write — *prepare* their transactions, and one coordinator
commits them all at one commit point, or aborts them. Kafka 4 offers the same to an external
coordinator such as Flink (KIP-939: ``prepareTransaction`` / ``completeTransaction``); here the
coordinator is the Spark driver committing a ``samza`` data source write (spark/transactional.py).

* **Participants.** A LogSystemProducer after ``init_transactions(id, state_stream)`` writes as
  usual (open messages: ``read_committed`` readers stop before them), then
  ``prepare_transaction()`` returns a :class:`PreparedTransaction` — id, epoch, sequence number,
  streams written — which it hands to the coordinator (Spark: in its task's commit message).
* **Commit point.** One SQLite transaction in the state file checks every prepared transaction's
  epoch, marks its sequence committed (as a producer's own commit point does) and inserts the
  write's **ledger** rows (``txn_ledger``: key → summary) — unless one of the ledger keys is
  already there: then nothing is committed. The ledger is what makes a write idempotent: a write
  whose key is in it happened, whatever crashed afterwards.
* **Settling.** :meth:`TransactionCoordinator.recover` fences every producer whose id starts with
  a prefix (raises its epoch, as ``init_transactions`` does: a task attempt still running can write
  nothing more) and settles its open ranges in every stream it registered — ranges of committed
  sequences become readable (the commit markers), the others are removed. After a commit that
  writes the markers and removes what failed task attempts left; before a write (a re-launch) it
  finishes what a killed coordinator left: a commit point without markers rolls forward, prepared
  transactions that never committed are removed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.system.errors import StreamNotFoundError
from samza_dagster.system.log import storage, transactions
from samza_dagster.system.log.config import LogSystemConfig
from samza_dagster.system.log.storage import write_transaction

log = logging.getLogger(__name__)

#: the ledger of committed writes, in the state file beside ``txn_state``
LEDGER_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS txn_ledger (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "committed_ms INTEGER NOT NULL) WITHOUT ROWID"
)


@dataclass(frozen=True, slots=True)
class PreparedTransaction:
    """A participant's prepared transaction: what the coordinator needs to commit it."""

    producer: str
    epoch: int
    seq: int
    streams: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """A committed write: its key, the summary the coordinator recorded, and when (epoch ms)."""

    key: str
    value: dict[str, Any]
    committed_ms: int


def settle(log_config: LogSystemConfig, records: Iterable[transactions.ProducerState]) -> int:
    """Settle the open ranges of each producer (its epoch just raised by ``bump_epoch``) in every
    stream it registered: committed sequences become readable, the rest are removed, and each file
    is fenced to the new epoch. One connection per stream. Returns the messages removed."""
    by_stream: dict[str, list[transactions.ProducerState]] = {}
    for record in records:
        for stream in record.streams:
            by_stream.setdefault(stream, []).append(record)
    cfg = log_config
    removed_total = 0
    for stream in sorted(by_stream):
        try:
            conn, _ = storage.open_stream(cfg.system, cfg.path, stream, cfg.synchronous, cfg.busy_timeout_s)
        except StreamNotFoundError:
            continue  # deleted since: its open messages went with it
        try:
            for record in by_stream[stream]:
                removed = transactions.resolve_file(
                    conn, conn.log_format, record.producer, record.committed_seq, fence_epoch=record.epoch
                )
                if removed:
                    log.info(
                        "log system %r: aborted %d messages of an unfinished transaction of %r in stream %r",
                        cfg.system,
                        removed,
                        record.producer,
                        stream,
                    )
                removed_total += removed
        finally:
            conn.close()
    return removed_total


class TransactionCoordinator:
    """The coordinator side of a two-phase commit whose state file is ``state_stream``'s (a stream
    of the log system that must exist; the participants' ``init_transactions`` name the same)."""

    def __init__(self, system_name: str, config: Config, state_stream: str) -> None:
        self.log_config = cfg = LogSystemConfig.from_config(system_name, config)
        self.state_stream = state_stream
        self._conn, _ = storage.open_stream(system_name, cfg.path, state_stream, cfg.synchronous, cfg.busy_timeout_s)
        try:
            with write_transaction(self._conn):
                transactions.ensure_state_tables(self._conn)
                self._conn.execute(LEDGER_SCHEMA)
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TransactionCoordinator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def committed(self, keys: Iterable[str]) -> dict[str, LedgerRecord]:
        """The ledger records of those of ``keys`` that were committed."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self._conn.execute(
            f"SELECT key, value, committed_ms FROM txn_ledger WHERE key IN ({marks})", wanted
        ).fetchall()
        return {key: LedgerRecord(key, json.loads(value), ms) for key, value, ms in rows}

    def producers(self, prefix: str) -> list[str]:
        """The transactional ids in the state file that start with ``prefix``."""
        rows = self._conn.execute(
            "SELECT producer FROM txn_state WHERE substr(producer, 1, ?) = ? ORDER BY producer", (len(prefix), prefix)
        ).fetchall()
        return [row[0] for row in rows]

    def recover(self, prefix: str) -> int:
        """Fence every producer whose id starts with ``prefix`` and settle what it left open
        (module docstring). Returns the messages removed."""
        records = [transactions.bump_epoch(self._conn, producer) for producer in self.producers(prefix)]
        return settle(self.log_config, records)

    def commit(self, prepared: Sequence[PreparedTransaction], ledger: Mapping[str, Mapping[str, Any]]) -> bool:
        """The commit point: every prepared transaction commits and the ``ledger`` records are
        written, in one SQLite transaction — or, when a ledger key is already committed (the write
        was done before), nothing is and False is returned. A fenced participant (a newer instance
        of it started, or ``recover`` ran since it prepared) fails the whole commit with
        ProducerFencedError. The caller then calls ``recover`` to write the markers."""
        now_ms = int(time.time() * 1000)
        conn = self._conn
        with write_transaction(conn):
            if self.committed(ledger):
                return False
            for txn in prepared:
                transactions.mark_committed(conn, txn.producer, txn.epoch, txn.seq)
            conn.executemany(
                "INSERT INTO txn_ledger (key, value, committed_ms) VALUES (?, ?, ?)",
                [(key, json.dumps(dict(value), separators=(",", ":")), now_ms) for key, value in ledger.items()],
            )
        return True
