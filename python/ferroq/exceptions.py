"""The one exception tree of ferroq.

The Rust core (``ferroq._ferroq``) and the pure-Python client (``ferroq.pure``) raise these same classes,
so code written against one client handles errors from the other. Errors about bad input also subclass
:class:`ValueError` and are raised before anything is sent to Redis.
"""

from __future__ import annotations

__all__ = [
    'BatchError',
    'CommandTimeout',
    'ConnectionFailed',
    'DataLoss',
    'FerroqError',
    'InvalidArgument',
    'InvalidMessage',
    'InvalidName',
    'LeaseLost',
    'MessageTooLarge',
    'OutOfMemory',
    'PermissionDenied',
    'ProtocolError',
    'QueueExists',
    'QueueNotFound',
    'ServerError',
    'ServerUnavailable',
    'TlsError',
    'UnsupportedServer',
]


class FerroqError(Exception):
    """Base class of every error ferroq raises.

    Attributes:
        published: set by ``Topic.publish_stream`` on the error that stopped it: how many messages (whole
            chunks) were published before it; None for errors of other calls.
    """

    published: int | None = None


class ConnectionFailed(FerroqError):
    """Redis could not be reached, or the connection dropped during a call.

    After a drop the outcome of the call is unknown. ferroq's publish and commit are idempotent, so
    repeating them is safe; the client reconnects on its own.
    """


class TlsError(ConnectionFailed):
    """The TLS handshake with a ``rediss://`` server failed, so nothing was sent.

    The server's certificate is not signed by a trusted CA (give ``tls_ca_file``), has expired or is not
    valid yet, is for another host name, or the server requires a client certificate (give
    ``tls_cert_file`` and ``tls_key_file``). Retrying does not help until the setup is fixed.
    """


class CommandTimeout(FerroqError):
    """Redis did not answer within the command timeout."""


class ServerUnavailable(FerroqError):
    """No Redis is configured and the embedded ``redis-server`` cannot be started."""


class UnsupportedServer(FerroqError):
    """The server is older than the oldest version ferroq supports (Redis 6.2; Valkey 7.2), found on connect."""


class InvalidArgument(FerroqError, ValueError):
    """An argument is out of range or of the wrong type (a count, a lease, a queue name...)."""


class InvalidName(InvalidArgument):
    """A topic or queue name breaks the naming rules."""


class InvalidMessage(InvalidArgument):
    """A message is not a non-empty flat map of ``str`` to ``str``."""


class MessageTooLarge(InvalidMessage):
    """A message is larger than the configured limit."""


class BatchError(InvalidArgument):
    """One or more items of a batch are invalid; nothing of the batch was written.

    The message names the first bad items (``[index] cause``), so a log line says what to fix.

    Attributes:
        errors: ``(index, error)`` for every bad item, in input order.
    """

    #: Bad items named in the message; the others are counted.
    NAMED = 3

    def __init__(self, message: str, errors: list[tuple[int, FerroqError]] | None = None) -> None:
        self.errors: list[tuple[int, FerroqError]] = list(errors or [])
        named = '; '.join(f'[{index}] {error}' for index, error in self.errors[: self.NAMED])
        more = len(self.errors) - self.NAMED
        if named:
            message = f'{message}: {named}' + (f'; and {more} more' if more > 0 else '')
        super().__init__(message)


class QueueNotFound(FerroqError):
    """The queue does not exist."""


class QueueExists(FerroqError):
    """A queue of that name already exists."""


class LeaseLost(FerroqError):
    """The lease of a claimed message expired and another consumer may hold it now."""


class PermissionDenied(FerroqError):
    """Redis refused the command for this user (ACL ``NOPERM`` or ``NOAUTH``/``WRONGPASS``)."""


class DataLoss(FerroqError):
    """Messages a streaming read had not read yet are gone (a stream trimmed past its offset)."""


class OutOfMemory(FerroqError):
    """Redis is at ``maxmemory`` with ``noeviction``: nothing of the call was written."""


class ProtocolError(FerroqError):
    """Redis held or returned data that does not follow the protocol (a foreign or corrupt entry)."""


class ServerError(FerroqError):
    """Any other error reply from Redis.

    Attributes:
        code: the error code Redis sent (``WRONGTYPE``, ``ERR``, ...).
    """

    def __init__(self, message: str, code: str = 'ERR') -> None:
        super().__init__(message)
        self.code = code
