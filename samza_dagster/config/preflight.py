"""The config pre-flight, from the key definitions (:mod:`samza_dagster.config.keys`).

* :func:`unread_keys`: keys under a namespace the engine owns that no definition matches — a
  typo such as ``task.clas`` or ``streams.sentences.samza.bouned`` would otherwise be ignored in
  silence (the second leaves a job that never ends). Each comes with the nearest defined key.
  Keys under :data:`~samza_dagster.config.keys.PLUGIN_PREFIXES` belong to other software and are
  never reported, nor are keys of a system whose factory is a plug-in (``module:Class``), which
  reads its own keys; under ``app.``, shared with applications' own keys, only a near miss of a
  defined key is. A near miss (an unread key with a defined key close to it) is a ConfigError
  unless ``job.config.misspelled.keys=warn`` (:func:`check_unread_keys`): a mistyped
  ``samza.bouned`` would otherwise leave a job that never ends, announced by one WARNING.
* :func:`check_values`: every set key that has a definition is read with its type, so a bad
  value fails before anything runs, with a ConfigError naming the key.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.keys import (
    ENGINE_PREFIXES,
    JOB_CONFIG_MISSPELLED_KEYS,
    KEYS,
    PLUGIN_PREFIXES,
    SYSTEM_FACTORY,
    ConfigKey,
)

log = logging.getLogger(__name__)

_BUILTIN_SYSTEM_FACTORIES = ("log", "kafka", "inmemory", "files", "iceberg")
_PLUGIN = [
    re.compile(re.escape(prefix).replace(re.escape("<system>"), r"[^.]+").replace(re.escape("<name>"), r"[^.]+"))
    for prefix in PLUGIN_PREFIXES
]
_PART = re.compile(r"^<[a-z-]+>$")


@dataclass(frozen=True, slots=True)
class UnreadKey:
    """A set key nothing reads, and the defined key it most likely meant (None: no near one)."""

    key: str
    suggestion: str | None

    def message(self) -> str:
        hint = f"; did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"config key {self.key!r} is not a key samza_dagster reads: it has no effect{hint}"


def definition_of(key: str) -> ConfigKey | None:
    """The definition ``key`` is an instance of, if any."""
    for definition in KEYS.values():
        if definition.matches(key):
            return definition
    return None


def unread_keys(config: Config) -> list[UnreadKey]:
    found = []
    for key in config:
        if definition_of(key) is not None or belongs_to_a_plugin(key, config):
            continue
        suggestion = _nearest(key)
        if key.startswith(ENGINE_PREFIXES) or (key.startswith("app.") and suggestion):
            found.append(UnreadKey(key, suggestion))
    return found


def check_unread_keys(config: Config, warn: Callable[[str], None] | None = None) -> list[UnreadKey]:
    """Raise the ConfigError of the first near miss of a defined key (unless
    ``job.config.misspelled.keys=warn``); otherwise one warning (``warn``, default a WARNING
    logged here) per key nothing reads. Returns the keys warned about."""
    found = unread_keys(config)
    if JOB_CONFIG_MISSPELLED_KEYS.get(config) == "error":
        for unread in found:
            if unread.suggestion:
                raise ConfigError(
                    f"{unread.message()} (to run with it anyway: {JOB_CONFIG_MISSPELLED_KEYS.name}=warn)",
                    key=unread.key,
                )
    for unread in found:
        if warn is None:
            log.warning("%s", unread.message())
        else:
            warn(unread.message())
    return found


def check_values(config: Config) -> None:
    """Read every set key that has a definition with its type: the first bad value raises the
    ConfigError naming its key."""
    for key in config:
        definition = definition_of(key)
        if definition is not None:
            definition.read(config, key)


def belongs_to_a_plugin(key: str, config: Config) -> bool:
    """``key`` is read by other software: under a plug-in prefix (but not Samza's own ``samza.``
    properties there), or a key of a system whose factory is a plug-in."""
    for prefix in _PLUGIN:
        match = prefix.match(key)
        if match and not key[match.end() :].startswith("samza."):
            return True
    if key.startswith("systems."):
        system, _, rest = key[len("systems.") :].partition(".")
        factory = (config.get_str(SYSTEM_FACTORY.key(system=system)) or "").strip()
        if factory and factory not in _BUILTIN_SYSTEM_FACTORIES and not rest.startswith(("samza.", "streams.")):
            return True  # a plug-in system's own keys
    return False


def _nearest(key: str) -> str | None:
    candidates = {
        candidate
        for definition in KEYS.values()
        for name in (definition.name, *definition.forms)
        if (candidate := _instantiate(name, key))
    }
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.8)
    return close[0] if close else None


def _instantiate(name: str, key: str) -> str | None:
    """``name`` with its ``<...>`` parts filled from the segments of ``key`` at the same places
    (counted from the front), so ``streams.sentences.samza.bouned`` is compared with
    ``streams.sentences.samza.bounded``; None when ``key`` is too short to fill them."""
    segments = key.split(".")
    out = []
    for i, piece in enumerate(name.split(".")):
        if _PART.match(piece):
            if i >= len(segments) - 1:
                return None
            out.append(segments[i])
        else:
            out.append(piece)
    return ".".join(out)
