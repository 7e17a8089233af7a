"""What a Kafka cluster of several brokers answers for a while, and is asked again.

A cluster is not one broker: leadership moves (a broker dies, is restarted, a preferred leader is
elected again) and metadata reaches each broker on its own time. Until it settles, a request can
be answered with an error that says "not yet" — a leader that is gone or not elected
(``NotLeaderForPartition``, ``LeaderNotAvailable``, a refused connection to the old leader), a
broker that does not know a topic created a moment ago (``UnknownTopicOrPartition``), a request
that timed out. Kafka's own clients retry those within ``default.api.timeout.ms`` (60 s), and
Samza's KafkaSystemAdmin retries its metadata lookups with an exponential back-off; so does this
system (:func:`retrying`), logging one warning per call that had to wait. The window is
``systems.<s>.kafka.retry.window.ms`` (:func:`retry_window_s`); a call still failing when it runs
out is :class:`KafkaRetryWindowError`, one line naming the request, the key and the last cause.

A topic this process created is known to exist: a broker that answers "unknown topic" for it
within :data:`CREATED_GRACE_S` of its creation has not applied the controller's record yet
(:func:`note_created`, :func:`recently_created`) — the topic is waited for, not reported missing.
Any other unknown topic is missing at once (a sensor polls for a stream that does not exist yet).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from kafka.errors import UnknownBrokerIdError

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.system.kafka.errors import KafkaRetryWindowError, TopicNotYetKnownError

T = TypeVar("T")

log = logging.getLogger(__name__)

#: how long a call is retried by default (``systems.<s>.kafka.retry.window.ms``): Kafka's
#: ``default.api.timeout.ms``. Longer than a leader election after a broker dies (the controller
#: waits ``broker.session.timeout.ms``, 9 s, before it fences the broker; a controller fail-over
#: adds a quorum election)
RETRY_WINDOW_S = keys.SYSTEM_KAFKA_RETRY_WINDOW_MS.default / 1000
#: the back-off between attempts doubles from the first to the last (Kafka's retry.backoff.ms and
#: retry.backoff.max.ms: 100 ms, 1 s)
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 1.0
#: how long after this process created a topic an "unknown topic" answer means "not yet"
CREATED_GRACE_S = 30.0

_created: dict[str, float] = {}
_created_lock = threading.Lock()


def note_created(topic: str) -> None:
    """Remember that this process just created ``topic``."""
    with _created_lock:
        now = time.monotonic()
        for name in [n for n, at in _created.items() if now - at > CREATED_GRACE_S]:
            del _created[name]
        _created[topic] = now


def recently_created(topic: str) -> bool:
    """Whether this process created ``topic`` within :data:`CREATED_GRACE_S`."""
    with _created_lock:
        at = _created.get(topic)
    return at is not None and time.monotonic() - at <= CREATED_GRACE_S


def retry_window_s(system: str, config: Config) -> float:
    """``systems.<system>.kafka.retry.window.ms``, in seconds."""
    return keys.SYSTEM_KAFKA_RETRY_WINDOW_MS.get(config, system=system) / 1000


def retrying(
    what: str,
    call: Callable[[], T],
    transient: Callable[[BaseException], bool],
    window_s: float | None = None,
    window_key: str = keys.SYSTEM_KAFKA_RETRY_WINDOW_MS.name,
) -> T:
    """``call()``, again after a back-off while it fails with an error ``transient`` accepts,
    for up to ``window_s`` (:data:`RETRY_WINDOW_S` when None); then :class:`KafkaRetryWindowError`
    (``what``, ``window_key`` and the last error in one line). Any other error is raised as it is."""
    window_s = RETRY_WINDOW_S if window_s is None else window_s
    deadline = time.monotonic() + window_s
    backoff = FIRST_BACKOFF_S
    waited = False
    while True:
        try:
            result = call()
        except Exception as exc:
            if not transient(exc):
                raise
            if time.monotonic() + backoff > deadline:
                text = str(exc)  # kafka-python's errors name their class themselves
                text = text if text.startswith(type(exc).__name__) else f"{type(exc).__name__}: {text}"
                cause = " ".join(text.split())  # one line, whatever the client said
                raise KafkaRetryWindowError(
                    f"{what}: no answer within the retry window of {window_s:g} s ({window_key}): {cause}"
                ) from exc
            if not waited:
                # a topic not yet known everywhere is a normal moment after its creation
                level = logging.INFO if isinstance(exc, TopicNotYetKnownError) else logging.WARNING
                log.log(level, "%s: %s: %s; asking again for up to %g s", what, type(exc).__name__, exc, window_s)
                waited = True
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            continue
        if waited:
            log.info("%s: answered", what)
        return result


def kafka_python_transient(exc: BaseException) -> bool:
    """kafka-python's retriable errors (its ``retriable`` flag: NotLeaderForPartition,
    LeaderNotAvailable, UnknownTopicOrPartition, a refused or timed-out request ...),
    UnknownBrokerIdError (a request for a partition whose leader is -1 — none, while a whole
    cluster stops or starts — which kafka-python does not flag retriable), and
    :class:`TopicNotYetKnownError`."""
    return isinstance(exc, (TopicNotYetKnownError, UnknownBrokerIdError)) or bool(getattr(exc, "retriable", False))


def partition_counts_of_created(what: str, lookup: Callable[[], dict[str, int]], topics: set[str]) -> dict[str, int]:
    """``lookup()`` (topic → partition count, a missing topic absent or 0), asked again while a
    topic of ``topics`` that this process created a moment ago is missing from its answer."""

    def ask() -> dict[str, int]:
        counts = lookup()
        late = sorted(t for t in topics if not counts.get(t) and recently_created(t))
        if late:
            raise TopicNotYetKnownError(
                f"topics {', '.join(late)}, created a moment ago, are not known to every broker yet"
            )
        return counts

    try:
        return retrying(what, ask, lambda exc: isinstance(exc, TopicNotYetKnownError))
    except KafkaRetryWindowError:
        return lookup()
