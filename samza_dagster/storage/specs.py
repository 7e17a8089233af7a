"""Which stores a job has and how each is built: ``stores.*`` config read into a StoreSpec, and
where persistent stores live.

State directory: ``job.logged.store.base.dir`` when set; else ``<log.path>-state`` beside the
default system's embedded log root when the default system is the log; else
``<tmp>/samza-dagster-state``. Under it: ``<job.name>-<job.id>/<store>/<task name>``.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from samza_dagster.config import keys
from samza_dagster.config.config import Config
from samza_dagster.config.errors import ConfigError
from samza_dagster.config.system_config import StorageConfig
from samza_dagster.model import SystemStream
from samza_dagster.storage.kv import DEFAULT_BLOCK_CACHE_BYTES, BlockCache

DEFAULT_STORE_SERDE = "json"
#: ``stores.<store>.object.cache.size``: entries of the write-back cache of one store in one
#: task (0 disables the cache). Samza's default is 1000; see docs/decisions.md "## Stores".
DEFAULT_OBJECT_CACHE_SIZE: int = keys.STORE_OBJECT_CACHE_SIZE.default
#: ``stores.<store>.write.batch.size``: dirty entries that trigger a write-down (Samza: 500);
#: clamped to the cache size when only the cache size is configured.
DEFAULT_WRITE_BATCH_SIZE: int = keys.STORE_WRITE_BATCH_SIZE.default


@dataclass(frozen=True)
class StoreSpec:
    name: str
    factory: str
    key_serde: str
    msg_serde: str
    changelog: SystemStream | None
    #: write-back cache entries per task (0: no cache) and the dirty count that writes down
    cache_size: int = DEFAULT_OBJECT_CACHE_SIZE
    batch_size: int = DEFAULT_WRITE_BATCH_SIZE
    #: the store's RocksDB block cache, shared by the TaskStores built from this spec — the
    #: container calls ``store_specs`` once, so one bounded cache per store per container
    block_cache: BlockCache = field(
        default_factory=lambda: BlockCache(DEFAULT_BLOCK_CACHE_BYTES), compare=False, repr=False
    )


def store_specs(config: Config, default_system: str) -> list[StoreSpec]:
    """One spec per configured store. Each call makes new block caches (see StoreSpec)."""
    storage = StorageConfig(config)
    specs = []
    for name in storage.store_names():
        changelog = storage.changelog(name, default_system)
        cache_sizes = _cache_sizes(config, name)
        if storage.side_inputs(name):
            if changelog is not None:
                key = keys.STORE_CHANGELOG.key(store=name)
                raise ConfigError(
                    f"config key {key!r}: store {name!r} has side inputs ({keys.STORE_SIDE_INPUTS.key(store=name)}), "
                    "which are its "
                    "changelog already; remove one of the two",
                    key=key,
                )
            # written by the side-inputs thread while the task reads: no write-back cache
            cache_sizes = {"cache_size": 0, "batch_size": DEFAULT_WRITE_BATCH_SIZE}
        specs.append(
            StoreSpec(
                name=name,
                factory=storage.factory(name),
                key_serde=storage.key_serde(name) or DEFAULT_STORE_SERDE,
                msg_serde=storage.msg_serde(name) or DEFAULT_STORE_SERDE,
                changelog=changelog,
                **cache_sizes,
                block_cache=BlockCache(storage.container_cache_size_bytes(name)),
            )
        )
    return specs


def _cache_sizes(config: Config, store: str) -> dict[str, int]:
    """``stores.<store>.object.cache.size`` and ``stores.<store>.write.batch.size``, checked:
    the batch lives in the cache, so it cannot be larger (Samza's rule); an unset batch size
    larger than a configured cache size is lowered to it instead of failing."""
    cache_key = keys.STORE_OBJECT_CACHE_SIZE.key(store=store)
    batch_key = keys.STORE_WRITE_BATCH_SIZE.key(store=store)
    cache = keys.STORE_OBJECT_CACHE_SIZE.get(config, store=store)
    explicit = (
        keys.STORE_WRITE_BATCH_SIZE.read(config, batch_key) if (config.get_str(batch_key) or "").strip() else None
    )
    if explicit is not None and cache and explicit > cache:
        raise ConfigError(
            f"config key {batch_key!r}: the write batch ({explicit}) cannot be larger than the cache it lives in "
            f"({cache_key} = {cache})",
            key=batch_key,
        )
    batch = explicit if explicit is not None else min(DEFAULT_WRITE_BATCH_SIZE, cache) or DEFAULT_WRITE_BATCH_SIZE
    return {"cache_size": cache, "batch_size": batch}


def state_base_dir(config: Config, default_system: str) -> Path:
    explicit = keys.JOB_LOGGED_STORE_BASE_DIR.get(config)
    if explicit:
        return Path(explicit)
    factory = keys.SYSTEM_FACTORY.get(config, system=default_system) or "log"
    log_path = config.get_str(keys.LOG_PATH.key(system=default_system))  # unset: not the log's own default
    if factory == "log" and log_path:
        p = Path(log_path)
        return p.parent / f"{p.name}-state"
    return Path(tempfile.gettempdir()) / "samza-dagster-state"


def safe_name(name: str) -> str:
    """A store or task name as a directory name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)
