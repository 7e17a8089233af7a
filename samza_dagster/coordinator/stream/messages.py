"""Coordinator stream messages, as Apache Samza 1.8's ``org.apache.samza.coordinator.stream.messages``
classes (``CoordinatorStreamMessage``, ``SetConfig``, ``SetChangelogMapping``,
``SetContainerHostMapping``, ``Delete``) write them; checked with Samza's own classes in
tests/samza_interop.

A message is a key/value pair. The key is the compact JSON array ``[1,"<type>","<key>"]``;
the value is the compact JSON object
``{"host":..,"username":..,"source":..,"timestamp":<ms>,"values":{..}}`` in exactly that field
order, or ``None`` (a tombstone) for a delete. Compaction keeps the last message per key, which is
why the key carries the type: the last message for a (type, key) wins.

Samza's Java writer may have written the version as the string ``"1"``; both spellings are read,
the integer is always written.

Values as Samza 1.8 keeps them (the design documents' spellings are still read):

* ``set-changelog``: ``{"Partition": "<n>"}`` — capital P, Samza's ``SetChangelogMapping``
  (the design documents wrote ``partition``; Samza's reader found none of those);
* ``set-container-host-assignment``: ``{"host":..,"jmx-url":..,"jmx-tunneling-url":..}`` —
  Samza's ``SetContainerHostMapping`` (the design documents wrote ``hostname``).

Samza's metadata store (``CoordinatorStreamStore``) shares the stream: its namespaces are the key's
type, and some of its users write their values unwrapped — Samza's ``StartpointManager`` puts the
startpoint's own JSON (``samza-startpoint-v1``, ``samza-startpoint-v1-fan-out``) where other
messages have the ``{"host":..,"values":..}`` envelope. Messages of those namespaces
(:data:`UNWRAPPED_TYPES`) carry their value bytes as they are (``raw``).
"""

from __future__ import annotations

import getpass
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from samza_dagster.errors import SamzaError

#: The only coordinator stream message format version there is.
VERSION = 1

#: ``SetChangelogMapping``'s value key (Samza 1.8), and the design documents' spelling, still read
CHANGELOG_PARTITION_KEY = "Partition"
_OLD_CHANGELOG_PARTITION_KEY = "partition"
#: ``SetContainerHostMapping``'s value keys (Samza 1.8), and the design documents' host key, still read
HOST_KEY = "host"
JMX_URL_KEY = "jmx-url"
JMX_TUNNELING_URL_KEY = "jmx-tunneling-url"
_OLD_HOST_KEY = "hostname"

SET_CONFIG = "set-config"
SET_CHANGELOG = "set-changelog"
SET_CONTAINER_HOST_ASSIGNMENT = "set-container-host-assignment"
#: the partition count of an input stream (key ``<system>.<stream>``) a stateful job was grouped on
SET_INPUT_PARTITIONS = "set-input-partitions"
#: The engine's earlier startpoints (values name the partition and task and hold the startpoint):
#: still read, no longer written (``samza_dagster.startpoint.manager`` migrates them)
SET_STARTPOINT = "set-startpoint"
#: Samza 1.8's ``StartpointManager.NAMESPACE``: startpoints as written, keyed
#: ``<system>.<stream>.<partition>`` (``.<task name>`` appended for a task's own)
STARTPOINT_NAMESPACE = "samza-startpoint-v1"
#: Samza 1.8's fan-out namespace: one ``StartpointFanOutPerTask`` per task, keyed by task name
STARTPOINT_FAN_OUT_NAMESPACE = "samza-startpoint-v1-fan-out"
#: metadata-store namespaces whose values Samza writes without the message envelope
UNWRAPPED_TYPES = frozenset({STARTPOINT_NAMESPACE, STARTPOINT_FAN_OUT_NAMESPACE})

_COMPACT = (",", ":")


class CoordinatorStreamFormatError(SamzaError, ValueError):
    """Bytes that are not a coordinator stream message of a version this code understands."""


def coordinator_stream_name(job_name: str, job_id: str | int) -> str:
    """``__samza_coordinator_<job.name>_<job.id>``, ``_`` replaced by ``-`` in both parts,
    so the separators stay unambiguous (as Samza's checkpoint topic naming does)."""
    return f"__samza_coordinator_{job_name.replace('_', '-')}_{str(job_id).replace('_', '-')}"


def _default_host() -> str:
    try:
        return socket.gethostname()
    except OSError:  # pragma: no cover - no hostname configured
        return "unknown"


