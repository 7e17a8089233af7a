"""What the tests and the benchmarks share: the Kafka-protocol broker fixture (tansu) and the
high-level application harness. Neither is part of the installed package; both run from the
checkout, like ``jobs/`` and ``bench/``."""
