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


class TransientSystemError(SamzaSystemError):
    """A system lost what the container had sent since its last commit, in a way a new start from
    that commit clears: the cluster aborted the open transaction (a broker restarted under it), or
    sends timed out while no broker could take them. Nothing committed is lost; the runners start
    the container again from its last checkpoint (``job.container.retry.count`` times), as Samza's
    cluster manager restarts a failed container."""


class SystemAuthenticationError(SystemUnavailableError):
    """The system refused this client: a wrong user name or password, or a TLS handshake that
    failed (above all a server certificate the client does not trust). Names the system, the
    address and the cause, never the secret."""


class OffsetError(SamzaSystemError, ValueError):
    """An offset that is not one of the system's (not an integer where the system's are) or that
    cannot be compared with another; names the stream, partition and offset."""


class PartitionError(SamzaSystemError, ValueError):
    """A partition the stream does not have (or a partition that is not a partition number);
    names the stream, the partition and the stream's partition count."""


class InvalidStreamError(SamzaSystemError, ValueError):
    """A stream a system cannot create: an invalid name or fewer than one partition."""


class MessageTypeError(SamzaSystemError, TypeError):
    """A key or message a producer cannot write: not bytes (the container's serdes serialize
    them); names the stream and the type given."""


class SystemClientError(SamzaSystemError, RuntimeError):
    """A consumer used out of its order: a partition registered after start, a poll before
    start, envelopes returned for a partition that was not polled. Names the system and the
    partition."""


class WrongSystemError(SamzaSystemError, ValueError):
    """A producer was sent a message for a stream of another system; names both systems."""


class ConsumerSetupError(SamzaSystemError, ValueError):
    """Consumers set up wrongly: a buffer capacity or poll timeout out of range, a partition
    registered twice, of a system that has no consumer, or polled without being registered;
    names the partition or the argument."""


class SystemWriteError(SamzaSystemError, RuntimeError):
    """A producer could not write messages it buffered (its storage failed; they stay buffered
    for a retry); names the system, the stream and where it is stored."""


class FileFormatError(SamzaSystemError, ValueError):
    """A file of a files stream that cannot be read: an unknown format, a file that does not
    parse or a row that does not; names the stream, the partition, the file, the row and the cause."""


class TableWriteError(SamzaSystemError, ValueError):
    """Rows a table output cannot take: a row that does not fit the table's schema, or a commit
    that kept conflicting; names the table, the row and the cause."""
