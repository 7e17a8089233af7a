"""KafkaSystemAdmin: topic creation and the batched offset lookup.

``get_system_stream_metadata`` answers for every partition of every named topic in one round
of requests: one metadata request (partition counts, missing topics), then one ListOffsets
request per leader for the earliest offsets and one for the latest — never a request per
partition, however many topics and partitions are asked for.

Every request is asked again while the cluster answers "not yet" (a leader being elected, a
broker that has not heard of a topic this process just created: :mod:`.retry`), so a job's
lookups — the changelog offsets of every commit among them — outlast a broker's death.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import (
    StreamSpec,
    SystemStreamMetadata,
    SystemStreamPartition,
    SystemStreamPartitionMetadata,
)
from samza_dagster.system.errors import PartitionError, SamzaSystemError, StreamExistsError, StreamNotFoundError
from samza_dagster.system.int_offsets import compare_int_offsets, offsets_after
from samza_dagster.system.kafka.config import KafkaClientConfigs
from samza_dagster.system.kafka.connecting import connect
from samza_dagster.system.kafka.errors import TopicNotYetKnownError, unavailable
from samza_dagster.system.kafka.retry import (
    kafka_python_transient,
    note_created,
    recently_created,
    retry_window_s,
    retrying,
)

#: CreateTopics' "the broker's ``default.replication.factor``" (KIP-464)
_BROKER_DEFAULT_REPLICATION = -1

_UNKNOWN_TOPIC = 3  # UNKNOWN_TOPIC_OR_PARTITION
_TOPIC_EXISTS = 36  # TOPIC_ALREADY_EXISTS


class KafkaSystemAdmin:
    """SystemAdmin of a Kafka system. Connects lazily, on the first call."""

    def __init__(self, system_name: str, config: Config, clients: KafkaClientConfigs) -> None:
        self.system_name = system_name
        self._clients = clients
        prefix = keys.prefix(keys.SYSTEM_DEFAULT_STREAM_KEYS, system=system_name)
        # unset: the cluster's own default.replication.factor (and its topic defaults below), so
        # changelog and checkpoint topics are as durable as the cluster's operators made its topics
        replication = keys.SYSTEM_REPLICATION_FACTOR.get(config, system=system_name)
        self._replication_factor = _BROKER_DEFAULT_REPLICATION if replication is None else replication
        self._topic_defaults = {
            k: v
            for k, v in config.subset(prefix).items()
            if k != "replication.factor" and not k.startswith("samza.")  # samza.* are stream props
        }
        self._admin: Any = None
        self._lock = threading.Lock()
        self._retry_window_s = retry_window_s(system_name, config)
        self._retry_window_key = keys.SYSTEM_KAFKA_RETRY_WINDOW_MS.key(system=system_name)

    # -- connection ------------------------------------------------------------------------
    def _client(self) -> Any:
        with self._lock:
            if self._admin is None:
                # kafka-python loads only when a Kafka system uses it (kafka.client picks the client library)
                from kafka import KafkaAdminClient

                self._admin = connect(
                    self.system_name,
                    self._clients.bootstrap_servers,
                    "admin",
                    lambda: KafkaAdminClient(**self._clients.admin),
                    self._clients.admin,
                )
            return self._admin

    def _call(self, what: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        """Run an admin request, again while the cluster answers "not yet" (:mod:`.retry`); a
        timeout that outlasts that (the brokers went away) becomes SystemUnavailableError."""
        from kafka.errors import KafkaConnectionError, KafkaTimeoutError

        try:
            return retrying(
                f"Kafka system {self.system_name!r}: {what}",
                lambda: fn(*args, **kwargs),
                kafka_python_transient,
                self._retry_window_s,
                self._retry_window_key,
            )
        except (KafkaTimeoutError, KafkaConnectionError) as exc:
            raise unavailable(self.system_name, self._clients.bootstrap_servers, exc, what) from exc

    def close(self) -> None:
        with self._lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None

    stop = close

    # -- SystemAdmin -----------------------------------------------------------------------
    def create_stream(self, spec: StreamSpec) -> bool:
        """Create the topic with its partition count and configs (spec.config over
        ``systems.<s>.default.stream.*``; the broker's defaults for the rest). False if it exists with the same count; StreamExistsError naming both
        counts if it exists with another."""
        admin = self._client()
        configs = dict(self._topic_defaults)
        configs.update({k: str(v) for k, v in (spec.config or {}).items()})
        topic = spec.physical_name
        # a stream's own replication factor (``streams.<id>.replication.factor``) is no topic config
        replication = configs.pop("replication.factor", None)
        if replication is not None and not replication.strip().isdigit():
            key = f"streams.{spec.id}.replication.factor"
            raise ConfigError(f"config key {key!r} must be a positive integer, got {replication!r}", key=key)
        request = {
            topic: {
                "num_partitions": spec.partition_count,
                "replication_factor": self._replication_factor if replication is None else int(replication),
                "configs": configs,
            }
        }
        # not kafka-python's wait_for_metadata: it waits for a topic the broker refused to create
        # too, and the refusal (a replication factor above the brokers there are) became a timeout
        result = self._call(
            f"create topic {topic!r}", admin.create_topics, request, raise_errors=False, wait_for_metadata=False
        )
        for entry in result["topics"]:
            code = entry["error_code"]
            if code == 0:
                note_created(topic)  # the other brokers may not know it for a moment
                self._partition_counts([topic])  # asks again until the broker asked knows it
                return True
            if code == _TOPIC_EXISTS:
                existing = self._partition_counts([topic])[topic]
                if existing != spec.partition_count:
                    raise StreamExistsError(
                        f"stream {topic!r} (id {spec.id!r}) exists on system {self.system_name!r} with "
                        f"{existing} partitions, but {spec.partition_count} were asked for"
                    )
                return False
            from kafka.errors import for_code

            raise for_code(code)(
                f"creating stream {topic!r} on system {self.system_name!r} "
                f"({spec.partition_count} partitions, configs {configs}): {entry.get('error_message')}"
            )
        raise SamzaSystemError(f"create_topics returned no result for {topic!r}")  # pragma: no cover

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        """One metadata request for all ``topics``; StreamNotFoundError for the first missing one
        (a topic this process created a moment ago is waited for: the broker asked may not know
        it yet)."""
        admin = self._client()

        def describe() -> dict[str, int]:
            from kafka.errors import for_code

            counts: dict[str, int] = {}
            for entry in admin.describe_topics(topics):
                name, code = entry["name"], entry["error_code"]
                if code == _UNKNOWN_TOPIC and recently_created(name):
                    raise TopicNotYetKnownError(
                        f"topic {name!r}, created a moment ago, is not known to every broker yet"
                    )
                if code == _UNKNOWN_TOPIC:
                    raise StreamNotFoundError(self.system_name, name)
                if code != 0:  # a retriable one (LEADER_NOT_AVAILABLE ...) is asked again
                    raise for_code(code)(f"describing stream {name!r} on system {self.system_name!r}")
                counts[name] = len(entry["partitions"])
            return counts

        try:
            counts = self._call("describe topics " + ", ".join(topics), describe)
        except TopicNotYetKnownError as exc:
            raise StreamNotFoundError(self.system_name, topics[0], str(exc)) from exc
        for topic in topics:
            if topic not in counts:
                raise StreamNotFoundError(self.system_name, topic)
        return counts

    def get_system_stream_metadata(self, stream_names: Iterable[str]) -> dict[str, SystemStreamMetadata]:
        """Oldest, newest (None when empty) and upcoming offset of every partition of every
        stream: one metadata request and one ListOffsets request per leader per bound."""
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        names = list(dict.fromkeys(stream_names))
        if not names:
            return {}
        counts = self._partition_counts(names)
        tps = [TopicPartition(t, p) for t in names for p in range(counts[t])]
        admin = self._client()
        where = _partitions_text(tps)
        earliest = self._call(
            f"list earliest offsets of {where}", admin.list_partition_offsets, dict.fromkeys(tps, OffsetSpec.EARLIEST)
        )
        latest = self._call(
            f"list latest offsets of {where}", admin.list_partition_offsets, dict.fromkeys(tps, OffsetSpec.LATEST)
        )
        result: dict[str, SystemStreamMetadata] = {}
        for topic in names:
            partitions: dict[int, SystemStreamPartitionMetadata] = {}
            for p in range(counts[topic]):
                tp = TopicPartition(topic, p)
                oldest = earliest[tp].offset
                upcoming = latest[tp].offset
                partitions[p] = SystemStreamPartitionMetadata(
                    oldest_offset=str(oldest),
                    newest_offset=str(upcoming - 1) if upcoming > oldest else None,
                    upcoming_offset=str(upcoming),
                )
            result[topic] = SystemStreamMetadata(topic, partitions)
        return result

    def last_stable_offsets(self, ssps: Iterable[SystemStreamPartition]) -> dict[SystemStreamPartition, str]:
        """ListOffsets LATEST under ``read_committed`` (one request per leader): the first offset
        of the oldest transaction still open in each partition, or its upcoming offset."""
        from kafka import IsolationLevel, TopicPartition
        from kafka.admin import OffsetSpec

        tps = {ssp: TopicPartition(ssp.stream, ssp.partition) for ssp in ssps}
        if not tps:
            return {}
        found = self._call(
            f"list last stable offsets of {_partitions_text(tps.values())}",
            self._client().list_partition_offsets,
            dict.fromkeys(tps.values(), OffsetSpec.LATEST),
            isolation_level=IsolationLevel.READ_COMMITTED,
        )
        return {ssp: str(found[tp].offset) for ssp, tp in tps.items()}

    def offsets_for_times(
        self, timestamps: dict[SystemStreamPartition, int]
    ) -> dict[SystemStreamPartition, str | None]:
        """The client's offsets-for-times (ListOffsets with a timestamp, one request per leader):
        per partition the earliest offset whose record timestamp is at or after the given one
        (ms); None when no record is."""
        from kafka import TopicPartition

        if not timestamps:
            return {}
        counts = self._partition_counts(sorted({ssp.stream for ssp in timestamps}))
        for ssp in timestamps:
            if not 0 <= ssp.partition < counts[ssp.stream]:
                raise PartitionError(
                    f"kafka system {self.system_name!r}: stream {ssp.stream!r} has no partition {ssp.partition} "
                    f"(it has {counts[ssp.stream]})"
                )
        tps = {ssp: TopicPartition(ssp.stream, ssp.partition) for ssp in timestamps}
        found = self._call(
            f"list offsets for times of {_partitions_text(tps.values())}",
            self._client().list_partition_offsets,
            {tps[ssp]: int(ts) for ssp, ts in timestamps.items()},
        )
        result: dict[SystemStreamPartition, str | None] = {}
        for ssp, tp in tps.items():
            offset, ts = found[tp].offset, found[tp].timestamp
            # no record: offset -1 and timestamp -1; some Kafka-protocol brokers answer offset 0
            # with timestamp -1, and a record that matches always has a timestamp >= the one asked for
            missing = offset is None or offset < 0 or (ts is not None and ts < 0)
            result[ssp] = None if missing else str(offset)
        return result

    #: dense integer offsets; the very function, so the bootstrapping chooser can see it
    #: compares integers and skip the call per envelope (Kafka offsets are integers too)
    offset_comparator = staticmethod(compare_int_offsets)

    def get_offsets_after(self, offsets: dict[SystemStreamPartition, str]) -> dict[SystemStreamPartition, str]:
        return offsets_after(offsets)


def _partitions_text(tps: Iterable[Any]) -> str:
    """``orders[0,1], words[3]``: the topic partitions a request asks about, for its error."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ", ".join(f"{topic}[{','.join(map(str, sorted(ps)))}]" for topic, ps in by_topic.items())
