"""Serdes by name, and which serde applies to which stream's keys and messages.

Names: json, string, bytes, integer, long, noop, msgpack (operator state), pickle (explicit
only), plus any
``serializers.registry.<name>.class=module:Class`` (a Serde class, or a factory with
``get_serde(name, config)``), or one of Samza's factory classes the engine has a serde for
(``SAMZA_SERDE_CLASSES``: the metrics snapshot serdes, whose messages the snapshot reporter
encodes itself).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.system_config import StreamConfig
from samza_dagster.model import SystemStream
from samza_dagster.serde.msgpack_serde import MsgpackSerde
from samza_dagster.serde.serdes import (
    BytesSerde,
    IntegerSerde,
    JsonSerde,
    LongSerde,
    MetricsSnapshotBytesSerde,
    NoOpSerde,
    PickleSerde,
    Serde,
    StringSerde,
)

BUILTIN_SERDES: dict[str, Callable[[], Serde]] = {
    "json": JsonSerde,
    "string": StringSerde,
    "bytes": BytesSerde,
    "integer": IntegerSerde,
    "long": LongSerde,
    "noop": NoOpSerde,
    "msgpack": MsgpackSerde,
    "pickle": PickleSerde,
}
#: Samza's serde factory classes this engine has a serde for (a config carried over from a Samza
#: job names them in ``serializers.registry.<name>.class``)
SAMZA_SERDE_CLASSES: dict[str, Callable[[], Serde]] = {
    "org.apache.samza.serializers.MetricsSnapshotSerdeFactory": lambda: MetricsSnapshotBytesSerde("json"),
    "org.apache.samza.serializers.MetricsSnapshotSerdeV2Factory": lambda: MetricsSnapshotBytesSerde("v2"),
}
#: 'msg' / 'key' → (the stream property, the system's key) naming that field's serde
_SERDE_KEYS = {
    "msg": (keys.STREAM_MSG_SERDE, keys.SYSTEM_MSG_SERDE),
    "key": (keys.STREAM_KEY_SERDE, keys.SYSTEM_KEY_SERDE),
}


def load_class(path: str, key: str) -> type:
    """Import ``module:Class`` (or ``module.Class``), raising ConfigError naming ``key``."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"config key {key!r}: expected module:Class, got {path!r}", key=key)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"config key {key!r}: cannot import module {module_name!r}: {exc}", key=key) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"config key {key!r}: module {module_name!r} has no attribute {attr!r}", key=key) from None


class SerdeRegistry:
    """Resolves serde names (built-in or registered in config) to serde instances."""

    def __init__(self, config: Config) -> None:
        self._config = config
        self._cache: dict[str, Serde] = {}

    def get(self, name: str, key: str = "serde") -> Serde:
        cached = self._cache.get(name)
        if cached is not None:
            return cached
        serde = self._create(name, key)
        self._cache[name] = serde
        return serde

    def _create(self, name: str, key: str) -> Serde:
        class_key = keys.SERDE_CLASS.key(name=name)
        class_path = self._config.get_str(class_key)
        samza_serde = SAMZA_SERDE_CLASSES.get((class_path or "").strip())
        if samza_serde is not None:
            return samza_serde()
        if class_path:
            cls = load_class(class_path, class_key)
            obj = cls()
            if hasattr(obj, "get_serde"):
                obj = obj.get_serde(name, self._config)
            if not (hasattr(obj, "to_bytes") and hasattr(obj, "from_bytes")):
                raise ConfigError(
                    f"config key {class_key!r}: {class_path} is not a serde (needs to_bytes/from_bytes)", key=class_key
                )
            return obj
        factory = BUILTIN_SERDES.get(name)
        if factory is None:
            known = ", ".join(sorted(BUILTIN_SERDES))
            raise ConfigError(
                f"config key {key!r} names unknown serde {name!r}; known: {known}, "
                f"or register one with serializers.registry.{name}.class",
                key=key,
            )
        return factory()

    def _stream_serde(self, system_stream: SystemStream, kind: str) -> Serde | None:
        """kind is 'msg' or 'key'. Stream-level setting first, then the system's."""
        stream_key, system_key = _SERDE_KEYS[kind]
        streams = StreamConfig(self._config)
        name = streams.get_property(system_stream, stream_key)
        key = streams.property_key(system_stream, stream_key)
        if name is None:
            key = system_key.key(system=system_stream.system)
            name = self._config.get_str(key)
        if not name:
            return None
        return self.get(name, key)

    def msg_serde(self, system_stream: SystemStream) -> Serde | None:
        """The configured message serde of a stream, or None when none is configured
        (then values pass as the system carries them: bytes)."""
        return self._stream_serde(system_stream, "msg")

    def key_serde(self, system_stream: SystemStream) -> Serde | None:
        return self._stream_serde(system_stream, "key")
