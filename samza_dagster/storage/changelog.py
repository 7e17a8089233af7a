"""A store's changelog stream: one partition per task, created when missing, refused (naming both
counts) when it exists with another count."""

from __future__ import annotations

from samza_dagster.config import keys
from samza_dagster.config.errors import ConfigError
from samza_dagster.model import StreamSpec
from samza_dagster.storage.specs import StoreSpec

#: Properties of a changelog the engine creates. Compacted (Samza's and Kafka's default for
#: changelogs), and with a compaction lag: a change younger than the lag never removes an older
#: one, so changes written after the last checkpoint (work a crash then discards, see restore.py)
#: cannot remove the committed values a restore needs, as long as a container commits more often
#: than the lag (``task.commit.ms``, 60 s by default). Kafka gets the same from never cleaning the
#: active segment. See docs/decisions.md "## Stores".
CHANGELOG_PROPERTIES = {"cleanup.policy": "compact", "min.compaction.lag.ms": "600000"}


class ChangelogPartitionMismatchError(ConfigError):
    """A store's changelog stream exists with a partition count other than the job needs."""


def prepare_changelogs(specs: list[StoreSpec], admins: dict, partition_count: int) -> None:
    """Create each changelog stream that does not exist with one partition per task
    (``partition_count`` = the JobModel's max changelog partition + 1) and fail clearly when
    an existing one has another count."""
    for spec in specs:
        if spec.changelog is None:
            continue
        admin = admins.get(spec.changelog.system)
        if admin is None:
            key = keys.STORE_CHANGELOG.key(store=spec.name)
            raise ConfigError(f"config key {key!r}: system {spec.changelog.system!r} is not configured", key=key)
        stream = spec.changelog.stream
        try:
            admin.create_stream(
                StreamSpec(stream, stream, spec.changelog.system, partition_count, dict(CHANGELOG_PROPERTIES))
            )
        except ConfigError:
            raise  # a bad cleanup setting for the changelog, naming the key
        except Exception:  # noqa: BLE001 - exists with another count: reported below with both counts
            pass
        metadata = admin.get_system_stream_metadata([stream])[stream]
        actual = metadata.partition_count
        if actual != partition_count:
            key = keys.STORE_CHANGELOG.key(store=spec.name)
            raise ChangelogPartitionMismatchError(
                f"store {spec.name!r}: changelog stream {spec.changelog.system}.{stream} has {actual} partitions, "
                f"but the job has {partition_count} tasks needing one changelog partition each ({key})",
                key=key,
            )
