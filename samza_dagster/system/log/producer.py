"""SystemProducer of the log system: buffered per stream, one transaction per batch.

``send`` picks the partition, checks the payload is bytes and appends a row to the stream's
buffer (a deque: appends from several task threads need no lock). Buffered rows are written in
one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's write lock before the next offset of each
partition is decided, so writers in several processes serialize and offsets stay dense (last
offset + 1, never below where cleaning left a partition: formats.py). A stream must
exist (``create_stream``) before it is produced to; producing does not create it. After each
batch the producer's LogCleaner (cleaner.py) is told which partitions it wrote: it applies the
stream's retention and compaction on its own thread.

The producer's thread. Like Kafka's producer, whose sender thread sends what ``send`` buffered,
a thread of the producer writes a stream's buffer ``log.linger.ms`` (default 5) after it went from
empty to non-empty — so output is visible within milliseconds whatever the commit interval
(without it an unbounded job's output appeared only at its commit, 60 s by default). A stream whose
rows arrive fast enough to fill ``log.batch.size`` within ``FILLING_WAIT_S`` (50 ms) is not written
at every linger (``due_in``): lingering is for latency at low rates, and at high rates a
transaction of a few hundred rows every 5 ms cost each container its share of the file's write
lock and an fsync 200 times a second. A full batch is written by ``send`` itself, on the task's
thread: handing full batches to the producer's thread as well was measured to cost more than it
saved — two Python threads busy at once pass the GIL back and forth (13,000–15,000 voluntary
context switches per 400,000 rows instead of ~5,000), which took ~0.9 CPU-s per 400,000 rows and,
where containers already share the cores, B6's scaling (docs/decisions.md, "Embedded log"). The
write lock is retried every 0.1–0.5 ms (``storage.begin_immediate``), not at SQLite's 1–100 ms
steps, so a ``send`` waiting for another container's transaction waits for little more than it.

A commit still flushes first and writes its checkpoint after: ``flush`` writes what is buffered
after the thread's write in flight (each stream's ``lock`` orders them), so a checkpoint never
covers an input whose outputs are not written and durable. A failed background write keeps its
rows buffered (nothing is lost) and logs a warning; the next ``flush`` writes them or raises.
``log.linger.ms=0`` turns the thread off: nothing but ``send`` (at ``log.batch.size``) and
``flush`` writes.

Next offsets. The writer keeps each partition's next offset after writing to it, so a batch over
1,024 partitions does not ask the file for 1,024 last offsets. The cache is only right while no
other connection has written to the file: under the write lock, each batch first reads
``PRAGMA data_version``, which changes exactly when another connection (another producer, in any
process, or this producer's cleaner recording a partition's floor) committed since this
connection last looked, and forgets every cached offset when it did. A failed batch forgets them
too.

Seals. A batch that fills a format-3 file's head (runs_format.py) leaves its seal to the
producer's sealer thread (sealer.py) instead of running it in the batch's transaction; while the
seal holds the file's write lock, ``send`` keeps buffering the stream (up to
``HOLD_BATCHES_WHILE_SEALING`` batches) and writes what gathered as one batch after it; the
producer's thread holds it back too (were it to write instead, it would wait for the lock and then
write while ``send`` runs: the two threads passing the GIL back and forth as above).

What the writes cost (transactions by cause, lock waits, commit time) is kept per producer and
shown in the container's summary under ``producer-<system>`` (write_stats.py).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable

from samza_dagster.config.config import Config
from samza_dagster.model import OutgoingMessageEnvelope
from samza_dagster.system.errors import MessageTypeError, SystemWriteError, WrongSystemError
from samza_dagster.system.log import formats, storage, transactions, two_phase
from samza_dagster.system.log.cleaner import LogCleaner
from samza_dagster.system.log.config import LogSystemConfig
from samza_dagster.system.log.sealer import HeadSealer
from samza_dagster.system.log.write_stats import WriteStats
from samza_dagster.system.partitioner import RoundRobin, choose_partition

log = logging.getLogger(__name__)

#: One buffered row: (partition, key, value, timestamp ms).
Row = tuple[int, "bytes | None", "bytes | None", int]

#: the longest a stream busy enough to fill ``log.batch.size`` within it waits for the full batch
#: instead of being written at the linger (``due_in``): under B12's 100 ms, and
#: above the 17–33 ms in which a container's stream fills a batch in B6
FILLING_WAIT_S = 0.05
#: while the producer's sealer seals a stream's head (sealer.py), ``send`` keeps up to this many
#: batches of the stream buffered instead of waiting for the file's write lock behind the seal
#: (64,000 rows at the default ``log.batch.size``). A seal of 32,000 rows takes ~80 ms with the
#: sending thread running beside it, in which B13's producer sends ~40,000 rows: at 32 batches
#: it waited ~45 ms behind every seal, at 64 it rarely waits (1,024 / 4 partitions 0.79 → 0.82 in
#: ``bench.log_producer_trace``, docs/benchmarks.md)
HOLD_BATCHES_WHILE_SEALING = 64


class _StreamWriter:
    """The buffer and connection of one stream; ``lock`` serializes its flushes."""

    __slots__ = (
        "name",
        "conn",
        "partition_count",
        "buffer",
        "lock",
        "next_unkeyed",
        "next_offsets",
        "data_version",
        "first_at",
    )

    def __init__(self, name: str, conn: storage.StreamConnection, partition_count: int) -> None:
        self.name = name
        self.conn = conn
        self.partition_count = partition_count
        self.buffer: deque[Row] = deque()
        self.lock = threading.Lock()
        self.next_unkeyed = 0  # round-robin position for messages with no partition and no key
        #: partition → offset its next message gets, valid while ``data_version`` is the file's
        self.next_offsets: dict[int, int] = {}
        self.data_version: int | None = None
        #: when the buffer last went from empty to non-empty (time.monotonic), for the producer's thread
        self.first_at = 0.0


def _as_bytes(value: object, what: str, envelope: OutgoingMessageEnvelope) -> bytes | None:
    if value is None or type(value) is bytes:
        return value  # type: ignore[return-value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise MessageTypeError(
        f"log system producer: the {what} of a message to stream {envelope.system_stream.stream!r} on system "
        f"{envelope.system_stream.system!r} is {type(value).__name__}, not bytes; configure a serde for the stream"
    )


class LogSystemProducer:
    #: ``flush`` writes every source's buffered messages (the container flushes once per commit)
    flush_covers_all_sources = True

    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.log_config = LogSystemConfig.from_config(system_name, config)
        self._writers: dict[str, _StreamWriter] = {}
        self._writers_lock = threading.Lock()
        self._batch_size = self.log_config.batch_size
        self._round_robin = RoundRobin()
        self._sources: set[str] = set()
        cfg = self.log_config
        self._cleaner = LogCleaner(system_name, cfg.path, cfg.synchronous, cfg.busy_timeout_s, cfg.cleaner_interval_s)
        self._thread = _WriterThread(self, cfg.linger_s) if cfg.linger_s > 0 else None
        self._sealer = HeadSealer(system_name, cfg.path, cfg.synchronous, cfg.busy_timeout_s)
        #: a full batch waits while its stream's head is being sealed, up to this many rows
        self._hold_limit = HOLD_BATCHES_WHILE_SEALING * self._batch_size
        self._txn: _Transaction | None = None
        self._stats = WriteStats()

    def register(self, source: str) -> None:
        self._sources.add(source)

    def start(self) -> None:
        pass

    def send(self, source: str, envelope: OutgoingMessageEnvelope) -> None:
        stream = envelope.system_stream.stream
        writer = self._writers.get(stream)
        if writer is None:
            writer = self._open(envelope)
        value = envelope.message
        if value is not None and type(value) is not bytes:
            value = _as_bytes(value, "message", envelope)
        key = envelope.key
        if key is not None and type(key) is not bytes:
            key = _as_bytes(key, "key", envelope)
        partition = envelope.partition
        if partition is None and key is None and envelope.partition_key is None:
            # the common case, inlined; a race between sending threads only skews the spread
            partition = writer.next_unkeyed % writer.partition_count
            writer.next_unkeyed += 1
        else:
            partition = choose_partition(envelope, writer.partition_count, self._round_robin)
        timestamp = envelope.event_time
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        buffer = writer.buffer
        buffer.append((partition, key, value, timestamp))
        size = len(buffer)
        if size >= self._batch_size and (size >= self._hold_limit or self._sealer.sealing != stream):
            self._write(writer, "batch")  # here, not on the producer's thread (module docstring)
        elif size == 1 and self._thread is not None:
            writer.first_at = time.monotonic()
            self._thread.linger()

    def flush(self, source: str) -> None:
        """Write every buffered message of every stream (all sources share the buffers, as
        Samza's Kafka producer flushes all of its sources' messages)."""
        for writer in list(self._writers.values()):
            self._write(writer, "flush")

    def metrics_snapshot(self) -> dict[str, object]:
        """Write transactions and rows by cause, lock waits and commit time (write_stats.py), and
        the head seals of the producer's sealer (sealer.py) with the seconds they took."""
        snapshot = self._stats.snapshot()
        snapshot["head_seals"] = self._sealer.seals
        snapshot["head_seal_s"] = round(self._sealer.seal_s, 4)
        return snapshot

    @property
    def cleaner(self) -> LogCleaner:
        """The thread that applies the streams' retention and compaction (cleaner.py)."""
        return self._cleaner

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.stop()
        if self._txn is None:
            self.flush("")
        elif self.has_open_transaction():
            self.abort_transaction()  # not committed: nobody may read it (the next commit would have)
        self._sealer.stop()
        self._cleaner.stop()
        with self._writers_lock:
            for writer in self._writers.values():
                writer.conn.close()
            self._writers.clear()

    # -- internals -----------------------------------------------------------------------------
    def _open(self, envelope: OutgoingMessageEnvelope) -> _StreamWriter:
        system_stream = envelope.system_stream
        if system_stream.system != self.system_name:
            raise WrongSystemError(
                f"log producer of system {self.system_name!r} was sent a message for {system_stream}"
            )
        return self._writer(system_stream.stream)

    def _writer(self, stream: str) -> _StreamWriter:
        writer = self._writers.get(stream)
        if writer is None:
            with self._writers_lock:
                writer = self._writers.get(stream)
                if writer is None:
                    cfg = self.log_config
                    conn, count = storage.open_stream(
                        self.system_name, cfg.path, stream, cfg.synchronous, cfg.busy_timeout_s
                    )
                    self._cleaner.watch(stream, conn)
                    writer = self._writers[stream] = _StreamWriter(stream, conn, count)
        return writer

    def _write(self, writer: _StreamWriter, cause: str) -> None:
        """Write what ``writer`` buffers in one transaction; ``cause`` (write_stats.CAUSES) is
        what asked for it."""
        txn = self._txn
        if txn is not None:
            if writer.name == txn.state_stream:
                return  # checkpoint messages are written by the commit point itself
            if writer.name not in txn.registered:
                self._register(txn, writer)
        clock = time.perf_counter
        called = clock()
        with writer.lock:
            buffer = writer.buffer
            n = len(buffer)
            if n == 0:
                return
            popleft = buffer.popleft
            batch = [popleft() for _ in range(n)]
            conn = writer.conn
            try:
                asked = clock()
                storage.begin_immediate(conn, self.log_config.busy_timeout_s)
                locked = clock()
                if txn is None:
                    partitions, seal_due = self._append(conn, writer, batch)
                else:
                    transactions.check_file_epoch(conn, txn.producer, txn.epoch, writer.name)
                    start: dict[int, int] = {}
                    partitions, seal_due = self._append(conn, writer, batch, start)
                    next_offset = writer.next_offsets
                    transactions.record_open(
                        conn, txn.producer, txn.epoch, txn.seq, {p: (start[p], next_offset[p] - 1) for p in partitions}
                    )
                committing = clock()
                conn.execute("COMMIT")
                done = clock()
                self._stats.record(cause, n, done - called, locked - asked, done - committing)
            except BaseException as exc:
                writer.next_offsets.clear()  # advanced for rows that were not written
                writer.data_version = None
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                buffer.extendleft(reversed(batch))  # nothing was written: keep them for a retry
                if isinstance(exc, sqlite3.Error):
                    raise SystemWriteError(
                        f"log system {self.system_name!r}: writing {n} messages to stream {writer.name!r} "
                        f"({storage.stream_file(self.log_config.path, writer.name)}) failed: {exc}"
                    ) from exc
                raise
            if seal_due:
                self._sealer.request(writer.name)
            if txn is not None:
                txn.touched.add(writer.name)
            self._cleaner.note_write(writer.name, partitions)

    def _append(
        self,
        conn: storage.StreamConnection,
        writer: _StreamWriter,
        batch: list[Row],
        start: dict[int, int] | None = None,
    ) -> tuple[set[int], bool]:
        """Insert ``batch`` inside the caller's write transaction, each row at its partition's next
        offset; the partitions written, and whether the file's head is due a seal (left to the
        sealer). With ``start`` (a transaction's batch), each written partition's first offset is
        put there."""
        log_format = conn.log_format
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != writer.data_version:  # another connection wrote: cached offsets may be stale
            writer.next_offsets.clear()
            writer.data_version = version
        next_offset = writer.next_offsets
        partitions = {row[0] for row in batch}
        missing = [partition for partition in partitions if partition not in next_offset]
        if missing:
            next_offset.update(log_format.next_offsets(conn, missing))
        if start is not None:
            start.clear()
            start.update({p: next_offset[p] for p in partitions})
        rows: list[formats.Row] = []
        append = rows.append
        for partition, key, value, timestamp in batch:
            offset = next_offset[partition]
            next_offset[partition] = offset + 1
            append((partition, offset, key, value, timestamp))
        seal_due = log_format.insert(conn, rows, defer_seal=True)
        return partitions, seal_due

    # -- transactions (transactions.py; the container's exactly-once commit) -------------------
    def init_transactions(self, transactional_id: str, state_stream: str) -> None:
        """Kafka's ``initTransactions``: take over ``transactional_id`` — raise its epoch in the
        state file (the ``state_stream``'s, which must exist: the job's checkpoint stream), so
        an older instance still running is fenced; roll forward a transaction it committed
        but did not finish, and remove the messages of one it left open. From now on every write
        is transactional and becomes readable (``read_committed``) at ``commit_transaction``."""
        if self._txn is not None:
            raise transactions.TransactionStateError(
                f"log producer of system {self.system_name!r}: transactions already initialised"
            )
        state = self._writer(state_stream)
        with state.lock:
            record = transactions.bump_epoch(state.conn, transactional_id)
        two_phase.settle(self.log_config, [record])
        self._txn = _Transaction(transactional_id, record.epoch, record.committed_seq + 1, state_stream, record.streams)

    @property
    def transactional(self) -> bool:
        return self._txn is not None

    def has_open_transaction(self) -> bool:
        """Whether the current transaction holds anything (written or buffered)."""
        txn = self._txn
        return txn is not None and (bool(txn.touched) or any(w.buffer for w in list(self._writers.values())))

    def commit_transaction(self) -> None:
        """Write what is buffered (as open messages), then the commit point: in one transaction of
        the state file, the buffered checkpoint messages and the sequence number; then the
        markers that make every written stream's messages of this transaction readable."""
        txn = self._require_transaction()
        for writer in list(self._writers.values()):
            if writer.name != txn.state_stream:
                self._write(writer, "flush")
        state = self._writers[txn.state_stream]
        with state.lock:
            buffer = state.buffer
            batch = [buffer.popleft() for _ in range(len(buffer))]
            conn = state.conn
            try:
                storage.begin_immediate(conn, self.log_config.busy_timeout_s)
                if batch:
                    self._append(conn, state, batch)
                transactions.mark_committed(conn, txn.producer, txn.epoch, txn.seq)
                conn.execute("COMMIT")
            except BaseException:
                state.next_offsets.clear()
                state.data_version = None
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                buffer.extendleft(reversed(batch))
                raise
        committed = txn.seq
        self._settle(txn, lambda conn: transactions.write_markers(conn, txn.producer, committed))

    def prepare_transaction(self) -> two_phase.PreparedTransaction:
        """Phase one of a two-phase commit (Kafka's KIP-939 ``prepareTransaction``): write what
        is buffered as open messages and hand the transaction over to a coordinator
        (two_phase.TransactionCoordinator), which commits it — with other producers' prepared
        transactions, at one commit point — or aborts it. This producer does neither: the next
        transaction starts, and ``stop`` leaves the prepared one open."""
        txn = self._require_transaction()
        for writer in list(self._writers.values()):
            if writer.name != txn.state_stream:
                self._write(writer, "flush")
        prepared = two_phase.PreparedTransaction(txn.producer, txn.epoch, txn.seq, tuple(sorted(txn.touched)))
        txn.seq += 1
        txn.touched.clear()
        return prepared

    def abort_transaction(self) -> None:
        """Drop what is buffered and remove what the transaction wrote (nobody reading
        ``read_committed`` saw it)."""
        txn = self._require_transaction()
        for writer in list(self._writers.values()):
            with writer.lock:
                writer.buffer.clear()
        aborted = txn.seq
        self._settle(
            txn,
            lambda conn: transactions.resolve_file(
                conn, conn.log_format, txn.producer, aborted - 1, abort=(txn.epoch, aborted)
            ),
        )

    def _settle(self, txn: _Transaction, settle: Callable[[storage.StreamConnection], object]) -> None:
        """End the current transaction: the next one gets the next sequence number, and each
        stream it wrote is settled (markers after a commit, removal after an abort)."""
        txn.seq += 1
        touched = sorted(txn.touched)
        txn.touched.clear()
        for name in touched:
            writer = self._writers[name]
            with writer.lock:
                settle(writer.conn)

    def _require_transaction(self) -> _Transaction:
        if self._txn is None:
            raise transactions.TransactionStateError(
                f"log producer of system {self.system_name!r}: init_transactions was not called"
            )
        return self._txn

    def _register(self, txn: _Transaction, writer: _StreamWriter) -> None:
        """Before the first transactional write to a stream: its name in the producer's record (so
        recovery finds it) and its transaction tables."""
        state = self._writers[txn.state_stream]
        with state.lock:
            transactions.register_streams(state.conn, txn.producer, txn.epoch, [writer.name])
        with writer.lock:
            transactions.ensure_stream_tables(writer.conn)
        txn.registered.add(writer.name)


