"""Operator implementations: one small object per operator spec, wired into per-input chains
by :mod:`samza_dagster.operators.task`. Each has ``__call__(message)`` (the per-message path:
no lookups, the next operator is a bound callable) and, where it keeps time-based state,
``on_watermark(ms)`` / ``on_timer(now_ms)`` / ``on_end_of_stream()``.

State (join buffers, window panes, tables) lives in the task's stores, which have
changelogs, so it survives a restart; window and join operators keep an in-memory index of
what the store holds (rebuilt from the store at init) so firing never scans the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from samza_dagster.application.windows import EVENT_TIME, SESSION, WindowPane
from samza_dagster.model import OutgoingMessageEnvelope, SystemStream

Next = Callable[[Any], None]


def _now_ms() -> int:
    return int(time.time() * 1000)


def fan_out(targets: list[Next]) -> Next:
    if len(targets) == 1:
        return targets[0]
    if not targets:
        return lambda m: None
    funcs = tuple(targets)

    def fan(message: Any) -> None:
        for f in funcs:
            f(message)

    return fan


def map_op(fn: Callable[[Any], Any], nxt: Next) -> Next:
    return lambda m: nxt(fn(m))


def flat_map_op(fn: Callable[[Any], Any], nxt: Next) -> Next:
    def flat(m: Any) -> None:
        for out in fn(m):
            nxt(out)

    return flat


def filter_op(fn: Callable[[Any], bool], nxt: Next) -> Next:
    def filt(m: Any) -> None:
        if fn(m):
            nxt(m)

    return filt


class SendToStream:
    """``send_to(output)``: a keyed output takes ``KV(key, value)``; the descriptor's serdes
    are applied here (else the collector applies the configured ones)."""

    __slots__ = ("task", "stream", "kv", "key_to_bytes", "msg_to_bytes", "send")

    def __init__(
        self, task: Any, stream: SystemStream, kv: bool, key_serde: Any, msg_serde: Any, send: Callable[[Any], None]
    ) -> None:
        self.task = task
        self.stream = stream
        self.kv = kv
        self.key_to_bytes = key_serde.to_bytes if key_serde is not None else None
        self.msg_to_bytes = msg_serde.to_bytes if msg_serde is not None else None
        self.send = send

    def __call__(self, m: Any) -> None:
        if self.kv:
            key, value = m
            if key is not None and self.key_to_bytes is not None:
                key = self.key_to_bytes(key)
        else:
            key, value = None, m
        if value is not None and self.msg_to_bytes is not None:
            value = self.msg_to_bytes(value)
        self.send(OutgoingMessageEnvelope(self.stream, value, key, None, None, self.task.event_time))


class PartitionBy:
    """Writes ``key_fn(m)``/``value_fn(m)`` to the intermediate stream, framed as a user
    message of the intermediate-message format, partitioned by the key's bytes (Kafka's
    default partitioner in the producer). Sends go to the producer directly: the bytes are
    final, no configured serde may touch them."""

    __slots__ = (
        "task",
        "stream",
        "key_fn",
        "value_fn",
        "key_to_bytes",
        "msg_to_bytes",
        "producer",
        "source",
        "partitions",
        "task_count",
        "last_watermark",
        "ended",
        "op_id",
    )

    def __init__(
        self,
        task: Any,
        stream: SystemStream,
        partitions: int,
        key_fn: Any,
        value_fn: Any,
        key_serde: Any,
        msg_serde: Any,
        producer: Any,
        source: str,
        op_id: str = "",
    ) -> None:
        self.op_id = op_id
        self.task = task
        self.stream = stream
        self.partitions = partitions
        self.key_fn = key_fn
        self.value_fn = value_fn
        self.key_to_bytes = key_serde.to_bytes
        self.msg_to_bytes = msg_serde.to_bytes
        self.producer = producer
        self.source = source
        self.task_count = 0
        self.last_watermark = -1
        self.ended = False

    def __call__(self, m: Any) -> None:
        key = self.key_fn(m)
        value = self.value_fn(m) if self.value_fn is not None else m
        self.producer.send(
            self.source,
            OutgoingMessageEnvelope(
                self.stream,
                b"\x00" + self.msg_to_bytes(value),
                self.key_to_bytes(key),
                None,
                None,
                self.task.event_time,
            ),
        )


class StreamTableJoin:
    __slots__ = ("store", "fn", "key_fn", "nxt")

    def __init__(self, store: Any, fn: Any, key_fn: Any, nxt: Next) -> None:
        self.store = store
        self.fn = fn
        self.key_fn = key_fn
        self.nxt = nxt

    def __call__(self, m: Any) -> None:
        out = self.fn(m, self.store.get(self.key_fn(m)))
        if out is not None:
            self.nxt(out)


def send_to_table(store: Any) -> Next:
    put, delete = store.put, store.delete

    def to_table(m: Any) -> None:
        key, value = m
        if value is None:
            delete(key)
        else:
            put(key, value)

    return to_table


class StreamStreamJoin:
    """Samza's partial joins: each side keeps the latest message per key (with its time) in
    its store; a message joins the other side's message for its key when that one is within
    ``ttl_ms``. Time is processing time, or event time (``app.join.time=event``) with entries
    expired once the watermark is ``ttl_ms`` past them."""

    def __init__(
        self,
        task: Any,
        spec: Any,
        left_store: Any,
        right_store: Any,
        event_time: bool,
        nxt: Next,
        counters: dict[str, int] | None = None,
    ) -> None:
        self.task = task
        #: the task's metric counters (``join_expired.<op_id>`` shows in container summaries)
        self.counters = counters if counters is not None else {}
        self.counter_name = f"join_expired.{spec.op_id}"
        self.counters.setdefault(self.counter_name, 0)
        self.fn = spec.fn
        self.key_fn = spec.key_fn
        self.other_key_fn = spec.other_key_fn
        self.ttl = spec.ttl_ms
        self.left_store = left_store
        self.right_store = right_store
        self.event_time = event_time
        self.nxt = nxt
        self.op_id: str = spec.op_id
        self.last_watermark = -1
        self.ended = False
        self.expired = 0

    def _ts(self) -> int:
        if self.event_time:
            ts = self.task.event_time
            return ts if ts is not None else _now_ms()
        return _now_ms()

    def left(self, m: Any) -> None:
        key = self.key_fn(m)
        ts = self._ts()
        self.left_store.put(key, (m, ts))
        other = self.right_store.get(key)
        if other is not None and abs(ts - other[1]) <= self.ttl:
            out = self.fn(m, other[0])
            if out is not None:
                self.nxt(out)

    def right(self, m: Any) -> None:
        key = self.other_key_fn(m)
        ts = self._ts()
        self.right_store.put(key, (m, ts))
        other = self.left_store.get(key)
        if other is not None and abs(ts - other[1]) <= self.ttl:
            out = self.fn(other[0], m)
            if out is not None:
                self.nxt(out)

    def _purge(self, limit: int) -> None:
        for store in (self.left_store, self.right_store):
            old = [k for k, (_, ts) in store.all() if ts < limit]
            for k in old:
                store.delete(k)
            self.expired += len(old)
            self.counters[self.counter_name] += len(old)

    def on_timer(self, now_ms: int) -> None:
        if not self.event_time:
            self._purge(now_ms - self.ttl)

    def on_watermark(self, watermark: int) -> None:
        if self.event_time:
            self._purge(watermark - self.ttl)


class WindowOperator:
    """Tumbling or session panes per key, folded into the store (so they survive restarts)
    and fired once: processing-time panes from the timer, event-time panes when the
    watermark passes their end, all remaining panes at end-of-stream. A message for an
    event-time pane that already closed (end <= watermark) is late: counted in
    ``late_messages`` and dropped, never merged into a pane that fired."""

    def __init__(self, task: Any, spec: Any, store: Any, nxt: Next, counters: dict[str, int] | None = None) -> None:
        w = spec.window
        #: the task's metric counters: ``late_messages`` (all windows of the task) and
        #: ``late_messages.<op_id>`` show in container summaries
        self.counters = counters if counters is not None else {}
        self.counter_name = f"late_messages.{spec.op_id}"
        self.counters.setdefault("late_messages", 0)
        self.counters.setdefault(self.counter_name, 0)
        self.task = task
        self.op_id = spec.op_id
        self.store = store
        self.nxt = nxt
        self.size = w.size_ms
        self.session = w.kind == SESSION
        self.event = w.time == EVENT_TIME
        self.key_fn = w.key_fn
        self.timestamp_fn = w.timestamp_fn
        self.initial = w.initial
        self.fold = w.fold
        self.watermark = -1
        self.last_watermark = -1
        self.late_messages = 0
        self.ended = False
        #: store key -> [start, end, acc]: mirrors the store
        self.panes: dict[Any, list] = {k: list(v) for k, v in store.all()}

    def __call__(self, m: Any) -> None:
        if self.timestamp_fn is not None:
            ts = self.timestamp_fn(m)
        elif self.event:
            ts = self.task.event_time
            if ts is None:
                ts = _now_ms()
        else:
            ts = _now_ms()
        key = self.key_fn(m) if self.key_fn is not None else None
        size = self.size
        panes = self.panes
        skey: tuple[Any, ...]  # (key,) for a session, (key, window start) otherwise
        if self.session:
            skey = (key,)
            pane = panes.get(skey)
            if pane is not None and ts >= pane[1]:  # gap elapsed: close it before starting anew
                self._fire_one(skey, pane)
                pane = None
            if pane is None:
                if self.event and ts + size <= self.watermark:
                    self._late()
                    return
                pane = panes[skey] = [ts, ts + size, self.initial()]
            else:
                # one open session per key: a message within it (even out of order, as
                # messages of one key from several upstream partitions interleave) extends it
                if ts + size > pane[1]:
                    pane[1] = ts + size
                if ts < pane[0]:
                    pane[0] = ts
        else:
            start = ts - ts % size
            end = start + size
            if self.event and end <= self.watermark:
                self._late()
                return
            skey = (key, start)
            pane = panes.get(skey)
            if pane is None:
                pane = panes[skey] = [start, end, self.initial()]
        pane[2] = self.fold(m, pane[2])
        self.store.put(skey, pane)

    def _late(self) -> None:
        self.late_messages += 1
        counters = self.counters
        counters["late_messages"] += 1
        counters[self.counter_name] += 1

    def _fire_one(self, skey: Any, pane: list) -> None:
        del self.panes[skey]
        self.store.delete(skey)
        self.nxt(WindowPane(skey[0], pane[0], pane[1], pane[2]))

    def fire_until(self, limit: int) -> None:
        due = sorted(((p[1], repr(k), k) for k, p in self.panes.items() if p[1] <= limit))
        for _, _, skey in due:
            self._fire_one(skey, self.panes[skey])

    def on_timer(self, now_ms: int) -> None:
        if not self.event:
            self.fire_until(now_ms)

    def on_watermark(self, watermark: int) -> None:
        if self.event and watermark > self.watermark:
            self.watermark = watermark
            self.fire_until(watermark)

    def on_end_of_stream(self) -> None:
        self.fire_until(float("inf"))  # type: ignore[arg-type]
