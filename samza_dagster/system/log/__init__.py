"""The embedded log system (SQLite-backed, durable, multi-process) — the default system.

One SQLite file per stream under ``systems.<system>.log.path`` (default ``./.samza-log``,
relative to the working directory); see :mod:`.storage` for the layout and the durability
settings, :mod:`.config` for every key. Streams are created explicitly with the admin's
``create_stream``; producing to a stream that does not exist raises StreamNotFoundError.
Retention and compaction (Kafka's ``cleanup.policy``, ``retention.ms`` ...) are stored per stream
file (:mod:`.retention`) and applied by the producers' cleaner threads (:mod:`.cleaner`).
"""

from samza_dagster.system.log.admin import LogSystemAdmin
from samza_dagster.system.log.config import LogSystemConfig
from samza_dagster.system.log.consumer import LogSystemConsumer
from samza_dagster.system.log.factory import LogSystemFactory
from samza_dagster.system.log.producer import LogSystemProducer

__all__ = ["LogSystemAdmin", "LogSystemConfig", "LogSystemConsumer", "LogSystemFactory", "LogSystemProducer"]
