"""Typed views over ``systems.*``, ``streams.*`` and ``stores.*`` keys.

Stream properties may be given two ways, as in Samza:
``streams.<stream-id>.<prop>`` (with ``streams.<id>.samza.system`` and
``streams.<id>.samza.physical.name``, which defaults to the id) or the older
``systems.<system>.streams.<physical-name>.<prop>``; ``systems.<system>.default.stream.<prop>``
fills in for any stream of that system. The stream-id form wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.keys import ConfigKey
from samza_dagster.model import SystemStream

#: factories whose every stream ends (a files stream: the files there when the job starts)
BOUNDED_FACTORIES = ("files",)


def system_is_bounded(config: Config, system: str) -> bool:
    """Every stream of ``system`` is bounded: its factory reads something finite (files)."""
    return (keys.SYSTEM_FACTORY.get(config, system=system) or "").strip() in BOUNDED_FACTORIES


@dataclass(frozen=True)
class SystemConfig:
    config: Config

    def system_names(self) -> list[str]:
        names = []
        for key in self.config:
            if key.startswith("systems."):
                name = key[len("systems.") :].split(".", 1)[0]
                if name and name not in names:
                    names.append(name)
        return names

    def factory(self, system: str) -> str | None:
        return keys.SYSTEM_FACTORY.get(self.config, system=system)

    def system_subset(self, system: str) -> Config:
        return self.config.subset(keys.prefix(keys.SYSTEM_KEYS, system=system))

    def offset_default(self, system: str) -> str:
        return keys.SYSTEM_OFFSET_DEFAULT.get(self.config, system=system)

    def fetch_threshold(self, system: str) -> tuple[int | None, int | None]:
        """``(messages, bytes)``: how many envelopes, and how many bytes of them, a container may
        buffer from the system in all (``systems.<s>.samza.fetch.threshold``, default
        50,000 as in Samza; ``systems.<s>.samza.fetch.threshold.bytes``, default 64 MiB — Samza
        leaves it off). -1 turns a bound off. ConfigError names a key that is 0 or below -1."""
        bounds: list[int | None] = []
        for definition in (keys.SYSTEM_FETCH_THRESHOLD, keys.SYSTEM_FETCH_THRESHOLD_BYTES):
            value = definition.get(self.config, system=system)
            if value == 0:
                key = definition.key(system=system)
                raise ConfigError(f"config key {key!r} must be positive, or -1 for no bound; got {value}", key=key)
            bounds.append(None if value == -1 else value)
        return bounds[0], bounds[1]


@dataclass(frozen=True)
class StreamConfig:
    config: Config

    def stream_ids(self) -> list[str]:
        ids = []
        for key in self.config:
            if key.startswith("streams."):
                rest = key[len("streams.") :]
                for marker in (".samza.", ".partitions", ".source", ".files."):
                    idx = rest.find(marker)
                    if idx > 0:
                        sid = rest[:idx]
                        if sid not in ids:
                            ids.append(sid)
                        break
        return ids

    def stream_properties(self, stream_id: str) -> dict[str, str]:
        """The stream's own settings for its system, as Samza hands them to its ``StreamSpec``:
        every ``streams.<id>.<name>`` but the engine's (``samza.*``, ``partitions``, ``source``,
        ``files.*``) — Kafka topic configs (``retention.ms``, ``cleanup.policy``,
        ``replication.factor``...), the embedded log's retention and compaction the same."""
        own = ("samza.", "files.")
        return {
            k: v
            for k, v in self.config.subset(f"streams.{stream_id}.").items()
            if k not in ("partitions", "source") and not k.startswith(own)
        }

    def system_of(self, stream_id: str, default_system: str | None = None) -> str | None:
        return keys.STREAM_SYSTEM.get(self.config, stream_id=stream_id) or default_system

    def physical_name(self, stream_id: str) -> str:
        return keys.STREAM_PHYSICAL_NAME.get(self.config, stream_id=stream_id) or stream_id

    def system_stream(self, stream_id: str, default_system: str) -> SystemStream:
        system = self.system_of(stream_id, default_system)
        assert system is not None
        return SystemStream(system, self.physical_name(stream_id))

    def stream_ids_for(self, system_stream: SystemStream, default_system: str | None = None) -> list[str]:
        """Every stream id that names this physical stream."""
        return [
            sid
            for sid in self.stream_ids()
            if self.system_of(sid, default_system) == system_stream.system
            and self.physical_name(sid) == system_stream.stream
        ]

    def get_property(
        self, system_stream: SystemStream, definition: ConfigKey[object], default: str | None = None
    ) -> str | None:
        """A stream property's raw value, looked up in the order the module docstring gives."""
        for key in self._property_keys(system_stream, definition):
            value = self.config.get_str(key)
            if value is not None:
                return value
        return default

    def property_key(self, system_stream: SystemStream, definition: ConfigKey[object]) -> str:
        """The key a user most likely set for this property, for error messages."""
        for sid in self._stream_ids(system_stream):
            key = definition.key(stream_id=sid)
            if key in self.config:
                return key
        return definition.system_stream_key(system_stream.system, system_stream.stream)

    def _property_keys(self, system_stream: SystemStream, definition: ConfigKey[object]) -> list[str]:
        return definition.stream_keys(self._stream_ids(system_stream), system_stream.system, system_stream.stream)

    def _stream_ids(self, system_stream: SystemStream) -> list[str]:
        return self.stream_ids_for(system_stream, keys.JOB_DEFAULT_SYSTEM.get(self.config))

    def _bool(self, system_stream: SystemStream, definition: ConfigKey[object]) -> bool:
        raw = self.get_property(system_stream, definition)
        if raw is None or raw.strip() == "":
            return False
        key = self.property_key(system_stream, definition)
        return Config({key: raw}).get_bool(key)

    def is_bootstrap(self, system_stream: SystemStream) -> bool:
        return self._bool(system_stream, keys.STREAM_BOOTSTRAP)

    def is_bounded(self, system_stream: SystemStream) -> bool:
        """``samza.bounded``, or a stream of a system whose streams always end (files)."""
        return self._bool(system_stream, keys.STREAM_BOUNDED) or system_is_bounded(self.config, system_stream.system)

    def is_reset_offset(self, system_stream: SystemStream) -> bool:
        return self._bool(system_stream, keys.STREAM_RESET_OFFSET)

    def priority(self, system_stream: SystemStream) -> int | None:
        raw = self.get_property(system_stream, keys.STREAM_PRIORITY)
        if raw is None or raw.strip() == "":
            return None
        try:
            return int(raw.strip())
        except ValueError:
            key = self.property_key(system_stream, keys.STREAM_PRIORITY)
            raise ConfigError(f"config key {key!r} must be an integer, got {raw!r}", key=key) from None

    def offset_default(self, system_stream: SystemStream) -> str:
        raw = self.get_property(system_stream, keys.STREAM_OFFSET_DEFAULT)
        if raw is None:
            raw = keys.SYSTEM_OFFSET_DEFAULT.get(self.config, system=system_stream.system)
        if raw not in ("oldest", "upcoming"):
            key = self.property_key(system_stream, keys.STREAM_OFFSET_DEFAULT)
            raise ConfigError(f"config key {key!r} must be oldest or upcoming, got {raw!r}", key=key)
        return raw

    def partitions(self, stream_id: str) -> int | None:
        return keys.STREAM_PARTITIONS.get(self.config, stream_id=stream_id)