def _default_username() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return "unknown"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class CoordinatorStreamMessage:
    """One coordinator stream message. Build them with the class methods; ``encode()`` gives
    the bytes Samza writes and :meth:`decode` reads them back."""

    type: str
    key: str
    values: dict[str, Any] = field(default_factory=dict)
    host: str = ""
    username: str = ""
    source: str = ""
    timestamp: int = 0
    version: int = VERSION
    is_delete: bool = False
    #: the value's bytes as they are, for a namespace of :data:`UNWRAPPED_TYPES` (no envelope)
    raw: bytes | None = None

    # -- builders ----------------------------------------------------------------------------
    @classmethod
    def _new(
        cls,
        msg_type: str,
        key: str,
        values: dict[str, Any],
        source: str,
        host: str | None,
        username: str | None,
        timestamp: int | None,
        is_delete: bool = False,
    ) -> CoordinatorStreamMessage:
        return cls(
            type=msg_type,
            key=key,
            values=values,
            host=_default_host() if host is None else host,
            username=_default_username() if username is None else username,
            source=source,
            timestamp=_now_ms() if timestamp is None else int(timestamp),
            is_delete=is_delete,
        )

    @classmethod
    def set_config(
        cls,
        source: str,
        key: str,
        value: str,
        *,
        host: str | None = None,
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        return cls._new(SET_CONFIG, key, {"value": str(value)}, source, host, username, timestamp)

    @classmethod
    def set_changelog(
        cls,
        source: str,
        task_name: str,
        partition: int,
        *,
        host: str | None = None,
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        # Samza writes the partition as a string inside the values map, under a capital P.
        values = {CHANGELOG_PARTITION_KEY: str(int(partition))}
        return cls._new(SET_CHANGELOG, task_name, values, source, host, username, timestamp)

    @classmethod
    def set_container_host_assignment(
        cls,
        source: str,
        container_id: str,
        hostname: str,
        *,
        jmx_url: str = "",
        jmx_tunneling_url: str = "",
        host: str | None = None,
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        """``hostname``: where the container runs. The JMX addresses are Samza's (empty when
        there is none, as Samza's own writer leaves them)."""
        values = {HOST_KEY: hostname, JMX_URL_KEY: jmx_url, JMX_TUNNELING_URL_KEY: jmx_tunneling_url}
        return cls._new(SET_CONTAINER_HOST_ASSIGNMENT, str(container_id), values, source, host, username, timestamp)

    @classmethod
    def set_input_partitions(
        cls,
        source: str,
        stream: str,
        partitions: int,
        *,
        host: str | None = None,
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        """``stream`` is ``<system>.<stream>``; the count is a string, as set-changelog's partition."""
        return cls._new(
            SET_INPUT_PARTITIONS, stream, {"partitions": str(int(partitions))}, source, host, username, timestamp
        )

    @classmethod
    def set_startpoint(
        cls,
        source: str,
        key: str,
        values: dict[str, Any],
        *,
        host: str | None = None,
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        """The engine's earlier startpoint message (read and migrated, no longer written by the
        engine). ``values``: the partition (``system``, ``stream``, ``partition``, optional
        ``taskName``) and ``startpoint``, the startpoint's compact JSON."""
        return cls._new(SET_STARTPOINT, key, dict(values), source, host, username, timestamp)

    @classmethod
    def unwrapped(cls, msg_type: str, key: str, value: bytes) -> CoordinatorStreamMessage:
        """A metadata-store entry written as Samza's ``CoordinatorStreamStore.put`` writes it: the
        key ``[1,"<namespace>","<key>"]``, the value's bytes unwrapped."""
        return cls(type=msg_type, key=key, raw=bytes(value))

    @classmethod
    def delete(
        cls,
        source: str,
        type: str,
        key: str,
        *,
        host: str | None = None,  # noqa: A002 - Samza's name
        username: str | None = None,
        timestamp: int | None = None,
    ) -> CoordinatorStreamMessage:
        """A tombstone: removes the (type, key) entry; encoded with a null value."""
        return cls._new(type, key, {}, source, host, username, timestamp, is_delete=True)

    # -- accessors ---------------------------------------------------------------------------
    @property
    def config_value(self) -> str | None:
        value = self.values.get("value")
        return None if value is None else str(value)

    @property
    def changelog_partition(self) -> int:
        raw = self.values.get(CHANGELOG_PARTITION_KEY, self.values.get(_OLD_CHANGELOG_PARTITION_KEY))
        try:
            return int(str(raw))
        except ValueError:
            raise CoordinatorStreamFormatError(
                f"set-changelog message for task {self.key!r} has a non-integer partition {raw!r}"
            ) from None

    @property
    def input_partitions(self) -> int:
        raw = self.values.get("partitions")
        try:
            return int(str(raw))
        except ValueError:
            raise CoordinatorStreamFormatError(
                f"set-input-partitions message for stream {self.key!r} has a non-integer count {raw!r}"
            ) from None

    @property
    def hostname(self) -> str | None:
        """The container's host (Samza's ``host``, or the design documents' ``hostname``)."""
        value = self.values.get(HOST_KEY, self.values.get(_OLD_HOST_KEY))
        return None if value is None else str(value)

    # -- wire format -------------------------------------------------------------------------
    def encode_key(self) -> bytes:
        return json.dumps([self.version, self.type, self.key], separators=_COMPACT, ensure_ascii=False).encode("utf-8")

    def encode_value(self) -> bytes | None:
        if self.is_delete:
            return None
        if self.raw is not None:
            return self.raw
        body = {
            "host": self.host,
            "username": self.username,
            "source": self.source,
            "timestamp": self.timestamp,
            "values": self.values,
        }
        return json.dumps(body, separators=_COMPACT, ensure_ascii=False).encode("utf-8")

    def encode(self) -> tuple[bytes, bytes | None]:
        return self.encode_key(), self.encode_value()

    @classmethod
    def decode(cls, key_bytes: bytes | str | None, value_bytes: bytes | str | None) -> CoordinatorStreamMessage:
        """Parse a message as Samza (or this package) wrote it.

        Raises :class:`CoordinatorStreamFormatError` for anything else, saying what is wrong;
        the reader turns that into a warning naming the offset.
        """
        if key_bytes is None:
            raise CoordinatorStreamFormatError("message has no key")
        try:
            key = json.loads(key_bytes)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CoordinatorStreamFormatError(f"key is not JSON ({exc}): {_preview(key_bytes)}") from None
        if not isinstance(key, list) or len(key) != 3:
            raise CoordinatorStreamFormatError(
                f"key must be a JSON array [version, type, key]; got {_preview(key_bytes)}"
            )
        raw_version, msg_type, msg_key = key
        version = _parse_version(raw_version)
        if not isinstance(msg_type, str) or not isinstance(msg_key, str):
            raise CoordinatorStreamFormatError(f"key's type and key must be strings; got {_preview(key_bytes)}")
        if value_bytes is None:
            return cls(type=msg_type, key=msg_key, values={}, version=version, is_delete=True)
        if msg_type in UNWRAPPED_TYPES:
            raw = value_bytes.encode("utf-8") if isinstance(value_bytes, str) else bytes(value_bytes)
            return cls(type=msg_type, key=msg_key, version=version, raw=raw)
        try:
            value = json.loads(value_bytes)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CoordinatorStreamFormatError(
                f"value of {msg_type} {msg_key!r} is not JSON ({exc}): {_preview(value_bytes)}"
            ) from None
        if value is None:  # a JSON null is a tombstone too
            return cls(type=msg_type, key=msg_key, values={}, version=version, is_delete=True)
        if not isinstance(value, dict):
            raise CoordinatorStreamFormatError(f"value of {msg_type} {msg_key!r} must be a JSON object")
        values = value.get("values", {})
        if not isinstance(values, dict):
            raise CoordinatorStreamFormatError(f'"values" of {msg_type} {msg_key!r} must be a JSON object')
        timestamp = value.get("timestamp", 0)
        try:
            timestamp = int(timestamp)
        except (TypeError, ValueError):
            raise CoordinatorStreamFormatError(
                f"timestamp of {msg_type} {msg_key!r} must be an integer; got {timestamp!r}"
            ) from None
        return cls(
            type=msg_type,
            key=msg_key,
            values=values,
            host=str(value.get("host") or ""),
            username=str(value.get("username") or ""),
            source=str(value.get("source") or ""),
            timestamp=timestamp,
            version=version,
        )


def _parse_version(raw: object) -> int:
    # bool is an int subclass; true is not a version.
    if isinstance(raw, int) and not isinstance(raw, bool):
        version = raw
    elif isinstance(raw, str) and raw.strip().isdigit():
        version = int(raw.strip())
    else:
        raise CoordinatorStreamFormatError(f"coordinator stream message version {raw!r} is not a number")
    if version != VERSION:
        raise CoordinatorStreamFormatError(
            f"unknown coordinator stream message version {raw!r}; this reader understands version {VERSION}"
        )
    return version


def _preview(data: bytes | str, limit: int = 120) -> str:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes | bytearray) else str(data)
    return repr(text if len(text) <= limit else text[:limit] + "...")
