"""Errors raised while an application describes itself (building the OperatorSpec graph)."""

from samza_dagster.errors import SamzaError


class ApplicationError(SamzaError, ValueError):
    """The application's graph is invalid: a duplicate operator id, a table used before
    ``get_table``, a stream registered twice, an operator cycle, a bad argument to a
    MessageStream method.

    The message names the operator, stream or table at fault; ``operator``/``stream``/``table``
    carry them for programs.
    """

    def __init__(
        self,
        message: str,
        *,
        operator: str | None = None,
        stream: str | None = None,
        table: str | None = None,
    ) -> None:
        super().__init__(message)
        self.operator = operator
        self.stream = stream
        self.table = table
