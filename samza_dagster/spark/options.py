"""Options of the ``samza`` data source: which system and stream, the engine config, offsets.

Spark lower-cases data source option *names* (values keep their case), so config keys given
as ``.option("config.<key>", v)`` arrive lower-cased. That is harmless for most keys
(``systems.log.log.path``), but a key that holds a stream or system name with capitals must be
passed in the ``config`` option instead: a JSON object of config keys to values, kept verbatim.
``configPath`` loads a ``.properties`` file. Later sources win: configPath < config < config.*.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from samza_dagster.config.config import Config
from samza_dagster.errors import SamzaError
from samza_dagster.model import SystemStreamPartitionMetadata


class SamzaDataSourceError(SamzaError, ValueError):
    """A ``samza`` data source option or stream that cannot be used; names the option/stream."""


def normalized(options: Mapping[str, Any]) -> dict[str, str]:
    """Plain dict with lower-cased names (picklable, independent of Spark's option class)."""
    return {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}


def required(opts: Mapping[str, str], name: str) -> str:
    value = opts.get(name.lower(), "").strip()
    if not value:
        raise SamzaDataSourceError(f'samza data source: option "{name}" is required')
    return value


def build_config(opts: Mapping[str, str]) -> Config:
    entries: dict[str, str] = {}
    path = opts.get("configpath")
    if path:
        entries.update(Config.from_properties(path).to_dict())
    raw = opts.get("config")
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            raise SamzaDataSourceError(f'samza data source: option "config" is not a JSON object: {exc}') from None
        if not isinstance(parsed, dict):
            raise SamzaDataSourceError('samza data source: option "config" must be a JSON object of config keys')
        entries.update({str(k): str(v) for k, v in parsed.items()})
    for key, value in opts.items():
        if key.startswith("config."):
            entries[key[len("config.") :]] = value
    return Config(entries)


def config_option(config: Mapping[str, str]) -> str:
    """The ``config`` option value that carries ``config`` verbatim (case preserved)."""
    return json.dumps(dict(config), separators=(",", ":"))


def _offset_spec(opts: Mapping[str, str], name: str) -> tuple[str | None, dict[int, str]]:
    """An offset option: one value for every partition, or a JSON object per partition."""
    raw = opts.get(name.lower())
    if raw is None or not raw.strip():
        return None, {}
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            parsed = json.loads(raw)
            return None, {int(p): str(v).strip() for p, v in parsed.items()}
        except (ValueError, TypeError, AttributeError) as exc:
            raise SamzaDataSourceError(
                f'samza data source: option "{name}" must be an offset, "oldest"/"upcoming", or a JSON object '
                f'of partition to offset such as {{"0": 10}}; got {raw!r} ({exc})'
            ) from None
    return raw, {}


def _resolve(value: str, name: str, stream: str, partition: int, meta: SystemStreamPartitionMetadata) -> int:
    lowered = value.lower()
    if lowered in ("oldest", "earliest"):
        return int(meta.oldest_offset)
    if lowered in ("upcoming", "latest"):
        return int(meta.upcoming_offset)
    try:
        return int(value)
    except ValueError:
        raise SamzaDataSourceError(
            f'samza data source: option "{name}" for stream {stream!r} partition {partition}: '
            f"{value!r} is not an integer offset, oldest or upcoming"
        ) from None


def offset_ranges(
    opts: Mapping[str, str], stream: str, partitions: Mapping[int, SystemStreamPartitionMetadata]
) -> dict[int, tuple[int, int]]:
    """[start, end) per partition to read. Defaults: oldest offset to the upcoming offset seen now
    (so a read is a snapshot, never a tail). ``partitions`` restricts which stream partitions
    are read. A start before the oldest retained offset is an error (those messages are gone);
    an end past the upcoming offset is capped to it (the future cannot be read in a batch)."""
    wanted = sorted(partitions)
    raw_parts = opts.get("partitions", "").strip()
    if raw_parts:
        try:
            wanted = sorted({int(p) for p in raw_parts.split(",") if p.strip()})
        except ValueError:
            raise SamzaDataSourceError(
                f'samza data source: option "partitions" must be integers, got {raw_parts!r}'
            ) from None
    start_all, start_by = _offset_spec(opts, "startOffset")
    end_all, end_by = _offset_spec(opts, "endOffset")
    for name, by in (("startOffset", start_by), ("endOffset", end_by), ("partitions", dict.fromkeys(wanted))):
        unknown = sorted(set(by) - set(partitions))
        if unknown:
            raise SamzaDataSourceError(
                f'samza data source: option "{name}" names partitions {unknown} of stream {stream!r}, '
                f"which has partitions 0..{len(partitions) - 1}"
            )
    ranges: dict[int, tuple[int, int]] = {}
    for p in wanted:
        meta = partitions[p]
        oldest, upcoming = int(meta.oldest_offset), int(meta.upcoming_offset)
        start_raw = start_by.get(p, start_all)
        end_raw = end_by.get(p, end_all)
        start = oldest if start_raw is None else _resolve(start_raw, "startOffset", stream, p, meta)
        end = upcoming if end_raw is None else _resolve(end_raw, "endOffset", stream, p, meta)
        if start < oldest and meta.newest_offset is not None:
            raise SamzaDataSourceError(
                f"samza data source: stream {stream!r} partition {p}: startOffset {start} is before the "
                f"oldest retained offset {oldest}"
            )
        start = max(start, 0)
        end = min(end, upcoming)
        ranges[p] = (start, max(start, end))
    return ranges
