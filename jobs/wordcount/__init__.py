"""wordcount: a low-level StreamTask over the embedded log.

``sentences`` (2 partitions, bounded) → WordSplitTask → ``words`` (2 partitions, keyed by the
word, so one word always lands in one partition: a downstream count per key needs no shuffle).
"""
