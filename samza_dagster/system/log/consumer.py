"""SystemConsumer of the log system.

Each poll reads the requested partitions of a stream in one call of the file's layout
(``LogFormat.read_many``) on the stream file's single, reused connection. ``PRAGMA data_version``
of a stream file changes when any other connection — in any process — commits to it; a partition
whose last read returned everything it had (fewer rows than the fetch size) is *caught up* at the
version asked just before that read, and is not read again until the version moves: a poll of
partitions with nothing new costs one ``PRAGMA`` per stream, not a read transaction of several
statements per stream. (Traced at B12's 1,000 msgs/s: 73 % of the reads returned nothing, and
the reads were most of the job's CPU: issue 54's section of docs/benchmarks.md.)

When nothing is new, a poll with a timeout waits without spinning: it sleeps and asks only the
version between sleeps. The sleep starts at 5 ms and doubles to 25 ms while nothing comes, across
polls — the run loop polls again every 50 ms while idle, and a backoff that restarted (at 1 ms, up
to 50) in every poll woke the thread six times a poll — and drops back to 5 ms as soon as a read
returns anything. 25 ms: two sleeps per idle 50 ms poll (20 ms made three); a message sent after a
quiet spell waits up to 25 ms (before: the restarted backoff's steps reached 16–19 ms). An idle
job: 0.65–0.7 % of a core with 50 ms, 0.7–0.8 % with 25, 0.75–0.95 % with 20, 1.2 % before. The first sleep is the log's counterpart of the producer's ``log.linger.ms`` (5 ms):
a message that finds the reader waiting is read up to 5 ms later, with whatever else came
meanwhile. At 1 ms a job fed 1,000 messages a second looked and read about once a message (1.5
rows a read), and the looks cost more than the messages: 19–20 % of a core against 10–11 % at
5 ms (2 ms: 14 %, 3 ms: 13 %; issue 54's section of docs/benchmarks.md). A poll that
finds data waits for nothing, so a backlog is read as fast as before.

Bounded streams (``streams.<id>.samza.bounded``) end at the upcoming offset each registered
partition had at ``start()``: after the message just before it, the next poll returns the
partition's end-of-stream envelope, once. An empty partition ends on the first poll.

Isolation (``systems.<s>.consumer.isolation.level``, config.py). ``read_committed`` reads each
partition only up to its last stable offset — before the first message of the oldest transaction
still open in it (transactions.py); a partition waits there until that transaction commits (its
messages become readable) or aborts (they are removed). The bound (the last stable offset, or the
next offset when nothing is open) is read in one snapshot and stays true, so it is asked again only
when a partition has been read up to it: a backlog costs one lookup, not one per poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from samza_dagster.config.config import Config
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import IncomingMessageEnvelope, SystemStreamPartition
from samza_dagster.system.errors import ConsumerSetupError, PartitionError
from samza_dagster.system.int_offsets import parse_offset
from samza_dagster.system.log import storage, transactions
from samza_dagster.system.log.config import LogSystemConfig

#: the first sleep of a waiting poll, and the one after a read that found something
_MIN_BACKOFF_S = 0.005
#: the longest sleep of a waiting poll (module docstring)
_MAX_BACKOFF_S = 0.025


class LogSystemConsumer:
    """Reads registered partitions; ``poll`` may run on another thread than ``register``/``start``
    (one poller at a time)."""

    #: SystemConsumers polls this consumer on the run loop's thread rather than from a poller
    #: thread of its own: a poll is a local SQLite read that never waits on a network, and a
    #: poller thread would take the GIL back from the run loop on every row step (see
    #: samza_dagster/system/consumers.py).
    poll_on_caller_thread = True

    def __init__(self, system_name: str, config: Config) -> None:
        self.system_name = system_name
        self.log_config = LogSystemConfig.from_config(system_name, config)
        self._stream_config = StreamConfig(config)
        self._positions: dict[SystemStreamPartition, int] = {}
        self._ends: dict[SystemStreamPartition, int] = {}
        self._ended: set[SystemStreamPartition] = set()
        self._conns: dict[str, storage.StreamConnection] = {}
        self._lock = threading.Lock()
        self._stopped = False
        self._fetch = self.log_config.fetch_size
        self._read_committed = self.log_config.read_committed
        #: read_committed: per partition, an offset below which everything is stable (_refresh_stable)
        self._stable: dict[SystemStreamPartition, int] = {}
        #: per stream, the layout's read state between polls (LogFormat.new_read_state)
        self._read_states: dict[str, object | None] = {}
        #: partition -> the stream file's ``data_version`` asked just before a read that returned
        #: everything the partition had: until the version moves, reading it again finds nothing
        self._caught_up: dict[SystemStreamPartition, int] = {}
        #: the next sleep of a waiting poll: grows while nothing comes, across polls
        self._backoff = _MIN_BACKOFF_S

    def limit_fetch(self, envelopes: int) -> None:
        """Read at most ``envelopes`` per partition per poll (below ``log.fetch.size``): the
        container's buffer budget divided among its partitions (samza_dagster/system/consumers.py)."""
        self._fetch = max(1, min(self.log_config.fetch_size, envelopes))

    def register(self, ssp: SystemStreamPartition, offset: str) -> None:
        self._positions[ssp] = parse_offset(ssp, offset, "log")

    def start(self) -> None:
        """Open every registered stream (StreamNotFoundError names a missing one) and fix the
        end of each bounded partition."""
        with self._lock:
            by_stream: dict[str, list[SystemStreamPartition]] = {}
            for ssp in self._positions:
                by_stream.setdefault(ssp.stream, []).append(ssp)
            for stream, ssps in by_stream.items():
                conn, count = self._open(stream)
                for ssp in ssps:
                    if not 0 <= ssp.partition < count:
                        raise PartitionError(f"{ssp}: stream {stream!r} has {count} partitions")
                if self._stream_config.is_bounded(ssps[0].system_stream):
                    upcoming = {p: up for p, _oldest, _newest, up in conn.log_format.partition_offsets(conn, count)}
                    for ssp in ssps:
                        self._ends[ssp] = upcoming[ssp.partition]

    def stop(self) -> None:
        self._stopped = True
        with self._lock:
            for conn in self._conns.values():
                conn.close()
            self._conns.clear()

    def poll(
        self, ssps: Iterable[SystemStreamPartition], timeout_s: float
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        ssps = list(ssps)
        with self._lock:
            if self._stopped:
                return {}
            result = self._read(ssps)
            if result:
                self._backoff = _MIN_BACKOFF_S
                return result
            if timeout_s <= 0:
                return result
            deadline = time.monotonic() + timeout_s
            while not self._stopped:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return {}
                time.sleep(min(self._backoff, remaining))
                self._backoff = min(self._backoff * 2, _MAX_BACKOFF_S)
                if self._stopped:
                    break
                # each caught-up partition costs its stream's version here, not a read
                result = self._read(ssps)
                if result:
                    self._backoff = _MIN_BACKOFF_S
                    return result
            return {}

    # -- internals (called with the lock held) --------------------------------------------------
    def _open(self, stream: str) -> tuple[storage.StreamConnection, int]:
        cfg = self.log_config
        conn, count = storage.open_stream(self.system_name, cfg.path, stream, cfg.synchronous, cfg.busy_timeout_s)
        if self._read_committed:
            transactions.ensure_stream_tables(conn)  # a file never written transactionally has none yet
        old = self._conns.pop(stream, None)
        if old is not None:
            old.close()
        self._conns[stream] = conn
        return conn, count

    def _conn(self, stream: str) -> storage.StreamConnection:
        conn = self._conns.get(stream)
        if conn is None:
            conn = self._open(stream)[0]
        return conn

    def _read(self, ssps: list[SystemStreamPartition]) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        return self._read_in(ssps, self._stable if self._read_committed else None)

    def _refresh_stable(self, stream: str, conn: storage.StreamConnection) -> None:
        """read_committed: how far each registered partition of ``stream`` may be read — its last
        stable offset, or its next offset when no transaction is open — from one snapshot. Stays
        true for good (what is stable stays stable; a new transaction starts at or past the next
        offset), so it is asked again only when a partition has been read up to it."""
        partitions = [ssp.partition for ssp in self._positions if ssp.stream == stream]
        conn.execute("BEGIN")
        try:
            lso = transactions.last_stable_offsets(conn)
            upcoming = conn.log_format.next_offsets(conn, partitions)
        finally:
            conn.execute("COMMIT")
        self._stable.update(
            {SystemStreamPartition(self.system_name, stream, p): lso.get(p, upcoming[p]) for p in partitions}
        )

    def _requests(
        self,
        ssps: list[SystemStreamPartition],
        stable: dict[SystemStreamPartition, int] | None,
        versions: dict[str, int],
        result: dict[SystemStreamPartition, list[IncomingMessageEnvelope]],
    ) -> dict[str, list[tuple[SystemStreamPartition, int, int | None]]]:
        """What to read of each stream: (partition, position, bound) of every partition of
        ``ssps`` that may have something new. A bounded partition at its end gets its
        end-of-stream envelope in ``result`` (once); a caught-up one is left out while its
        stream's version (asked here, once per stream, into ``versions``) has not moved."""
        positions, ends, caught_up = self._positions, self._ends, self._caught_up
        by_stream: dict[str, list[tuple[SystemStreamPartition, int, int | None]]] = {}
        for ssp in ssps:
            position = positions.get(ssp)
            if position is None:
                raise ConsumerSetupError(f"{ssp} was polled but never registered with the log consumer")
            end = ends.get(ssp)
            if end is not None and position >= end:
                if ssp not in self._ended:
                    self._ended.add(ssp)
                    result[ssp] = [IncomingMessageEnvelope.end_of_stream(ssp)]
                continue
            stream = ssp.stream
            version = versions.get(stream)
            if version is None:
                version = versions[stream] = self._conn(stream).execute("PRAGMA data_version").fetchone()[0]
            if caught_up.get(ssp) == version:
                continue  # read to its end at this version: nothing was committed since
            if stable is not None:
                below = stable.get(ssp)
                if below is None or position >= below:
                    self._refresh_stable(stream, self._conn(stream))
                    below = stable[ssp]
                    if position >= below:
                        caught_up[ssp] = version
                        continue  # nothing new, or an open transaction: wait for its commit or abort
                end = below if end is None else min(end, below)
            by_stream.setdefault(stream, []).append((ssp, position, end))
        return by_stream

    def _read_in(
        self, ssps: list[SystemStreamPartition], stable: dict[SystemStreamPartition, int] | None
    ) -> dict[SystemStreamPartition, list[IncomingMessageEnvelope]]:
        result: dict[SystemStreamPartition, list[IncomingMessageEnvelope]] = {}
        positions, fetch, caught_up = self._positions, self._fetch, self._caught_up
        envelope = IncomingMessageEnvelope
        #: stream -> its file's data_version, asked once per call before anything of it is read
        versions: dict[str, int] = {}
        by_stream = self._requests(ssps, stable, versions, result)
        for stream, requests in by_stream.items():
            conn = self._conn(stream)
            # one call per stream: a layout may read all of them in one pass (format 3's head)
            if stream not in self._read_states:
                self._read_states[stream] = conn.log_format.new_read_state()
            read = conn.log_format.read_many(
                conn,
                [(ssp.partition, position, end) for ssp, position, end in requests],
                fetch,
                self._read_states[stream],
            )
            version = versions[stream]
            for ssp, _position, end in requests:
                rows = read[ssp.partition]
                if rows:
                    result[ssp] = [
                        envelope(ssp, str(offset), key, value, 0 if value is None else len(value), timestamp)
                        for offset, key, value, timestamp in rows
                    ]
                    positions[ssp] = rows[-1][0] + 1
                if len(rows) < fetch:
                    caught_up[ssp] = version  # all there was, as of (at least) this version
                    if end is not None:
                        # everything below the bound is read: step over a gap (compaction, an
                        # abort) before it, so a bounded partition reaches its end even when its
                        # last offsets are gone
                        positions[ssp] = end
                else:
                    caught_up.pop(ssp, None)
        return result
