"""Requests: what a plan yields and a client executes (the only part of an operation that does I/O)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple, TypeVar, Union

T = TypeVar('T')


# --- requests: what a client executes ------------------------------------------------------------


class Call(NamedTuple):
    """One command. Reply: its result, or the exception redis-py raised. ``raw``: strings as bytes."""

    args: tuple[str, ...]
    raw: bool = False


class Pipe(NamedTuple):
    """Commands in one round trip (a redis-py pipeline with ``transaction=False``).

    Reply: the list of results, each a value or an exception; or one exception when the connection failed.
    """

    commands: list[tuple[str, ...]]
    raw: bool = False


class Block(NamedTuple):
    """A blocking command on a dedicated connection, waiting up to ``timeout`` seconds for the reply."""

    args: tuple[str, ...]
    timeout: float


class Sleep(NamedTuple):
    """Wait, without blocking other tasks in the async client. Reply: None."""

    seconds: float


class Subscribe(NamedTuple):
    """SUBSCRIBE on a dedicated connection held until the operation ends; waits for the confirmation.

    Reply: None, or the redis-py exception.
    """

    channel: str


class Listen(NamedTuple):
    """Wait up to ``timeout`` seconds for a message on the :class:`Subscribe` d channel (draining any queued).

    Reply: True if one came, else False; or the redis-py exception.
    """

    timeout: float


class Watched(NamedTuple):
    """A watched transaction, on a connection nobody else uses meanwhile (WATCH is per connection): ``WATCH key``
    and ``GET key`` in one round trip, then ``build(value)`` (the GET reply) gives the commands to run between
    ``MULTI`` and ``EXEC`` in one more round trip, or None to ``UNWATCH`` and run nothing. ``deletes``: keys
    deleted ahead of the ``WATCH`` by one ``DEL``, in its round trip (best effort, its reply dropped: the keys the client
    left to delete later, see :func:`ferroq.pure._send.send`).

    Reply: the list of EXEC's results (each a value or an exception); None when EXEC was aborted because ``key``
    changed since WATCH; [] when ``build`` gave None; or the redis-py exception (for EXECABORT, the error of the
    command refused while queuing).
    """

    key: str
    build: Callable[[Any], list[tuple[str, ...]] | None]
    deletes: tuple[str, ...] = ()


Request = Union[Call, Pipe, Block, Sleep, Subscribe, Listen, Watched]


def options(request: Call | Pipe) -> dict[str, Any]:
    """redis-py's options for the commands of ``request``: NEVER_DECODE for a raw one."""
    return {'NEVER_DECODE': True} if request.raw else {}


#: Commands whose replies the plans decode in Redis's own (RESP2) shape: the clients turn redis-py's parsing of
#: them off (it differs between redis-py versions, and a :class:`Block` reply is never parsed anyway).
RAW_REPLIES = ('XPENDING', 'XRANGE', 'XREADGROUP')
#: An operation: yields requests, receives replies, returns the operation's result.
Plan = Generator[Request, Any, T]

#: What a closed client's calls raise.
CLOSED = 'client is closed'
