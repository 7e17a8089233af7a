"""Config: an immutable str -> str mapping with typed getters, as Samza's Config."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from samza_dagster.config.errors import ConfigError
from samza_dagster.config.properties import load_properties

T = TypeVar("T")

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


class Config(Mapping[str, str]):
    """Immutable configuration. Keys and values are strings, as in Samza.

    Typed getters raise :class:`ConfigError` naming the key and the bad value.
    """

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, object] | Iterable[tuple[str, object]] = ()) -> None:
        items = entries.items() if isinstance(entries, Mapping) else entries
        self._entries: dict[str, str] = {}
        for key, value in items:
            if not isinstance(key, str):
                raise ConfigError(f"config key {key!r} is not a string", key=str(key))
            self._entries[key] = _to_str(value)

    # -- Mapping -----------------------------------------------------------------------------
    def __getitem__(self, key: str) -> str:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Config({len(self._entries)} keys)"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self._entries == other._entries
        if isinstance(other, Mapping):
            return self._entries == dict(other)
        return NotImplemented

    def __hash__(self) -> int:  # pragma: no cover - configs are rarely hashed
        return hash(frozenset(self._entries.items()))

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, path: str | Path) -> Config:
        """Load a Java-style .properties file (see :mod:`samza_dagster.config.properties`)."""
        return cls(load_properties(path))

    def with_overrides(self, overrides: Mapping[str, object]) -> Config:
        """A new Config with ``overrides`` applied on top of this one."""
        merged = dict(self._entries)
        merged.update({k: _to_str(v) for k, v in overrides.items()})
        return Config(merged)

    def without(self, keys: Iterable[str]) -> Config:
        drop = set(keys)
        return Config({k: v for k, v in self._entries.items() if k not in drop})

    def to_dict(self) -> dict[str, str]:
        return dict(self._entries)

    # -- typed getters -----------------------------------------------------------------------
    def get_required(self, key: str) -> str:
        value = self._entries.get(key)
        if value is None or value == "":
            raise ConfigError(f"missing required config key {key!r}", key=key)
        return value

    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self._entries.get(key, default)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        raw = self._entries.get(key)
        if raw is None or raw.strip() == "":
            return default
        try:
            return int(raw.strip())
        except ValueError:
            raise ConfigError(
                f"config key {key!r} must be an integer, got {raw!r}{_comment_hint(raw)}", key=key
            ) from None

    get_long = get_int

    def get_float(self, key: str, default: float | None = None) -> float | None:
        raw = self._entries.get(key)
        if raw is None or raw.strip() == "":
            return default
        try:
            return float(raw.strip())
        except ValueError:
            raise ConfigError(
                f"config key {key!r} must be a number, got {raw!r}{_comment_hint(raw)}", key=key
            ) from None

    def get_bool(self, key: str, default: bool = False) -> bool:
        raw = self._entries.get(key)
        if raw is None or raw.strip() == "":
            return default
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ConfigError(f"config key {key!r} must be true or false, got {raw!r}{_comment_hint(raw)}", key=key)

    def get_list(self, key: str, default: list[str] | None = None) -> list[str]:
        """A comma-separated list; blank entries are dropped."""
        raw = self._entries.get(key)
        if raw is None:
            return list(default or [])
        return [part.strip() for part in raw.split(",") if part.strip()]

    def get_choice(self, key: str, choices: Iterable[str], default: str | None = None) -> str | None:
        allowed = list(choices)
        raw = self._entries.get(key)
        if raw is None or raw.strip() == "":
            return default
        value = raw.strip()
        if value not in allowed:
            raise ConfigError(f"config key {key!r} must be one of {', '.join(allowed)}; got {raw!r}", key=key)
        return value

    def subset(self, prefix: str, strip_prefix: bool = True) -> Config:
        """Entries whose key starts with ``prefix`` (the prefix removed unless told otherwise)."""
        cut = len(prefix) if strip_prefix else 0
        return Config({k[cut:]: v for k, v in self._entries.items() if k.startswith(prefix)})


def _to_str(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _comment_hint(raw: str) -> str:
    """.properties has no inline comments: ``a=1  # note`` makes the value ``1  # note``."""
    return " (.properties has no inline comments: put a comment on its own line)" if "#" in raw else ""
