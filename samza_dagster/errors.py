"""The root of every error samza_dagster raises: ``except SamzaError`` catches any of them.

Each package keeps its own errors (``ConfigError`` in config, ``PlanningError`` in the planner,
``SamzaSystemError`` and its kin in system, ...), all under this class; most also keep the builtin
base that says what kind of error they are (``ConfigError`` is a ``ValueError``), so code that
catches those keeps working. This module imports nothing: every layer may use it.
"""


class SamzaError(Exception):
    """Any error of samza_dagster; the message names what failed and where."""


class ReadTimeoutError(SamzaError, TimeoutError):
    """A stream was not read to its head in time (a checkpoint, changelog or tailed stream);
    the message names the stream and the partitions still unread."""
