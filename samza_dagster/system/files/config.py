"""``systems.<system>.files.*`` and Samza's partitioner keys, read once per admin, consumer or producer.

* ``files.root`` — the directory (or URL: ``s3://bucket/lake``, anything pyarrow's or fsspec's file
  systems open) under which stream ``<name>`` is the directory ``<root>/<name>/``. Required.
* ``files.fetch.size`` — rows read per Arrow batch and partition (default 1024), lowered by the
  container's buffer budget (``limit_fetch``).
* ``partitioner.defaultPartitioner.groupPattern`` / ``.whitelist`` / ``.blacklist`` — Samza's HDFS
  keys: which files are read and which are grouped into one partition (partitions.py).
* ``files.roll.bytes`` / ``files.roll.ms`` — when the producer closes a Parquet file and begins the
  next (producer.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError


@dataclass(frozen=True, slots=True)
class FilesSystemConfig:
    system: str
    root: str
    fetch_size: int
    group_pattern: str | None
    whitelist: re.Pattern[str]
    blacklist: re.Pattern[str] | None
    roll_bytes: int
    roll_ms: int

    @classmethod
    def from_config(cls, system: str, config: Config) -> FilesSystemConfig:
        root_key = keys.FILES_ROOT.key(system=system)
        root = (keys.FILES_ROOT.get(config, system=system) or "").strip()
        if not root:
            raise ConfigError(
                f"config key {root_key!r} is not set: the files system {system!r} needs the directory "
                "(or URL) its streams are directories of",
                key=root_key,
            )
        blacklist = keys.FILES_BLACKLIST.get(config, system=system)
        return cls(
            system=system,
            root=root,
            fetch_size=keys.FILES_FETCH_SIZE.get(config, system=system),
            group_pattern=keys.FILES_GROUP_PATTERN.get(config, system=system),
            whitelist=_regex(config, keys.FILES_WHITELIST, system, keys.FILES_WHITELIST.get(config, system=system)),
            blacklist=_regex(config, keys.FILES_BLACKLIST, system, blacklist) if blacklist else None,
            roll_bytes=keys.FILES_ROLL_BYTES.get(config, system=system),
            roll_ms=keys.FILES_ROLL_MS.get(config, system=system),
        )


def _regex(config: Config, definition: keys.ConfigKey, system: str, value: str) -> re.Pattern[str]:
    try:
        return re.compile(value)
    except re.error as exc:
        key = definition.key(system=system)
        raise ConfigError(f"config key {key!r}: {value!r} is not a regular expression: {exc}", key=key) from None