@dataclass(frozen=True)
class StorageConfig:
    config: Config

    def store_names(self) -> list[str]:
        names = []
        for key in self.config:
            if key.startswith("stores."):
                name = key[len("stores.") :].split(".", 1)[0]
                if name and name not in names:
                    names.append(name)
        return names

    def factory(self, store: str) -> str:
        return keys.STORE_FACTORY.get(self.config, store=store)

    def changelog(self, store: str, default_system: str) -> SystemStream | None:
        """``stores.<store>.changelog``: ``system.stream`` or a bare stream on the default system."""
        raw = keys.STORE_CHANGELOG.get(self.config, store=store)
        if not raw:
            return None
        system, sep, stream = raw.partition(".")
        if not sep:
            return SystemStream(default_system, raw)
        if not system or not stream:
            key = keys.STORE_CHANGELOG.key(store=store)
            raise ConfigError(f"config key {key!r}: expected system.stream, got {raw!r}", key=key)
        return SystemStream(system, stream)

    def key_serde(self, store: str) -> str | None:
        return keys.STORE_KEY_SERDE.get(self.config, store=store)

    def msg_serde(self, store: str) -> str | None:
        return keys.STORE_MSG_SERDE.get(self.config, store=store)

    def side_inputs(self, store: str) -> list[str]:
        return self.config.get_list(keys.STORE_SIDE_INPUTS.key(store=store))

    def container_cache_size_bytes(self, store: str) -> int:
        """``stores.<store>.container.cache.size.bytes``: the RocksDB block cache of the store
        in one container, shared by all its tasks (Samza's key)."""
        return keys.STORE_CONTAINER_CACHE_SIZE_BYTES.get(self.config, store=store)
