"""Errors of the stores."""

from samza_dagster.errors import SamzaError


class StoreSizeError(SamzaError, ValueError):
    """A store's cache or write batch was given a size it cannot have; names the size and the
    bound it breaks."""
