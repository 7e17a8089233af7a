"""What the tests and the benchmarks share: Apache Kafka brokers (``kafka_broker``, their jars
fetched by ``kafka_dist``) and the high-level application harness. Neither is part of the installed package; both run from the
checkout, like ``jobs/`` and ``bench/``."""
