"""Errors of the job coordinator."""

from samza_dagster.errors import SamzaError


class CoordinatorNotStartedError(SamzaError, RuntimeError):
    """The JobModel was asked for before the job coordinator read it (call ``start()`` first)."""
