"""Errors raised by systems."""

from samza_dagster.errors import SamzaError


class SamzaSystemError(SamzaError):
    """Base class of the errors systems raise."""


class StreamNotFoundError(SamzaSystemError, LookupError):
    """A stream that does not exist was read or described. The message names it."""

    def __init__(self, system: str, stream: str, detail: str = "") -> None:
        super().__init__(f"stream {stream!r} does not exist on system {system!r}" + (f": {detail}" if detail else ""))
        self.system = system
        self.stream = stream


class StreamExistsError(SamzaSystemError):
    """create_stream was asked for a stream that exists with a different partition count."""


class SystemUnavailableError(SamzaSystemError, ConnectionError):
    """The system cannot be reached (e.g. the Kafka bootstrap servers); names the address."""
