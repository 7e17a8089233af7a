"""Errors of the metrics package."""

from samza_dagster.errors import SamzaError


class MetricsError(SamzaError, ValueError):
    """A metric registered twice with different types, or a malformed metrics snapshot."""
