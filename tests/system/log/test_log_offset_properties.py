"""The embedded log's offset invariants under any interleaving of writes, tombstones, retention
and compaction passes, and consumer positions (hypothesis, on real SQLite files):

* a partition's upcoming offset never decreases, whatever a cleaning pass removed;
* a write lands at the upcoming offset seen before it: an offset is never given out twice, so a
  checkpoint or a consumer position never points at data that will be reused;
* a consumer at any position reads, in offset order, exactly what was written at those offsets
  (never another message) and never misses what the policy keeps: the newest value of every key
  and every unkeyed message under compaction, the whole suffix after the log start under
  retention.

Interleaved with them, a transactional producer (transactions.py) writes, commits, aborts, and is
replaced by a new instance of itself (its open transaction aborted, the old instance fenced):

* an aborted message is never read again, and its offsets are never given out again;
* a ``read_committed`` consumer reads only plain and committed messages, never past the first
  message of the open transaction; compaction never lets an open message (which may still abort)
  remove the committed message of its key it would supersede;
* a fenced instance's writes fail and leave nothing in the log.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from samza_dagster.config import Config
from samza_dagster.system import OutgoingMessageEnvelope, StreamSpec, SystemStream
from samza_dagster.system.log import LogSystemFactory
from samza_dagster.system.log.runs_format import RunsFormat
from samza_dagster.system.log.transactions import ProducerFencedError
from support.log_reading import Message, read_partition

SYSTEM, STREAM, STATE = "log", "s", "txn-state"
#: cleanup policies (stream properties) the machine runs under; times are the machine's clock, ms
POLICIES = [
    {"cleanup.policy": "compact", "delete.retention.ms": "0", "min.compaction.lag.ms": "0"},
    {"cleanup.policy": "compact", "delete.retention.ms": "50", "min.compaction.lag.ms": "30"},
    {"cleanup.policy": "delete", "retention.ms": "100"},
    {"cleanup.policy": "delete", "retention.bytes": "12"},
    {"cleanup.policy": "compact,delete", "retention.ms": "100", "delete.retention.ms": "0"},
]
KEYS = st.sampled_from([None, "a", "b"])
Written = tuple[str | None, str | None]  # key, value (None: a tombstone)
#: what became of a written offset
PLAIN, OPEN, COMMITTED, ABORTED = "plain", "open", "committed", "aborted"


class LogOffsetMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="log-offsets-"))
        # the producer's own background cleaner never runs: passes happen only as rules, at the
        # machine's clock
        self.config = Config(
            {f"systems.{SYSTEM}.log.path": str(self.root), f"systems.{SYSTEM}.log.cleaner.interval.ms": str(10**9)}
        )
        self.factory = LogSystemFactory()
        self.admin = self.factory.get_admin(SYSTEM, self.config)
        self.producer = self.factory.get_producer(SYSTEM, self.config)
        self.producer.register("p")
        self.producer.start()
        self.policy: dict[str, str] = {}
        self.partitions = 1
        self.now = 1_000_000
        self.written: dict[int, dict[int, Written]] = {}
        self.upcoming: dict[int, int] = {}
        self.positions: list[tuple[int, int]] = []
        self.counter = 0
        #: partition -> offset -> PLAIN / OPEN / COMMITTED / ABORTED
        self.fate: dict[int, dict[int, str]] = {}
        self.txn_producer = None
        self.fenced: list = []  # earlier instances of the transactional producer

    @initialize(policy=st.sampled_from(POLICIES), partitions=st.integers(1, 2))
    def create(self, policy: dict[str, str], partitions: int) -> None:
        self.policy, self.partitions = policy, partitions
        self.admin.create_stream(StreamSpec(STREAM, STREAM, SYSTEM, partitions, dict(policy)))
        self.admin.create_stream(StreamSpec(STATE, STATE, SYSTEM, 1, {"cleanup.policy": "compact"}))
        self.written = {p: {} for p in range(partitions)}
        self.fate = {p: {} for p in range(partitions)}
        self.upcoming = {p: 0 for p in range(partitions)}

    def teardown(self) -> None:
        for producer in [self.txn_producer, *self.fenced]:
            if producer is not None:
                try:
                    producer.stop()
                except ProducerFencedError:
                    pass
        self.producer.stop()
        self.admin.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- what happens to the log ---------------------------------------------------------------
    @rule(data=st.data(), batch=st.lists(st.tuples(KEYS, st.booleans()), min_size=1, max_size=6))
    def write(
        self, data: st.DataObject, batch: list[tuple[str | None, bool]], producer=None, fate: str = PLAIN
    ) -> None:
        partition = data.draw(st.integers(0, self.partitions - 1), label="partition")
        producer = producer or self.producer
        before = self._metadata()[partition].upcoming_offset
        ss = SystemStream(SYSTEM, STREAM)
        sent: list[Written] = []
        for key, tombstone in batch:
            self.counter += 1
            value = None if (tombstone and key is not None) else f"v{self.counter}"
            sent.append((key, value))
            producer.send(
                "p",
                OutgoingMessageEnvelope(
                    ss,
                    None if value is None else value.encode(),
                    None if key is None else key.encode(),
                    partition=partition,
                    event_time=self.now,
                ),
            )
        producer.flush("p")
        start = int(before)
        # the batch lands at the upcoming offset seen before it, densely, in order
        assert self._read(partition, start) == [(start + i, k, v) for i, (k, v) in enumerate(sent)]
        for i, message in enumerate(sent):
            assert start + i not in self.written[partition], f"offset {start + i} given out twice"
            self.written[partition][start + i] = message
            self.fate[partition][start + i] = fate

    # -- the transactional producer ------------------------------------------------------------
    def _new_txn_producer(self):  # noqa: ANN202
        producer = self.factory.get_producer(SYSTEM, self.config)
        producer.register("p")
        producer.start()
        producer.init_transactions("t", STATE)
        return producer

    @rule(data=st.data(), batch=st.lists(st.tuples(KEYS, st.booleans()), min_size=1, max_size=4))
    def write_in_a_transaction(self, data: st.DataObject, batch: list[tuple[str | None, bool]]) -> None:
        if self.txn_producer is None:
            self.txn_producer = self._new_txn_producer()
        self.write(data, batch, self.txn_producer, OPEN)

    @precondition(lambda self: self.txn_producer is not None)
    @rule()
    def commit(self) -> None:
        self.txn_producer.commit_transaction()
        self._settle(COMMITTED)

    @precondition(lambda self: self.txn_producer is not None)
    @rule()
    def abort(self) -> None:
        self.txn_producer.abort_transaction()
        self._settle(ABORTED)

    @precondition(lambda self: self.txn_producer is not None)
    @rule(data=st.data())
    def a_new_instance_takes_over(self, data: st.DataObject) -> None:
        """The container restarts while its old instance still runs: the open transaction is
        aborted, and the old instance can no longer write."""
        old, self.txn_producer = self.txn_producer, self._new_txn_producer()
        self._settle(ABORTED)
        self.fenced.append(old)
        partition = data.draw(st.integers(0, self.partitions - 1), label="partition")
        before = self._metadata()[partition].upcoming_offset
        old.send("p", OutgoingMessageEnvelope(SystemStream(SYSTEM, STREAM), b"zombie", partition=partition))
        try:
            old.flush("p")
            raise AssertionError("a fenced producer wrote")
        except ProducerFencedError:
            pass
        assert self._metadata()[partition].upcoming_offset == before

    def _settle(self, fate: str) -> None:
        for fates in self.fate.values():
            for offset, was in fates.items():
                if was == OPEN:
                    fates[offset] = fate

    @rule(data=st.data())
    def delete_a_key(self, data: st.DataObject) -> None:
        """A tombstone: often the newest message of its partition, which compaction may remove."""
        self.write(data, [(data.draw(st.sampled_from(["a", "b"]), label="key"), True)])

    @rule(ms=st.sampled_from([0, 1, 40, 120]))
    def tick(self, ms: int) -> None:
        self.now += ms

    @rule()
    def clean(self) -> None:
        self.admin.clean_stream(STREAM, self.now)

    @rule(data=st.data())
    def remember_a_position(self, data: st.DataObject) -> None:
        """A consumer (or checkpoint) at any offset up to the upcoming one."""
        partition = data.draw(st.integers(0, self.partitions - 1), label="partition")
        upcoming = int(self._metadata()[partition].upcoming_offset)
        position = data.draw(st.integers(0, upcoming), label="position")
        self.positions = [*self.positions[-3:], (partition, position)]

    # -- what must hold after every step -------------------------------------------------------
    @invariant()
    def the_upcoming_offset_never_decreases(self) -> None:
        if not self.upcoming:
            return
        for partition, pm in self._metadata().items():
            upcoming = int(pm.upcoming_offset)
            assert upcoming >= self.upcoming[partition], (
                f"partition {partition}: upcoming offset went back from {self.upcoming[partition]} to {upcoming}"
            )
            assert upcoming == len(self.written[partition])  # every offset given out once, none skipped
            self.upcoming[partition] = upcoming

    @precondition(lambda self: bool(self.positions))
    @invariant()
    def a_consumer_at_any_position_reads_what_was_written_and_what_the_policy_keeps(self) -> None:
        metadata = self._metadata()
        for partition, position in self.positions:
            got = self._read(partition, position)
            offsets = [o for o, _, _ in got]
            assert offsets == sorted(set(offsets))
            written, fates = self.written[partition], self.fate[partition]
            for offset, key, value in got:
                assert offset >= position and written[offset] == (key, value), f"offset {offset}: read {(key, value)}"
                assert fates[offset] != ABORTED, f"offset {offset} of an aborted transaction was read"
            oldest = int(metadata[partition].oldest_offset)
            kept = self._must_keep(written, max(position, oldest if self._deletes else 0), fates)
            missing = kept - set(offsets)
            assert not missing, f"partition {partition} from {position}: offsets {sorted(missing)} lost"
            # read_committed: the same, up to the first open message
            first_open = min((o for o, f in fates.items() if f == OPEN), default=None)
            committed = self._read(partition, position, read_committed=True)
            assert committed == [m for m in got if first_open is None or m[0] < first_open]
            assert all(fates[o] in (PLAIN, COMMITTED) for o, _, _ in committed)

    # -- helpers -------------------------------------------------------------------------------
    @property
    def _deletes(self) -> bool:
        return "delete" in self.policy["cleanup.policy"]

    def _must_keep(self, written: dict[int, Written], start: int, fates: dict[int, str]) -> set[int]:
        """Offsets at or after ``start`` no cleaning (nor abort) may have removed. An open message
        supersedes nothing yet: its transaction may abort."""
        offsets = [o for o in sorted(written) if o >= start and fates[o] != ABORTED]
        if "compact" not in self.policy["cleanup.policy"]:
            return set(offsets)  # retention removes a prefix only: the rest is whole
        newest: dict[str, int] = {}
        keep: set[int] = set()
        for offset in offsets:
            key, _value = written[offset]
            if key is None or fates[offset] == OPEN:
                keep.add(offset)
            else:
                newest[key] = offset
        keep.update(o for o in newest.values() if written[o][1] is not None)  # tombstones may expire
        return keep

    def _metadata(self):  # noqa: ANN202 - partition -> SystemStreamPartitionMetadata
        return self.admin.get_system_stream_metadata([STREAM])[STREAM].partitions

    def _read(self, partition: int, position: int, read_committed: bool = False) -> list[Message]:
        config = self.config
        if read_committed:
            config = config.with_overrides({f"systems.{SYSTEM}.consumer.isolation.level": "read_committed"})
        return read_partition(config, SYSTEM, STREAM, partition, str(position))


class SealingLogOffsetMachine(LogOffsetMachine):
    """The same machine on format 3 (runs_format.py) with its thresholds lowered so that every
    path of that layout runs within a few steps: the head sealed into runs every ``SEAL_ROWS``
    rows, and batches with ``DIRECT`` rows per partition written as runs of their own (when the
    head is empty) — retention, compaction, aborts and reads meeting rows in the head, in runs,
    and across both."""

    SEAL_ROWS, DIRECT = 3, 2

    def __init__(self) -> None:
        self._thresholds = (RunsFormat.seal_rows, RunsFormat.direct_rows_per_partition)
        RunsFormat.seal_rows, RunsFormat.direct_rows_per_partition = self.SEAL_ROWS, self.DIRECT
        super().__init__()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            RunsFormat.seal_rows, RunsFormat.direct_rows_per_partition = self._thresholds


class HeadOnlyLogOffsetMachine(SealingLogOffsetMachine):
    """Format 3 with every batch through the head (none is narrow enough to skip it)."""

    SEAL_ROWS, DIRECT = 4, 1_000


LogOffsetMachine.TestCase.settings = settings(max_examples=120, stateful_step_count=20, deadline=None)
test_log_offsets_hold_under_any_interleaving = LogOffsetMachine.TestCase
SealingLogOffsetMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=20, deadline=None)
test_log_offsets_hold_with_runs_sealed_every_few_rows = SealingLogOffsetMachine.TestCase
HeadOnlyLogOffsetMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=20, deadline=None)
test_log_offsets_hold_with_every_batch_through_the_head = HeadOnlyLogOffsetMachine.TestCase
