"""samza_dagster: Apache Samza's stream-processing semantics in Python.

The engine lives in this package and never imports dagster; only
``samza_dagster.orchestration`` does.
"""

__version__ = "0.1.0"
