"""Errors of the operator runtime."""


class OperatorError(RuntimeError):
    """The application cannot run as described (names the operator, stream or stage)."""
