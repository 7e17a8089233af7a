"""Errors of the Dagster definitions built for a job."""

from samza_dagster.errors import SamzaError


class OrchestrationError(SamzaError, ValueError):
    """Dagster definitions cannot be built as asked: a declared output that is not
    ``system.stream``, an application that writes no stream the plan knows, a backfill or rewind
    of a stream that is not an input of the job. Names the application, job or stream."""
