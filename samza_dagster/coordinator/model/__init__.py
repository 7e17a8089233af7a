"""The JobModel (Samza's ``org.apache.samza.job.model``): containers, their tasks and each task's
input partitions (``job_model``), the groupers that assign them (``groupers``), building the model
from config and partition counts (``builder``) and the input partition counts a stateful job must
keep (``partition_counts``)."""