class _Transaction:
    """The producer's transaction state: its id and epoch, the sequence number of the open
    transaction, the streams registered in the state file and the ones written since the last
    commit or abort."""

    __slots__ = ("producer", "epoch", "seq", "state_stream", "registered", "touched")

    def __init__(self, producer: str, epoch: int, seq: int, state_stream: str, registered: set[str]) -> None:
        self.producer = producer
        self.epoch = epoch
        self.seq = seq
        self.state_stream = state_stream
        self.registered = registered
        self.touched: set[str] = set()


def due_in(buffered: int, waited: float, batch_size: int, linger_s: float) -> float:
    """Seconds until a stream's buffer of ``buffered`` rows, the oldest sent ``waited`` seconds ago,
    is to be written (0: now): at once when it holds a full batch; at the linger; later — up to
    ``FILLING_WAIT_S`` after its oldest row — while rows arrive fast enough to fill the batch by
    then, looked at again every linger (so a burst that stops is written at the next look)."""
    if buffered >= batch_size:
        return 0.0
    if waited < linger_s:
        return linger_s - waited
    if waited < FILLING_WAIT_S and batch_size * waited <= buffered * FILLING_WAIT_S:
        return min(FILLING_WAIT_S - waited, linger_s)
    return 0.0


class _WriterThread:
    """The producer's thread (module docstring): started at the first message, it writes each
    buffered stream when ``due_in`` says so — at the linger or, for a stream filling towards a
    batch, once ``FILLING_WAIT_S`` has passed (``send`` writes the full batch before that)."""

    def __init__(self, producer: LogSystemProducer, linger_s: float) -> None:
        self._producer = producer
        self._linger_s = linger_s
        self._wake = threading.Event()  # something is buffered
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def linger(self) -> None:
        """A buffer went from empty to non-empty: write it within the linger."""
        self._wake.set()
        if self._thread is None:
            self._start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        with self._start_lock:
            thread = self._thread
        if thread is not None:
            thread.join()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name=f"log-writer-{self._producer.system_name}"
                )
                self._thread.start()

    def _run(self) -> None:
        wake, stopping = self._wake, self._stopping
        pause: float | None = None  # None: nothing buffered, wait for a wake
        # checked before every wait: stop() may set ``wake`` just before the ``wake.clear()``
        # below, and a wait on the cleared event would then never end (stop() joins this thread)
        while not stopping.is_set():
            if pause is None:
                wake.wait()
                pause = self._linger_s
            stopping.wait(pause)  # the linger (or until a held stream is due), cut short by stop()
            if stopping.is_set():
                return  # stop() flushes what is left
            # before writing: a send that empties-then-refills a buffer wakes us again
            wake.clear()
            pause = self._write_due()

    def _write_due(self) -> float | None:
        """Write every stream that is due, until none is; the seconds until the next one is due,
        or None when nothing is buffered or a write failed (then the next wake or flush retries)."""
        producer = self._producer
        while True:
            clock = time.monotonic()
            next_due: float | None = None
            wrote = False
            for writer in list(producer._writers.values()):
                n = len(writer.buffer)
                if not n:
                    continue
                if n < producer._hold_limit and producer._sealer.sealing == writer.name:
                    wait = self._linger_s  # held while its head is sealed: a look again after the linger
                else:
                    wait = due_in(n, clock - writer.first_at, producer._batch_size, self._linger_s)
                if wait > 0:
                    next_due = wait if next_due is None else min(next_due, wait)
                    continue
                try:
                    producer._write(writer, "full" if n >= producer._batch_size else "linger")
                except Exception as exc:  # noqa: BLE001 - the rows stay buffered; flush() retries
                    log.warning(
                        "log system %r: writing stream %r on the producer's thread failed (kept for the next "
                        "flush): %s",
                        producer.system_name,
                        writer.name,
                        exc,
                    )
                    return None
                wrote = True
            if not wrote:  # rows sent during the writes are looked at again before any wait
                return next_due
