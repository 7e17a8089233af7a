"""user_classification: a use case of Samza's MessageChooser design (SAMZA-2).

A low-level StreamTask classifies users into countries. ``user_signups`` is the real-time stream
(priority 1: people who just signed up are browsing right now); ``reclassify_requests`` is the
batch stream (priority 0) a reprocessing backfill floods with every past user when the
classifier changes. The strategy (``app.classifier.strategy``: ``ip`` or ``ip+language``) is
config: changing it on the coordinator stream makes the Dagster sensor request a reconfiguration
run, and the Spark backfill (``resend_to_batch_stream``) re-sends the past users.
Every output carries its source stream and its latency (processing time − the time the request
was written), so the report can show that real-time requests are not delayed by the flood.
"""
