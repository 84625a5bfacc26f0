"""A client's options, validated once (both pure clients and the Spark source use them)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ferroq import connection
from ferroq._limits import MAX_DELETE_LATER, MAX_POOL_SIZE, MAX_SECONDS, shown
from ferroq.exceptions import InvalidArgument
from ferroq.pure._validation import check_count, seconds_of

_SCHEMES = ('redis://', 'rediss://', 'unix://')

# --- settings ------------------------------------------------------------------------------------


class DeleteLater:
    """Keys that expire by themselves (publish records) whose ``DEL`` rides with the next request of the same
    client instead of costing a round trip of its own (a single publish's, only once ``MIN_DELETE_LATER`` of
    them wait); the twin of the Rust ``Pool::delete_later``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: list[str] = []

    def add(self, key: str) -> None:
        with self._lock:
            if len(self._keys) < MAX_DELETE_LATER:
                self._keys.append(key)

    def take(self, at_least: int = 1) -> list[str]:
        """The keys left so far, now the caller's to delete (best effort: they expire), once at least
        ``at_least`` of them wait (none before)."""
        with self._lock:
            if len(self._keys) < at_least:
                return []
            keys, self._keys = self._keys, []
        return keys


def deletes_of(keys: list[str] | tuple[str, ...]) -> list[tuple[str, ...]]:
    """The commands that delete ``keys``: one ``DEL`` of them all (none for none), whose reply the caller skips;
    the twin of the Rust ``deletes_of`` (a key costs the server about half what a ``DEL`` of its own does)."""
    return [('DEL', *keys)] if keys else []


@dataclass(frozen=True)
class Settings:
    """A client's validated options. ``url`` holds the password: never print it, use ``shown_url``."""

    url: str = field(repr=False)
    shown_url: str
    pool_size: int
    connect_timeout: float
    command_timeout: float
    max_message_bytes: int
    chunk_size: int
    client_name: str | None
    #: Credentials and TLS settings (:func:`ferroq.connection.resolve`).
    endpoint: connection.Endpoint = field(default_factory=lambda: connection.Endpoint('', ''), repr=False)
    #: The client's keys to delete with a later request: not an option, state its operations share.
    delete_later: DeleteLater = field(default_factory=DeleteLater, repr=False, compare=False)

    def pool_kwargs(self) -> dict[str, Any]:
        """redis-py connection options shared by both clients' pools (they add their own ``retry``)."""
        kwargs: dict[str, Any] = {
            'decode_responses': True,
            'protocol': 2,  # RESP2: Lua false is nil, as the replies are decoded here
            'socket_connect_timeout': self.connect_timeout,
            'socket_timeout': self.command_timeout,
        }
        if self.client_name is not None:
            kwargs['client_name'] = self.client_name
        kwargs.update(self.endpoint.redis_py_kwargs())
        return kwargs

    @property
    def max_connections(self) -> int:
        # redis-py connections carry one request at a time: leave room for concurrent threads and tasks.
        return max(self.pool_size, 16)


def settings(
    url: str | None,
    *,
    pool_size: int,
    connect_timeout: float,
    command_timeout: float,
    max_message_bytes: int,
    chunk_size: int,
    client_name: str | None,
    **connection_options: Any,
) -> Settings:
    """Validate the client options, then resolve the URL (which may start the embedded server).

    ``connection_options``: the credentials and TLS options of :func:`ferroq.connection.resolve`.
    """
    pool_size = check_count(pool_size, 'pool_size', MAX_POOL_SIZE)
    timeouts = []
    for name, value in (('connect_timeout', connect_timeout), ('command_timeout', command_timeout)):
        seconds = seconds_of(value)
        if seconds is None or not 0 < seconds <= MAX_SECONDS:
            raise InvalidArgument(
                f'{name} must be a number of seconds > 0 and <= {MAX_SECONDS:.0f}, got {shown(value)}'
            )
        timeouts.append(seconds)
    max_message_bytes = check_count(max_message_bytes, 'max_message_bytes', None)
    chunk_size = check_count(chunk_size, 'chunk_size')
    if client_name is not None and (not isinstance(client_name, str) or not re.fullmatch(r'[!-~]+', client_name)):
        raise InvalidArgument(f'client_name must be a non-empty str without spaces, got {shown(client_name)}')
    endpoint = connection.resolve(url, **connection_options)
    if not endpoint.url.startswith(_SCHEMES):
        raise InvalidArgument(
            f'invalid Redis URL "{endpoint.shown_url}": use redis://host:port/db or unix:///path/to/redis.sock'
        )
    return Settings(
        url=endpoint.url,
        shown_url=endpoint.shown_url,
        endpoint=endpoint,
        pool_size=pool_size,
        connect_timeout=timeouts[0],
        command_timeout=timeouts[1],
        max_message_bytes=max_message_bytes,
        chunk_size=chunk_size,
        client_name=client_name,
    )


def invalid_url(ctx: Settings, exc: Exception) -> InvalidArgument:
    """The error for a URL that redis-py could not parse."""
    return InvalidArgument(f'invalid Redis URL "{ctx.shown_url}": {scrub(ctx, str(exc))}')


def scrub(ctx: Settings, text: str) -> str:
    """``text`` with the URL and its password masked (redis-py messages may quote either)."""
    text = text.replace(ctx.url, ctx.shown_url)
    # A very short secret would mask unrelated text; redis-py never quotes the password anyway.
    for password in (_password(ctx.url), ctx.endpoint.password):
        if password and len(password) >= 4:
            text = text.replace(password, '***')
    return text


def _password(url: str) -> str | None:
    """The secret part of the user-info, as :func:`ferroq.server.redact_url` sees it."""
    userinfo, at, _ = url.partition('://')[2].partition('/')[0].rpartition('@')
    if not at:
        return None
    user, colon, password = userinfo.partition(':')
    return (password if colon else user) or None
