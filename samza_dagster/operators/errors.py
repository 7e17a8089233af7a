"""Errors of the operator runtime."""

from samza_dagster.errors import SamzaError


class OperatorError(SamzaError, RuntimeError):
    """The application cannot run as described (names the operator, stream or stage)."""
