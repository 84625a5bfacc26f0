"""One set of connections per Python worker process, made on first use and reused by every task.

PySpark runs one Python worker per running task and reuses it for the next task
(``spark.python.worker.reuse``), and ``pyspark.daemon`` forks those workers. The data source objects are
pickled from the driver, so they hold only a :class:`~ferroq.spark._options.Connection` (settings), never
a live client; the clients live here, keyed by process id and settings, so a forked child never uses its
parent's sockets.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import redis

import ferroq
from ferroq.exceptions import FerroqError
from ferroq.protocol import script_source
from ferroq.pure import _errors, _settings
from ferroq.spark._options import Connection

__all__ = ['Raw', 'native', 'raw']

T = TypeVar('T')

_native: dict[tuple[int, Connection], ferroq.Client] = {}
_raw: dict[tuple[int, Connection], Raw] = {}


def native(conn: Connection) -> ferroq.Client:
    """This process's native client for ``conn`` (the hot paths: publishing Arrow batches)."""
    key = (os.getpid(), conn)
    client = _native.get(key)
    if client is None:
        client = _native[key] = ferroq.Client(conn.url, **conn.client_kwargs())
    return client


def raw(conn: Connection) -> Raw:
    """This process's raw connection for ``conn`` (reads and the connector's own keys)."""
    key = (os.getpid(), conn)
    client = _raw.get(key)
    if client is None:
        client = _raw[key] = Raw(conn)
    return client


class Raw:
    """redis-py commands and the connector's scripts, with errors mapped to ferroq's exceptions.

    Replies are bytes (a field may hold binary); callers decode what they read as text.
    """

    def __init__(self, conn: Connection) -> None:
        self._ctx = _settings.settings(conn.url, client_name=None, **conn.client_kwargs())
        kwargs = {**self._ctx.pool_kwargs(), 'decode_responses': False}
        self.redis: Any = redis.Redis.from_url(self._ctx.url, **kwargs)
        self._scripts: dict[str, Any] = {}

    @property
    def shown_url(self) -> str:
        return self._ctx.shown_url

    def run(self, call: Callable[[Any], T]) -> T:
        """``call(redis)``, any redis-py error raised as the ferroq exception for it (passwords scrubbed)."""
        try:
            return call(self.redis)
        except redis.RedisError as exc:
            raise _errors.map_error(exc, self._ctx) from None

    def reply_error(self, what: str, reply: object) -> FerroqError:
        """The error for a reply of ``what`` that does not have the protocol's shape."""
        return _errors.reply_error(self._ctx, what, reply)

    def call(self, command: str, *args: Any, **kwargs: Any) -> Any:
        """One redis-py command method by name, e.g. ``call('lrange', key, 0, -1)``."""
        return self.run(lambda r: getattr(r, command)(*args, **kwargs))

    def _script(self, name: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.redis.register_script(script_source(name))
        return script

    def script(self, name: str, keys: list[str], args: list[Any], protocol: str = 'spark') -> Any:
        """Runs ``lua/<protocol>/<name>.lua`` (after the prelude's helpers it uses): EVALSHA, loading it when needed."""
        script = self._script(f'{protocol}/{name}')
        return self.run(lambda _: script(keys=keys, args=args))

    def scripts(self, name: str, calls: list[tuple[list[str], list[Any]]], protocol: str = 'spark') -> list[Any]:
        """Runs the script once per ``(keys, args)`` of ``calls``, in order, in one round trip (a pipeline, not a
        transaction: each call is atomic on its own); their replies in order, the first error raised."""
        script = self._script(f'{protocol}/{name}')

        def run(r: Any) -> list[Any]:
            pipe = r.pipeline(transaction=False)
            for keys, args in calls:
                script(keys=keys, args=args, client=pipe)
            return list(pipe.execute())

        return self.run(run)
