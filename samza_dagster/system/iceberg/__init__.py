"""The iceberg system: Apache Iceberg tables as outputs, through pyiceberg.

``systems.<s>.samza.factory=iceberg``: stream ``<t>`` is the table ``<namespace>.<t>`` of the
catalog ``load_catalog(<s>, **props)`` (:mod:`.config`, :mod:`.catalog`), created from the rows'
schema on first write. Rows are appended in Arrow batches, one table commit per container commit
carrying the job's checkpoints (:mod:`.producer`, :mod:`.checkpoints`), so a restarted container
resumes from what the table holds.
"""

from samza_dagster.system.iceberg.admin import IcebergSystemAdmin
from samza_dagster.system.iceberg.factory import IcebergSystemFactory
from samza_dagster.system.iceberg.producer import IcebergSystemProducer, TableCommit

__all__ = ["IcebergSystemAdmin", "IcebergSystemFactory", "IcebergSystemProducer", "TableCommit"]
