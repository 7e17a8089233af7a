"""The applications' op jobs that write sample input (and user_classification's one-off Spark
re-send), so each application can be tried from the UI."""

from jobs.ad_ctr.definitions import load_sample_job as ad_ctr_load_sample
from jobs.clicks_lake.definitions import load_sample_job as clicks_lake_load_sample
from jobs.currency_join.definitions import load_sample_job as currency_join_load_sample
from jobs.pageview_pipeline.definitions import load_sample_job as pageview_pipeline_load_sample
from jobs.user_classification.definitions import backfill_job as user_classification_reprocessing_backfill
from jobs.user_classification.definitions import load_sample_job as user_classification_load_sample
from jobs.wordcount.definitions import load_sample_job as wordcount_load_sample

__all__ = [
    "ad_ctr_load_sample",
    "clicks_lake_load_sample",
    "currency_join_load_sample",
    "pageview_pipeline_load_sample",
    "user_classification_load_sample",
    "user_classification_reprocessing_backfill",
    "wordcount_load_sample",
]
