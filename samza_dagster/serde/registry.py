"""Serdes by name, and which serde applies to which stream's keys and messages.

Names: json, string, bytes, integer, long, noop, msgpack (operator state), pickle (explicit
only), plus any
``serializers.registry.<name>.class=module:Class`` (a Serde class, or a factory with
``get_serde(name, config)``), or one of Samza's factory classes the engine has a serde for
(``SAMZA_SERDE_CLASSES``: the metrics snapshot serdes, whose messages the snapshot reporter
encodes itself).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable

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
        near = _nearest_module(module_name, exc)
        hint = f"; did you mean {near}:{attr}?" if near else ""
        raise ConfigError(f"config key {key!r}: cannot import module {module_name!r}: {exc}{hint}", key=key) from None
    try:
        return getattr(module, attr)
    except AttributeError:
        near = _nearest(attr, (n for n in dir(module) if not n.startswith("_")))
        hint = f"; did you mean {module_name}:{near}?" if near else ""
        raise ConfigError(
            f"config key {key!r}: module {module_name!r} has no attribute {attr!r}{hint}", key=key
        ) from None


def _nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate a typo of ``word`` most likely meant (difflib, as for config keys)."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.75)
    return close[0] if close else None


def _nearest_module(module_name: str, exc: ImportError) -> str | None:
    """``module_name`` with its missing part replaced by the importable module closest to it —
    only when the module itself (or a package on its path) is what is missing, not something it
    imports."""
    missing = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not missing:
        return None
    if module_name != missing and not module_name.startswith(missing + "."):
        return None
    parent, _, last = missing.rpartition(".")
    if parent:
        try:
            path = importlib.import_module(parent).__path__
        except (ImportError, AttributeError):
            return None
        names: Iterable[str] = (m.name for m in pkgutil.iter_modules(path))
    else:  # top level: the working directory first (user_modules_first), then the rest of sys.path
        names = [*(m.name for m in pkgutil.iter_modules()), *sys.builtin_module_names]
    near = _nearest(last, names)
    if near is None:
        return None
    return ".".join(filter(None, [parent, near])) + module_name[len(missing) :]


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
            registered = [
                k[len("serializers.registry.") : -len(".class")]
                for k in self._config
                if k.startswith("serializers.registry.") and k.endswith(".class")
            ]
            near = _nearest(name, [*BUILTIN_SERDES, *registered])
            hint = f"did you mean {near!r}? " if near else ""
            raise ConfigError(
                f"config key {key!r} names unknown serde {name!r}: {hint}known: {known}, "
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
