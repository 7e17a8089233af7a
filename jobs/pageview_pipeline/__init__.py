"""pageview_pipeline (Samza's planner and control-message designs): a bounded high-level application.

``page_views`` (2 partitions, not keyed) → ``partition_by(user)`` → joined with the ``profiles``
table, which the ``user_profiles`` side-input stream (4 partitions, keyed by user) fills →
``partition_by(country)`` → hourly event-time counts per country → ``country_counts``.

The planner infers both intermediate streams' partition counts as Samza's ExecutionPlanner does: ``by-user`` is joined
with a table whose side input has 4 partitions, so it gets 4 (not page_views' 2); ``by-country``
joins nothing, so it gets ``job.intermediate.stream.partitions`` (3 here). The job stops by itself:
end-of-stream on page_views propagates in-band through both intermediate streams, as in Samza.
"""
