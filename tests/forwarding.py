"""Wrappers around a real system consumer, producer or chooser that pass every call on.

Tests subclass them and override only the call they observe or break (a consumer that fails
after a few polls, a chooser that checks the one-outstanding-envelope rule, a producer that
pauses around a flush), so what each wrapper does differently is all that its class shows.
"""

from __future__ import annotations

from typing import Any

from samza_dagster.system.chooser import MessageChooser


class _ForwardingPartitions:
    """``register(ssp, offset)``, ``start`` and ``stop`` passed to ``inner``: the calls a
    consumer and a chooser share."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def register(self, ssp, offset):
        self.inner.register(ssp, offset)

    def start(self):
        self.inner.start()

    def stop(self):
        self.inner.stop()


class ForwardingConsumer(_ForwardingPartitions):
    """A SystemConsumer passing every call to ``inner``."""

    def poll(self, ssps, timeout_s):
        return self.inner.poll(ssps, timeout_s)


class ForwardingProducer:
    """A SystemProducer passing every call to ``inner``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def register(self, source):
        self.inner.register(source)

    def start(self):
        self.inner.start()

    def stop(self):
        self.inner.stop()

    def send(self, source, envelope):
        self.inner.send(source, envelope)

    def flush(self, source):
        self.inner.flush(source)

    # transactions (job.processing.guarantee=exactly-once)
    def init_transactions(self, transactional_id, state_stream):
        self.inner.init_transactions(transactional_id, state_stream)

    def has_open_transaction(self):
        return self.inner.has_open_transaction()

    def commit_transaction(self):
        self.inner.commit_transaction()

    def abort_transaction(self):
        self.inner.abort_transaction()

    def prepare_transaction(self):
        return self.inner.prepare_transaction()


class ForwardingChooser(_ForwardingPartitions, MessageChooser):
    """A MessageChooser passing every call to ``inner``."""

    def update(self, envelope):
        self.inner.update(envelope)

    def choose(self):
        return self.inner.choose()
