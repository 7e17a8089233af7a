"""The files system: Samza's HDFS system for any file system pyarrow or fsspec opens.

``systems.<s>.samza.factory=files`` with ``systems.<s>.files.root``: stream ``<name>`` is the
files under ``<root>/<name>/`` — Parquet, JSON lines or CSV (:mod:`.readers`) — partitioned into
file groups (:mod:`.partitions`), read as bounded streams of rows (:mod:`.consumer`) at offsets
``<file>:<row>`` (:mod:`.offsets`); as an output, rows become Parquet files (:mod:`.producer`).
Every key: :mod:`.config`.
"""

from samza_dagster.system.files.admin import FilesSystemAdmin
from samza_dagster.system.files.consumer import FilesSystemConsumer
from samza_dagster.system.files.factory import FilesSystemFactory
from samza_dagster.system.files.producer import FilesSystemProducer

__all__ = ["FilesSystemAdmin", "FilesSystemConsumer", "FilesSystemFactory", "FilesSystemProducer"]
