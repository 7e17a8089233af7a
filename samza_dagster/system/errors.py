"""Errors raised by systems."""


class SystemError_(Exception):  # noqa: N801 - avoid shadowing the builtin SystemError
    """Base class of the errors systems raise."""


class StreamNotFoundError(SystemError_, LookupError):
    """A stream that does not exist was read or described. The message names it."""

    def __init__(self, system: str, stream: str, detail: str = "") -> None:
        super().__init__(f"stream {stream!r} does not exist on system {system!r}" + (f": {detail}" if detail else ""))
        self.system = system
        self.stream = stream


class StreamExistsError(SystemError_):
    """create_stream was asked for a stream that exists with a different partition count."""


class SystemUnavailableError(SystemError_, ConnectionError):
    """The system cannot be reached (e.g. the Kafka bootstrap servers); names the address."""
